"""The "ASR over time" chart's geometry: an inline SVG drawn by the template, no script.

Coordinates are computed here in the SVG's own units (a fixed viewBox that the stylesheet
scales to the panel's width), so the template only loops over numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring.tallies import Trend

WIDTH, HEIGHT = 720, 230
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 10, 34
GRID = (0, 25, 50, 75, 100)
X_LABELS = 4


@dataclass(frozen=True)
class Point:
    """One period of one series with results: where it is drawn and what it says."""

    x: float
    y: float
    title: str


def _y(percent: float) -> float:
    return round(TOP + (HEIGHT - TOP - BOTTOM) * (1 - percent / 100), 1)


def _x(i: int, n: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return round(LEFT + (span * i / (n - 1) if n > 1 else span / 2), 1)


def trend_chart(trend: Trend) -> dict[str, Any]:
    """Gridlines, x labels, and per series its points and the polylines joining consecutive
    periods that have results (a period without results breaks the line)."""
    n = len(trend.rows)
    series: list[dict[str, Any]] = []
    for j, s in enumerate(trend.series):
        points: list[Point | None] = []
        for i, row in enumerate(trend.rows):
            rate = row.rates[j]
            if rate.n:
                title = f"{s.display} {row.start:%Y-%m-%d}: {rate.percent}% of {rate.n}"
                points.append(Point(_x(i, n), _y(100 * rate.successes / rate.n), title))
            else:
                points.append(None)
        lines: list[str] = []
        run: list[Point] = []
        for p in [*points, None]:
            if p is not None:
                run.append(p)
                continue
            if len(run) > 1:
                lines.append(" ".join(f"{q.x},{q.y}" for q in run))
            run = []
        series.append({"index": j, "series": s, "points": [p for p in points if p], "lines": lines})
    # The first and last periods and a few evenly between, anchored so none is clipped.
    shown = sorted({round(k * (n - 1) / (X_LABELS - 1)) for k in range(X_LABELS)}) if n else []
    labels = [
        {
            "x": _x(i, n),
            "text": f"{trend.rows[i].start:%m-%d}",
            "anchor": "start" if i == 0 and n > 1 else "end" if i == n - 1 and n > 1 else "middle",
        }
        for i in shown
    ]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "label_y": HEIGHT - BOTTOM + 16,
        "grid": [{"y": _y(g), "label": f"{g}%", "text_y": _y(g) + 4} for g in GRID],
        "x_labels": labels,
        "series": series,
    }
