"""Bounds on the free text a model sends: tool-call arguments such as a move_eef note, and the text beside its calls.

Everything a model writes stays in the conversation and is re-sent with every later request, so one unbounded note
(10 MB were accepted once) costs millions of input tokens per turn. Free text is therefore cleaned and cut before it
is used or kept: control and invisible characters are removed (:data:`INVISIBLE`), then the text is cut to its first
``max_*_chars`` characters (config/agents/text_limits.yaml), and the model is told what happened
(:meth:`CleanText.notice`, e.g. ``note cut to 2000 characters (it had 10485760)``). What was used is what the history
keeps and re-sends; the turn record carries the same text plus :meth:`CleanText.record` (a flag that it was cut).

The code of a python cell is not free text: it is never altered (Python needs its characters, and a cut program is a
different program); a cell longer than ``max_code_chars`` is refused with an error instead (:func:`check_code`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.text import MAX_QUOTED_CHARS  # one length for every name or value quoted in a message

CONFIG_PATH = CONFIG_DIR / "agents" / "text_limits.yaml"

#: Removed from free text: C0 controls but tab and newline, DEL, C1 controls, the Arabic letter mark, zero-width
#: characters and left-to-right/right-to-left marks (U+200B-200F), bidi embeddings and overrides (U+202A-202E),
#: the word joiner and invisible operators (U+2060-2064), bidi isolates (U+2066-2069), the BOM / zero-width no-break
#: space, and lone surrogates (not encodable as UTF-8, so they would break the next request or a ROS message).
INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff]"
)


@dataclass(frozen=True)
class TextLimits:
    """Longest free text kept per kind [characters]; see config/agents/text_limits.yaml."""

    max_note_chars: int  #: move_eef note
    max_reason_chars: int  #: give_up reason and hindsight
    max_summary_chars: int  #: code-cell finish summary
    max_content_chars: int  #: text of a reply beside its tool calls
    max_code_chars: int  #: python(code): longer cells are refused, never cut
    max_arguments_chars: int  #: raw arguments of a refused tool call, as kept in the history
    max_targets_chars: int  #: move_eef targets as compact JSON: a longer object is refused before it is parsed
    max_call_chars: int  #: raw arguments of a move_eef or give_up call, as kept in the history

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"text limit {f.name} must be a positive integer, got {value!r}")
        if self.max_arguments_chars < self.max_code_chars:
            raise ConfigError(
                f"max_arguments_chars ({self.max_arguments_chars}) must be at least max_code_chars "
                f"({self.max_code_chars}): a refused cell's arguments hold its whole code"
            )
        call_needs = max(self.max_targets_chars + self.max_note_chars, 2 * self.max_reason_chars)
        if self.max_call_chars < call_needs:
            raise ConfigError(
                f"max_call_chars ({self.max_call_chars}) must be at least {call_needs}: a valid move_eef call holds "
                "targets and a note of their full lengths, a give_up call a reason and a hindsight"
            )


def load_text_limits(path: str | Path = CONFIG_PATH) -> TextLimits:
    """Load and validate config/agents/text_limits.yaml (or another file of the same shape); unknown keys are
    errors."""
    section = Section(load_yaml(path), str(path))
    known = [f.name for f in fields(TextLimits)]
    unknown = sorted(set(section.names()) - set(known))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return TextLimits(**{name: section.integer(name, positive=True) for name in known})


@cache
def default_text_limits() -> TextLimits:
    """config/agents/text_limits.yaml, read once."""
    return load_text_limits()


@dataclass(frozen=True)
class CleanText:
    """Free text as used: ``text``, and what cleaning did to the text the model sent."""

    text: str  #: what is used, kept in the history and recorded
    sent_chars: int  #: length of the text as the model sent it [characters]
    removed_chars: int  #: control and invisible characters removed [characters]
    max_chars: int  #: the limit it was cut to, if it was longer [characters]

    @property
    def cut(self) -> bool:
        """True when the text was longer than the limit (after removing invisible characters)."""
        return self.sent_chars - self.removed_chars > self.max_chars

    @property
    def changed(self) -> bool:
        return self.cut or self.removed_chars > 0

    def notice(self, name: str) -> str | None:
        """What to tell the model, or None when the text was used as sent."""
        parts = []
        if self.removed_chars:
            parts.append(f"{self.removed_chars} control or invisible character(s) removed from {name}")
        if self.cut:
            parts.append(f"{name} cut to {self.max_chars} characters (it had {self.sent_chars - self.removed_chars})")
        return "; ".join(parts) or None

    def record(self) -> dict[str, Any]:
        """The flag for the turn record."""
        return {"cut": self.cut, "sent_chars": self.sent_chars, "removed_chars": self.removed_chars,
                "max_chars": self.max_chars}  # fmt: skip


def clean_text(text: str, max_chars: int) -> CleanText:
    """``text`` without :data:`INVISIBLE` characters, cut to its first ``max_chars`` characters."""
    visible, removed = INVISIBLE.subn("", text)
    return CleanText(visible[:max_chars], len(text), removed, max_chars)


def quote(name: object) -> str:
    """A model-sent name for an error message: cleaned, at most :data:`MAX_QUOTED_CHARS` characters, repr-quoted."""
    text = clean_text(str(name), MAX_QUOTED_CHARS)
    return repr(text.text) + (f" (cut; {text.sent_chars} characters)" if text.cut else "")


class CodeTooLongError(InvalidCommandError):
    """A python cell longer than ``max_code_chars``; nothing ran."""


def check_code(code: str, limits: TextLimits) -> str:
    """``code`` unchanged when it fits; otherwise CodeTooLongError with the text for the model."""
    if len(code) > limits.max_code_chars:
        raise CodeTooLongError(
            f"python 'code' is {len(code)} characters; a cell may have at most {limits.max_code_chars}: split it "
            "into smaller cells (functions you define stay in the namespace); nothing ran"
        )
    return code


__all__ = [
    "CONFIG_PATH",
    "INVISIBLE",
    "CleanText",
    "CodeTooLongError",
    "TextLimits",
    "check_code",
    "clean_text",
    "default_text_limits",
    "load_text_limits",
    "quote",
]
