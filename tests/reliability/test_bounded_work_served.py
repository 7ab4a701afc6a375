"""Bounded work under production settings: gunicorn (DEBUG off) on the test database.

Every hostile class of tests/security/hostile_payloads.py is ingested through the API over
HTTP, then every page and API read it touches is fetched by a logged-in user and an API key:
no 5xx, bounded bytes, and a generous time ceiling per request (a worker tied up for minutes
by one stored row would fail here). tests/security/test_bounded_work.py is the in-process
counterpart with unit tests per class.
"""

from __future__ import annotations

import http.client
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from memory.models import ComponentIdentifier
from tests.reliability.conftest import PROXY_HEADERS, ServedApp
from tests.security import hostile_payloads as hp

PASSWORD = "bounded-work-password"


@dataclass
class HttpSession:
    """A tiny cookie-keeping HTTP client for one served app (plain HTTP behind 'the proxy')."""

    served: ServedApp
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)

    def request(
        self, method: str, url: str, body: bytes | None = None, extra: dict[str, str] | None = None
    ) -> tuple[int, bytes, float, http.client.HTTPResponse]:
        """One request: (status, body, seconds, response)."""
        headers = {**PROXY_HEADERS, **self.headers, **(extra or {})}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        conn = http.client.HTTPConnection(self.served.host, self.served.port, timeout=120)
        started = time.perf_counter()
        try:
            conn.request(method, url, body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        elapsed = time.perf_counter() - started
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, raw, elapsed, response

    def login(self, username: str, password: str) -> None:
        """The login form, CSRF token and Referer included (HTTPS rules apply)."""
        status, page, _, _ = self.request("GET", "/accounts/login/")
        assert status == 200
        match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert match is not None
        form = urlencode(
            {
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": match.group(1).decode(),
            }
        ).encode()
        status, _, _, _ = self.request(
            "POST",
            "/accounts/login/",
            form,
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Referer": "https://127.0.0.1/accounts/login/",
            },
        )
        assert status == 302, "login failed"


@pytest.fixture
def clients(served: ServedApp) -> tuple[HttpSession, HttpSession]:
    """(API client with an ingest+read key, logged-in browser session)."""
    key = served.make_key("ingest", "read")[1]
    api = HttpSession(served, headers={"Authorization": f"Bearer {key}"})
    users = get_user_model()._default_manager.db_manager(served.alias)
    staff = users.create_superuser("bounded-staff", "staff@example.org")
    # Tests hash with a fast hasher the production server does not list: store a PBKDF2 hash
    # (few iterations; the server accepts any count) that gunicorn's settings can check.
    staff.password = PBKDF2PasswordHasher().encode(PASSWORD, "boundedsalt", iterations=1_000)
    staff.save(using=served.alias)
    browser = HttpSession(served)
    browser.login("bounded-staff", PASSWORD)
    return api, browser


@pytest.mark.long
def test_every_hostile_class_is_served_bounded_by_gunicorn(
    served: ServedApp, clients: tuple[HttpSession, HttpSession], fixtures_dir: Path
) -> None:
    api, browser = clients
    worst: dict[str, tuple[float, int, str]] = {}
    ingested = 0  # every case stays in the database: list reads may return all of them
    for case in hp.all_cases(fixtures_dir):
        ingested += case.body_bytes
        known = set(ComponentIdentifier.objects.using(served.alias).values_list("hash", flat=True))
        for body in case.bodies:
            status, raw, _, _ = api.request(
                "POST",
                "/api/v1/ingest/",
                hp.encode_body(body),
                {"Content-Type": "application/json"},
            )
            assert status == 200, (case.name, raw[:2000])
        new = ComponentIdentifier.objects.using(served.alias).exclude(hash__in=known)
        hashes = sorted(new.values_list("hash", flat=True))[:12]
        for url in case.urls(hashes):
            client = api if url.startswith("/api/") else browser
            status, raw, elapsed, _ = client.request("GET", url)
            assert status == 200, (case.name, url, status, raw[:300])
            assert len(raw) <= hp.size_limit(url, ingested), (case.name, url, len(raw))
            assert elapsed <= hp.MAX_SECONDS, (case.name, url, elapsed)
            previous = worst.get(case.klass, (0.0, 0, ""))
            if elapsed > previous[0]:
                worst[case.klass] = (elapsed, len(raw), url)
    assert served.alive()
    for klass, (elapsed, size, url) in sorted(worst.items()):
        print(f"{klass:10} worst {elapsed * 1000:7.0f} ms {size / 1024:8.0f} KiB  {url[:70]}")
