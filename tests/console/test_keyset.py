"""A page's key (console/keyset.py) read back from a URL: what it wrote, or nothing at all,
whatever a URL holds."""

import base64
import json
from datetime import UTC, datetime
from types import SimpleNamespace

from django.db.models import Q
from hypothesis import given
from hypothesis import strategies as st

from console.keyset import Order

ORDER = Order("-made", (("made", datetime), ("name", str), ("rank", int)), descending=True)
moments = st.datetimes(timezones=st.just(UTC))
# What a text column can hold: no NUL, no lone surrogate.
texts = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=30)
ranks = st.integers(-(2**63) + 1, 2**63 - 1)


def encoded(value) -> str:
    text = json.dumps(value)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@given(moments, texts, ranks, st.integers(1, 2**62))
def test_a_key_reads_back_as_the_values_it_was_made_of(made, name, rank, pk):
    row = SimpleNamespace(made=made, name=name, rank=rank, pk=pk)
    assert ORDER.parse(ORDER.key(row)) == (made, name, rank, pk)


@given(
    st.one_of(
        st.text(max_size=80),
        st.binary(max_size=60).map(lambda raw: base64.urlsafe_b64encode(raw).decode()),
    )
)
def test_any_text_is_a_key_of_the_right_kinds_or_none(text):
    found = ORDER.parse(text)
    assert found is None or [type(v) for v in found] == [datetime, str, int, int]


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=False),
            texts,
            st.just("-made"),
            st.just("2026-01-01T00:00:00+00:00"),
            st.just("2026-01-01"),
        ),
        max_size=6,
    )
)
def test_json_of_other_shapes_is_no_key(values):
    found = ORDER.parse(encoded(values))
    if found is not None:  # only the exact shape: the order's name, an aware time, ...
        assert values[0] == "-made" and len(values) == 5
        assert isinstance(values[3], int) and isinstance(values[4], int)


def test_what_postgresql_would_refuse_is_no_key():
    good = ["-made", "2026-01-01T00:00:00+00:00", "a", 1, 2]
    assert ORDER.parse(encoded(good)) is not None
    for bad in (
        [*good[:2], "a\x00b", *good[3:]],  # no NUL in PostgreSQL text
        [*good[:2], "a\ud800b", *good[3:]],  # nor a lone surrogate
        [*good[:3], 2**63, good[4]],  # beyond a bigint
        [*good[:3], True, good[4]],  # a JSON true is no number
        [good[0], "2026-01-01T00:00:00", *good[2:]],  # a time with no zone
        ["made", *good[1:]],  # another order's key
    ):
        assert ORDER.parse(encoded(bad)) is None, bad
    assert ORDER.parse("x" * 601) is None


def test_beyond_is_after_or_before_in_the_order_and_starts_at_the_key():
    values = (datetime(2026, 1, 1, tzinfo=UTC), "a", 3, 9)
    after = ORDER.beyond(values, forward=True)  # descending: "after" is smaller
    assert after.children[0] == Q(made__lte=values[0]).children[0]
    assert "made__lt" in str(after) and "pk__lt" in str(after)
    before = ORDER.beyond(values, forward=False)
    assert before.children[0] == Q(made__gte=values[0]).children[0]
    assert "made__gt" in str(before) and "pk__gt" in str(before)
