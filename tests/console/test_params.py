"""Whole numbers from request parameters: ASCII digits only, as many as a bigint holds."""

import pytest

from console.params import whole_number, whole_numbers


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0", 0),
        ("007", 7),
        ("9" * 18, 10**18 - 1),
        ("9" * 19, None),  # more than a bigint may hold
        ("\u00b2", None),  # "²": isdigit() says yes, int() says no
        ("\u0663", None),  # Arabic-Indic 3: int() would read it as 3
        ("-1", None),
        ("+1", None),
        (" 1", None),
        ("1\n", None),
        ("1.0", None),
        ("1\x00", None),
        ("", None),
        (None, None),
        (["1"], None),
    ],
)
def test_whole_number(given, expected):
    assert whole_number(given) == expected


def test_whole_number_clamps():
    assert whole_number("0", low=1) == 1
    assert whole_number("500", high=100) == 100
    assert whole_number("50", low=1, high=100) == 50


def test_whole_numbers_keeps_only_numbers_in_order():
    assert whole_numbers(["3", "x", "\u00b2", "1", "-2"]) == [3, 1]
