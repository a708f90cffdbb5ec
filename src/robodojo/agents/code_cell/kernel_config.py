"""The code-cell kernel's configuration: per-cell limits and the containment of its process (config/agents/kernel.yaml).

What each limit and containment setting enforces, and which are real boundaries, is in :mod:`.kernel`'s docstring.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys, resolve_path
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "agents" / "kernel.yaml"


@dataclass(frozen=True)
class KernelLimits:
    """Per-cell and per-kernel limits; the defaults are in config/agents/kernel.yaml."""

    wall_s: float  #: per cell, time the cell's own code runs [s] (robo calls not counted); SIGKILL + restart
    cpu_s: float  #: per cell, user + system CPU time of the kernel [s]; SIGKILL + restart
    memory_bytes: int  #: RLIMIT_AS of the kernel [bytes]; allocations beyond fail with MemoryError
    max_output_chars: int  #: per stream (stdout, stderr) [characters]; head and tail kept around a marker
    max_result_chars: int  #: repr of the trailing expression [characters]
    max_error_chars: int  #: traceback text [characters]
    max_file_bytes: int  #: RLIMIT_FSIZE [bytes]
    max_tasks: int  #: tasks (threads included) of one kernel: pids.max of its cgroup, or RLIMIT_NPROC (task_limit)
    max_message_bytes: int  #: largest pickled robo call the parent accepts [bytes]
    poll_interval_s: float  #: how often the parent checks the CPU time and the process while it waits [s]
    thread_grace_s: float  #: a cell's threads get this long to end after the cell before the kernel is restarted [s]
    start_timeout_s: float  #: the kernel must be ready within this time [s]


@dataclass(frozen=True)
class KernelContainment:
    """How the kernel process is confined (see :mod:`.kernel` for what is a real boundary)."""

    network_namespace: bool  #: when root: unshare(CLONE_NEWNET)
    drop_to_user: str | None  #: when root and uid_range is None: run the kernel as this user (None: stay root)
    uid_range: tuple[int, int] | None  #: when root: each kernel runs as a uid of its own from [first, last]
    pids_cgroup: str  #: 'auto', 'off' or a delegated cgroup folder: where each kernel gets a pids cgroup of its own
    blocked_modules: tuple[str, ...]  #: imports refused in cells (and their source folders unreadable)
    deny_read: tuple[Path, ...]  #: files and folders cells may not read (resolved against the package root)
    env_passthrough: tuple[str, ...]  #: environment variables copied from the parent when set


def load_kernel_config(path: str | Path = CONFIG_PATH) -> tuple[KernelLimits, KernelContainment]:
    """Load and validate config/agents/kernel.yaml (or another file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, {"limits", "containment"}, where)
    limits = Section(data.get("limits", {}), f"{where}.limits")
    reject_unknown_keys(limits.data, set(KernelLimits.__dataclass_fields__), limits.where)
    numbers = {"wall_s", "cpu_s", "poll_interval_s", "thread_grace_s", "start_timeout_s"}
    values: dict[str, Any] = {
        name: limits.number(name, positive=True) if name in numbers else limits.integer(name, positive=True)
        for name in KernelLimits.__dataclass_fields__
    }
    c = Section(data.get("containment", {}), f"{where}.containment")
    reject_unknown_keys(c.data, set(KernelContainment.__dataclass_fields__), c.where)
    user = c.data.get("drop_to_user")
    if user is not None and (not isinstance(user, str) or not user):
        raise ConfigError(f"{c.where}.drop_to_user: expected a user name or null, got {user!r}")
    uid_range = c.data.get("uid_range")
    if uid_range is not None:
        if not (
            isinstance(uid_range, list)
            and len(uid_range) == 2
            and all(isinstance(u, int) and not isinstance(u, bool) for u in uid_range)
            and 0 < uid_range[0] <= uid_range[1] < 2**31 - 1
        ):
            raise ConfigError(f"{c.where}.uid_range: expected [first, last] uids (0 < first <= last) or null, "
                              f"got {uid_range!r}")  # fmt: skip
        uid_range = (uid_range[0], uid_range[1])
    pids_cgroup = c.str("pids_cgroup")
    if pids_cgroup not in ("auto", "off") and not os.path.isabs(pids_cgroup):
        raise ConfigError(
            f"{c.where}.pids_cgroup: expected auto, off or an absolute cgroup folder, got {pids_cgroup!r}"
        )
    containment = KernelContainment(
        network_namespace=c.boolean("network_namespace"),
        drop_to_user=user,
        uid_range=uid_range,
        pids_cgroup=pids_cgroup,
        blocked_modules=c.strings("blocked_modules"),
        deny_read=tuple(resolve_path(p) for p in c.strings("deny_read")),
        env_passthrough=c.strings("env_passthrough"),
    )
    return KernelLimits(**values), containment
