"""Template filters of the scorer calibration pages."""

from __future__ import annotations

from typing import Any

from django import template

from scoring.calibration_views import metric_text

register = template.Library()


@register.filter
def metric(value: Any) -> str:
    """A metric value: integers as they are, floats to 3 decimals, NaN or missing as a dash."""
    return metric_text(value)
