"""Resource use over time as small server-rendered SVG line charts (SPEC O2). Pure: samples
in, coordinates and labels out; the template draws them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

WIDTH = 300
HEIGHT = 80
MAX_POINTS = 240  # more samples than this are averaged into buckets: the chart stays light


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    points: str  # SVG polyline points, "x,y x,y ..."; empty without samples
    top: float  # the value at the top edge
    latest: float | None
    peak: float | None
    first: datetime | None
    last: datetime | None
    limit_y: float | None = None  # where a limit line goes (e.g. the memory requested)
    limit: float | None = None
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def empty(self) -> bool:
        return not self.points


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above ``value`` (at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power + 1e-9:
            return step * power
    return 10 * power  # unreachable: 10 x power is always enough


def downsample(series: list[tuple[datetime, float]], limit: int = MAX_POINTS):
    """At most ``limit`` points: consecutive samples averaged into equal-sized buckets."""
    if len(series) <= limit:
        return list(series)
    size = math.ceil(len(series) / limit)
    out = []
    for start in range(0, len(series), size):
        bucket = series[start : start + size]
        out.append((bucket[-1][0], sum(v for _, v in bucket) / len(bucket)))
    return out


def line_chart(
    title: str,
    unit: str,
    series: list[tuple[datetime, float]],
    *,
    floor_top: float = 1.0,
    limit: float | None = None,
) -> Chart:
    """A chart of ``series`` (time, value), oldest first. The top is a round number above
    both the values and ``floor_top`` (e.g. 100 for a percentage); ``limit`` draws a line."""
    if not series:
        return Chart(title, unit, "", nice_ceiling(floor_top), None, None, None, None)
    values = [v for _, v in series]
    # Scaled to the use, not to the request: 200 MiB used of 16 GiB asked is still readable.
    # The limit line shows only when it falls inside the chart.
    top = nice_ceiling(max(max(values) * 1.1, floor_top))
    points = downsample(series)
    first, last = points[0][0], points[-1][0]
    span = (last - first).total_seconds() or 1.0
    coords = []
    for at, value in points:
        x = 0.0 if len(points) == 1 else (at - first).total_seconds() / span * WIDTH
        y = HEIGHT - min(max(value, 0.0), top) / top * HEIGHT
        coords.append(f"{x:.1f},{y:.1f}")
    if len(coords) == 1:  # one sample: a flat line across, so it shows
        coords.append(f"{WIDTH:.1f},{coords[0].split(',')[1]}")
    limit_y = HEIGHT - limit / top * HEIGHT if limit and limit <= top else None
    return Chart(
        title,
        unit,
        " ".join(coords),
        top,
        values[-1],
        max(values),
        series[0][0],
        series[-1][0],
        limit_y,
        limit,
    )
