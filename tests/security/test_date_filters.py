"""A bare date includes its whole day on every date filter of every list, API and pages.

The filters come from the FilterSets (every DateBoundFilter), the lists that use them from the
URL resolver (a viewset's `filterset_class`, a page's `filterset` in its context), so a new date
filter or list is covered without editing this file.
"""

from __future__ import annotations

import inspect
from datetime import UTC, date, datetime, timedelta

import django_filters as df
import pytest
from django.test import Client
from django.urls import resolve

import memory.filters
import seeds.filters
from redteam.common.datebounds import DateBoundFilter, parse_date_bound
from tests.security.conftest import Memory, Roles
from tests.security.test_access_matrix import _classify, _fill, all_routes

pytestmark = pytest.mark.django_db

FILTER_MODULES = (memory.filters, memory.filters, seeds.filters)


def _filtersets() -> list[type[df.FilterSet]]:
    """Every FilterSet the project defines."""
    found = set()
    for module in FILTER_MODULES:
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, df.FilterSet) and obj.__module__ == module.__name__:
                found.add(obj)
    return sorted(found, key=lambda c: c.__name__)


def _date_filters(filterset: type[df.FilterSet]) -> dict[str, df.Filter]:
    """name -> filter for the FilterSet's date bounds."""
    return {n: f for n, f in filterset.base_filters.items() if isinstance(f, DateBoundFilter)}


def test_every_date_filter_is_the_shared_bound() -> None:
    """A FilterSet filtering a date column with anything else would skip the bare-date rule."""
    others = [
        f"{fs.__name__}.{name}"
        for fs in _filtersets()
        for name, f in fs.base_filters.items()
        if isinstance(
            f, df.DateFilter | df.DateTimeFilter | df.IsoDateTimeFilter | df.DateFromToRangeFilter
        )
    ]
    assert others == []


@pytest.mark.parametrize(
    ("text", "end_of_day", "expected"),
    [
        ("2026-01-01", True, datetime(2026, 1, 1, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2026-01-01", False, datetime(2026, 1, 1, tzinfo=UTC)),
        (" 2026-01-01 ", True, datetime(2026, 1, 1, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2026-01-01T00:00:00", True, datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T10:00:00 01:00", False, datetime(2026, 1, 1, 9, tzinfo=UTC)),
    ],
)
def test_parse_date_bound_reads_a_bare_date_as_the_whole_day(
    text: str, end_of_day: bool, expected: datetime
) -> None:
    assert parse_date_bound(text, end_of_day=end_of_day) == expected


@pytest.mark.parametrize("text", ["notadate", "2026-13-01", "9999-12-31T23:59:59-05:00", ""])
def test_parse_date_bound_refuses_what_is_no_bound(text: str) -> None:
    with pytest.raises(ValueError):
        parse_date_bound(text, end_of_day=True)


def _lists(roles: Roles, memory: Memory) -> list[tuple[str, Client, type[df.FilterSet], bool]]:
    """(path, client, FilterSet, is_api) for every list a reader may filter."""
    staff = Client()
    staff.force_login(roles.users["staff"])
    keyed = Client(HTTP_AUTHORIZATION=f"Bearer {roles.keys['read_key']}")
    found = []
    for route, name in all_routes():
        if _classify(name) not in (("api_read", "GET"), ("page_read", "GET")):
            continue
        path = _fill(route, name, memory)
        view = resolve(path).func
        cls = getattr(view, "cls", None)
        if cls is not None and (getattr(view, "actions", None) or {}).get("get") == "list":
            if getattr(cls, "filterset_class", None) is not None:
                found.append((path, keyed, cls.filterset_class, True))
        elif not name.startswith("api"):
            context = staff.get(path).context
            if context is not None and "filterset" in context:
                found.append((path, staff, type(context["filterset"]), False))
    return found


def _count(client: Client, path: str, is_api: bool, params: dict[str, str]) -> int:
    """Rows one (large) page of the list holds with these filters."""
    if is_api:
        response = client.get(path, {**params, "page_size": "1000"})
        assert response.status_code == 200, (path, params, response.content[:300])
        return len(response.json()["results"])
    response = client.get(path, {**params, "size": "200"})
    assert response.status_code == 200, (path, params, response.content[:300])
    return len(response.context["rows"])


def test_bare_date_includes_its_whole_day_on_every_date_filter(
    roles: Roles, memory: Memory
) -> None:
    lists = _lists(roles, memory)
    covered = {fs for _, _, fs, _ in lists}
    with_dates = {fs for fs in _filtersets() if _date_filters(fs)}
    assert with_dates <= covered, f"date filters no list exposes: {with_dates - covered}"
    checked = 0
    for path, client, filterset, is_api in lists:
        model = filterset._meta.model
        for name, f in _date_filters(filterset).items():
            upper = f.lookup_expr == "lte"
            stored = model.objects.exclude(**{f.field_name: None}).values_list(
                f.field_name, flat=True
            )
            moment: datetime = max(stored) if upper else min(stored)
            day: date = moment.astimezone(UTC).date()
            edge = "T23:59:59.999999+00:00" if upper else "T00:00:00+00:00"
            outside = day + timedelta(days=-1 if upper else 1)
            bare = _count(client, path, is_api, {name: day.isoformat()})
            explicit = _count(client, path, is_api, {name: day.isoformat() + edge})
            beyond = _count(client, path, is_api, {name: outside.isoformat()})
            assert bare == explicit > 0, (path, name, bare, explicit)
            assert beyond < bare, (path, name, beyond, bare)
            checked += 1
    assert checked >= 10, checked
