"""The commands the documentation marks runnable run as written (docs/contributing.md, "Runnable commands").

A shell block in README.md or docs/**/*.md whose fence follows the line ``<!-- runnable -->`` (or
``<!-- runnable: PATH ... -->``) is run here, one test per block: from a scratch copy of the repository's top level
(every entry a symlink but ``out/``, which is a real, empty folder), with the venv's bin first on PATH, under
``bash -euo pipefail``. It must exit 0 and leave every path the marker names (globs, relative to the repository root)
and every ``--out PATH`` it passes. A block that would write into the tracked tree is refused before it runs. The
README's links, which the site's strict build (``make docs``) does not see, are checked here too.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from robodojo import PACKAGE_ROOT

MARKER = re.compile(r"<!--\s*runnable(?::(?P<paths>[^>]*?))?\s*-->")
FENCE_OPEN = "```bash"
FENCE_CLOSE = "```"
NOT_MIRRORED = frozenset({".git", "out", "site", ".venv"})  # .venv: linked to the running interpreter's venv
TIMEOUT_S = 300.0  # one block, on a loaded 2-core CI machine (each takes seconds alone)
OUTPUT_TAIL_CHARS = 4000
# Commands that write tracked files unless told otherwise: (what the command line contains, what makes it safe).
WRITES_TRACKED_FILES = (
    ("calibrate_cameras.py", ("--out", "--no-write", "--help", "board")),
    ("task_table.py", ("--check",)),
    ("make tasks-table", ()),
    ("make urdf", ()),
    ("scripts/generate_", ()),
)


@dataclass(frozen=True)
class Block:
    """One marked shell block: where it is, its text, and the paths it must leave behind."""

    source: str  # file:line of the marker, relative to the repository
    script: str
    expected: tuple[str, ...]


def doc_files(root: Path = PACKAGE_ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def fence_run(line: str) -> str:
    """The run of backticks or tildes that opens or closes a fenced block on this line ("" for none)."""
    stripped = line.strip()
    if not stripped.startswith(("```", "~~~")):
        return ""
    return stripped[: len(stripped) - len(stripped.lstrip(stripped[0]))]


def marked_blocks(path: Path, root: Path = PACKAGE_ROOT) -> list[Block]:
    """The marked blocks of one Markdown file (markers inside other fenced blocks, e.g. an example of the convention,
    are text); ValueError naming the line when a marker is not followed by a bash fence or the fence never closes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    open_fence = ""  # the fence of the block the loop is in
    for i, line in enumerate(lines):
        run = fence_run(line)
        if open_fence:
            if run.startswith(open_fence) and line.strip() == run:
                open_fence = ""
            continue
        if run:
            open_fence = run
            continue
        match = MARKER.fullmatch(line.strip())
        if match is None:
            continue
        where = f"{path.relative_to(root)}:{i + 1}"
        if i + 1 >= len(lines) or lines[i + 1].strip() != FENCE_OPEN:
            raise ValueError(f"{where}: a runnable marker must be followed directly by a {FENCE_OPEN} fence")
        try:
            end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == FENCE_CLOSE)
        except StopIteration:
            raise ValueError(f"{where}: the {FENCE_OPEN} fence after the runnable marker is never closed") from None
        paths = tuple((match.group("paths") or "").split())
        blocks.append(Block(where, "\n".join(lines[i + 2 : end]) + "\n", paths))
    return blocks


def out_arguments(script: str) -> list[str]:
    """Every value of ``--out`` / ``--out=`` in the block (continuation lines joined, shell quoting removed)."""
    values = []
    for line in script.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # a heredoc's body (Python code) is not shell
            continue
        for k, word in enumerate(words):
            if word == "--out" and k + 1 < len(words):
                values.append(words[k + 1])
            elif word.startswith("--out="):
                values.append(word.split("=", 1)[1])
    return values


def tracked_tree_writes(script: str) -> list[str]:
    """Why the block would write into the repository's tracked files (empty when it would not)."""
    problems = [f"--out {value} is not under out/" for value in out_arguments(script) if not value.startswith("out/")]
    for line in script.replace("\\\n", " ").splitlines():
        for command, safe_with in WRITES_TRACKED_FILES:
            if command in line and not any(flag in line for flag in safe_with):
                needs = f" without {' or '.join(safe_with)}" if safe_with else ""
                problems.append(f"{command!r}{needs} writes tracked files: {line.strip()}")
    return problems


LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(markdown: str) -> set[str]:
    """The ids MkDocs gives a page's headings (Python-Markdown's toc slugify, for the headings these pages use)."""
    # a "# comment" inside a fenced block is no heading
    prose = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", prose, flags=re.MULTILINE)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", h.replace("`", "")).strip().lower()) for h in headings}


def all_blocks() -> list[Block | str]:
    found: list[Block | str] = []
    for path in doc_files():
        try:
            found.extend(marked_blocks(path))
        except ValueError as exc:
            found.append(str(exc))  # reported by its own failing test below
    return found


BLOCKS = all_blocks()


def scratch_repository(work: Path) -> Path:
    """``work`` mirroring the repository's top level, with a fresh ``out/`` and ``.venv`` as the running venv."""
    work.mkdir()
    for entry in PACKAGE_ROOT.iterdir():
        if entry.name not in NOT_MIRRORED:
            (work / entry.name).symlink_to(entry)
    if sys.prefix != sys.base_prefix:
        (work / ".venv").symlink_to(sys.prefix)
    (work / "out").mkdir()
    return work


def shell_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ROBODOJO_CAN_SOCKET_DIR")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_the_readme_links_to_pages_and_headings_that_exist() -> None:
    """README.md is outside the site, so `make docs --strict` does not check its links: every relative link names a
    file of the repository, and a link into a page names one of its headings."""
    readme = PACKAGE_ROOT / "README.md"
    broken = []
    for target in LINK.findall(readme.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        file = PACKAGE_ROOT / path
        if not file.is_file() or (anchor and anchor not in heading_anchors(file.read_text(encoding="utf-8"))):
            broken.append(target)
    assert not broken, f"README.md links to what does not exist: {broken}"


def test_the_docs_mark_runnable_commands() -> None:
    """The docs hold marked blocks at all: a marker renamed in the docs, not here, would otherwise test nothing."""
    assert [b for b in BLOCKS if isinstance(b, Block)], "no <!-- runnable --> block in README.md or docs/"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.source if isinstance(b, Block) else "malformed" for b in BLOCKS])
def test_a_marked_command_runs_and_leaves_its_outputs(block: Block | str, tmp_path: Path) -> None:
    assert isinstance(block, Block), block
    problems = tracked_tree_writes(block.script)
    assert not problems, f"{block.source}: " + "; ".join(problems)
    work = scratch_repository(tmp_path / "repo")
    try:
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.script],
            cwd=work,
            env=shell_environment(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.source}: still running after {TIMEOUT_S:.0f} s: {exc.cmd!r}")
    output = (run.stdout + run.stderr)[-OUTPUT_TAIL_CHARS:]
    assert run.returncode == 0, f"{block.source}: exit {run.returncode}\n{output}"
    missing = [p for p in (*block.expected, *out_arguments(block.script)) if not list(work.glob(p))]
    assert not missing, f"{block.source}: ran, but left no {missing}\n{output}"
