"""Bounded quoting (robodojo.text): short, still-quoted texts whatever the size of the value, in bounded time."""

from __future__ import annotations

import time

import numpy as np
import pytest

from robodojo.text import MAX_QUOTED_CHARS, cut_name, quote, short_number


def test_short_values_are_their_repr():
    for value in ("up", b"ab", 3, 1.5, (0, 1), [0.1, "x"], None, {"k": 1}):
        assert quote(value) == repr(value)


@pytest.mark.parametrize(
    "value",
    ["x" * 10_000_000, list(range(1_000_000)), tuple(["y" * 1000] * 1000), {str(i): i for i in range(100_000)},
     np.zeros(1_000_000), 10**5000, [[[[[1] * 1000] * 10] * 10] * 10]],
    ids=["string", "list", "tuple-of-strings", "dict", "array", "huge-int", "nested"],
)  # fmt: skip
def test_any_value_is_quoted_short_and_fast(value):
    t0 = time.perf_counter()
    text = quote(value)
    assert time.perf_counter() - t0 < 0.05, "quoting must cost what its output costs, not what the input costs"
    assert len(text) <= MAX_QUOTED_CHARS


def test_a_cut_quote_ends_with_dots_and_keeps_the_head():
    text = quote(list(range(100)))
    assert len(text) == MAX_QUOTED_CHARS and text.startswith("[0, 1, 2, ") and text.endswith("...")
    assert quote("q" * 100) == "'" + "q" * 56 + "..."
    assert len(quote("q" * 100, max_chars=20)) == 20


def test_a_value_whose_repr_fails_is_named_by_its_type():
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert quote(Broken()).startswith("<Broken")


def test_cut_names_stay_quoted_and_cutting_twice_changes_nothing():
    assert cut_name("left_z") == "left_z"
    long = cut_name("n" * 10_000)
    assert long == "n" * MAX_QUOTED_CHARS + "..." and cut_name(long) == long
    assert repr(long).endswith("...'")


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.2, "1.2000"), (-0.5000001, "-0.5000"), (999_999.0, "999999.0000"), (1e6, "1e+06"), (-1e300, "-1e+300"),
     (float("nan"), "nan"), (float("inf"), "inf"), (np.float64(2.0), "2.0000")],
)  # fmt: skip
def test_numbers_are_fixed_point_while_short_and_never_hundreds_of_digits(value, text):
    assert short_number(value) == text
    assert short_number(1e300, decimals=2) == "1e+300" and short_number(0.123456, decimals=2) == "0.12"
