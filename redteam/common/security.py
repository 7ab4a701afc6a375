"""Request-level security helpers: the client address used by login rate limiting."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _valid_ip(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the hop our trusted proxies saw (see settings).

    Only the entries appended by our own proxies are trusted: with N proxies, the client is
    the Nth address from the right of X-Forwarded-For. Anything left of it was written by the
    client and could be forged to dodge the lockout, so it is ignored.
    """
    remote = _valid_ip(str(request.META.get("REMOTE_ADDR") or "")) or "0.0.0.0"
    proxies: int = settings.REDTEAM_TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    hops = [h for h in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",") if h]
    if len(hops) < proxies:
        return remote
    return _valid_ip(hops[-proxies]) or remote
