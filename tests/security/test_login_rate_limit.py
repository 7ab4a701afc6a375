"""Login is rate-limited against password guessing (django-axes, username + address)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

PASSWORD = "correct horse battery staple"


@pytest.fixture
def axes_on(settings: pytest.FixtureRequest) -> int:
    """Turn the limiter back on (tests/conftest.py turns it off for client.login)."""
    settings.AXES_ENABLED = True  # type: ignore[attr-defined]
    settings.AXES_FAILURE_LIMIT = 5  # type: ignore[attr-defined]
    return 5


@pytest.fixture
def reviewer(db: None, settings: pytest.FixtureRequest) -> object:
    # A fast hasher: every attempt hashes a password, and the real one is slow by design.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]
    return get_user_model().objects.create_user("reviewer", password=PASSWORD)


def _login(client: Client, password: str, *, ip: str = "203.0.113.7") -> int:
    response = client.post(
        reverse("login"),
        {"username": "reviewer", "password": password},
        REMOTE_ADDR=ip,
    )
    return response.status_code


@pytest.mark.usefixtures("reviewer")
def test_login_locks_out_after_failure_limit_even_with_right_password(axes_on: int) -> None:
    client = Client()
    for _ in range(axes_on - 1):
        assert _login(client, "guess") == 200  # the form again, with an error
    # The limit-th failure locks the pair out.
    assert _login(client, "guess") == 429
    assert _login(client, PASSWORD) == 429
    assert "_auth_user_id" not in client.session


def test_lockout_does_not_block_the_same_user_from_another_address(
    axes_on: int, reviewer: object
) -> None:
    attacker = Client()
    for _ in range(axes_on):
        _login(attacker, "guess", ip="203.0.113.7")
    assert _login(attacker, PASSWORD, ip="203.0.113.7") == 429
    owner = Client()
    assert _login(owner, PASSWORD, ip="198.51.100.20") == 302
    assert owner.session["_auth_user_id"] == str(reviewer.pk)  # type: ignore[attr-defined]


@pytest.mark.usefixtures("reviewer")
def test_successful_login_before_the_limit_resets_the_count(axes_on: int) -> None:
    client = Client()
    for _ in range(axes_on - 1):
        assert _login(client, "guess") == 200
    assert _login(client, PASSWORD) == 302
    client.logout()
    for _ in range(axes_on - 1):
        assert _login(client, "guess") == 200
    assert _login(client, PASSWORD) == 302


@pytest.mark.usefixtures("reviewer")
def test_forwarded_for_is_ignored_without_trusted_proxies(
    axes_on: int, settings: pytest.FixtureRequest
) -> None:
    """A guesser cannot dodge the lockout by inventing X-Forwarded-For addresses."""
    settings.REDTEAM_TRUSTED_PROXY_COUNT = 0  # type: ignore[attr-defined]
    client = Client()
    for n in range(axes_on):
        client.post(
            reverse("login"),
            {"username": "reviewer", "password": "guess"},
            REMOTE_ADDR="203.0.113.7",
            HTTP_X_FORWARDED_FOR=f"10.0.0.{n}",
        )
    assert _login(client, PASSWORD, ip="203.0.113.7") == 429


def test_client_ip_uses_the_hop_seen_by_the_trusted_proxy(settings: pytest.FixtureRequest) -> None:
    from django.test import RequestFactory

    from redteam.common.security import client_ip

    settings.REDTEAM_TRUSTED_PROXY_COUNT = 1  # type: ignore[attr-defined]
    request = RequestFactory().get(
        "/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.20"
    )
    # The left entry was written by the client; only the proxy's own append is trusted.
    assert client_ip(request) == "198.51.100.20"
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="junk")
    assert client_ip(request) == "10.0.0.2"
