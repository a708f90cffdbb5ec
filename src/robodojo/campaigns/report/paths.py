"""Where the report's files go under its folder, and the file name of each episode's page: one place, so that the
tables (markdown links) and the HTML pages agree."""

from __future__ import annotations

import re
from collections.abc import Sequence

INDEX_PAGE = "index.html"
EPISODE_PAGES = "episodes"  #: the folder under the report's holding one page per episode
STRIPS_DIR = "strips"  #: the folder under the report's holding each episode's image strip (one folder per page)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def page_names(episode_ids: Sequence[str]) -> list[str]:
    """A file name per episode: its id with unsafe characters replaced, made unique."""
    names: list[str] = []
    taken: set[str] = set()
    for episode_id in episode_ids:
        stem = _UNSAFE_NAME.sub("_", episode_id).strip("._") or "episode"
        name, k = f"{stem}.html", 2
        while name.lower() in taken:  # case-insensitive: the report may be read on macOS or Windows
            name, k = f"{stem}-{k}.html", k + 1
        taken.add(name.lower())
        names.append(name)
    return names


def page_hrefs(episode_ids: Sequence[str]) -> dict[str, str]:
    """By episode id, its page relative to the report's folder (``episodes/<name>.html``, not URL-quoted)."""
    return {i: f"{EPISODE_PAGES}/{name}" for i, name in zip(episode_ids, page_names(episode_ids), strict=True)}


__all__ = ["EPISODE_PAGES", "INDEX_PAGE", "STRIPS_DIR", "page_hrefs", "page_names"]
