"""Parent side of the code-cell kernel: who the kernel runs as, and how its tasks (processes and threads) are capped
so that one kernel cannot starve another or the machine.

The cap is enforced, in order of preference, by:

1. a **pids cgroup of its own** (``pids.max`` = ``max_tasks``): cgroup v2 when the parent's cgroup delegates the
   pids controller to its children (or is the root of the hierarchy), else a cgroup v1 pids hierarchy; the parent
   needs write access to it (root, or a delegated cgroup). The kernel is moved into it before it reads its settings,
   so no cell runs outside it, and it is removed when the kernel exits. Kernels never share a count;
2. ``RLIMIT_NPROC`` of a **uid of its own** (root only, from ``uid_range``): the kernel drops to a uid no other
   process uses, so the per-user count is a per-kernel count. Free uids are leased with lock files in a root-only
   folder, so kernels of several processes (a campaign) never share one;
3. ``RLIMIT_NPROC`` of a **shared user**: the count covers every process of that user (``drop_to_user`` when root,
   the parent's own user otherwise), so concurrent kernels draw from one pool and can starve each other. Not root,
   the limit is set to the user's tasks at start plus ``max_tasks`` (lower would stop the kernel starting at all).

As root the kernel runs as its own uid whenever ``uid_range`` is set, even with a cgroup: kernels then cannot write
each other's files or signal each other. Root without a user to drop to is exempt from RLIMIT_NPROC: only a cgroup
caps it. :meth:`TaskLimit.describe` says which mechanism a kernel got; :class:`~robodojo.agents.code_cell.kernel.Kernel`
reports it in ``confinement["task_limit"]``.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import logging
import os
import pwd
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from robodojo.errors import RobodojoError

log = logging.getLogger(__name__)

CGROUP_PREFIX = "robodojo-kernel-"  # robodojo-kernel-<parent pid>-<n>
UID_LOCK_DIR = "robodojo-kernel-uids"  # under the parent's temporary folder, root-only
CGROUP_REMOVE_TIMEOUT_S = 2.0  # rmdir of an exited kernel's cgroup is retried this long (EBUSY while tasks go)
_STALE_CGROUP = re.compile(rf"^{CGROUP_PREFIX}(\d+)-\d+$")
_counter = itertools.count()


class TaskLimitError(RobodojoError):
    """The configured task limit cannot be set up on this machine."""


@dataclass(frozen=True)
class PidsCgroupParent:
    """A cgroup folder under which each kernel gets a pids cgroup of its own."""

    path: Path
    version: int  #: 1 or 2


def find_pids_cgroup_parent(setting: str) -> PidsCgroupParent | None:
    """Where per-kernel pids cgroups can be created: ``setting`` 'off' (never), 'auto' (the parent's own cgroup, v2
    first, when a probe cgroup can be created there; None otherwise), or the path of a delegated cgroup (an error
    when it cannot be used)."""
    if setting == "off":
        return None
    if setting != "auto":
        path = Path(setting)
        version = 2 if (path / "cgroup.controllers").exists() else 1
        parent = PidsCgroupParent(path, version)
        problem = _probe(parent)
        if problem:
            raise TaskLimitError(f"pids_cgroup {setting!r} cannot be used: {problem}")
        return parent
    for parent in _own_cgroups():
        problem = _probe(parent)
        if not problem:
            return parent
        log.debug("pids cgroup under %s unusable: %s", parent.path, problem)
    return None


def _own_cgroups() -> list[PidsCgroupParent]:
    """The parent's own cgroup in the v2 hierarchy (if pids is delegated there) and in a v1 pids hierarchy."""
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text().splitlines()
        membership = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    v2_mounts, v1_pids_mounts = [], []
    for line in mountinfo:
        head, _, tail = line.partition(" - ")
        fields, tail_fields = head.split(), tail.split()
        if len(fields) < 5 or len(tail_fields) < 3:
            continue
        root, point, fstype, options = fields[3], fields[4], tail_fields[0], tail_fields[2].split(",")
        if fstype == "cgroup2":
            v2_mounts.append((root, point))
        elif fstype == "cgroup" and "pids" in options:
            v1_pids_mounts.append((root, point))
    found = []
    for line in membership:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and not controllers:
            found += [_v2_parent(Path(_under(point, root, path))) for root, point in v2_mounts]
        elif "pids" in controllers.split(","):
            found += [PidsCgroupParent(Path(_under(point, root, path)), 1) for root, point in v1_pids_mounts]
    return [p for p in found if p is not None]


def _under(mount_point: str, mount_root: str, path: str) -> str:
    if mount_root != "/" and path.startswith(mount_root):
        path = path[len(mount_root) :]
    return os.path.join(mount_point, path.lstrip("/"))


def _v2_parent(path: Path) -> PidsCgroupParent | None:
    """A v2 cgroup whose children get the pids controller: delegated already, or the hierarchy's root (which may
    have processes of its own and still enable controllers for its children)."""
    try:
        if "pids" not in (path / "cgroup.controllers").read_text().split():
            return None
        if "pids" not in (path / "cgroup.subtree_control").read_text().split():
            if (path / "cgroup.type").exists():  # only the root cgroup lacks cgroup.type
                return None
            (path / "cgroup.subtree_control").write_text("+pids")
    except OSError:
        return None
    return PidsCgroupParent(path, 2)


def _probe(parent: PidsCgroupParent) -> str | None:
    """Create and remove one cgroup under ``parent``; what went wrong, or None."""
    _remove_stale(parent.path)
    try:
        path = create_pids_cgroup(parent, 1)
    except OSError as exc:
        return str(exc)
    remove_pids_cgroup(path)
    return None


def _remove_stale(folder: Path) -> None:
    """Remove the empty cgroups left behind by parents that died without cleaning up."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            match = _STALE_CGROUP.match(entry.name)
            if match and not Path(f"/proc/{match.group(1)}").exists():
                with contextlib.suppress(OSError):
                    entry.rmdir()


def create_pids_cgroup(parent: PidsCgroupParent, max_tasks: int) -> Path:
    """A new cgroup under ``parent`` with ``pids.max`` = ``max_tasks``; raises OSError when it cannot be made."""
    path = parent.path / f"{CGROUP_PREFIX}{os.getpid()}-{next(_counter)}"
    path.mkdir(mode=0o755)
    try:
        if not (path / "pids.max").is_file():  # an ordinary folder, or a cgroup without the pids controller
            raise OSError(f"{parent.path} is not a cgroup with the pids controller")
        (path / "pids.max").write_text(str(max_tasks))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        raise
    return path


def remove_pids_cgroup(path: Path) -> None:
    """Remove a kernel's cgroup once its process was reaped (retried briefly while its tasks are released)."""
    deadline = time.monotonic() + CGROUP_REMOVE_TIMEOUT_S
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if time.monotonic() >= deadline:
                log.warning("could not remove the kernel's cgroup %s: %s", path, exc)
                return
            time.sleep(0.02)


class UidLease:
    """A uid from ``[first, last]`` that no user in the password database has, no process runs as, and no other
    kernel (of any parent process) holds, mapped as uid and gid in this user namespace: held with an exclusive lock
    on ``<tmp>/robodojo-kernel-uids/<uid>.lock`` until :meth:`release` (or the parent's exit)."""

    def __init__(self, first: int, last: int) -> None:
        self._fd: int | None = None
        folder = _lock_folder()
        busy = _uids_in_use()
        mapped = _mapped_ids("uid_map"), _mapped_ids("gid_map")
        for uid in range(first, last + 1):
            if uid in busy or _has_passwd_entry(uid) or not all(_inside(uid, ranges) for ranges in mapped):
                continue
            fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if uid in _uids_in_use():  # a process took it between the scan and the lock
                os.close(fd)
                continue
            self.uid = uid
            self._fd = fd
            return
        raise TaskLimitError(f"no free uid in uid_range [{first}, {last}]: every one is in use or locked")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.release()


def _lock_folder() -> Path:
    folder = Path(tempfile.gettempdir()) / UID_LOCK_DIR
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise TaskLimitError(f"{folder} must be a folder owned by uid {os.geteuid()} with mode 0700")
    return folder


def _mapped_ids(name: str) -> list[tuple[int, int]]:
    """The id ranges [start, end) usable in this user namespace, from /proc/self/uid_map or gid_map."""
    try:
        lines = Path(f"/proc/self/{name}").read_text().splitlines()
    except OSError:
        return [(0, 2**32)]
    return [(int(f[0]), int(f[0]) + int(f[2])) for f in (line.split() for line in lines) if len(f) == 3]


def _inside(uid: int, ranges: list[tuple[int, int]]) -> bool:
    return any(start <= uid < end for start, end in ranges)


def _has_passwd_entry(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def _status_fields(pid: int | str, wanted: tuple[str, ...]) -> dict[str, list[str]] | None:
    """Selected lines of /proc/<pid>/status, split into fields; None when the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    fields = {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in wanted:
            fields[key] = value.split()
    return fields


def _proc_status_fields(wanted: tuple[str, ...]) -> list[dict[str, list[str]]]:
    """Selected lines of /proc/<pid>/status of every process, split into fields."""
    found = (_status_fields(entry.name, wanted) for entry in os.scandir("/proc") if entry.name.isdigit())
    return [fields for fields in found if fields is not None]


def task_count(pid: int) -> int:
    """Tasks (threads) of one process now; 0 when it is gone."""
    fields = _status_fields(pid, ("Threads",))
    try:
        return int(fields["Threads"][0]) if fields else 0
    except (KeyError, IndexError, ValueError):
        return 0


def _uids_in_use() -> set[int]:
    """Every uid (real, effective, saved or filesystem) of a running process."""
    return {int(u) for fields in _proc_status_fields(("Uid",)) for u in fields.get("Uid", [])}


def user_task_count(uid: int) -> int:
    """Tasks (threads included) of processes whose real uid is ``uid``: what RLIMIT_NPROC counts."""
    total = 0
    for fields in _proc_status_fields(("Uid", "Threads")):
        if fields.get("Uid", [""])[0] == str(uid):
            total += int(fields.get("Threads", ["1"])[0])
    return total


class TaskLimit:
    """The user and the task cap of one Kernel's processes (see the module docstring)."""

    def __init__(
        self, *, max_tasks: int, pids_cgroup: str, uid_range: tuple[int, int] | None, drop_to_user: str | None
    ) -> None:
        self.max_tasks = max_tasks
        self._lease: UidLease | None = None
        self._cgroup: Path | None = None
        root = os.geteuid() == 0
        self.cgroup_parent = find_pids_cgroup_parent(pids_cgroup)
        #: (uid, gid) the kernel drops to, None: it keeps the parent's user
        self.user: tuple[int, int] | None = None
        self.own_uid = False
        if root and uid_range is not None:
            self._lease = UidLease(*uid_range)
            self.user, self.own_uid = (self._lease.uid, self._lease.uid), True
        elif root and drop_to_user is not None:
            try:
                entry = pwd.getpwnam(drop_to_user)
                self.user = (entry.pw_uid, entry.pw_gid)
            except KeyError:
                log.warning("kernel user %r does not exist; the kernel runs as root", drop_to_user)
        self._shared_rlimit = self.cgroup_parent is None and (self.user is not None or not root)

    def rlimit_nproc(self) -> int | None:
        """RLIMIT_NPROC for the kernel about to start (None: not set). Not root and without a cgroup: the user's
        tasks now plus ``max_tasks``."""
        if self.own_uid or (self._shared_rlimit and self.user is not None):
            return self.max_tasks
        if self._shared_rlimit:
            return user_task_count(os.getuid()) + self.max_tasks
        return None

    @property
    def mechanism(self) -> str:
        """'cgroup v1', 'cgroup v2', 'own uid', 'shared user' or 'none' (root that stays root, without a cgroup)."""
        if self.cgroup_parent is not None:
            return f"cgroup v{self.cgroup_parent.version}"
        if self.own_uid:
            return "own uid"
        return "shared user" if self._shared_rlimit else "none"

    @property
    def per_kernel(self) -> bool:
        """True when no other kernel (or process) draws from this kernel's task count."""
        return self.mechanism in ("cgroup v1", "cgroup v2", "own uid")

    def describe(self) -> str:
        """One line for the confinement report."""
        n, uid = self.max_tasks, self.user[0] if self.user else os.getuid()
        if self.cgroup_parent is not None:
            own = f"; RLIMIT_NPROC {n} of its own uid {uid} as well" if self.own_uid else ""
            return f"pids.max {n} in a {self.mechanism} of its own under {self.cgroup_parent.path}{own}"
        if self.own_uid:
            return f"RLIMIT_NPROC {n} of uid {uid}, used by no other process"
        if self._shared_rlimit:
            return f"RLIMIT_NPROC of uid {uid}, shared with every process of that user (not per kernel)"
        return "no task limit (root without a cgroup or a user to drop to)"

    def attach(self, pid: int) -> None:
        """Put a freshly started kernel (it waits for its settings, nothing has run) into a new cgroup of its own."""
        self.detach()
        if self.cgroup_parent is None:
            return
        try:
            self._cgroup = create_pids_cgroup(self.cgroup_parent, self.max_tasks)
            (self._cgroup / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            raise TaskLimitError(f"could not put the kernel into a pids cgroup: {exc}") from None

    def detach(self) -> None:
        """Remove the cgroup of a kernel that has exited and been reaped."""
        if self._cgroup is not None:
            remove_pids_cgroup(self._cgroup)
            self._cgroup = None

    def close(self) -> None:
        """Release the uid lease (after the kernel exited) and the cgroup."""
        self.detach()
        if self._lease is not None:
            self._lease.release()
            self._lease = None


__all__ = [
    "PidsCgroupParent",
    "TaskLimit",
    "TaskLimitError",
    "UidLease",
    "create_pids_cgroup",
    "find_pids_cgroup_parent",
    "remove_pids_cgroup",
    "task_count",
    "user_task_count",
]
