"""Tampered cursors on every list the project serves: a 400 naming the cursor, never a 500.

The lists are found from the URL resolver (every GET route of the access matrix), so a new list
is covered the day it is added: API lists are the viewsets with a paginator, pages are those
whose context carries a cursor. Every other readable URL gets a sample of the tamperings and must
not answer 500 either.
"""

from __future__ import annotations

import base64
import json
import random
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import resolve

from redteam.common.cursors import INVALID_CURSOR
from tests.security.conftest import Memory, Roles
from tests.security.test_access_matrix import _classify, _fill, all_routes

pytestmark = pytest.mark.django_db

TS = "2026-01-01T12:00:00+00:00"
UUID = "8f0c3c52-9d7f-4c1e-9a4e-1c2b3d4e5f60"


def _page_token(value: Any) -> str:
    """A token in the pages' format (url-safe base64 of JSON, unpadded) holding `value`."""
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _api_token(**params: Any) -> str:
    """A token in the API's format (base64 of a query string with o, r, p)."""
    return base64.b64encode(urlencode(params).encode()).decode()


def _tamperings() -> list[tuple[str, str]]:
    """(what, token): garbage, garbage that decodes, wrong types, NUL, huge and odd values."""
    rng = random.Random(17)
    cases: list[tuple[str, str | bytes]] = [
        ("not base64", "!!!***"),
        ("one char", "a"),
        ("padding only", "===="),
        ("non-ascii", "é漢"),
        ("base64 of bytes", base64.b64encode(bytes(rng.randrange(256) for _ in range(40)))),
        ("base64 of text", base64.b64encode(b"hello, cursor")),
        ("base64 of invalid utf-8", base64.urlsafe_b64encode(b"\xff\xfe\xfd")),
        ("json null", _page_token(None)),
        ("json object", _page_token({"n": 1, "t": 2, "p": 3})),
        ("json numbers", _page_token([1, 2, 3])),
        ("json too long", _page_token(["n", TS, UUID, "extra"])),
        ("timestamp a number", _page_token(["n", 1767268800, UUID])),
        ("pk a number", _page_token(["n", TS, 7])),
        ("unknown direction", _page_token(["x", TS, UUID])),
        ("not a date", _page_token(["n", "notadate", UUID])),
        ("naive date", _page_token(["n", "2026-01-01T12:00:00", UUID])),
        ("date before year 1 in UTC", _page_token(["n", "0001-01-01T00:00:00+05:00", UUID])),
        ("date after 9999 in UTC", _page_token(["p", "9999-12-31T23:59:59-05:00", UUID])),
        ("non-UUID pk", _page_token(["n", TS, "not-a-uuid"])),
        ("pk longer than any id", _page_token(["n", TS, "c" * 300])),
        ("NUL pk", _page_token(["n", TS, "\x00"])),
        ("NUL in timestamp", _page_token(["n", TS + "\x00", UUID])),
        ("huge pk", _page_token(["n", TS, "9" * 5000])),
        ("deep json", base64.urlsafe_b64encode(b"[" * 600)),
        ("api: p not a date", _api_token(p="notadate")),
        ("api: p NUL", _api_token(p="\x00")),
        ("api: p out of range", _api_token(p="9999-12-31 23:59:59-05:00")),
        ("api: p before year 1", _api_token(p="0001-01-01 00:00:00+05:00")),
        ("api: p a uuid", _api_token(p=UUID)),
        ("api: p huge", _api_token(p="1" * 900)),
        ("api: negative offset", _api_token(o=-1)),
        ("api: offset not a number", _api_token(o="x")),
        ("api: huge offset", _api_token(o=10**40, p=TS)),
        ("api: reverse not a number", _api_token(r="yes")),
        ("oversized token", "A" * 50_000),
    ]
    return [(what, token if isinstance(token, str) else token.decode()) for what, token in cases]


TAMPERINGS = _tamperings()
# Lists keyed by text rather than a uuid: a conversation id is free text, an identifier's key is
# its hash.
TEXT_KEYED_LISTS = ("memory:conversation_list", "memory:identifier_index")
# Page sizes and page numbers are clamped or defaulted: never a 500.
ODD_SIZES = ["-1", "\x00", "abc", "1" + "0" * 40, "9" * 5000]
# Positions a row could hold, though no list handed them out: answered, never a 500. (The
# conversation list's pk is free text, so "not-a-uuid" is one of these there.)
HARMLESS = {
    "offset PostgreSQL refuses": _page_token(["n", "2026-01-01T00:00:00+23:59", UUID]),
    "api: offset PostgreSQL refuses": _api_token(p="2026-01-01 00:00:00+23:59"),
    "text pk": _page_token(["n", TS, "not-a-uuid"]),
}


def _readable_get_paths(memory: Memory) -> list[tuple[str, str]]:
    """(name, path) of every GET URL a reader may use: API reads and review pages."""
    paths = []
    for route, name in all_routes():
        kind_method = _classify(name)
        if kind_method in (("api_read", "GET"), ("page_read", "GET")):
            paths.append((name, _fill(route, name, memory)))
    return paths


def _is_api_list(path: str) -> bool:
    """A DRF viewset's list action with a paginator."""
    view = resolve(path).func
    cls = getattr(view, "cls", None)
    actions = getattr(view, "actions", None) or {}
    return cls is not None and actions.get("get") == "list" and cls.pagination_class is not None


@pytest.mark.long
@pytest.mark.usefixtures("quiet_request_log")
def test_every_list_refuses_every_tampered_cursor_with_400(roles: Roles, memory: Memory) -> None:
    staff = Client(raise_request_exception=False)
    staff.force_login(roles.users["staff"])
    keyed = Client(
        raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {roles.keys['read_key']}"
    )
    api_lists: list[str] = []
    pages: list[str] = []
    wrong: list[str] = []
    for name, path in _readable_get_paths(memory):
        api = _is_api_list(path)
        client = keyed if name.startswith("api") else staff
        plain = client.get(path)
        paginated = api or (plain.context is not None and "next_cursor" in plain.context)
        (api_lists if api else pages if paginated else []).append(name)
        # URLs without a list ignore the parameter; a sample shows that stays true.
        for what, token in TAMPERINGS if paginated else TAMPERINGS[:: len(TAMPERINGS) // 4]:
            response = client.get(path, {"cursor": token})
            if response.status_code >= 500 or (paginated and response.status_code != 400):
                if what == "non-UUID pk" and name in TEXT_KEYED_LISTS:
                    continue  # a conversation id or identifier hash is text: see HARMLESS
                wrong.append(f"{name} {what}: {response.status_code}")
            elif paginated and api:
                assert response.json() == {"cursor": [INVALID_CURSOR]}, name
            elif paginated:
                assert INVALID_CURSOR.encode() in response.content, name
                assert b">First page</a>" in response.content, name
        for value in ODD_SIZES if paginated else ():
            params = {"page_size": value, "size": value, "page": value}
            response = client.get(path, params)
            if response.status_code >= 500:
                wrong.append(f"{name} page sizes {value!r}: {response.status_code}")
        for what, token in HARMLESS.items() if paginated else ():
            response = client.get(path, {"cursor": token})
            if response.status_code >= 500:
                wrong.append(f"{name} {what}: {response.status_code}")
    assert wrong == [], "\n".join(wrong)
    # The resolver walk found the lists the project has (so the test cannot pass vacuously).
    assert len(api_lists) >= 6, api_lists
    assert {"memory:conversation_list", "scoring:attack_result_list"} <= set(pages), pages


@pytest.mark.usefixtures("quiet_request_log")
def test_cursors_the_lists_hand_out_still_work(roles: Roles, memory: Memory) -> None:
    keyed = Client(HTTP_AUTHORIZATION=f"Bearer {roles.keys['read_key']}")
    for name, path in _readable_get_paths(memory):
        if not _is_api_list(path):
            continue
        first = keyed.get(path, {"page_size": 1}).json()
        if not first["next"]:
            continue
        second = keyed.get(first["next"])
        assert second.status_code == 200, name
        assert keyed.get(second.json()["previous"]).status_code == 200, name
