"""A campaign's progress as it runs: done/total, successes, tokens, cost so far and the ETA.

On a terminal a live rich progress bar; otherwise (CI logs, a file, a pipe) one plain line per ended episode, so a
log shows every episode and the running totals without control characters.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO

from robodojo.campaigns.results import EpisodeRow


@dataclass
class Totals:
    """Running totals over the campaign's ended episodes (those ended before a resume included)."""

    total: int
    done: int = 0
    successes: int = 0
    crashed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, row: EpisodeRow) -> None:
        self.done += 1
        self.successes += row.success
        self.crashed += row.end_reason == "crashed"
        self.input_tokens += row.input_tokens
        self.output_tokens += row.output_tokens
        self.cost_usd += row.cost_usd

    def text(self) -> str:
        return (
            f"{self.done}/{self.total} done, {self.successes} successes, "
            f"{self.input_tokens + self.output_tokens:,} tokens, ${self.cost_usd:.2f}"
            + (f", {self.crashed} crashed" if self.crashed else "")
        )


class CampaignProgress:
    """Shows a campaign's progress; ``update`` after each ended try, ``close`` at the end."""

    def __init__(self, total: int, already: Iterable[EpisodeRow] = (), stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stdout
        self.totals = Totals(total)
        for row in already:
            self.totals.add(row)
        self._start = time.monotonic()
        self._resumed_at = self.totals.done  # the ETA counts only this run's pace
        self._bar = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("[bold]campaign"), BarColumn(), TextColumn("{task.description}"),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=self.stream), transient=False,
            )  # fmt: skip
            self._task = self._bar.add_task(self.totals.text(), total=total, completed=self.totals.done)
            self._bar.start()
        else:
            self._line(f"campaign: {self.totals.text()}")

    def update(self, row: EpisodeRow, *, final: bool) -> None:
        """One try ended: ``final`` when its episode is done for good (a crash with retries left is not)."""
        if final:
            self.totals.add(row)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.totals.done, description=self.totals.text())
            if not final:
                self._bar.console.print(f"[yellow]retrying[/] {row.episode_id}: {row.error}")
            return
        outcome = "success" if row.success else row.end_reason
        retry = " (will retry)" if not final else ""
        self._line(
            f"[{self.totals.done}/{self.totals.total}] {row.episode_id} try {row.tries}: {outcome}{retry}, "
            f"{row.llm_calls} calls, {row.wall_time_s:.1f} s | {self.totals.text()}, ETA {self.eta_text()}"
        )

    def eta_text(self) -> str:
        done_here = self.totals.done - self._resumed_at
        left = self.totals.total - self.totals.done
        if done_here <= 0:
            return "-"
        seconds = (time.monotonic() - self._start) / done_here * left
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"

    def message(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text)
        else:
            self._line(text)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
