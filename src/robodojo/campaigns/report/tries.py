"""The tries a campaign ran and did not keep: killed (the process ended mid-episode: Ctrl-C, a lost worker) or
crashed and retried. The results store keeps a row per try (robodojo.campaigns.store) but the episode's row holds
only its last try's usage; the LLM calls of the others were made and paid for all the same. :func:`earlier_tries`
reads what each spent from its record, so the report counts it and links it.

A try's usage is read from its record's JSON lines, which are flushed per call (a kill loses nothing answered):
requests.jsonl counts the calls made (failed ones included, as the runner counts them against the budget),
responses.jsonl sums the usage of the answered ones. A try with neither file falls back to its metrics.json
(rewritten each turn); a try with no record (it crashed before the episode began) spent nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robodojo.campaigns.report.stats import EarlierUsage
from robodojo.campaigns.results import EpisodeRow
from robodojo.episodes.record import REQUESTS_FILE, RESPONSES_FILE, EpisodeRecord, find_record

USAGE_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "cost_usd")


@dataclass(frozen=True)
class EarlierTry:
    """One try of an episode other than the one its row holds: ``status`` as the store has it (``killed`` or
    ``crashed``), its ``folder`` relative to the campaign folder, and what it spent (``usage_from`` names the file
    the figures were read from, "" when the try left no record)."""

    episode_id: str
    try_index: int
    status: str
    end_reason: str
    error: str
    folder: str
    usage: EarlierUsage
    usage_from: str


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def try_usage(record: EpisodeRecord) -> tuple[EarlierUsage, str]:
    """What one try spent, read from its record (see the module docstring), and the file it was read from."""
    if record.requests or record.responses:
        usages = [u for u in (r.get("usage") for r in record.responses) if isinstance(u, dict)]
        totals = {f: sum(_number(u.get(f)) for u in usages) for f in USAGE_FIELDS}
        calls = max(len(record.requests), len(record.responses))  # a request line is written before its answer
        source = REQUESTS_FILE if record.requests else RESPONSES_FILE
        return _usage(calls, totals), source
    outcome = record.outcome
    if outcome is not None:
        return _usage(outcome.llm_calls, {f: getattr(outcome, f) for f in USAGE_FIELDS}), "metrics.json"
    return EarlierUsage(tries=1), ""


def _usage(calls: int, totals: Mapping[str, float]) -> EarlierUsage:
    return EarlierUsage(
        tries=1,
        llm_calls=int(calls),
        input_tokens=int(totals["input_tokens"]),
        cached_input_tokens=int(totals["cached_input_tokens"]),
        output_tokens=int(totals["output_tokens"]),
        cost_usd=float(totals["cost_usd"]),
    )


def earlier_tries(
    campaign_dir: Path, tries: Iterable[Mapping[str, Any]], rows: Sequence[EpisodeRow]
) -> tuple[EarlierTry, ...]:
    """The tries of ``tries`` (the store's try rows) that no episode row holds, with what each spent, in the store's
    order (episode, try). ``rows`` are the campaign's episode rows (a row holds its try ``row.tries``); a try of an
    episode with no row yet (a campaign still running or cut off) is an earlier try too."""
    kept = {(r.episode_id, r.tries) for r in rows}
    found = []
    for t in tries:
        key = (str(t["episode_id"]), int(t["try"]))
        if key in kept:
            continue
        folder = str(t.get("folder") or "")
        record = EpisodeRecord.open(find_record(campaign_dir / folder)) if folder else None
        usage, source = try_usage(record) if record is not None else (EarlierUsage(tries=1), "")
        found.append(
            EarlierTry(
                episode_id=key[0],
                try_index=key[1],
                status=str(t.get("status", "")),
                end_reason=str(t.get("end_reason", "")),
                error=str(t.get("error", "")),
                folder=folder,
                usage=usage,
                usage_from=source,
            )
        )
    return tuple(found)


def earlier_usage(found: Iterable[EarlierTry]) -> dict[str, EarlierUsage]:
    """By episode id, what its earlier tries spent, summed."""
    out: dict[str, EarlierUsage] = {}
    for t in found:
        out[t.episode_id] = out.get(t.episode_id, EarlierUsage()) + t.usage
    return out


__all__ = ["EarlierTry", "earlier_tries", "earlier_usage", "try_usage"]
