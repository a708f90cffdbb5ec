"""The agent node's shutdown notice: a stop signal marks the node at once (not when the main thread next polls), and a
robot side lost around the same time ends the episode as interrupted, while a loss with no signal stays a loss."""

from __future__ import annotations

import signal
import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")

from robodojo.errors import BackendLostError, EpisodeInterrupted
from robodojo.nodes.runtime import _StopFlag


@pytest.fixture
def agent_graph(built_interfaces):
    """robodojo.nodes.agent_graph: it imports the project's action and message types."""
    from robodojo.nodes import agent_graph

    return agent_graph


def test_the_stop_signal_handler_marks_the_node_before_anything_polls(agent_graph):
    node = SimpleNamespace(stop_signaled=False)
    flag = _StopFlag("agent_node")
    notice = agent_graph.ShutdownNotice(node)  # type: ignore[arg-type]
    assert not notice.is_set()
    flag._on_signal(signal.SIGINT, None)  # no node yet: counted only
    assert flag.received == 1 and not node.stop_signaled
    flag.node = node  # type: ignore[assignment]
    flag._on_signal(signal.SIGINT, None)
    assert node.stop_signaled and notice.is_set() and notice.wait(0.0)


# The main thread blocked in a read (as a starved one is not scheduled): a SIGINT sent to the worker thread reaches
# the process, but its Python handler cannot run until the main thread does. The worker must see it anyway.
STARVED_MAIN_THREAD = """
import os, signal, threading
from robodojo.nodes.runtime import _StopFlag
flag = _StopFlag("test")
flag.install()
release_r, release_w = os.pipe()
def worker():
    before = flag.arrived()
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    print(f"before {before} received {flag.received} arrived {flag.arrived()}", flush=True)
    os.write(release_w, b"x")
threading.Thread(target=worker).start()
os.read(release_r, 1)
print(f"main received {flag.received}", flush=True)
flag.ignore()
"""


def test_a_stop_signal_is_seen_before_a_starved_main_thread_runs_its_handler():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", STARVED_MAIN_THREAD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "before False received 0 arrived True" in out.stdout, out.stdout + out.stderr
    assert "main received 1" in out.stdout  # the handler ran once the main thread did


def test_close_sets_the_notice_and_a_waiter_wakes_for_it(agent_graph):
    notice = agent_graph.ShutdownNotice(SimpleNamespace(stop_signaled=False))  # type: ignore[arg-type]
    assert not notice.wait(0.05)
    threading.Timer(0.1, notice.set).start()
    start = time.monotonic()
    assert notice.wait(5.0)
    assert time.monotonic() - start < 2.0


def test_a_loss_just_before_the_node_s_own_signal_is_an_interruption(agent_graph):
    node = SimpleNamespace(stop_signaled=False)
    notice = agent_graph.ShutdownNotice(node)  # type: ignore[arg-type]
    threading.Timer(0.1, lambda: setattr(node, "stop_signaled", True)).start()
    lost = pytest.raises(EpisodeInterrupted, match="the robot side stopped too: motion server gone")
    with lost, agent_graph.losses_after_interruption(notice):
        raise BackendLostError("motion server gone")


def test_a_loss_without_a_signal_stays_a_loss(agent_graph, monkeypatch):
    monkeypatch.setattr(agent_graph, "SHUTDOWN_NOTICE_S", 0.1)
    notice = agent_graph.ShutdownNotice(SimpleNamespace(stop_signaled=False))  # type: ignore[arg-type]
    with pytest.raises(BackendLostError, match="simulator gone"), agent_graph.losses_after_interruption(notice):
        raise BackendLostError("simulator gone")
