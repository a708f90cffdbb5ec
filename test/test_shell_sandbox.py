"""The shell harness's sandbox, attacked from inside (seed 003: ground truth and credentials isolated by
architecture). Every command runs through the real bubblewrap sandbox; only the robot's command route answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sys
import threading
import tracemalloc
from dataclasses import replace

import pytest

import robodojo
from robodojo import PACKAGE_ROOT
from robodojo.agents.shell import host_files
from robodojo.agents.shell.commands import BaseCommands
from robodojo.agents.shell.delivery import check_task_tools
from robodojo.agents.shell.model_proxy import ModelProxy
from robodojo.agents.shell.route import MAX_REQUEST_BYTES, RECV_BYTES
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace
from robodojo.episodes import episode_context

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

SECRET = "sk-test-must-never-be-seen"


@pytest.fixture(params=["auto", "off"])
def settings(request):
    """The sandbox with a user namespace (auto, where the kernel allows one) and without (off: what a chroot or a
    container without user namespaces gets, root only): every attack below must fail in both."""
    if request.param == "off" and os.geteuid() != 0:
        pytest.skip("a sandbox without a user namespace needs root")
    settings = load_shell_settings()
    return replace(settings, sandbox=replace(settings.sandbox, user_namespace=request.param))


@pytest.fixture
def sandbox(settings, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ROBODOJO_LLM_API_KEY", SECRET)
    served = []

    def handler(argv):
        served.append(argv)
        return {"ok": True, "command": argv[0] if argv else "", "verdict": "executed"}

    workspace = ShellWorkspace(settings, handler, root=tmp_path / "ws")
    yield workspace, served
    workspace.close()


@pytest.fixture
def robot(settings, dual_world, tmp_path):
    """A workspace whose robo commands run on the embedded world (robo obs renders and writes the real files)."""
    dual_world.reset("general_pickup", seed=0)
    holder: dict[str, BaseCommands] = {}
    workspace = ShellWorkspace(settings, lambda argv: holder["commands"].run(argv), root=tmp_path / "ws")
    holder["commands"] = BaseCommands(episode_context(dual_world), settings.commands, workspace.obs_dir,
                                      obs_note=workspace.obs_note)  # fmt: skip
    yield workspace
    workspace.close()


def run(workspace, command: str) -> str:
    outcome = workspace.run(command, timeout_s=60)
    assert not outcome.timed_out, command
    return outcome.output


def test_the_robot_route_is_the_one_thing_that_answers(sandbox):
    workspace, served = sandbox
    assert '"ok": true' in run(workspace, "robo status")
    assert served == [["status"]]


@pytest.mark.parametrize(
    "module", ["mujoco", "robodojo.sim", "robodojo.sim.world", "robodojo.motion", "robodojo.episodes", "mink"]
)
def test_the_simulator_and_task_code_cannot_be_imported(sandbox, module):
    workspace, _ = sandbox
    out = run(workspace, f"python3 -c 'import {module}' 2>&1; echo status=$?")
    assert "ModuleNotFoundError" in out and "status=1" in out


def test_the_agent_side_perception_is_there(sandbox):
    workspace, _ = sandbox
    out = run(
        workspace, "python3 -c 'import numpy, cv2, robodojo.perception.table_plane, robo_shell.api; print(\"ok\")'"
    )
    assert out.strip().endswith("ok")


def test_no_host_folder_is_reachable(sandbox, tmp_path):
    workspace, _ = sandbox
    secret_dirs = [PACKAGE_ROOT, PACKAGE_ROOT / "src" / "robodojo" / "sim", tmp_path, os.path.expanduser("~"),
                   "/etc/shadow", "/var", "/srv", "/work"]  # fmt: skip
    for path in secret_dirs:
        if str(path) == "/root":
            continue  # the interpreter's prefix lives under /root here: only that folder is shown (checked below)
        out = run(workspace, f"test -e '{path}' && echo present || echo absent")
        assert out.strip() == "absent", path
    shown = run(workspace, "ls -A /root; ls /")
    assert "robodojo" not in shown and "work" not in shown.split()
    if not sys.base_prefix.startswith("/usr"):  # an interpreter outside the runtime: only its own folder is shown
        assert run(workspace, f"ls {sys.base_prefix}/.. | wc -l").strip() == "1"
    # the sandbox's robodojo is the agent-side subset
    inside = run(workspace, "ls /opt/robo/lib/robodojo").split()
    assert "sim" not in inside and "perception" in inside
    assert set(inside) <= {p.name for p in (PACKAGE_ROOT / "src" / "robodojo").iterdir()}
    assert robodojo.__file__  # the host's package is untouched


def test_no_credentials_inside(sandbox):
    workspace, _ = sandbox
    out = run(workspace, "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert SECRET not in out and "OPENAI" not in out
    assert "ROBO_ROUTE=" in out


def test_no_network_route(sandbox):
    workspace, _ = sandbox
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        script = (
            "import socket\n"
            f"for host in ('127.0.0.1', '10.0.2.2', '1.1.1.1'):\n"
            "    s = socket.socket(); s.settimeout(3)\n"
            f"    try: s.connect((host, {port})); print('CONNECTED', host)\n"
            "    except OSError as e: print('refused', host, type(e).__name__)\n"
            "try: socket.getaddrinfo('pypi.org', 443); print('RESOLVED')\n"
            "except OSError as e: print('no dns', type(e).__name__)\n"
        )
        out = run(workspace, f"python3 - <<'PY'\n{script}PY\nip -o link 2>/dev/null || cat /proc/net/dev")
    finally:
        server.close()
    assert "CONNECTED" not in out and "RESOLVED" not in out
    assert out.count("refused") == 3 and "no dns" in out
    interfaces = [line.split(":")[0].strip() for line in out.splitlines() if ":" in line and "|" not in line]
    assert not [i for i in interfaces if i and i not in ("lo", "1")], out


def test_read_only_everywhere_but_the_work_folder(sandbox):
    workspace, _ = sandbox
    targets = "/opt/robo/lib/robo_shell/x /opt/robo/tools/pool/pick/tool.py /usr/x /opt/robo/bin/robo"
    out = run(
        workspace,
        f"for p in {targets}; do (echo x >> $p) 2>/dev/null && echo WROTE $p || echo denied $p; done; "
        "echo hi > notes.txt && cat notes.txt",
    )
    assert "WROTE" not in out and out.count("denied") == 4 and out.strip().endswith("hi")
    assert (workspace.work_dir / "notes.txt").read_text() == "hi\n"


def test_unprivileged_and_alone(sandbox):
    workspace, _ = sandbox
    out = run(workspace, "id -u; grep CapEff /proc/self/status; ls /proc | grep -c '^[0-9]'; "
              "cat /proc/*/cmdline 2>/dev/null | tr '\\0' ' '")  # fmt: skip
    lines = out.splitlines()
    assert lines[0] == ("1000" if workspace.sandbox.user_namespace else "0")  # without one: root with no capabilities
    assert lines[1].split()[1] == "0000000000000000"
    assert int(lines[2]) < 10  # a PID namespace of its own: the host's processes are not there
    assert "pytest" not in out
    # a kill aimed at the host's processes finds nothing to kill
    assert os.getpid() > 10 and "No such process" in run(workspace, f"kill -9 {os.getpid()} 2>&1; true")


def test_what_the_agent_links_to_is_never_read_by_the_harness(sandbox, tmp_path):
    workspace, _ = sandbox
    secret = tmp_path / "secret.txt"  # a host file: its path is what /proc/self/mountinfo lets the agent learn
    secret.write_text(SECRET)
    out = run(workspace, f"ln -s {secret} leak.txt; ln -s ../../robo/route.sock sock; mkfifo fifo; "
                         "echo hi > plain.txt; cat /proc/self/mountinfo")  # fmt: skip
    assert str(workspace.work_dir) in out  # the kernel shows a bind mount's source: not hidden, and harmless
    assert workspace.read_file("leak.txt", 1000) == (None, "'leak.txt' does not exist")
    assert workspace.read_file(str(secret), 1000)[0] is None
    assert workspace.read_file("fifo", 1000) == (None, "'fifo' is not a regular file")  # and nothing blocked
    assert workspace.read_file("sock", 1000)[0] is None
    assert workspace.read_file("plain.txt", 1000) == (b"hi\n", "")
    assert workspace.read_file("plain.txt", 2)[1] == "'plain.txt' is larger than 2 bytes"


def test_the_route_folder_is_read_only_and_the_route_survives(sandbox):
    workspace, served = sandbox
    out = run(workspace, "for c in 'rm -f /run/robo/route.sock' 'touch /run/robo/x' 'mv /run/robo/route.sock /tmp/r' "
                         "'mkdir /run/robo/obs/x' 'ln -s /etc /run/robo/obs/y' 'ln /run/robo/route.sock hard'; "
                         "do (eval \"$c\") 2>/dev/null && echo DID $c || echo denied; done; robo status")  # fmt: skip
    assert "DID" not in out and out.count("denied") == 6, out
    assert workspace.route.path.is_socket() and served == [["status"]]
    assert sorted(p.name for p in workspace.route.path.parent.iterdir()) == ["obs", "route.sock"]


def test_hard_links_to_the_harness_files_cannot_be_made(sandbox):
    workspace, _ = sandbox
    (workspace.obs_dir / "state.json").write_text("{}")  # as robo obs leaves it
    out = run(workspace, "for f in /run/robo/obs/state.json /run/robo/route.sock /opt/robo/bin/robo "
                         "/opt/robo/etc/enabled_tools.txt /opt/robo/tools/pool/pick/tool.py; "
                         "do ln $f h 2>&1 | grep -o 'Invalid cross-device link' || echo LINKED $f; done")  # fmt: skip
    assert "LINKED" not in out and out.count("cross-device") == 5, out


def test_a_silent_client_stalls_no_one(sandbox):
    workspace, served = sandbox
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # from the host: connects and sends nothing
    half = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # half a request, never ended
    silent.connect(str(workspace.route.path))
    half.connect(str(workspace.route.path))
    half.sendall(b'{"argv": ["sta')
    try:
        script = ("python3 -c 'import socket, time; s = socket.socket(socket.AF_UNIX); "
                  "s.connect(\"/run/robo/route.sock\"); time.sleep(60)' & sleep 0.3; "
                  "robo status && robo status && robo status")  # fmt: skip
        outcome = workspace.run(script, timeout_s=60)  # generous: the silent ones would hold each 10 s before
    finally:
        silent.close()
        half.close()
    assert not outcome.timed_out and outcome.exit_code == 0, outcome.output
    assert served == [["status"]] * 3
    answered = [c for c in outcome.calls if c.answered]
    assert [c.argv for c in answered] == [["status"]] * 3
    dropped = [c for c in outcome.calls if not c.answered]
    assert len(dropped) == 3 and all(c.record["verdict"] == "usage" for c in dropped)


def test_a_flooding_client_is_cut_at_the_request_limit_and_stalls_no_one(sandbox):
    workspace, served = sandbox
    script = ("python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"/run/robo/route.sock\"); "
              "s.sendall(b\"x\" * 50_000_000)' 2>/dev/null & for i in 1 2 3; do robo status >/dev/null; done; "
              "wait; echo done")  # fmt: skip
    outcome = workspace.run(script, timeout_s=60)
    assert not outcome.timed_out and outcome.output.strip().endswith("done")
    assert served == [["status"]] * 3
    (flood,) = [c for c in outcome.calls if not c.argv]
    assert f"more than {MAX_REQUEST_BYTES} bytes" in flood.record["reason"]
    assert workspace.route.peak_buffered_bytes <= MAX_REQUEST_BYTES + RECV_BYTES  # 50 MB sent, this much held


def test_output_is_bounded_in_memory_while_it_is_read(sandbox):
    workspace, _ = sandbox
    flood_bytes = 50 << 20
    tracemalloc.start()
    try:
        outcome = workspace.run(f"yes | head -c {flood_bytes}; echo; echo the-end", timeout_s=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    output = workspace.last_output
    assert output is not None and output.total == flood_bytes + len("\nthe-end\n")
    keep = workspace.settings.agent.max_output_chars * 4
    assert output.peak_held <= 3 * keep  # head, and a tail cut back whenever it doubles
    assert peak < 4 * 3 * keep + (1 << 20)  # what Python allocated meanwhile: a few hundred kB for a 50 MB flood
    assert len(outcome.output) < workspace.settings.agent.max_output_chars + 100
    assert outcome.output.startswith("y\ny\n") and outcome.output.endswith("y\n\nthe-end\n")
    head, rest = outcome.output.split("\n[... ")
    omitted, tail = rest.split(" bytes omitted ...]\n")
    assert int(omitted) == output.total - len(head.encode()) - len(tail.encode())  # every byte counted


def host_folder(tmp_path):
    """A host folder and file the agent aims at: the harness must write into neither."""
    folder, file = tmp_path / "host", tmp_path / "host_file"
    folder.mkdir()
    file.write_text("host file, unchanged")
    return folder, file


def obs_records(outcome) -> list[dict]:
    return [json.loads(line) for line in outcome.output.splitlines() if line.startswith("{")]


def assert_untouched(folder, file, workspace):
    assert not list(folder.iterdir()) and file.read_text() == "host file, unchanged"
    listing = host_files.list_tree(workspace.obs_dir)  # the harness's obs/: its files and no leftovers
    assert sorted(listing.files) == ["cameras.json", "head.png", "left_wrist.png", "right_wrist.png", "state.json"]
    assert not listing.refused and not listing.folders


def test_robo_obs_writes_only_the_harness_folder_whatever_obs_is(robot, tmp_path):
    folder, file = host_folder(tmp_path)
    # obs replaced with a link to a host folder (found from outside), then to a harness folder whose host path
    # /proc/self/mountinfo tells (the root of the mount at /home/agent)
    script = (f"rm obs && ln -s {folder} obs && robo obs; "
              "W=$(awk '$5 == \"/home/agent\" {print $4}' /proc/self/mountinfo); echo \"work=$W\"; "
              "rm obs && ln -s \"$(dirname $W)/run/etc\" obs && robo obs")  # fmt: skip
    outcome = robot.run(script, timeout_s=120)
    first, second = obs_records(outcome)
    assert first["ok"] and second["ok"] and "no longer the link to /run/robo/obs" in first["note"]
    # the premise: mountinfo tells the work folder's host path (from its filesystem's root: in a chroot, the chroot's
    # own path comes first)
    assert re.search(rf"work=\S*{re.escape(str(robot.work_dir))}\s", outcome.output), outcome.output[-2000:]
    assert sorted(p.name for p in (robot.root / "run" / "etc").iterdir()) == ["enabled_tools.txt"]
    assert_untouched(folder, file, robot)


def test_links_and_fifos_in_obs_are_never_written_through_nor_opened(robot, tmp_path):
    folder, file = host_folder(tmp_path)
    script = (f"ln -s {file} /run/robo/obs/.state.json.tmp.json 2>/dev/null && echo PLANTED; "
              f"mkfifo /run/robo/obs/cameras.json 2>/dev/null && echo PLANTED; "
              f"rm obs && mkdir obs && ln -s {file} obs/.state.json.tmp.json && ln -s {file} obs/state.json && "
              f"ln -s {folder} obs/head.png && mkfifo obs/cameras.json && robo obs; ls -A obs")  # fmt: skip
    outcome = robot.run(script, timeout_s=120)  # a FIFO opened for writing would block here until the timeout
    assert not outcome.timed_out and "PLANTED" not in outcome.output
    (record,) = obs_records(outcome)
    assert record["ok"] and "note" in record
    assert outcome.output.split("}\n", 1)[1].split() == [".state.json.tmp.json", "cameras.json", "head.png",
                                                         "state.json"]  # fmt: skip
    assert_untouched(folder, file, robot)


def test_a_deleted_obs_link_is_made_again(robot):
    outcome = robot.run("rm obs; robo obs >/dev/null; readlink obs; ls obs", timeout_s=120)
    assert outcome.output.split() == ["/run/robo/obs", "cameras.json", "head.png", "left_wrist.png",
                                      "right_wrist.png", "state.json"]  # fmt: skip


def test_renames_racing_robo_obs_write_nothing_outside(robot, tmp_path):
    folder, file = host_folder(tmp_path)
    script = (f"(while :; do ln -sfn {folder} l && mv -T l obs; mkdir -p d && mv -T d obs 2>/dev/null; "
              f"ln -sf {file} obs/.state.json.tmp.json 2>/dev/null; done) & "
              "for i in $(seq 10); do robo obs >/dev/null || echo FAILED; done; kill %1; echo finished")  # fmt: skip
    outcome = robot.run(script, timeout_s=300)
    assert outcome.output.strip().endswith("finished") and "FAILED" not in outcome.output
    assert sum(c.argv == ["obs"] and c.record["ok"] for c in outcome.calls) == 10
    assert_untouched(folder, file, robot)


def test_the_optimizers_links_fifos_and_late_writes_stay_in_its_copy(settings, tmp_path):
    folder, file = host_folder(tmp_path)
    file.write_text(SECRET)
    task = tmp_path / "tools" / "task"
    (task / "t").mkdir(parents=True)
    (task / "t" / "tool.py").write_text("NAME = 't'\n")
    (task / "t" / "interface.md").write_text("### t\n")
    (task / "enabled_tools.txt").write_text("t\n")
    ws = ShellWorkspace(settings, lambda argv: {"ok": False}, task_tools=task, task_tools_writable=True,
                        root=tmp_path / "ws")  # fmt: skip
    try:
        script = (f"cd /opt/robo/tools/task && ln -sf {file} t/interface.md && mkfifo t/pipe && "
                  f"rm enabled_tools.txt && mkfifo enabled_tools.txt && ln -s {folder} t/out && "
                  "ln t/tool.py t/copy.py && (ln /opt/robo/tools/pool/pick/tool.py t/pool.py 2>/dev/null || "
                  f"echo no-cross-link); (sleep 2; ln -s {file} late) & echo started")  # fmt: skip
        outcome = ws.run(script, timeout_s=60)
        assert "no-cross-link" in outcome.output and "started" in outcome.output
        ws.run("sleep 3", timeout_s=60)  # the background writer had its time, had it outlived its command
        exported = ws.export_task_tools()
    finally:
        ws.close()
    assert sorted(exported.refused) == ["enabled_tools.txt: a FIFO", "t/interface.md: a symbolic link",
                                        "t/out: a symbolic link", "t/pipe: a FIFO"]  # fmt: skip
    assert sorted(exported.files) == ["t/copy.py", "t/tool.py"]  # no "late": it died with its command
    listing = host_files.list_tree(task)
    assert not listing.refused and sorted(listing.files) == ["t/copy.py", "t/tool.py"]
    assert (task / "t" / "copy.py").stat().st_nlink == 1  # a copy, not the agent's hard link
    assert not list(folder.iterdir())
    # the harness reading the folder afterwards: the manual, the delivery check; nothing blocks, no secret leaks
    after = ShellWorkspace(settings, lambda argv: {"ok": False}, task_tools=task, root=tmp_path / "ws2")
    try:
        assert SECRET not in after.manual() and after.enabled == list(settings.agent.default_tools)
    finally:
        after.close()
    report = check_task_tools(task, settings, [])
    assert not report.ok and "t: interface.md is missing" in report.problems and SECRET not in str(report)


def test_the_model_is_reached_only_through_the_proxy(sandbox):
    workspace, _ = sandbox
    proxy = ModelProxy(workspace.route.path.parent / "model.sock", model="m")
    answered = []

    def answer():  # the episode thread's part: answer chat requests as the LLM client would
        exchange = proxy.pending.get(timeout=30)
        answered.append(exchange.body)
        exchange.answer({"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    script = (
        "import json, urllib.request, urllib.error\n"
        "base = 'http://127.0.0.1:8765/v1'\n"
        "def call(path, body=None):\n"
        "    data = None if body is None else json.dumps(body).encode()\n"
        "    req = urllib.request.Request(base + path, data=data, headers={'Content-Type': 'application/json'})\n"
        "    try:\n"
        "        with urllib.request.urlopen(req, timeout=20) as r: return r.status, json.load(r)\n"
        "    except urllib.error.HTTPError as e: return e.code, json.load(e)\n"
        "print('models', *call('/models'))\n"
        "print('chat', *call('/chat/completions', {'messages': [{'role': 'user', 'content': 'x'}]}))\n"
        "print('other', call('/embeddings', {'input': 'x'})[0])\n"
        "print('bad', call('/chat/completions', {'prompt': 'x'})[0])\n"
    )
    try:
        out = run(
            workspace,
            "python3 -m robo_shell.forward --listen 127.0.0.1:8765 --to /run/robo/model.sock & sleep 0.3\n"
            f"python3 - <<'PY'\n{script}PY",
        )
    finally:
        thread.join(timeout=5)
        proxy.close()
    assert "models 200" in out and "'id': 'm'" in out
    assert "chat 200" in out and "'content': 'hi'" in out
    assert "other 404" in out and "bad 400" in out
    assert answered == [{"messages": [{"role": "user", "content": "x"}]}]
