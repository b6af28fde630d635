"""The progress line of seed 000 ("this iteration hardware time is X and e2e time is Y ms."),
read out of arbitrary output: any float, spacing, a trailing period, a prefix, noise."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.faults.watch import parse, parse_line

SEED = "this iteration hardware time is 2201.521 and e2e time is 3317.794921875 ms."

times = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)
positive = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False, allow_infinity=False)
# Output that is not a progress line: anything without the word "iteration" in it.
noise = st.text(st.characters(blacklist_categories=["Cs"]), max_size=80).filter(
    lambda text: "iteration" not in text.lower()
)


def line(hardware: float, e2e: float, *, style: int = 0) -> str:
    numbers = [(repr(hardware), repr(e2e)), (f"{hardware:.3f}", f"{e2e:.6f}"),
               (f"{hardware:e}", f"{e2e:E}")][style]  # fmt: skip
    return f"this iteration hardware time is {numbers[0]} and e2e time is {numbers[1]} ms."


def test_the_seeds_example():
    assert parse_line(SEED) == (2201.521, 3317.794921875)


@pytest.mark.parametrize(
    "text",
    [
        SEED.rstrip("."),
        SEED.replace("ms.", "ms"),
        SEED.replace("3317.794921875 ms", "3317.794921875ms"),
        SEED.replace(" is ", "   is  "),
        "[rank0]:2026-11-25 06:00:01 " + SEED + "   ",
        SEED.upper(),
    ],
)
def test_tolerated_variants(text):
    assert parse_line(text) == pytest.approx((2201.521, 3317.794921875))


@pytest.mark.parametrize(
    "text",
    [
        "this iteration hardware time is 12 and e2e time is 0 ms",  # no e2e time
        "this iteration hardware time is -1 and e2e time is 10 ms",  # negative
        "this iteration hardware time is nan and e2e time is 10 ms",
        "this iteration hardware time is 1e999 and e2e time is 10 ms",  # infinite
        "this iteration hardware time is 12 and e2e time is 10 s",  # not ms
        "this iteration hardware time is and e2e time is 10 ms",
        "iteration 12: loss 0.3",
    ],
)
def test_not_progress(text):
    assert parse_line(text) is None


@given(times, positive, st.integers(0, 2))
def test_any_float_reads_back(hardware, e2e, style):
    parsed = parse_line(line(hardware, e2e, style=style))
    assert parsed is not None
    if style == 0:  # repr round-trips exactly
        assert parsed == (hardware, e2e)
    else:
        assert math.isclose(parsed[0], hardware, rel_tol=1e-5, abs_tol=1e-3)
        assert math.isclose(parsed[1], e2e, rel_tol=1e-5, abs_tol=1e-6)


@given(st.lists(st.one_of(noise, st.tuples(times, positive)), max_size=30))
def test_progress_lines_among_noise_come_out_in_order(items):
    text = "\n".join(item if isinstance(item, str) else line(*item) for item in items)
    expected = [item for item in items if not isinstance(item, str)]
    # A noise item may hold line breaks of its own: only the progress lines count.
    assert parse(text) == expected


@given(noise)
def test_noise_alone_is_never_progress(text):
    assert parse(text) == []
