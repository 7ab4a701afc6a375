"""A bare date includes its whole day on every date filter of every list, API and pages.

The filters come from the FilterSets (every DateBoundFilter of every FilterSet the project
defines, found once the URLconf has imported every view), the lists that use them from the URL
resolver (a viewset's `filterset_class`, a page's `filterset` in its context), so a new date
filter or list is covered without editing this file.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import django_filters as df
import pytest
from django.test import Client
from django.urls import get_resolver, resolve

from redteam.common.datebounds import DateBoundFilter, parse_date_bound
from tests.security.conftest import Memory, Roles
from tests.security.test_access_matrix import _classify, _fill, all_routes

pytestmark = pytest.mark.django_db

PROJECT_PACKAGES = ("memory", "scoring", "seeds", "redteam")
# Every row of the filtered table is moved to one instant around this day in turn.
DAY = date(2026, 1, 1)
LAST_MOMENT = datetime.combine(DAY, time.max, tzinfo=UTC)  # 23:59:59.999999
FIRST_MOMENT = datetime.combine(DAY, time.min, tzinfo=UTC)
# (instant of every row, included by before=DAY, included by after=DAY)
INSTANTS = (
    (FIRST_MOMENT - timedelta(microseconds=1), True, False),  # the day before, 23:59:59.999999
    (FIRST_MOMENT, True, True),
    (FIRST_MOMENT.replace(hour=23, minute=59), True, True),
    (LAST_MOMENT, True, True),
    (LAST_MOMENT + timedelta(microseconds=1), False, True),  # the day after, 00:00
)


def _filtersets() -> list[type[df.FilterSet]]:
    """Every FilterSet the project defines (the URLconf imports every view that uses one)."""
    get_resolver().url_patterns  # noqa: B018  (imports every view module)
    found: set[type[df.FilterSet]] = set()
    stack = list(df.FilterSet.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in PROJECT_PACKAGES:
            found.add(cls)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__name__}")


def _date_filters(filterset: type[df.FilterSet]) -> dict[str, df.Filter]:
    """name -> filter for the FilterSet's date bounds."""
    return {n: f for n, f in filterset.base_filters.items() if isinstance(f, DateBoundFilter)}


DATE_FILTERS = [(fs, name) for fs in _filtersets() for name in _date_filters(fs)]


def test_the_date_filters_are_found() -> None:
    """Lists with dates: pieces, conversations, scores, attack results, scenarios, seeds."""
    names = {fs.__name__ for fs, _ in DATE_FILTERS}
    assert len(DATE_FILTERS) >= 12, DATE_FILTERS
    assert len(names) >= 6, DATE_FILTERS


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
    with pytest.raises(ValueError, match=r"Enter a date|out of range"):
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


@pytest.mark.parametrize(
    ("filterset", "name"), DATE_FILTERS, ids=[f"{fs.__name__}.{n}" for fs, n in DATE_FILTERS]
)
def test_bare_date_includes_its_whole_day(
    roles: Roles, memory: Memory, filterset: type[df.FilterSet], name: str
) -> None:
    """`before=DAY` keeps a row at 23:59 of DAY and drops one at 00:00 the day after;
    `after=DAY` keeps a row at 00:00 (and 23:59) of DAY and drops one at 23:59 the day before.
    On every list (API and page) the FilterSet serves."""
    lists = [(p, c, api) for p, c, fs, api in _lists(roles, memory) if fs is filterset]
    assert lists, f"{filterset.__name__}.{name}: no list exposes this date filter"
    date_filter = _date_filters(filterset)[name]
    upper = date_filter.lookup_expr == "lte"
    model = filterset._meta.model  # type: ignore[attr-defined]  # not in the stubs
    rows = model._default_manager.all()
    assert rows.exists(), f"no {model.__name__} row to filter"
    for instant, before_keeps, after_keeps in INSTANTS:
        column = date_filter.field_name
        assert column is not None
        rows.update(**{column: instant})
        kept = before_keeps if upper else after_keeps
        for path, client, is_api in lists:
            every = _count(client, path, is_api, {})
            assert every > 0, path
            got = _count(client, path, is_api, {name: DAY.isoformat()})
            assert got == (every if kept else 0), (path, name, instant.isoformat(), got, every)
