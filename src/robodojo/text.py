"""Bounded quoting of values that came from outside (a ROS message, a tool call) in messages, results and logs.

Anything a client sends can be of any size: a 10,000-character joint name, a trajectory point of 1e300, a list of a
million numbers. Messages quote such values briefly so that refusing bad input stays cheap and its text stays short:
every helper here does work bounded by its output, not by the input (a long string is cut before it is repr'd, a
container is repr'd with reprlib's limits). One length, :data:`MAX_QUOTED_CHARS`, is used for every name or value
quoted in a message (the agents' model-facing :func:`robodojo.agents.text_limits.quote` uses it too).

Long texts kept whole in spirit (cell output, tool-call arguments, report cells) are cut in their middle by
:func:`trim_text`, with one marker saying how much was left out. Standard library only: the code-cell kernel's child
process imports this module before it confines itself.
"""

from __future__ import annotations

import math
import reprlib

MAX_QUOTED_CHARS = 60  # bad values and unknown names are quoted in messages up to this many characters
ELLIPSIS = "..."
FIXED_POINT_BELOW = 1e6  # numbers smaller in magnitude are written with fixed decimals, larger ones in e-notation

# Containers are repr'd only as far as a quote can show: element counts above the quote length cannot be shown.
_BOUNDED = reprlib.Repr()  # limits set one by one: Repr() takes no arguments before Python 3.12
_BOUNDED.maxlevel = 3
_BOUNDED.maxtuple = _BOUNDED.maxlist = _BOUNDED.maxarray = MAX_QUOTED_CHARS
_BOUNDED.maxset = _BOUNDED.maxfrozenset = _BOUNDED.maxdeque = MAX_QUOTED_CHARS
_BOUNDED.maxdict = MAX_QUOTED_CHARS // 2
_BOUNDED.maxstring = _BOUNDED.maxlong = 4 * MAX_QUOTED_CHARS
_BOUNDED.maxother = 16 * MAX_QUOTED_CHARS  # reprlib keeps head and tail of other objects; the head is what is quoted


def quote(value: object, max_chars: int = MAX_QUOTED_CHARS) -> str:
    """A short repr of a bad value or name for a message: at most ``max_chars`` characters, cut ones end in '...'.

    >>> quote("up"), quote(list(range(100)))[-8:], quote(10**5000)
    ("'up'", '5, 16...', '<int>')
    """
    try:
        # A string is cut before its repr: a 10 MB one costs no more than a short one.
        text = repr(value[:max_chars]) if isinstance(value, str | bytes) else _BOUNDED.repr(value)
    except Exception:  # an int of > 4300 digits, an object whose __repr__ fails: its type has to do
        text = f"<{type(value).__name__}>"
    return text if len(text) <= max_chars else text[: max_chars - len(ELLIPSIS)] + ELLIPSIS


def cut_name(name: str, max_chars: int = MAX_QUOTED_CHARS) -> str:
    """``name`` itself, or its first ``max_chars`` characters and '...': to be repr'd (``{cut_name(n)!r}``) so a long
    name still reads as one quoted name. Cutting a cut name changes nothing, so facts may carry it cut already."""
    return name if len(name) <= max_chars else name[:max_chars] + ELLIPSIS


def short_number(value: float, decimals: int = 4) -> str:
    """A number for a message: ``decimals`` fixed decimals while that stays short (magnitude below
    :data:`FIXED_POINT_BELOW`), otherwise 4 significant digits in e-notation, so 1e300 is ``1e+300``, not 301 digits.

    >>> short_number(1.2), short_number(-0.5000001), short_number(1e300), short_number(float("nan"))
    ('1.2000', '-0.5000', '1e+300', 'nan')
    """
    number = float(value)
    if math.isfinite(number) and abs(number) < FIXED_POINT_BELOW:
        return f"{number:.{decimals}f}"
    return f"{number:.4g}"


def omission_marker(omitted: int, separator: str = "\n") -> str:
    """The marker put where ``omitted`` characters were cut out."""
    return f"{separator}[... {omitted} characters omitted ...]{separator}"


def trim_text(text: str, max_chars: int, separator: str = "\n") -> str:
    """``text`` if it fits in ``max_chars``, else its head and tail around a marker naming how much was left out
    (``separator`` around the marker: a newline, or a space to keep a one-line text on one line)."""
    if len(text) <= max_chars:
        return text
    head = max_chars // 2
    tail = max_chars - head
    return f"{text[:head]}{omission_marker(len(text) - head - tail, separator)}{text[len(text) - tail :]}"
