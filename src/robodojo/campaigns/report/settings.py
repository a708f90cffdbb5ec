"""The campaign report's settings (config/report.yaml): how the axis leaderboards rank, how failures are grouped,
how large the episodes' image strips are. Loaded once and validated with clear errors."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from robodojo.config import CONFIG_DIR, Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError

CONFIG_PATH = CONFIG_DIR / "report.yaml"
MAX_JPEG_QUALITY = 100  #: OpenCV's JPEG quality runs from 1 to 100


@dataclass(frozen=True)
class RankingSettings:
    """How a capability axis ranks its groups (robodojo.campaigns.report.stats.axis_leaderboards)."""

    significance_level: float  #: a neighbour difference is significant at or below this Holm-adjusted p
    min_shared_layouts: int  #: fewer layouts run by every group of the axis: no rank

    def __post_init__(self) -> None:
        if not 0 < self.significance_level < 1:
            raise ConfigError(f"significance_level must be in (0, 1), got {self.significance_level}")
        if self.min_shared_layouts < 1:
            raise ConfigError(f"min_shared_layouts must be >= 1, got {self.min_shared_layouts}")


@dataclass(frozen=True)
class FailureSettings:
    """How the failure reasons are listed (robodojo.campaigns.report.failures)."""

    examples: int  #: episodes linked per reason
    reason_chars: int  #: a refusal's normalised text is cut to this many characters


@dataclass(frozen=True)
class StripSettings:
    """The image strip of an episode (robodojo.campaigns.report.strips)."""

    thumbnail_width_px: int
    jpeg_quality: int

    def __post_init__(self) -> None:
        if not 1 <= self.jpeg_quality <= MAX_JPEG_QUALITY:
            raise ConfigError(f"jpeg_quality must be in [1, {MAX_JPEG_QUALITY}], got {self.jpeg_quality}")


@dataclass(frozen=True)
class ReportSettings:
    """config/report.yaml as read."""

    ranking: RankingSettings
    failures: FailureSettings
    image_strip: StripSettings


def load_report_settings(path: str | Path = CONFIG_PATH) -> ReportSettings:
    """Load and validate config/report.yaml (or a file of the same shape); unknown keys are errors."""
    where = str(path)
    data = load_yaml(path)
    reject_unknown_keys(data, ["ranking", "failures", "image_strip"], where)
    top = Section(data, where)
    ranking, failures, strip = top.section("ranking"), top.section("failures"), top.section("image_strip")
    reject_unknown_keys(ranking.data, ["significance_level", "min_shared_layouts"], ranking.where)
    reject_unknown_keys(failures.data, ["examples", "reason_chars"], failures.where)
    reject_unknown_keys(strip.data, ["thumbnail_width_px", "jpeg_quality"], strip.where)
    try:
        return ReportSettings(
            ranking=RankingSettings(
                significance_level=ranking.number("significance_level"),
                min_shared_layouts=ranking.integer("min_shared_layouts", positive=True),
            ),
            failures=FailureSettings(
                examples=failures.integer("examples", positive=True),
                reason_chars=failures.integer("reason_chars", positive=True),
            ),
            image_strip=StripSettings(
                thumbnail_width_px=strip.integer("thumbnail_width_px", positive=True),
                jpeg_quality=strip.integer("jpeg_quality", positive=True),
            ),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


@functools.cache
def shipped_report_settings() -> ReportSettings:
    """config/report.yaml, read once per process."""
    return load_report_settings()


__all__ = [
    "CONFIG_PATH",
    "FailureSettings",
    "RankingSettings",
    "ReportSettings",
    "StripSettings",
    "load_report_settings",
    "shipped_report_settings",
]
