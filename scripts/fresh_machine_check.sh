#!/usr/bin/env bash
# Run README commands as a newcomer would: from a fresh clone, on a minimal Debian root made with debootstrap
# (nothing installed but git, make and CA certificates), so that a missing install step shows up here and not on
# their machine. Needs root (debootstrap, chroot, mounts) and the Debian package mirror.
#
#   sudo scripts/fresh_machine_check.sh 13                     # Debian 13 (trixie): make setup, demo, test
#   sudo scripts/fresh_machine_check.sh 12 demo test           # Debian 12 (bookworm): these make targets, in order
#   sudo nice -n 19 ionice -c3 scripts/fresh_machine_check.sh 13   # on a shared machine
#
# The release is 12 or 13 (or the code name, bookworm or trixie); the targets default to setup, demo and test, so
# that the time of the setup shows apart from the demo's. Each stage prints its time, and a table of them ends the run.
#
# Environment knobs:
#   FRESH_BASE=dir   where the pristine debootstrap root is kept between runs (default /var/tmp/agent_bringup-<release>-base)
#   FRESH_RUN=dir    the throw-away copy the commands run in (default /var/tmp/agent_bringup-<release>-run)
#   KEEP=1           keep the run root afterwards (to look around: chroot "$FRESH_RUN" bash)
#   MIRROR           Debian mirror (default: the first deb.debian.org-style URI of the host)
# The clone is of the committed HEAD: uncommitted changes are not part of what a newcomer gets.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

say() { printf 'fresh_machine_check: %s\n' "$*"; }
die() { printf 'fresh_machine_check: error: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in
  12 | bookworm) SUITE=bookworm RELEASE=12 ;;
  13 | trixie) SUITE=trixie RELEASE=13 ;;
  *) die "usage: $0 12|13 [make targets...] (Debian 12 bookworm or Debian 13 trixie)" ;;
esac
shift
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(setup demo test)
BASE="${FRESH_BASE:-/var/tmp/agent_bringup-$SUITE-base}"
RUN="${FRESH_RUN:-/var/tmp/agent_bringup-$SUITE-run}"

[[ "$(id -u)" -eq 0 ]] || die "run as root (debootstrap, chroot and mounts need it)"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"

if [[ -z "${MIRROR:-}" ]]; then
  MIRROR="$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null |
    head -1 | awk '{print $2}')" || true
  MIRROR="${MIRROR:-http://deb.debian.org/debian}"
fi

STAGES=()
stage_done() { STAGES+=("$(printf '%-28s %6d s  %s' "$1" "$2" "$3")"); say "$1: $3 after $2 s"; }

if [[ ! -x "$BASE/usr/bin/git" ]]; then
  say "debootstrap Debian $RELEASE ($SUITE; minbase + git, make, ca-certificates) into $BASE from $MIRROR"
  start=$SECONDS
  rm -rf "$BASE.partial"
  debootstrap --variant=minbase --include=git,make,ca-certificates "$SUITE" "$BASE.partial" "$MIRROR" >/dev/null
  mv "$BASE.partial" "$BASE"
  stage_done debootstrap $((SECONDS - start)) ok
else
  say "reusing the pristine Debian $RELEASE root $BASE"
fi
grep -q "^VERSION_ID=\"$RELEASE\"" "$BASE/etc/os-release" ||
  die "$BASE is not Debian $RELEASE ($(grep ^PRETTY_NAME "$BASE/etc/os-release")): remove it or set FRESH_BASE"

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$RUN"; fi
}
trap cleanup EXIT

start=$SECONDS
say "fresh copy of the base root in $RUN"
rm -rf "$RUN"
cp -a "$BASE" "$RUN"
# The root a mount point of its own, as on a real machine: bubblewrap (the shell harness's sandbox) makes / a slave
# mount, which fails on a plain chroot folder. (A chroot still refuses user namespaces: the sandbox then runs
# without one, as root with no capabilities; robodojo.agents.shell.sandbox.)
mount --bind "$RUN" "$RUN"
MOUNTS+=("$RUN")
for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$RUN/$m"
  case "$m" in
    proc) mount -t proc proc "$RUN/proc" ;;
    dev/shm) mount -t tmpfs -o mode=1777 shm "$RUN/dev/shm" ;;  # Fast DDS shared-memory transport
    *) mount --bind "/$m" "$RUN/$m" ;;
  esac
  MOUNTS+=("$RUN/$m")
done
cp /etc/resolv.conf "$RUN/etc/resolv.conf"
# The host's certificate bundle: where the registries are reached through a TLS proxy, its CA is in there.
cp /etc/ssl/certs/ca-certificates.crt "$RUN/etc/ssl/host-ca-bundle.crt"

COMMIT="$(git -C "$SRC" rev-parse --short HEAD)"
say "git clone of $COMMIT ($(git -C "$SRC" rev-parse --abbrev-ref HEAD)) into /home/newcomer/agent_bringup"
mkdir -p "$RUN/home/newcomer"
git clone --quiet --no-hardlinks "$SRC" "$RUN/home/newcomer/agent_bringup"
stage_done "copy root + clone" $((SECONDS - start)) ok

status=0
for target in "${TARGETS[@]}"; do
  say "make $target (Debian $RELEASE)"
  start=$SECONDS
  chroot "$RUN" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/host-ca-bundle.crt SSL_CERT_FILE=/etc/ssl/host-ca-bundle.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/host-ca-bundle.crt \
    bash -c "cd /home/newcomer/agent_bringup && make $target </dev/null" || status=$?
  stage_done "make $target" $((SECONDS - start)) "exit $status"
  ((status == 0)) || break
done
say "Debian $RELEASE ($SUITE), $(chroot "$RUN" /usr/bin/python3 -V 2>&1 || echo 'no python3'), commit $COMMIT:"
printf '  %s\n' "${STAGES[@]}"
exit "$status"
