"""`robodojo eval --ray ADDRESS` with no cluster there fails at once with one line (ray.init would retry for ever, 41 s
a try), and `eval --ray SPEC` takes SPEC as the spec: the mistakes a user types, before any Ray starts."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.campaigns import engines
from robodojo.campaigns.engines import check_ray_address
from robodojo.cli import main
from robodojo.episodes.viewing import VIEW_ENV
from robodojo.episodes.viewing.settings import CONFIG_ENV as VIEW_CONFIG_ENV
from robodojo.episodes.viewing.sinks import RRD_FILE
from robodojo.errors import ConfigError

pytest.importorskip("ray", reason="Ray is the cluster extra: pip install '.[cluster]' (setup_env.sh installs it)")

SPEC = {
    "name": "ray_address",
    "tasks": ["general_pickup"],
    "seeds": [0],
    "agents": ["move_eef"],
    "llms": {"offline": {"move_eef": f"replay:{PACKAGE_ROOT / 'examples/replay/general_pickup_seed0.yaml'}"}},
}


def _closed_port() -> int:
    """A port on this machine nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


@pytest.mark.parametrize("order", ["spec_first", "ray_first"])
def test_an_address_nothing_answers_at_fails_at_once_in_one_line_whatever_the_order(spec_file, tmp_path, capsys, order):
    address = f"127.0.0.1:{_closed_port()}"
    ray_flag = ["--ray", address]
    argv = ["eval", str(spec_file), *ray_flag] if order == "spec_first" else ["eval", *ray_flag, str(spec_file)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"nothing answers at {address}" in err, err
    assert not (tmp_path / "out" / "episodes").exists()  # nothing ran


def test_ray_first_takes_the_spec_as_the_spec_not_as_an_address(spec_file, tmp_path, monkeypatch, capsys):
    # `--ray SPEC`: the spec is read (its name reaches the error about the missing cluster, not an address error)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def no_ray(*args, **kwargs):
        raise ConfigError("stopped before Ray starts")

    monkeypatch.setattr(engines, "RayEngine", no_ray)
    code = main(["eval", "--ray", str(spec_file), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert "is not a port" not in err and "nothing answers" not in err, err
    assert code == 2 and "stopped before Ray starts" in err, err
    assert (tmp_path / "out" / "campaign.yaml").exists()  # the spec was read and the campaign folder begun


@pytest.mark.parametrize(
    "address, words",
    [
        ("head-node:abc", "is not a port"),
        (":6379", "not an address"),
        ("127.0.0.1:70000", "not an address"),
        ("ray://127.0.0.1:{closed}", "nothing answers at 127.0.0.1:{closed}"),
    ],
)
def test_malformed_and_dead_addresses_are_said_plainly(address, words):
    closed = _closed_port()
    with pytest.raises(ConfigError, match=words.format(closed=closed).replace(".", r"\.")):
        check_ray_address(address.format(closed=closed))


def test_auto_with_no_cluster_noted_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(engines, "RAY_CURRENT_CLUSTER", tmp_path / "ray_current_cluster")
    with pytest.raises(ConfigError, match="ray start --head"):
        check_ray_address("auto")
    (tmp_path / "ray_current_cluster").write_text(f"127.0.0.1:{_closed_port()}\n")
    with pytest.raises(ConfigError, match="nothing answers"):
        check_ray_address("auto")


def test_an_address_that_answers_passes_the_check():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        check_ray_address(f"127.0.0.1:{listening.getsockname()[1]}")


def test_the_episodes_environment_goes_to_ray_workers_and_a_loopback_view_is_refused_on_a_cluster(monkeypatch):
    for name in engines.EPISODE_ENV:
        monkeypatch.delenv(name, raising=False)
    assert engines.episode_env(on_cluster=True) == {}
    monkeypatch.setenv(VIEW_ENV, "rrd")
    monkeypatch.setenv(VIEW_CONFIG_ENV, "/shared/view.yaml")
    assert engines.episode_env(on_cluster=True) == {VIEW_ENV: "rrd", VIEW_CONFIG_ENV: "/shared/view.yaml"}
    for url in ("rerun+http://127.0.0.1:9876/proxy", "rerun+http://localhost:9876/proxy"):
        monkeypatch.setenv(VIEW_ENV, url)
        assert engines.episode_env(on_cluster=False)[VIEW_ENV] == url  # a Ray started here: the same machine
        with pytest.raises(ConfigError, match="loopback"):
            engines.episode_env(on_cluster=True)
    monkeypatch.setenv(VIEW_ENV, "rerun+http://10.0.0.5:9876/proxy")
    assert engines.episode_env(on_cluster=True)[VIEW_ENV].endswith("10.0.0.5:9876/proxy")


@pytest.mark.long
def test_a_cluster_started_without_the_view_still_shows_the_campaign_s_episodes(spec_file, tmp_path):
    """`ray start --head` in an environment without ROBODOJO_VIEW (as on another machine): `eval --ray ADDRESS
    --view rrd` still writes each episode's live view beside its record, the actors given the environment."""
    # no token: a token file another Ray left in ~/.ray makes `ray start` ask for one that ray.init does not send
    quiet_ray = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    env = {k: v for k, v in os.environ.items() if k not in engines.EPISODE_ENV} | quiet_ray
    port = _closed_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit in 107 characters
    start = [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", f"--port={port}",
             "--num-cpus=2", "--object-store-memory=100000000", "--include-dashboard=false", f"--temp-dir={temp}",
             "--disable-usage-stats"]  # fmt: skip
    # a group of its own, ended as a whole (`ray stop` would end every Ray of this user, other tests' too)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.STDOUT}
    head = subprocess.Popen(start, env=env, start_new_session=True, **quiet)
    try:
        out = tmp_path / "campaign"
        command = [sys.executable, "-m", "robodojo.cli", "eval", str(spec_file), "--out", str(out),
                   "--ray", f"127.0.0.1:{port}", "--workers", "1", "--view", "rrd"]  # fmt: skip
        for _ in range(60):  # the head answers within seconds
            try:
                check_ray_address(f"127.0.0.1:{port}")
                break
            except ConfigError:
                time.sleep(1)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        records = sorted(out.glob("episodes/**/episode.mcap"))
        assert records, sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))[:40]
        for mcap in records:
            assert (mcap.parent / RRD_FILE).is_file(), sorted(p.name for p in mcap.parent.iterdir())
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)
