"""Proportions as the dashboard shows them: whole percentages and a 95% Wilson interval.

Framework-free. Percentages round half up on exact integers (2 of 3 is 67%, 1 of 8 is 13%),
never truncate, and never go through binary floating point for the rounding step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

# The two-sided 95% normal quantile.
Z_95: Final = 1.959963984540054


def percent(part: int, whole: int) -> int:
    """``part`` of ``whole`` as a whole percentage, rounded half up (0 when whole is 0)."""
    if whole <= 0:
        return 0
    # round(100 * part / whole) with halves up, in integers: floor((200 * part + whole) / 2w).
    return (200 * part + whole) // (2 * whole)


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval of the proportion successes / n, as fractions in [0, 1].

    (0.0, 1.0) when n is 0: nothing is known.
    """
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z / (1 + z2 / n)) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low = max(0.0, centre - half)
    high = min(1.0, centre + half)
    # Exact at the edges (floating point leaves 1e-17 crumbs there).
    if successes == 0:
        low = 0.0
    if successes == n:
        high = 1.0
    return low, high


def _percent_of_fraction(value: float) -> int:
    """A fraction as a whole percentage, halves up."""
    return math.floor(value * 100 + 0.5)


@dataclass(frozen=True)
class Rate:
    """A success rate with its n and 95% Wilson interval, in whole percentages."""

    successes: int
    n: int

    @property
    def percent(self) -> int:
        """The rate, rounded half up."""
        return percent(self.successes, self.n)

    @property
    def interval(self) -> tuple[int, int]:
        """The 95% Wilson interval's bounds, rounded half up."""
        low, high = wilson_interval(self.successes, self.n)
        return _percent_of_fraction(low), _percent_of_fraction(high)

    @property
    def low(self) -> int:
        """Lower bound of the interval (percent)."""
        return self.interval[0]

    @property
    def high(self) -> int:
        """Upper bound of the interval (percent)."""
        return self.interval[1]
