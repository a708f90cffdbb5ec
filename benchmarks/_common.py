"""Helpers shared by the benchmark scripts: machine description, versions, result tables."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nproc() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


def gl_renderer_string() -> str:
    """GL_RENDERER / GL_VERSION of the current context (call right after a render)."""
    try:
        from OpenGL import GL

        renderer = GL.glGetString(GL.GL_RENDERER)
        version = GL.glGetString(GL.GL_VERSION)
        return f"{renderer.decode()}, OpenGL {version.decode()}"
    except Exception as exc:  # informational only
        return f"unknown ({type(exc).__name__})"


def version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]], aligns: str) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, aligns, widths, strict=True)).rstrip()

    print(line(header))
    print(line(tuple("-" * w for w in widths)))
    for row in rows:
        print(line(row))


def write_figures(path: Path, figures: dict) -> None:
    """Write a benchmark's figures as indented JSON (for --json) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    print(f"figures written to {path}")
