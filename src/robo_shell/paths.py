"""Files of robo_shell that the harness and the CLI read (kept out of ``robo_shell/__init__`` so that ``robo``'s base
commands start without pathlib)."""

from __future__ import annotations

from pathlib import Path

MANUAL_PATH = Path(__file__).with_name("manual.md")
POOL_DIR = Path(__file__).with_name("pool")  #: the shared tools (table_plane, pick): read-only for every agent
