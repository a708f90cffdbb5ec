"""What the harness does with files an agent could have made (robodojo.agents.shell.host_files), and a command's
output kept bounded while it is read (robodojo.agents.shell.output). No sandbox needed: the files are made here."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.agents.shell import host_files
from robodojo.agents.shell.host_files import UnsafeFileError
from robodojo.agents.shell.output import BoundedOutput
from robodojo.text import trim_text


@pytest.fixture
def planted(tmp_path):
    """A folder as a hostile agent leaves it: links out, a FIFO, a link on the way, a regular file, a hard link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "ok.py").write_text("x = 1\n")
    os.link(tree / "sub" / "ok.py", tree / "sub" / "hard.py")
    (tree / "link.py").symlink_to(outside / "secret")
    (tree / "dirlink").symlink_to(outside)
    os.mkfifo(tree / "sub" / "pipe")
    return tree, outside


def test_reads_follow_no_link_and_open_no_fifo(planted):
    tree, _ = planted
    assert host_files.read_under(tree, "sub/ok.py", 100) == b"x = 1\n"
    for path, why in (("link.py", "a symbolic link"), ("dirlink/secret", "a symbolic link"), ("sub/pipe", "a FIFO")):
        with pytest.raises(UnsafeFileError, match=why):
            host_files.read_under(tree, path, 100)
    with pytest.raises(UnsafeFileError, match="larger than 3 bytes"):
        host_files.read_under(tree, "sub/ok.py", 3)
    with pytest.raises(UnsafeFileError, match="plain relative path"):
        host_files.read_under(tree, "../outside/secret", 100)
    assert host_files.is_regular_under(tree, "sub/ok.py") and not host_files.is_regular_under(tree, "link.py")
    assert not host_files.is_regular_under(tree, "dirlink/secret")


def test_a_tree_is_listed_and_copied_as_regular_files_and_folders_only(planted, tmp_path):
    tree, outside = planted
    listing = host_files.list_tree(tree)
    assert listing.files == ("sub/hard.py", "sub/ok.py") and listing.folders == ("sub",)
    assert listing.refused == ("dirlink: a symbolic link", "link.py: a symbolic link", "sub/pipe: a FIFO")
    copy = host_files.copy_tree(tree, tmp_path / "copy")
    assert copy.files == listing.files and copy.refused == listing.refused and copy.bytes_copied == 12
    assert host_files.list_tree(tmp_path / "copy").refused == ()
    assert (tmp_path / "copy" / "sub" / "hard.py").stat().st_nlink == 1  # its own file, not the agent's inode
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]


def test_a_copy_stops_at_its_size_and_entry_limits(planted, tmp_path):
    tree, _ = planted
    copy = host_files.copy_tree(tree, tmp_path / "small", max_bytes=8)
    assert copy.files == ("sub/hard.py",)
    assert "sub/ok.py: beyond the bytes a tool folder may hold in all" in copy.refused
    assert not (tmp_path / "small" / "sub" / "ok.py").exists()
    few = host_files.copy_tree(tree, tmp_path / "few", max_entries=2)
    assert any("beyond" in r for r in few.refused)


def test_a_write_replaces_a_planted_link_and_never_writes_through_it(planted):
    tree, outside = planted
    (tree / "state.json").symlink_to(outside / "secret")
    with host_files.opened_dir(tree) as fd:
        host_files.write_replace("state.json", b"{}", dir_fd=fd)
    assert (tree / "state.json").read_text() == "{}" and not (tree / "state.json").is_symlink()
    assert (outside / "secret").read_text() == "secret"
    with pytest.raises(UnsafeFileError, match="a symbolic link, not a folder"):
        host_files.open_dir(tree / "dirlink")


@given(st.lists(st.text(max_size=300), max_size=30), st.integers(min_value=8, max_value=400))
@settings(deadline=None)  # a verdict of content, not of time: the suite runs it at nice 19 beside the graph suites
def test_bounded_output_equals_trim_text_until_it_drops_and_counts_every_byte_after(parts, max_chars):
    data = "".join(parts).encode()
    out = BoundedOutput(max_chars * 4)
    for part in parts:
        out.write(part.encode())
    assert out.total == len(data) and out.peak_held <= 3 * max_chars * 4
    text = out.text(max_chars)
    if not out.dropped:
        assert text == trim_text(data.decode(), max_chars)
    else:
        head, rest = text.split("\n[... ", 1)
        omitted, tail = rest.split(" bytes omitted ...]\n", 1)
        assert int(omitted) == len(data) - len(head.encode()) - len(tail.encode())
        assert data.startswith(head.encode()) and data.endswith(tail.encode())
