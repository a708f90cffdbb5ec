"""scripts/isaac_contract.py (make isaac-check) against the real Isaac Sim 6.2 wheels pinned in
scripts/isaac-wheels.txt: the runner as it is passes, and a copy of it with one name, keyword, attribute or value
changed to one 6.2 lacks fails with a problem naming it.

The wheels (258 MB) come from the same cache `make isaac-check` fills; without them and without the registry the
tests skip with the reason. Reading them takes about three seconds, once per module.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT

sys.path.insert(0, str(PACKAGE_ROOT / "scripts"))
import isaac_contract

pytest.importorskip("pxr", reason="usd-core is not installed (make setup installs it)")
pytestmark = pytest.mark.xdist_group("isaac_wheels")  # one worker reads (and perhaps downloads) the wheels

RUNNER = PACKAGE_ROOT / "scripts" / "isaac_sim_robodojo.py"
# Node types whose .ogn declares an attribute by an OGN type group, which the generated docs write out in full.
OGN_TYPE_GROUPS = ("numerics",)


@pytest.fixture(scope="module")
def wheels() -> list[Path]:
    try:
        return isaac_contract.ensure_wheels(isaac_contract.DEFAULT_CACHE, download=True)
    except isaac_contract.RegistryUnreachable as exc:
        pytest.skip(f"{exc}; the Isaac Sim 6.2 wheels are not cached in {isaac_contract.DEFAULT_CACHE}")


@pytest.fixture(scope="module")
def isaac(wheels) -> isaac_contract.Isaac62:
    return isaac_contract.Isaac62(wheels)


def _changed(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the runner with ``old`` (which must occur exactly once) replaced by ``new``."""
    source = RUNNER.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"the runner no longer has {old!r} exactly once: update this test"
    copy = tmp_path / "isaac_sim_robodojo.py"
    copy.write_text(source.replace(old, new), encoding="utf-8")
    return copy


def test_the_runner_keeps_the_contract(isaac):
    report = isaac.check(RUNNER)
    assert report.problems == []
    text = "\n".join(report.lines)
    assert "Isaac Sim 6.2 wheels: 5 (" in text and "sha256 verified" in text
    # What the runner uses, read from its source and its graph_edit(), not listed by hand.
    assert "the runner enables isaacsim.ros2.bridge" in text
    assert "OmniGraph: 10 node types" in text
    assert "omni.graph.action.OnPlaybackTick" in text  # Kit's own node, corroborated by 6.2's code
    assert "src/robodojo/hardware/isaac.py: no Isaac Sim API (0 modules imported)" in text


def test_the_core_nodes_come_from_the_wheels(isaac):
    """Each core node type the runner creates is defined in 6.2's isaacsim.core.nodes, where the attributes it
    wires have the types it relies on; OnPlaybackTick (Kit's omni.graph.action, not on PyPI) is known from use."""
    nodes = isaac.nodes
    assert nodes["isaacsim.core.nodes.IsaacCreateRenderProduct"].attrs["outputs:renderProductPath"].type == "token"
    assert nodes["isaacsim.core.nodes.IsaacCreateRenderProduct"].attrs["inputs:cameraPrim"].type == "target"
    assert nodes["isaacsim.core.nodes.IsaacArticulationController"].attrs["inputs:positionCommand"].type == "double[]"
    # A C++ node: its .ogn is not shipped, the documentation generated from it is.
    simulation_time = nodes["isaacsim.core.nodes.IsaacReadSimulationTime"]
    assert simulation_time.source.endswith("/ogn/docs/OgnIsaacReadSimulationTime.rst")
    assert simulation_time.attrs["outputs:simulationTime"].type == "double"
    assert "omni.graph.action.OnPlaybackTick" not in nodes
    assert isaac.corpus.node_attrs["omni.graph.action.OnPlaybackTick"]["outputs:tick"] == {"execution"}


def test_the_generated_node_docs_agree_with_the_ogn_files(isaac):
    """The node docs stand in for the .ogn files not shipped: where both exist they declare the same attributes."""
    both = 0
    for path in isaac.tree.files():
        if "/ogn/docs/" not in path or not path.endswith(".rst"):
            continue
        documented = isaac_contract.read_node_doc(path, isaac.tree.read(path))
        defined = isaac.nodes.get(documented.type) if documented else None
        if defined is None or not defined.source.endswith(".ogn"):
            continue
        both += 1
        assert set(documented.attrs) == set(defined.attrs), documented.type
        for name, attr in defined.attrs.items():
            if attr.type not in OGN_TYPE_GROUPS:
                assert documented.attrs[name].type == attr.type, f"{documented.type} {name}"
    assert both > 40


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param(
            'joint_drive_type="force"',
            'joint_drive_type="position"',
            'URDFImporterConfig(): joint_drive_type="position", 6.2 documents "force", "acceleration"',
            id="drive-type-choice",
        ),
        pytest.param(
            'joint_target_type="position"',
            'joint_target_typ="position"',
            "URDFImporterConfig() has no keyword joint_target_typ in 6.2 (did you mean joint_target_type",
            id="keyword",
        ),
        pytest.param(
            "    robot_usd = Path(URDFImporter(config).import_urdf())",
            "    URDFImporter(config).import_urdf()\n    robot_usd = plan.import_dir",
            "URDFImporter.import_urdf() returns str (Path to the generated USD file.) in 6.2; the source drops it",
            id="dropped-return",
        ),
        pytest.param(
            "from isaacsim.core.experimental.utils.app import enable_extension",
            "from isaacsim.core.utils.extensions import enable_extension",
            "import isaacsim.core.utils.extensions: extension isaacsim.core.utils is deprecated in 6.2",
            id="deprecated-extension",
        ),
        pytest.param(
            "app.update()\n\n    shutil",
            "app.updat()\n\n    shutil",
            "an instance of SimulationApp has no updat in 6.2 (did you mean update?)",
            id="method",
        ),
        pytest.param(
            'SimulationApp({"headless": headless})',
            'SimulationApp({"headles": headless})',
            "key 'headles' is not in 6.2's DEFAULT_LAUNCHER_CONFIG (did you mean headless?)",
            id="launch-config-key",
        ),
        pytest.param(
            '"clock.inputs:topicName"',
            '"clock.inputs:topic"',
            "isaacsim.ros2.bridge.ROS2PublishClock has no inputs:topic in 6.2 (did you mean inputs:topicName",
            id="node-input",
        ),
        pytest.param(
            '"isaacsim.core.nodes.IsaacReadSimulationTime"',
            '"isaacsim.core.nodes.IsaacReadSimTime"',
            "OmniGraph: no node type isaacsim.core.nodes.IsaacReadSimTime in the Isaac Sim 6.2 wheels",
            id="node-type",
        ),
        pytest.param(
            '("time.outputs:simulationTime", "clock.inputs:timeStamp")',
            '("time.outputs:simulationTime", "clock.inputs:topicName")',
            "IsaacReadSimulationTime outputs:simulationTime (double) -> isaacsim.ros2.bridge.ROS2PublishClock "
            "inputs:topicName (string): types differ in 6.2",
            id="connection-types",
        ),
        pytest.param(
            '(f"{image}.inputs:type", "rgb")',
            '(f"{image}.inputs:type", "rgb8")',
            "OmniGraph: isaacsim.ros2.bridge.ROS2CameraHelper inputs:type = 'rgb8': 6.2 allows rgb, ",
            id="allowed-token",
        ),
        pytest.param(
            '("tick.outputs:tick", "clock.inputs:execIn")',
            '("tick.outputs:ticks", "clock.inputs:execIn")',
            "OmniGraph: omni.graph.action.OnPlaybackTick outputs:ticks: Kit's own node (not on PyPI), and no 6.2 wheel "
            "code uses that attribute",
            id="kit-node-output",
        ),
        pytest.param(
            '"evaluator_name": "execution"',
            '"evaluator": "execution"',
            "omni.graph.core.Controller.edit({evaluator}): Kit's own API (not on PyPI), and no 6.2 wheel code uses it",
            id="kit-call-key",
        ),
        pytest.param(
            'JOINT_STATE_API = "PhysicsJointStateAPI"',
            'JOINT_STATE_API = "PhysxJointStateAPI"',
            "applies schema 'PhysxJointStateAPI', which no 6.2 schema or code defines (did you mean "
            "PhysicsJointStateAPI",
            id="usd-schema",
        ),
        pytest.param(
            'ROS2_BRIDGE_EXTENSION = "isaacsim.ros2.bridge"',
            'ROS2_BRIDGE_EXTENSION = "isaacsim.ros2.brige"',
            "enable_extension('isaacsim.ros2.brige'): no extension isaacsim.ros2.brige in the Isaac Sim 6.2 wheels",
            id="extension-name",
        ),
    ],
)
def test_a_name_that_6_2_lacks_fails_the_check_naming_it(isaac, tmp_path, old, new, problem):
    report = isaac.check(_changed(tmp_path, old, new), others=())
    assert report.problems, "the changed runner passed"
    assert any(problem in line for line in report.problems), "\n".join(report.problems)


def test_make_isaac_check_skips_in_one_line_when_the_registry_is_out_of_reach(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PIP_INDEX_URL", "https://127.0.0.1:9/simple")  # nothing listens on the discard port
    status = isaac_contract.main(["--download", "--wheels", str(tmp_path / "cache")])
    out = capsys.readouterr().out.splitlines()
    assert status == 0
    assert len(out) == 1 and out[0].startswith("isaac-check: skipped: the package registry cannot be reached")


def test_a_cached_wheel_that_does_not_match_its_pin_is_not_used(tmp_path):
    pin = isaac_contract.read_pins()[0]
    forged = tmp_path / f"{pin.file_prefix}cp312-none-manylinux_2_35_x86_64.whl"
    forged.write_bytes(b"not the pinned wheel")
    with pytest.raises(isaac_contract.ContractError, match=f"no verified {pin.name}"):
        isaac_contract.ensure_wheels(tmp_path, download=False)
