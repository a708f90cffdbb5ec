import importlib.util
from pathlib import Path


def _tool():
    spec = importlib.util.spec_from_file_location("grab_tool", Path(__file__).with_name("tool.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_declares_its_command():
    assert set(_tool().COMMANDS) == {"grasp"}
