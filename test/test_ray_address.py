"""`robodojo eval --ray ADDRESS` with no cluster there fails at once with one line (ray.init would retry for ever, 41 s
a try), and `eval --ray SPEC` takes SPEC as the spec: the mistakes a user types, before any Ray starts."""

from __future__ import annotations

import socket

import pytest
import yaml

from robodojo import PACKAGE_ROOT
from robodojo.campaigns import engines
from robodojo.campaigns.engines import check_ray_address
from robodojo.cli import main
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
