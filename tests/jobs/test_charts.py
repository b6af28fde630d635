"""The usage charts' pure core: round tops, bounded coordinates, light downsampling."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from jobs.execution.charts import HEIGHT, MAX_POINTS, WIDTH, downsample, line_chart, nice_ceiling

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def series(values, step=10):
    return [(T0 + timedelta(seconds=i * step), v) for i, v in enumerate(values)]


def coords(chart):
    return [tuple(map(float, pair.split(","))) for pair in chart.points.split()]


def test_nice_ceiling_picks_round_numbers():
    assert [nice_ceiling(v) for v in (0, 0.5, 1, 1.2, 3, 7, 12, 180, 230, 4096)] == [
        1, 1, 1, 2, 5, 10, 20, 200, 250, 5000,
    ]  # fmt: skip


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_nice_ceiling_is_never_below_the_value_nor_far_above(value):
    top = nice_ceiling(value)
    assert top >= value and (value <= 1 or top <= value * 2.5 + 1e-6)


@given(st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=600))
def test_every_point_lies_inside_the_chart(values):
    chart = line_chart("cpu", "%", series(values), floor_top=100)
    points = coords(chart)
    assert 2 <= len(points) <= MAX_POINTS + 1
    assert all(0 <= x <= WIDTH and 0 <= y <= HEIGHT for x, y in points)
    assert chart.top >= max(values) and chart.peak == max(values) and chart.latest == values[-1]
    assert chart.top <= max(100, max(values) * 1.1) * 2.5 + 1e-6  # never needlessly flat


def test_time_runs_left_to_right_and_values_bottom_to_top():
    chart = line_chart("cpu", "%", series([0, 50, 90]), floor_top=100)
    assert coords(chart) == [(0, HEIGHT), (WIDTH / 2, HEIGHT / 2), (WIDTH, HEIGHT * 0.1)]


def test_the_scale_follows_the_use_and_the_limit_line_shows_when_inside():
    chart = line_chart("memory", "MiB", series([100, 200]), limit=16384)
    assert chart.top == 250 and chart.limit_y is None and chart.limit == 16384
    near = line_chart("memory", "MiB", series([100, 900]), limit=1000)
    assert near.top == 1000 and near.limit_y == 0


def test_no_sample_draws_nothing():
    chart = line_chart("cpu", "%", [], floor_top=100)
    assert chart.empty and chart.latest is None and chart.top == 100


@given(st.lists(st.floats(min_value=0, max_value=100), min_size=0, max_size=2000))
def test_downsampling_keeps_the_span_and_the_mean_roughly(values):
    data = series(values)
    out = downsample(data)
    assert len(out) <= MAX_POINTS
    if values:
        assert out[-1][0] == data[-1][0]
        assert (
            min(values) - 1e-6
            <= min(v for _, v in out)
            <= max(v for _, v in out)
            <= max(values) + 1e-6
        )
