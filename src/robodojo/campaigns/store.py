"""The campaign's results store (SQLite, ``results.sqlite`` in the campaign folder).

Two tables:

- ``episodes``: one row per episode of the grid that has ended for good: finished (any end reason but
  ``crashed``), or crashed on its last allowed try. Its columns are :class:`EpisodeRow`'s fields plus ``status``
  (``finished`` or ``crashed``) and ``ended_unix_s``.
- ``tries``: one row per try of an episode, the crashed and the killed ones included: (episode id, try, status,
  end reason, error, record folder, ended time). A try whose process was killed (Ctrl-C, a lost worker, a lost
  machine) is entered as ``killed`` when the campaign resumes and finds its folder without a row.

Only the coordinating process writes, one transaction per ended episode, so a killed campaign leaves every ended
episode stored exactly once and nothing half-written (WAL journal, synchronous commits).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
import typing
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from robodojo.campaigns.results import EpisodeRow

STORE_FILE = "results.sqlite"
FINISHED, CRASHED, KILLED = "finished", "crashed", "killed"
_SQL_TYPES = {bool: "INTEGER", int: "INTEGER", float: "REAL", str: "TEXT"}


def _row_columns() -> list[tuple[str, str]]:
    hints = typing.get_type_hints(EpisodeRow)
    sql = {name: next(t for kind, t in _SQL_TYPES.items() if issubclass(hints[name], kind)) for name in hints}
    return [(name, sql[name]) for name in EpisodeRow.columns()]


class ResultsStore:
    """The campaign's SQLite file: ended episodes and every try (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30.0)  # explicit transactions below
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an ended episode survives a power cut once stored
        columns = ", ".join(
            f"{name} {sql}{' PRIMARY KEY' if name == 'episode_id' else ''}" for name, sql in _row_columns()
        )
        with self._transaction():
            self._db.execute(
                f"CREATE TABLE IF NOT EXISTS episodes ({columns}, status TEXT NOT NULL, ended_unix_s REAL NOT NULL)"
            )
            self._add_new_columns()
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS tries (episode_id TEXT NOT NULL, try INTEGER NOT NULL, "
                "status TEXT NOT NULL, end_reason TEXT NOT NULL, error TEXT NOT NULL, folder TEXT NOT NULL, "
                "ended_unix_s REAL NOT NULL, PRIMARY KEY (episode_id, try))"
            )

    def _add_new_columns(self) -> None:
        """A store written before a field joined EpisodeRow (reasoning_tokens) gets its column, with the field's
        default for the rows already there, so a campaign resumes across the change."""
        present = {row[1] for row in self._db.execute("PRAGMA table_info(episodes)")}
        defaults = {f.name: f.default for f in dataclasses.fields(EpisodeRow)}
        for name, sql in _row_columns():
            if name not in present and defaults.get(name) is not dataclasses.MISSING:
                self._db.execute(f"ALTER TABLE episodes ADD COLUMN {name} {sql} DEFAULT {defaults[name]!r}")

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------------------------------
    def record_try(self, row: EpisodeRow, *, final: bool) -> None:
        """Store one ended try of ``row.episode_id`` (try ``row.tries``); when ``final`` (it finished, or it was the
        last allowed crash) the episode's row too, in the same transaction."""
        status = CRASHED if row.end_reason == "crashed" else FINISHED
        now = time.time()
        with self._transaction():
            self._db.execute(
                "INSERT OR REPLACE INTO tries VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row.episode_id, row.tries, status, row.end_reason, row.error, row.folder, now),
            )
            if final:
                values = row.as_dict()
                names = [*values, "status", "ended_unix_s"]
                self._db.execute(
                    f"INSERT OR REPLACE INTO episodes ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                    [*values.values(), status, now],
                )

    def record_killed(self, episode_id: str, try_index: int, folder: str) -> None:
        """A try that left a folder and no row: its process was killed before it ended."""
        with self._transaction():
            self._db.execute(
                "INSERT OR IGNORE INTO tries VALUES (?, ?, ?, ?, ?, ?, ?)",
                (episode_id, try_index, KILLED, "killed", "the try's process ended before the episode", folder,
                 time.time()),
            )  # fmt: skip

    # -- reading --------------------------------------------------------------------------------------------------
    def rows(self, status: str | None = None) -> list[EpisodeRow]:
        """The ended episodes (of ``status`` if given), in episode-id order."""
        query, args = "SELECT * FROM episodes", cast(tuple[str, ...], ())
        if status is not None:
            query, args = query + " WHERE status = ?", (status,)
        return [EpisodeRow.from_dict(_typed(dict(r))) for r in self._db.execute(query + " ORDER BY episode_id", args)]

    def ended_ids(self) -> set[str]:
        return {r[0] for r in self._db.execute("SELECT episode_id FROM episodes")}

    def tries(self, episode_id: str | None = None) -> list[dict[str, Any]]:
        query, args = "SELECT * FROM tries", cast(tuple[str, ...], ())
        if episode_id is not None:
            query, args = query + " WHERE episode_id = ?", (episode_id,)
        return [dict(r) for r in self._db.execute(query + " ORDER BY episode_id, try", args)]

    def tries_used(self, episode_ids: Iterable[str]) -> dict[str, int]:
        """Per episode id, the highest try number stored (0 when none)."""
        counts = dict(self._db.execute("SELECT episode_id, MAX(try) FROM tries GROUP BY episode_id").fetchall())
        return {i: int(counts.get(i) or 0) for i in episode_ids}


def _typed(values: dict[str, Any]) -> dict[str, Any]:
    values["success"] = bool(values["success"])
    return values
