"""The SocketCAN shim (can_shim.c): compiled with the machine's C compiler, preloaded into the SDK's process.

Kernels without CAN (these machines, CI, most laptops, containers) cannot open a SocketCAN socket at all, so the
unmodified SDK is pointed at the bus emulator instead: ``LD_PRELOAD`` of the shim turns its CAN sockets into Unix
sockets in ``ROBODOJO_CAN_SOCKET_DIR`` (see can_shim.c). Preloading must happen when a process starts, so
:func:`preload_environment` gives the variables for a child process and :func:`reexec_with_shim` restarts the current
one with them.

Never preload it on a machine wired to real arms: the SDK would then talk to the emulator, not the motors.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from robodojo.errors import HardwareError

SOURCE = Path(__file__).with_name("can_shim.c")
SOCKET_DIR_ENV = "ROBODOJO_CAN_SOCKET_DIR"
SHIM_NAME = "robodojo_can_shim"
_REEXEC_GUARD = "ROBODOJO_CAN_SHIM_REEXEC"


def default_socket_dir() -> Path:
    """A per-user folder for the bus sockets (short: a Unix socket path has at most 107 bytes)."""
    return Path(tempfile.gettempdir()) / f"robodojo-can-{os.getuid()}"


def compiler() -> str | None:
    """The C compiler to build the shim with ($CC, else cc or gcc on PATH), or None when there is none."""
    for candidate in (os.environ.get("CC"), "cc", "gcc"):
        if candidate and shutil.which(candidate):
            return candidate
    return None


def build_shim(out_dir: str | Path | None = None) -> Path:
    """The shim compiled (once per source version) into ``out_dir`` (default: a per-user cache folder); its path.
    HardwareError when there is no compiler or it fails."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:12]
    folder = Path(out_dir) if out_dir is not None else Path(tempfile.gettempdir()) / f"robodojo-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{SHIM_NAME}-{digest}.so"
    if target.exists():
        return target
    cc = compiler()
    if cc is None:
        raise HardwareError("no C compiler (cc, gcc or $CC) to build the SocketCAN shim; install gcc")
    partial = target.with_suffix(f".{os.getpid()}.tmp")  # another process may be building it too
    result = subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(partial), str(SOURCE), "-ldl"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise HardwareError(f"building the SocketCAN shim with {cc} failed:\n{result.stderr.strip()}")
    partial.replace(target)
    return target


def preloaded() -> bool:
    """Whether this process runs with the shim preloaded."""
    return SHIM_NAME in os.environ.get("LD_PRELOAD", "")


def preload_environment(socket_dir: str | Path, shim: Path | None = None) -> dict[str, str]:
    """Environment variables that make a child process's CAN sockets reach the emulators in ``socket_dir``."""
    shim = shim or build_shim()
    others = [p for p in os.environ.get("LD_PRELOAD", "").split() if SHIM_NAME not in p]
    return {"LD_PRELOAD": " ".join([str(shim), *others]), SOCKET_DIR_ENV: str(socket_dir)}


def environment_without_shim(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` for a child that sets up a shim of its own: this one, its socket folder and its restart guard out."""
    env = {k: v for k, v in environ.items() if k not in (SOCKET_DIR_ENV, _REEXEC_GUARD)}
    env["LD_PRELOAD"] = " ".join(p for p in environ.get("LD_PRELOAD", "").split() if SHIM_NAME not in p)
    return env


def reexec_with_shim(socket_dir: str | Path, argv: Sequence[str] | None = None) -> None:
    """Restart this Python process with the shim preloaded (no return); nothing when it already is. HardwareError
    when the shim cannot be built, or when a restart did not bring it (a loop guard)."""
    if preloaded():
        os.environ[SOCKET_DIR_ENV] = os.environ.get(SOCKET_DIR_ENV) or str(socket_dir)
        return
    if os.environ.get(_REEXEC_GUARD):
        raise HardwareError("restarted with LD_PRELOAD but the SocketCAN shim is not loaded (a setuid interpreter?)")
    env = {**os.environ, **preload_environment(socket_dir), _REEXEC_GUARD: "1"}
    sys.stdout.flush()
    sys.stderr.flush()
    args = list(argv) if argv is not None else [sys.executable, *sys.orig_argv[1:]]
    os.execve(sys.executable, args, env)
