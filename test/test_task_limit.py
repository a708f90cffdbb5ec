"""Per-kernel task limits: kernels running at once each get their own cap, enforced by the operating system, and one
kernel at its cap does not starve another. Which mechanism this machine allows (a pids cgroup, a uid of its own, or
only a shared user) is in every kernel's confinement report."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from robodojo.agents.code_cell.kernel import Kernel
from robodojo.agents.code_cell.kernel_config import KernelContainment, load_kernel_config
from robodojo.agents.code_cell.kernel_process import KernelError
from robodojo.agents.code_cell.task_limit import (
    TaskLimit,
    TaskLimitError,
    UidLease,
    find_pids_cgroup_parent,
    user_task_count,
)
from robodojo.errors import ConfigError

MAX_TASKS = 24
ROOT = os.geteuid() == 0

# Starts threads until the cap refuses one, says so in a file, holds them until the test writes 'go', joins them.
FILL_TO_CAP = """
import os, threading, time
stop = threading.Event()
started = []
for _ in range({tries}):
    t = threading.Thread(target=stop.wait)
    try:
        t.start()
    except RuntimeError:
        break
    started.append(t)
open('capped', 'w').write(str(len(started)))
deadline = time.monotonic() + 20
while not os.path.exists('go') and time.monotonic() < deadline:
    time.sleep(0.02)
stop.set()
for t in started:
    t.join()
len(started)
"""


def _kernel(**containment_changes: object) -> Kernel:
    limits, containment = load_kernel_config()
    limits = dataclasses.replace(limits, max_tasks=MAX_TASKS, wall_s=30.0, cpu_s=30.0)
    containment = dataclasses.replace(containment, **containment_changes)
    return Kernel(lambda *a: None, api={}, limits=limits, containment=containment)


# Containment changes per mechanism: the configured default, and as root each fallback on its own.
MECHANISMS = {
    "auto": {},
    "cgroup only": {"uid_range": None},  # every kernel 'nobody': only the cgroup keeps them apart
    "own uid only": {"pids_cgroup": "off"},
}
SHARED_USER = {"uid_range": None, "pids_cgroup": "off"}  # the last resort: one count for every kernel


@pytest.fixture(params=list(MECHANISMS) if ROOT else ["auto"])
def kernels(request: pytest.FixtureRequest) -> Iterator[tuple[Kernel, Kernel]]:
    with _kernel(**MECHANISMS[request.param]) as a, _kernel(**MECHANISMS[request.param]) as b:
        yield a, b


def _fill_both(a: Kernel, b: Kernel) -> tuple[int, int]:
    """a takes every task it may have and holds them while b takes every task it may have; how many each got."""
    tries = 10 * MAX_TASKS
    with ThreadPoolExecutor(1) as pool:
        holding = pool.submit(a.run_cell, FILL_TO_CAP.format(tries=tries))
        capped = a.scratch_dir / "capped"
        deadline = time.monotonic() + 20
        while not capped.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        held = int(capped.read_text())
        try:
            # a holds every task it may have; b, at the same time, still reaches its own full cap.
            other = b.run_cell(FILL_TO_CAP.format(tries=tries).replace("os.path.exists('go')", "True"))
        finally:
            (a.scratch_dir / "go").write_text("")
        first = holding.result(timeout=30)
    assert first.ok and int(first.result_repr) == held, first
    assert other.ok and not other.namespace_reset, other
    return held, int(other.result_repr)


def test_a_kernel_at_its_cap_does_not_starve_another(kernels: tuple[Kernel, Kernel]) -> None:
    a, b = kernels
    if not a._tasks.per_kernel:
        pytest.skip(f"no per-kernel task limit here: {a.confinement['task_limit']}")
    print(f"task limit: {a.confinement['task_limit']}")
    if ROOT:
        assert a.confinement["uid"] != 0 and b.confinement["uid"] != 0
    held, other = _fill_both(a, b)
    assert held == MAX_TASKS - a._process.baseline_tasks  # enforced: the cap, not the 240 attempts, stopped it
    assert other == MAX_TASKS - b._process.baseline_tasks  # and b still had all of its own


@pytest.mark.skipif(not ROOT, reason="as root the shared user is 'nobody'; otherwise it is this user, with other work")
def test_the_shared_user_last_resort_starves_the_other_kernel() -> None:
    # The limitation the per-kernel mechanisms remove, shown by the same measurement.
    with _kernel(**SHARED_USER) as a, _kernel(**SHARED_USER) as b:
        assert a._tasks.mechanism == "shared user" and not a._tasks.per_kernel
        held, other = _fill_both(a, b)
        baselines = a._process.baseline_tasks + b._process.baseline_tasks
    assert held <= MAX_TASKS - baselines and other == 0


def test_the_machine_reports_its_mechanism() -> None:
    with _kernel() as k:
        report = k.confinement["task_limit"]
        assert report == k._tasks.describe()
        print(f"task limit on this machine: {k._tasks.mechanism}: {report}")
        cgroup = k.run_cell("open('/proc/self/cgroup').read()").result_repr
        if k._tasks.cgroup_parent is not None:
            assert f"robodojo-kernel-{os.getpid()}-" in cgroup
            path = k._tasks._cgroup
            assert path is not None and (path / "pids.max").read_text().strip() == str(MAX_TASKS)
        if ROOT:
            assert k.confinement["uid"] != 0 and k._tasks.own_uid
    if k._tasks.cgroup_parent is not None:
        assert not path.exists()  # removed with its kernel


def test_the_cgroup_is_replaced_with_its_kernel() -> None:
    with _kernel() as k:
        if k._tasks.cgroup_parent is None:
            pytest.skip(f"no pids cgroup here: {k.confinement['task_limit']}")
        first = k._tasks._cgroup
        result = k.run_cell("import threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()")
        assert result.limit == "threads"
        assert first is not None and not first.exists()
        k.run_cell("1")
        assert k._tasks._cgroup is not None and k._tasks._cgroup != first and k._tasks._cgroup.exists()


@pytest.mark.skipif(not ROOT, reason="uids of their own need root")
def test_uid_leases_are_distinct_and_skip_used_uids() -> None:
    nobody = 65534
    with pytest.raises(TaskLimitError, match="no free uid"):
        UidLease(nobody, nobody)  # has a passwd entry (and may have processes)
    first = UidLease(61500, 61510)
    second = UidLease(61500, 61510)
    try:
        assert first.uid != second.uid and 61500 <= first.uid <= 61510
        first.release()
        again = UidLease(61500, 61510)
        assert again.uid == first.uid  # a released uid is free again
        again.release()
    finally:
        first.release()
        second.release()


@pytest.mark.skipif(not ROOT, reason="uids of their own need root")
def test_a_uid_a_process_runs_as_is_not_leased() -> None:
    uid = 61520
    with _kernel(uid_range=(uid, uid)) as k:
        assert k.confinement["uid"] == uid
        with pytest.raises(KernelError, match="no free uid"):
            _kernel(uid_range=(uid, uid))  # locked by k, and k's process runs as it


def test_explicit_cgroup_folder_must_work(tmp_path: Path) -> None:
    assert find_pids_cgroup_parent("off") is None
    with pytest.raises(TaskLimitError, match="cannot be used"):
        find_pids_cgroup_parent(str(tmp_path / "no-such-cgroup"))
    with pytest.raises(KernelError, match="cannot be used"):
        _kernel(pids_cgroup=str(tmp_path))  # an ordinary folder has no pids.max


def test_shared_user_without_root_counts_from_the_users_tasks() -> None:
    tasks = user_task_count(os.getuid())
    assert tasks >= threading.active_count()  # this process's threads at least
    limit = TaskLimit(max_tasks=MAX_TASKS, pids_cgroup="off", uid_range=None, drop_to_user=None)
    if ROOT:
        assert limit.mechanism == "none" and limit.rlimit_nproc() is None  # root is exempt from RLIMIT_NPROC
    else:
        assert limit.mechanism == "shared user" and not limit.per_kernel
        assert limit.rlimit_nproc() >= tasks + MAX_TASKS - 5


def test_config_validation(tmp_path: Path) -> None:
    _, containment = load_kernel_config()
    assert isinstance(containment, KernelContainment) and containment.pids_cgroup == "auto"
    assert containment.uid_range is not None and containment.uid_range[0] <= containment.uid_range[1]
    text = (Path(__file__).parents[1] / "config" / "agents" / "kernel.yaml").read_text()
    for bad, message in (
        ("uid_range: [61000, 61999]", "uid_range: [0, 10]"),
        ("uid_range: [61000, 61999]", "uid_range: [5, 4]"),
        ("uid_range: [61000, 61999]", "uid_range: 61000"),
        ("pids_cgroup: auto", "pids_cgroup: sys/fs/cgroup"),
    ):
        path = tmp_path / "kernel.yaml"
        path.write_text(text.replace(bad, message))
        with pytest.raises(ConfigError, match=message.split(":")[0]):
            load_kernel_config(path)
