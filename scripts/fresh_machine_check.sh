#!/usr/bin/env bash
# Run README commands as a newcomer would: from a fresh clone, on a minimal Debian 12 root made with debootstrap
# (nothing installed but git, make and CA certificates), so that a missing install step shows up here and not on
# their machine. Needs root (debootstrap, chroot, mounts) and the Debian package mirror.
#
#   sudo scripts/fresh_machine_check.sh                  # make test in a fresh root
#   sudo scripts/fresh_machine_check.sh demo test        # other make targets, in order
#
# Environment knobs:
#   FRESH_BASE=dir   where the pristine debootstrap root is kept between runs (default /var/tmp/agent_bringup-base)
#   FRESH_RUN=dir    the throw-away copy the commands run in (default /var/tmp/agent_bringup-run)
#   KEEP=1           keep the run root afterwards (to look around: chroot "$FRESH_RUN" bash)
#   SUITE, MIRROR    Debian release and mirror (default bookworm and the first deb.debian.org-style URI of the host)
# The clone is of the committed HEAD: uncommitted changes are not part of what a newcomer gets.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${FRESH_BASE:-/var/tmp/agent_bringup-base}"
RUN="${FRESH_RUN:-/var/tmp/agent_bringup-run}"
SUITE="${SUITE:-bookworm}"
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=(test)

say() { printf 'fresh_machine_check: %s\n' "$*"; }
die() { printf 'fresh_machine_check: error: %s\n' "$*" >&2; exit 1; }

[[ "$(id -u)" -eq 0 ]] || die "run as root (debootstrap, chroot and mounts need it)"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"

if [[ -z "${MIRROR:-}" ]]; then
  MIRROR="$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d 2>/dev/null |
    head -1 | awk '{print $2}')" || true
  MIRROR="${MIRROR:-http://deb.debian.org/debian}"
fi

if [[ ! -x "$BASE/usr/bin/git" ]]; then
  say "debootstrap $SUITE (minbase + git, make, ca-certificates) into $BASE from $MIRROR"
  rm -rf "$BASE.partial"
  debootstrap --variant=minbase --include=git,make,ca-certificates "$SUITE" "$BASE.partial" "$MIRROR" >/dev/null
  mv "$BASE.partial" "$BASE"
fi

MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTS[i]}" 2>/dev/null || true; done
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$RUN"; fi
}
trap cleanup EXIT

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

say "git clone of $(git -C "$SRC" rev-parse --short HEAD) into /home/newcomer/agent_bringup"
mkdir -p "$RUN/home/newcomer"
git clone --quiet --no-hardlinks "$SRC" "$RUN/home/newcomer/agent_bringup"

status=0
for target in "${TARGETS[@]}"; do
  say "make $target"
  start=$SECONDS
  chroot "$RUN" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=/etc/ssl/host-ca-bundle.crt SSL_CERT_FILE=/etc/ssl/host-ca-bundle.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/host-ca-bundle.crt \
    bash -c "cd /home/newcomer/agent_bringup && make $target </dev/null" || status=$?
  say "make $target: exit $status after $((SECONDS - start)) s"
  ((status == 0)) || break
done
exit "$status"
