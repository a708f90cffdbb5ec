"""The code-cell kernel: persistent namespace, capture and trimming, robo calls, and every hostile cell contained
(the kernel usable afterwards, the parent unaffected). Limits are short here; nothing measures time."""

from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from robodojo import PACKAGE_ROOT
from robodojo.agents.code_cell.cell_protocol import CellResult, EpisodeOver
from robodojo.agents.code_cell.kernel import Kernel
from robodojo.agents.code_cell.kernel_config import KernelLimits, load_kernel_config
from robodojo.agents.code_cell.kernel_main import BoundedCapture
from robodojo.agents.code_cell.kernel_unpickle import loads_from_child
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.observation import ArmState
from robodojo.text import trim_text

FAKE_SECRET = "sk-test-not-a-real-key-1234567890"
WALL_S = 1.5
CPU_S = 3.0


def _arm_state() -> ArmState:
    return ArmState("left", ("j1", "j2"), (0.1, 0.2), np.array([0.1, -0.2, 0.9]), (1.0, 0.0, 0.0, 0.0), 1.0)


def _end() -> None:
    raise EpisodeOver("the env step budget is used up")


def _fail(message: str) -> None:
    raise ValueError(message)


def _invalid() -> None:
    raise InvalidCommandError("target for 'left_z' is outside [0.7, 1.565]")


def _config() -> None:
    raise ConfigError("bad config")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: a + b,
    "echo": lambda *args, **kwargs: (args, kwargs),
    "state": _arm_state,
    "fail": _fail,
    "invalid": _invalid,
    "config": _config,
    "end": _end,
    "unpicklable": lambda: lambda: 1,
    "slow": lambda s: time.sleep(s) or s,
    "done": lambda: False,
}
API = {name: f"{name}(...): test method {name}" for name in FUNCTIONS if name != "done"}


class FakeRobot:
    """A tiny handler: a dict of functions, recording every call it answers."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, name: str, args: tuple, kwargs: dict) -> Any:
        self.calls.append(name)
        return FUNCTIONS[name](*args, **kwargs)


def _limits(**changes: Any) -> KernelLimits:
    limits, _ = load_kernel_config()
    return dataclasses.replace(limits, **changes)


def _make_kernel(robot: FakeRobot, **limit_changes: Any) -> Kernel:
    return Kernel(
        robot, api=API, properties={"done": "done: whether the task is done"}, limits=_limits(**limit_changes)
    )


@pytest.fixture(scope="module")
def robot() -> FakeRobot:
    return FakeRobot()


@pytest.fixture(scope="module")
def kernel(robot: FakeRobot) -> Iterator[Kernel]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", FAKE_SECRET)  # the parent has a secret; the kernel must never see it
        with _make_kernel(robot, wall_s=WALL_S, cpu_s=CPU_S, max_output_chars=2000) as k:
            yield k


def run(kernel: Kernel, code: str) -> CellResult:
    return kernel.run_cell(code)


def assert_usable(kernel: Kernel) -> None:
    result = kernel.run_cell("robo.add(20, 22)")
    assert result.ok and result.result_repr == "42", result


# -- ordinary cells -----------------------------------------------------------------------------------------------


def test_namespace_persists_and_trailing_expression_repr(kernel: Kernel) -> None:
    assert run(kernel, "x = 41\ndef f(y):\n    return x + y").result_repr is None
    result = run(kernel, "f(1)")
    assert result.ok and result.result_repr == "42" and result.error is None and result.limit is None
    assert run(kernel, "None").result_repr is None
    assert run(kernel, "math.pi > 3, np.zeros(2).shape").result_repr == "(True, (2,))"
    assert run(kernel, "x = 5\nx * 2").result_repr == "10"


def test_stdout_stderr_captured(kernel: Kernel) -> None:
    result = run(
        kernel,
        "import sys, warnings\nwarnings.simplefilter('always')\nprint('out')\nprint('err', file=sys.stderr)\n"
        "warnings.warn('careful')",
    )
    assert result.stdout == "out\n"
    assert result.stderr.startswith("err\n") and "careful" in result.stderr
    assert result.ok and not result.namespace_reset


def test_traceback_without_kernel_frames(kernel: Kernel) -> None:
    result = run(kernel, "def g():\n    return 1 / 0\ng()")
    assert not result.ok and result.limit is None
    assert 'File "<cell' in result.error and "return 1 / 0" in result.error
    assert result.error.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "kernel_main" not in result.error
    syntax = run(kernel, "def (:")
    assert "SyntaxError" in syntax.error and not syntax.namespace_reset


@pytest.mark.parametrize(
    ("code", "line", "kind"),
    [("x = 1\ndef (:", 2, "SyntaxError: invalid syntax"), ("x = 1\n  y = 2", 2, "IndentationError: unexpected indent")],
)
def test_a_cell_that_does_not_parse_gets_only_its_own_location(kernel: Kernel, code: str, line: int, kind: str) -> None:
    result = run(kernel, code)
    # The parse step (ast.py) and the runner are not the model's frames: the error starts at the cell's line.
    assert result.error.lstrip().startswith('File "<cell ') and f'>", line {line}\n' in result.error
    assert "ast.py" not in result.error and "Traceback" not in result.error and "kernel_main" not in result.error
    assert result.error.rstrip().endswith(kind)


def test_code_that_parses_only_with_html_entities_decoded_runs_decoded_and_says_so(kernel: Kernel) -> None:
    # as a model writes after an autoescaping chat template showed it its own code
    result = run(kernel, "x = 2\nif x &lt; 3 and x &gt; 1:\n    print('small &amp; fine')")
    assert result.ok, result.error
    assert result.stdout == "small & fine\n" and result.notice is not None and "ran decoded" in result.notice
    kept = run(kernel, "print('a &lt; b')")  # parses as written: the entities are the cell's own text
    assert kept.ok and kept.stdout == "a &lt; b\n" and kept.notice is None
    broken = run(kernel, "if x &lt; 3 print(x)")  # a SyntaxError either way: reported as written
    assert broken.notice is None and broken.error.lstrip().startswith('File "<cell ')
    assert "&lt;" in broken.error and broken.error.rstrip().endswith("SyntaxError: invalid syntax")
    after = run(kernel, "1/0")  # the decoded lines do not leak into the next cell's traceback
    assert "&lt;" not in after.error and "1/0" in after.error


def test_a_runtime_error_starts_at_the_cell_frame(kernel: Kernel) -> None:
    result = run(kernel, "import json\nx = 2\njson.loads('{')")
    frames = [line.strip() for line in result.error.splitlines() if line.strip().startswith("File ")]
    assert frames[0].startswith('File "<cell ') and frames[0].endswith("line 3, in <module>")
    assert any("json" in f for f in frames[1:])  # what the cell called stays: it says where inside json it failed
    assert "kernel_main" not in result.error and "ast.py" not in result.error


def test_robo_calls_round_trip(kernel: Kernel, robot: FakeRobot) -> None:
    before = len(robot.calls)
    result = run(kernel, "s = robo.state()\nprint(s.name, s.tcp_pos_m * 2)\nrobo.echo(np.arange(3), k={1, 2}, z=1j)")
    assert result.ok, result.error
    assert result.stdout == "left [ 0.2 -0.4  1.8]\n"
    assert result.result_repr == "((array([0, 1, 2]),), {'k': {1, 2}, 'z': 1j})"
    assert result.rpc_calls == 2 and robot.calls[before:] == ["state", "echo"]
    assert run(kernel, "robo.done").result_repr == "False"
    help_text = run(kernel, "help(robo.add)").stdout
    assert "add(...): test method add" in help_text
    missing = run(kernel, "robo.fly()")
    assert "AttributeError" in missing.error and "available: add" in missing.error


def test_handler_errors_reach_the_cell(kernel: Kernel) -> None:
    caught = run(kernel, "try:\n    robo.fail('bad target')\nexcept ValueError as e:\n    print('caught', e)")
    assert caught.ok and caught.stdout == "caught bad target\n"
    raised = run(kernel, "robo.fail('bad target')")
    assert raised.error.rstrip().endswith("ValueError: bad target") and "kernel_main" not in raised.error
    invalid = run(kernel, "try:\n    robo.invalid()\nexcept ValueError as e:\n    print(type(e).__name__, e)")
    assert invalid.stdout == "InvalidCommandError target for 'left_z' is outside [0.7, 1.565]\n"
    other = run(kernel, "robo.config()")
    assert other.error.rstrip().endswith("RuntimeError: ConfigError: bad config")
    assert_usable(kernel)


def test_episode_end_is_not_swallowed(kernel: Kernel) -> None:
    code = "try:\n    robo.end()\nexcept Exception:\n    print('swallowed')\nprint('after')"
    result = run(kernel, code)
    assert result.episode_ended and not result.ok
    assert result.stdout == "" and "EpisodeEnded: the env step budget is used up" in result.error
    stubborn = run(kernel, "try:\n    robo.end()\nexcept BaseException:\n    pass\n'survived'")
    assert stubborn.result_repr == "'survived'" and stubborn.episode_ended  # the parent knows regardless
    assert not run(kernel, "1").episode_ended


def test_unpicklable_values(kernel: Kernel) -> None:
    lock = run(kernel, "import threading\nthreading.Lock()")
    assert lock.ok and "lock" in lock.result_repr
    result = run(kernel, "robo.unpicklable()")
    assert "RuntimeError" in result.error and "cannot be sent to the cell" in result.error
    assert not result.namespace_reset
    assert_usable(kernel)


def test_output_trimmed_and_memory_bounded(robot: FakeRobot) -> None:
    code = "print('HEAD')\nchunk = 'x' * 2**20\nfor _ in range(100):\n    print(chunk)\nprint('TAIL')"
    # Its own kernel with roomy time limits: writing 100 MB takes seconds when the 2 cores are busy.
    with _make_kernel(robot, wall_s=30, cpu_s=30, max_output_chars=2000) as kernel:
        _check_output_trimmed(kernel, code)


def _check_output_trimmed(kernel: Kernel, code: str) -> None:
    # Peak Python allocations during the cell (ru_maxrss would include the pytest parent the kernel was forked from).
    assert run(kernel, "import tracemalloc\ntracemalloc.start()").ok
    result = run(kernel, code)
    total = 5 + 100 * (2**20 + 1) + 5
    assert result.ok and result.limit == "output"
    assert result.stdout.startswith("HEAD\nxxx") and result.stdout.endswith("xxx\nTAIL\n")
    assert f"[... {total - 2000} characters omitted ...]" in result.stdout
    assert len(result.stdout) < 2000 + 60
    peak = run(kernel, "tracemalloc.get_traced_memory()[1]").result_repr
    assert int(peak) < 20 * 2**20  # the capture never held the 100 MB: about one 1 MB chunk at a time


# -- limits and crashes ---------------------------------------------------------------------------------------------


def test_infinite_loop_hits_wall_limit(kernel: Kernel) -> None:
    run(kernel, "kept = 1")
    result = run(kernel, "while True:\n    pass")
    assert result.limit == "wall_time" and result.namespace_reset and not result.ok
    assert "namespace reset" in result.error
    assert WALL_S <= result.wall_s < WALL_S + 3.0  # the slack is for a loaded machine, not a figure
    assert "NameError" in run(kernel, "kept").error
    assert_usable(kernel)


def test_time_inside_robo_calls_is_not_cell_time(kernel: Kernel) -> None:
    result = run(kernel, "for _ in range(3):\n    robo.slow(0.6)")
    assert result.ok and result.limit is None and result.wall_s >= 1.8 and result.rpc_calls == 3


def test_busy_thread_hits_cpu_limit(robot: FakeRobot) -> None:
    with _make_kernel(robot, wall_s=10.0, cpu_s=0.6) as k:
        code = "import threading\ndef spin():\n    while True:\n        pass\nt = threading.Thread(target=spin)\n"
        code += "t.start()\nt.join()"
        result = k.run_cell(code)
        assert result.limit == "cpu_time" and result.namespace_reset and result.wall_s < 5
        assert_usable(k)


def test_process_creation_refused(kernel: Kernel) -> None:
    run(kernel, "kept = 'yes'")
    for code in (
        "import os\nos.fork()",
        "import subprocess\nsubprocess.run(['true'])",
        "import os\nos.system('true')",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})",
        "import os\nos.execv('/bin/true', ['true'])",
        "import multiprocessing\nmultiprocessing.Process(target=print).start()",
        "import _posixsubprocess\n_posixsubprocess.fork_exec()",
        "import pty\npty.fork()",
    ):
        result = run(kernel, code)
        assert not result.ok and "PermissionError" in result.error, (code, result)
        assert not result.namespace_reset
    assert run(kernel, "kept").result_repr == "'yes'"


def test_allocating_10_gb(kernel: Kernel) -> None:
    run(kernel, "kept = 3")
    for code in ("a = np.ones(10 * 2**30, dtype=np.uint8)", "b = bytearray(10 * 2**30)"):
        result = run(kernel, code)
        assert result.limit == "memory" and "MemoryError" in result.error and not result.namespace_reset
    assert run(kernel, "kept").result_repr == "3"


def test_network_refused(kernel: Kernel) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        for code in (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)",
            "import socket\nsocket.getaddrinfo('example.com', 80)",
            "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:1', timeout=1)",
        ):
            result = run(kernel, code)
            assert not result.ok and "network access is not allowed" in result.error, result
        server.settimeout(0.2)
        with pytest.raises(TimeoutError):
            server.accept()
    if os.geteuid() == 0:
        assert kernel.confinement["network_namespace"]


def test_blocked_imports_and_reads(kernel: Kernel) -> None:
    for module in ("mujoco", "robodojo.sim", "robodojo.sim.world", "robodojo.motion", "robodojo.robots", "ctypes"):
        result = run(kernel, f"import {module}")
        assert "ImportError" in result.error and "not allowed in a cell" in result.error, (module, result)
    sneaky = run(kernel, "import importlib\nimportlib.import_module('ctypes')")
    assert "ImportError" in sneaky.error
    assert run(kernel, "np.arange(3).ctypes.data_as(int)").error  # numpy's reference to ctypes is disarmed
    assert run(kernel, "np.ctypeslib.as_ctypes(np.zeros(2))").error
    world = PACKAGE_ROOT / "src" / "robodojo" / "sim" / "world.py"
    result = run(kernel, f"open({str(world)!r}).read()")
    assert "PermissionError" in result.error and "not allowed" in result.error
    assert run(kernel, f"len(open({str(PACKAGE_ROOT / 'README.md')!r}).read()) > 0").result_repr == "True"


def test_writes_only_in_scratch(kernel: Kernel, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = run(kernel, f"open({str(outside)!r}, 'w').write('x')")
    assert "PermissionError" in result.error and not outside.exists()
    result = run(kernel, f"import os\nos.remove({str(PACKAGE_ROOT / 'pyproject.toml')!r})")
    assert "PermissionError" in result.error and (PACKAGE_ROOT / "pyproject.toml").exists()
    inside = run(kernel, "open('notes.txt', 'w').write('hello')\nnp.save('a.npy', np.ones(3))\nsorted(os.listdir('.'))")
    assert inside.ok and "notes.txt" in inside.result_repr
    assert (kernel.scratch_dir / "notes.txt").read_text() == "hello"


def test_secrets_not_reachable(kernel: Kernel) -> None:
    assert os.environ["OPENAI_API_KEY"] == FAKE_SECRET
    result = run(kernel, "import os\nsorted(os.environ), os.environ.get('OPENAI_API_KEY')")
    assert "OPENAI_API_KEY" not in result.result_repr and result.result_repr.endswith("None)")
    environ = run(kernel, f"open('/proc/{os.getpid()}/environ', 'rb').read()")
    assert "PermissionError" in environ.error and FAKE_SECRET not in environ.error
    ppid = run(kernel, "import os\nopen(f'/proc/{os.getppid()}/environ', 'rb').read()")
    assert "PermissionError" in ppid.error and FAKE_SECRET not in ppid.error


def test_signals_refused_and_parent_unaffected(kernel: Kernel) -> None:
    for code in (
        f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        "import os, signal\nos.killpg(0, signal.SIGKILL)",
        f"import os, signal\nsignal.pidfd_send_signal(os.pidfd_open({os.getpid()}), signal.SIGKILL)",
    ):
        result = run(kernel, code)
        assert "PermissionError" in result.error and not result.namespace_reset, (code, result)
    assert_usable(kernel)


def test_sys_exit_is_an_error_and_keeps_namespace(kernel: Kernel) -> None:
    run(kernel, "kept = 'still here'")
    result = run(kernel, "import sys\nsys.exit(3)")
    assert not result.ok and "SystemExit: 3" in result.error and not result.namespace_reset
    assert run(kernel, "kept").result_repr == "'still here'"


def test_os_exit_and_segfault_crash_then_recover(kernel: Kernel) -> None:
    run(kernel, "kept = 1")
    result = run(kernel, "import os\nos._exit(7)")
    assert result.limit == "crashed" and result.namespace_reset
    assert result.error.startswith("the kernel process exited (code 7); its namespace was reset")
    assert "NameError" in run(kernel, "kept").error
    segfault = run(kernel, "import faulthandler\nfaulthandler._sigsegv()")
    assert segfault.limit == "crashed" and "SIGSEGV" in segfault.error
    assert_usable(kernel)


def test_kernel_dying_between_cells_is_reported(kernel: Kernel) -> None:
    run(kernel, "kept = 1")
    assert kernel.pid is not None
    os.kill(kernel.pid, signal.SIGKILL)  # from outside: a cell's own threads cannot outlive it
    time.sleep(0.2)
    result = run(kernel, "1 + 1")
    assert result.ok and result.result_repr == "2" and result.namespace_reset
    assert "exited (code -9)" in result.stderr


@pytest.mark.parametrize(
    ("code", "named"),
    [
        ("import sys\nsys.modules['numpy'] = None", "sys.modules['numpy'] was replaced"),
        ("import sys\ndel sys.modules['pickle']", "sys.modules['pickle'] was removed"),
        ("import pickle\npickle.loads = lambda data: None", "pickle.loads was replaced"),
        ("import builtins\nbuiltins.repr = lambda value: 'nope'", "builtins.repr was replaced"),
        ("import os\ndel os.getpid", "os.getpid was deleted"),
        ("import multiprocessing.connection as c\nc.Connection.recv_bytes = None", "Connection.recv_bytes"),
        ("import sys\nsys.meta_path.pop(0)", "import blocker is no longer first in sys.meta_path"),
        ("import numpy._core.numeric as n\nn._frombuffer = None", "robo results no longer load in the kernel"),
    ],
)
def test_a_cell_that_breaks_the_kernel_gets_a_fresh_one(kernel: Kernel, code: str, named: str) -> None:
    run(kernel, "kept = 1")
    result = run(kernel, code + "\nprint('done')")
    assert result.limit == "broken" and result.namespace_reset and result.ok, result
    assert result.stdout == "done\n"  # the cell itself ran; its output is kept
    assert named in result.stderr and "the kernel was restarted and its namespace reset" in result.stderr
    assert "NameError" in run(kernel, "kept").error
    arrays = run(kernel, "robo.state().tcp_pos_m * 2, robo.echo(np.arange(2))")  # numpy results load again
    assert arrays.ok and arrays.result_repr == "(array([ 0.2, -0.4,  1.8]), ((array([0, 1]),), {}))", arrays
    assert_usable(kernel)


def test_a_builtin_the_kernel_uses_replaced(kernel: Kernel) -> None:
    # len is needed to send the result: the kernel cannot even answer, exits, and the parent resets it.
    result = run(kernel, "import builtins\nbuiltins.len = lambda value: 0")
    assert result.limit in ("broken", "crashed") and result.namespace_reset
    assert_usable(kernel)


def test_harmless_changes_keep_the_namespace(kernel: Kernel) -> None:
    run(kernel, "kept = 'yes'")
    for code in (
        "import threading\nthreading.excepthook = print",
        "import json, sys\ndel sys.modules['json']\nimport json",  # not the kernel's: re-imported, nothing broken
        "import warnings\nwarnings.simplefilter('ignore')",
        "np.set_printoptions(precision=2)\nimport os\nos.environ['X'] = '1'",
        "import sys\nsys.stdout = open('elsewhere.txt', 'w')\nsys.stdin = None",
        "__builtins__ = {}",
        "import cv2\ncv2.GaussianBlur(np.zeros((300, 300, 3), np.uint8), (5, 5), 0).shape",  # no native pool left
    ):
        result = run(kernel, code)
        assert result.ok and not result.namespace_reset and result.limit is None, (code, result)
    after = run(kernel, "print(len(kept))\nkept")
    assert after.stdout == "3\n" and after.result_repr == "'yes'"  # stdout and builtins restored for every cell


def test_threads_do_not_outlive_their_cell(kernel: Kernel) -> None:
    leave = (
        "import threading, time\nprint('before')\n"
        "threading.Thread(target=time.sleep, args=(30,), name='sleeper', daemon=True).start()"
    )
    for code, named in (
        (leave, "sleeper (daemon)"),
        ("import threading, time\nthreading.Thread(target=time.sleep, args=(30,)).start()", "Thread-"),
        ("import _thread, time\n_thread.start_new_thread(time.sleep, (30,))", "1 thread(s) started outside"),
        ("from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(2)\npool.submit(abs, 1)",
         "ThreadPoolExecutor"),  # kept in the namespace: its idle workers wait for more
    ):  # fmt: skip
        run(kernel, "kept = 1")
        pid = kernel.pid
        result = run(kernel, code)
        assert result.limit == "threads" and result.namespace_reset and result.ok, (code, result)
        assert named in result.stderr and "a thread may not outlive its cell" in result.stderr
        assert kernel.pid is None and not Path(f"/proc/{pid}").exists()  # the threads died with the process
        assert "NameError" in run(kernel, "kept").error
    assert run(kernel, leave).stdout == "before\n"  # the cell's output is kept


def test_threads_that_end_with_their_cell_are_fine(kernel: Kernel) -> None:
    run(kernel, "kept = 1")
    for code in (
        "import threading, time\nt = threading.Thread(target=time.sleep, args=(0.1,))\nt.start()\nt.join()",
        "import threading, time\nthreading.Thread(target=time.sleep, args=(0.1,)).start()",  # ends in the grace
        "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(4) as ex:\n"
        "    print(sum(ex.map(abs, range(-10, 0))))",
    ):
        result = run(kernel, code)
        assert result.ok and not result.namespace_reset and result.limit is None, (code, result)
    assert run(kernel, "kept").result_repr == "1"


def test_replacing_robo_methods(kernel: Kernel, robot: FakeRobot) -> None:
    result = run(kernel, "robo.add = lambda a, b: 0")
    assert "AttributeError" in result.error and "read-only" in result.error
    patched = run(kernel, "type(robo).add = staticmethod(lambda a, b: -1)\nrobo.add(1, 2)")
    assert patched.result_repr == "-1"
    assert_usable(kernel)  # the next cell has the real method again
    run(kernel, "del robo")
    assert_usable(kernel)
    assert FUNCTIONS["add"](1, 2) == 3 and robot.calls[-1] == "add"


def test_forged_messages_do_not_reach_the_parent(kernel: Kernel, robot: FakeRobot, tmp_path: Path) -> None:
    channel = "ch = robo.add.__closure__[0].cell_contents\n"
    before = list(robot.calls)
    unknown = run(kernel, channel + "import pickle\nch.conn.send_bytes(pickle.dumps(('call', '__init__', (), {})))\n"
                  "pickle.loads(ch.conn.recv_bytes())")  # fmt: skip
    assert "robo has no attribute '__init__'" in unknown.result_repr and robot.calls == before
    marker = tmp_path / "pwned"
    evil = (
        channel + "import os, pickle\nclass Evil:\n    def __reduce__(self):\n"
        f"        return (os.system, ('touch {marker}',))\nch.conn.send_bytes(pickle.dumps(Evil()))\nimport time\n"
        "time.sleep(5)"
    )
    result = run(kernel, evil)
    assert result.limit == "crashed" and "not allowed" in result.error and result.namespace_reset
    assert not marker.exists()
    assert_usable(kernel)


def test_robo_from_a_thread_after_its_cell_ended(kernel: Kernel) -> None:
    code = (
        "import threading, time\nlate = []\ndef later():\n    time.sleep(0.2)\n    try:\n        robo.add(1, 1)\n"
        "    except Exception as e:\n        late.append(repr(e))\nthreading.Thread(target=later).start()"
    )
    assert run(kernel, code).ok
    time.sleep(0.5)
    assert "only while a cell runs" in run(kernel, "late[0]").result_repr
    assert_usable(kernel)


def test_parent_unpickles_only_plain_data() -> None:
    core = getattr(np, "_core", None) or np.core

    class HugeArray:
        def __reduce__(self) -> tuple:
            return (core.multiarray._reconstruct, (np.ndarray, (10**12,), b"b"))

    class Shell:
        def __reduce__(self) -> tuple:
            return (os.system, ("true",))

    plain = (np.arange(5.0), np.float32(2.5), {1, 2}, frozenset({3}), 1j, slice(1, 2), "text", b"bytes", None)
    loaded = loads_from_child(pickle.dumps(plain, protocol=pickle.HIGHEST_PROTOCOL))
    assert np.array_equal(loaded[0], plain[0]) and loaded[1:] == plain[1:]
    for forged in (HugeArray(), Shell(), ArmState("left", (), (), (0, 0, 0), (1, 0, 0, 0), 1.0)):
        with pytest.raises(pickle.UnpicklingError):
            loads_from_child(pickle.dumps(forged, protocol=pickle.HIGHEST_PROTOCOL))


def test_confinement_reported(kernel: Kernel) -> None:
    info = kernel.confinement
    assert set(info) >= {"network_namespace", "uid", "no_new_privs", "notes"}
    if os.geteuid() == 0:
        assert info["uid"] != 0 and info["no_new_privs"] and not info["notes"]
        assert run(kernel, "import os\nos.getuid()").result_repr == str(info["uid"])


# -- pieces -------------------------------------------------------------------------------------------------------


def test_trim_text_and_bounded_capture() -> None:
    assert trim_text("abc", 3) == "abc"
    assert trim_text("a" * 5 + "b" * 5, 4) == "aa\n[... 6 characters omitted ...]\nbb"
    capture = BoundedCapture(10, "<stdout>")
    for piece in ("0123", "4567", "89", "abcdefghij" * 100, "XYZ"):
        capture.write(piece)
    assert capture.trimmed and capture.total == 1013
    assert capture.getvalue() == "01234\n[... 1003 characters omitted ...]\nijXYZ"
    capture.reset()
    capture.write("short")
    assert capture.getvalue() == "short" and not capture.trimmed


def test_config_defaults_and_unknown_keys(tmp_path: Path) -> None:
    limits, containment = load_kernel_config()
    assert limits.wall_s == 60 and limits.memory_bytes == 2 * 2**30
    assert "mujoco" in containment.blocked_modules and "OPENAI_API_KEY" not in containment.env_passthrough
    bad = tmp_path / "kernel.yaml"
    bad.write_text("limits:\n  wall_seconds: 3\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_kernel_config(bad)
