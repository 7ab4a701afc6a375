"""Date bounds for list filters (`after=` / `before=`), shared by every FilterSet.

A bound is a bare date or an ISO 8601 datetime. A bare date means the whole day: `after=D`
from its first microsecond, `before=D` through its last, so both bounds include day D.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Any

import django_filters as df
from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

# A "+01:00" offset typed into a URL arrives as " 01:00" (a plus is a space there).
_SPACED_OFFSET_RE = re.compile(r"(T\d\d:\d\d(?::\d\d(?:\.\d+)?)?) (\d\d:?\d\d)$")


def parse_date_bound(text: str, *, end_of_day: bool) -> datetime:
    """An aware UTC datetime for a bound; ValueError when `text` is neither date nor datetime.

    The bare date is tried first: `parse_datetime` also accepts one (as midnight), which would
    make `before=2026-01-01` exclude that whole day.
    """
    text = _SPACED_OFFSET_RE.sub(r"\1+\2", text.strip())
    try:
        day = parse_date(text)
        moment = None if day else parse_datetime(text)
    except ValueError:
        day = moment = None
    if day is not None:
        return day_bound(day, end_of_day=end_of_day)
    if moment is None:
        raise ValueError("Enter a date (YYYY-MM-DD) or an ISO 8601 datetime.")
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    try:
        # In UTC: PostgreSQL refuses offsets beyond +-15:59 that Python accepts (up to
        # +-23:59), and a date at the edge of the calendar can overflow when converted.
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("That datetime is out of range.") from None


def day_bound(day: date, *, end_of_day: bool) -> datetime:
    """The first (or last) microsecond of `day` in UTC."""
    return datetime.combine(day, time.max if end_of_day else time.min, tzinfo=UTC)


class DateOrDateTimeField(forms.Field):
    """A date (``2026-11-22``) or an ISO datetime; naive datetimes are taken as UTC."""

    def __init__(self, *, end_of_day: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.end_of_day = end_of_day

    def to_python(self, value: Any) -> datetime | None:
        """Parse to an aware datetime; a bare date means the start (or end) of that day."""
        if value in (None, ""):
            return None
        try:
            return parse_date_bound(str(value), end_of_day=self.end_of_day)
        except ValueError as exc:
            raise ValidationError(str(exc), code="invalid") from None


class DateBoundFilter(df.Filter):
    """Inclusive lower (``gte``) or upper (``lte``) bound on a timestamp column."""

    field_class = DateOrDateTimeField

    def __init__(self, *, bound: str, **kwargs: Any) -> None:
        if bound not in ("gte", "lte"):
            raise ValueError(f"bound is gte or lte, not {bound!r}")
        if bound == "lte":
            kwargs["end_of_day"] = True
        super().__init__(lookup_expr=bound, **kwargs)
