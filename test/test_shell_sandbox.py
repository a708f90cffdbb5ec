"""The shell harness's sandbox, attacked from inside (seed 003: ground truth and credentials isolated by
architecture). Every command runs through the real bubblewrap sandbox; only the robot's command route answers."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import threading
from dataclasses import replace

import pytest

import robodojo
from robodojo import PACKAGE_ROOT
from robodojo.agents.shell.model_proxy import ModelProxy
from robodojo.agents.shell.settings import load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

SECRET = "sk-test-must-never-be-seen"


@pytest.fixture(params=["auto", "off"])
def sandbox(request, tmp_path, monkeypatch):
    """The sandbox with a user namespace (auto, where the kernel allows one) and without (off: what a chroot or a
    container without user namespaces gets, root only): every attack below must fail in both."""
    if request.param == "off" and os.geteuid() != 0:
        pytest.skip("a sandbox without a user namespace needs root")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ROBODOJO_LLM_API_KEY", SECRET)
    served = []

    def handler(argv):
        served.append(argv)
        return {"ok": True, "command": argv[0] if argv else "", "verdict": "executed"}

    settings = load_shell_settings()
    settings = replace(settings, sandbox=replace(settings.sandbox, user_namespace=request.param))
    workspace = ShellWorkspace(settings, handler, root=tmp_path / "ws")
    yield workspace, served
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


def test_a_symlink_out_of_the_work_folder_is_not_followed_by_the_harness(sandbox):
    workspace, _ = sandbox
    run(workspace, "ln -s /etc/passwd leak.png; ln -s ../../run leak2")
    assert workspace.host_path("leak.png") is None and workspace.host_path("leak2/x") is None
    assert workspace.host_path("/etc/hostname") is None and workspace.host_path("obs/head.png") is not None


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
