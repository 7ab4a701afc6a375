"""Percentages and Wilson intervals (redteam.core.stats) against known values."""

from __future__ import annotations

import pytest

from redteam.core.stats import Rate, percent, wilson_interval


@pytest.mark.parametrize(
    ("part", "whole", "expected"),
    [
        (2, 3, 67),  # never truncated to 66
        (1, 3, 33),
        (1, 8, 13),  # 12.5 rounds half up
        (1, 200, 1),  # 0.5 rounds half up
        (1, 201, 0),
        (199, 200, 100),  # 99.5 rounds half up
        (0, 5, 0),
        (5, 5, 100),
        (0, 0, 0),
    ],
)
def test_percent_rounds_half_up(part: int, whole: int, expected: int) -> None:
    assert percent(part, whole) == expected


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Reference values: statsmodels proportion_confint(method="wilson") and R's
        # binom.confint(method="wilson").
        (5, 10, 0.236593, 0.763407),
        (0, 10, 0.0, 0.277533),
        (10, 10, 0.722467, 1.0),
        (1, 3, 0.061492, 0.792340),
    ],
)
def test_wilson_interval_known_values(successes: int, n: int, low: float, high: float) -> None:
    got_low, got_high = wilson_interval(successes, n)
    assert got_low == pytest.approx(low, abs=1e-6)
    assert got_high == pytest.approx(high, abs=1e-6)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0
    with pytest.raises(ValueError, match="between 0 and n"):
        wilson_interval(4, 3)


def test_rate_in_whole_percent() -> None:
    rate = Rate(successes=2, n=3)
    assert rate.percent == 67
    assert rate.interval == (21, 94)
    assert Rate(successes=5, n=10).interval == (24, 76)
    assert Rate(successes=0, n=0).percent == 0
