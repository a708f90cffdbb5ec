#!/usr/bin/env bash
# make agents: the coding-agent CLIs the shell harness runs in its sandbox, from the npm registry, pinned and locked
# (scripts/npm-agents/package.json and package-lock.json), into .venv/agents/npm (config/agents/shell.yaml). Kept
# out of make setup and make demo: they are large (757 MB). npm's install scripts are not run (the
# CLIs ship their binaries in platform packages, which need none), nor its audit, funding or update checks. Without
# npm the CLIs are skipped with one line, and their tests skip saying so. Re-running with the same lock file returns
# at once.
#
# Environment knobs: VENV=path (default: <repo>/.venv), FORCE=1 (install again).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC="$ROOT/scripts/npm-agents"
DEST="${VENV:-$ROOT/.venv}/agents/npm"
say() { printf 'install_agents: %s\n' "$*"; }

if ! command -v npm >/dev/null; then
  say "npm not found: the coding-agent CLIs (Codex, opencode, Claude Code) are not installed and their tests skip (Debian: apt install npm)"
  exit 0
fi
STAMP="$DEST/.installed-lock"  # the lock file of the last install that ended well
if [[ -z "${FORCE:-}" && -d "$DEST/node_modules" ]] && cmp -s "$SRC/package-lock.json" "$STAMP"; then
  say "up to date ($DEST)"
  exit 0
fi
mkdir -p "$DEST"
rm -f "$STAMP"
cp "$SRC/package.json" "$SRC/package-lock.json" "$DEST/"
say "npm install (scripts/npm-agents, locked: $(sed -n 's/^ *"\([^"]*\)": "\([0-9][^"]*\)",\{0,1\}$/\1@\2/p' "$SRC/package.json" | paste -sd' ')) into $DEST"
start=$SECONDS
# npm install, not npm ci: opencode-ai lists platform packages that are not published for every release, which npm
# leaves out of the lock file and npm ci then reports missing; npm install keeps to the lock file all the same.
npm_config_update_notifier=false npm install --prefix "$DEST" --ignore-scripts --no-audit --no-fund --loglevel=error \
  </dev/null >/dev/null
cp "$SRC/package-lock.json" "$STAMP"
say "done in $((SECONDS - start)) s: $(du -sh "$DEST/node_modules" | cut -f1) in $DEST/node_modules"
