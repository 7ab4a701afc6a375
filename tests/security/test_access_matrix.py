"""The access matrix: every URL the project serves, walked as every role.

Each URL pattern from the resolver must be classified below (a new URL fails the test until
someone decides who may use it). For each role the request is sent with the method the URL
expects and the outcome is reduced to allowed / denied:
  denied  = 401, 403, or a redirect to a login page;
  allowed = anything else (200, 201, 207, 400, 404, 413, ...: the request got past access
            control and was judged on its content).
URL parameters are filled with rows that exist (PyRIT's real run, ingested), so a 404 can never
stand in for a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from redteam.common.models import ApiKey
from tests.security.conftest import Memory, Roles

pytestmark = pytest.mark.django_db

ROLES = (
    "anonymous",
    "read_key",
    "ingest_key",
    "revoked_key",
    "norole_user",
    "readonly_user",
    "reviewer",
    "adjudicator",
    "lead",
    "staff",
)
A, D = "allowed", "denied"

# Who may do what, per class of URL (columns in ROLES order). Keys are bound to operations
# and members hold their role in every operation (tests/security/conftest.py): a column is
# what the role may do with rows it can see; tests/security/test_operation_isolation.py
# checks that nothing of another operation is seen.
EXPECTED: dict[str, tuple[str, ...]] = {
    # Reachable by anyone: liveness and the login form.
    "public": (A, A, A, A, A, A, A, A, A, A),
    # API reads: a key with "read", or a browser session with a role in an operation.
    "api_read": (D, A, D, D, D, A, A, A, A, A),
    # API writes: a key with "ingest", or a staff session (CSRF-checked).
    "api_ingest": (D, D, A, D, D, D, D, D, D, A),
    # Review pages: a role in some operation, or a superuser; keys never log in.
    "page_read": (D, D, D, D, D, A, A, A, A, A),
    # Recording a human verdict: reviewers and above in the result's operation, superusers.
    "page_verdict": (D, D, D, D, D, D, A, A, A, A),
    # Blind double review's adjudication pages: adjudicators and leads (and superusers).
    "page_adjudicate": (D, D, D, D, D, D, D, A, A, A),
    # Promoting a piece into a seed dataset: seeds.add_seed (curators, superusers).
    "page_curate": (D, D, D, D, D, D, D, D, D, A),
    # The Django admin: staff only.
    "admin": (D, D, D, D, D, D, D, D, D, A),
    # Admin views nobody may use: adding or deleting ingested (read-only) rows and audit
    # events, and the autocomplete endpoint when called without its parameters.
    "closed": (D, D, D, D, D, D, D, D, D, D),
}

# url name (or route for unnamed patterns) -> (class, method)
CLASSIFIED: dict[str, tuple[str, str]] = {
    "health": ("public", "GET"),
    "login": ("public", "GET"),
    "logout": ("public", "POST"),
    "admin:login": ("public", "GET"),
    "admin:logout": ("public", "POST"),
    "admin:autocomplete": ("closed", "GET"),
    # The home page shows queues and runs: a role, like the review pages (no role: the
    # no-role page, a 403).
    "home": ("page_read", "GET"),
    "api:ingest": ("api_ingest", "POST"),
    "api:media-upload": ("api_ingest", "POST"),
    "api:media-missing": ("api_ingest", "POST"),
    "api:media-detail": ("api_read", "GET"),
    "api:conversation-messages": ("api_read", "GET"),
    "api:message-piece-list": ("api_read", "GET"),
    "api:message-piece-detail": ("api_read", "GET"),
    "api:conversation-list": ("api_read", "GET"),
    "api:score-list": ("api_read", "GET"),
    "api:score-detail": ("api_read", "GET"),
    "api:attack-result-list": ("api_read", "GET"),
    "api:attack-result-detail": ("api_read", "GET"),
    "api:scenario-result-list": ("api_read", "GET"),
    "api:scenario-result-detail": ("api_read", "GET"),
    "api:seed-list": ("api_read", "GET"),
    "api:seed-detail": ("api_read", "GET"),
    "api:identifier-list": ("api_read", "GET"),
    "api:identifier-detail": ("api_read", "GET"),
    "api-schema": ("api_read", "GET"),
    "api-docs": ("api_read", "GET"),
    "seeds:dataset_list": ("page_read", "GET"),
    "seeds:dataset_detail": ("page_read", "GET"),
    "seeds:seed_preview": ("page_read", "GET"),
    "memory:promote_piece": ("page_curate", "POST"),
    "memory:conversation_list": ("page_read", "GET"),
    "memory:identifier_index": ("page_read", "GET"),
    "memory:identifier_diff": ("page_read", "GET"),
    "memory:identifier_detail": ("page_read", "GET"),
    "memory:media": ("page_read", "GET"),
    "memory:scenario_list": ("page_read", "GET"),
    "memory:scenario_detail": ("page_read", "GET"),
    "memory:scored_content_list": ("page_read", "GET"),
    "memory:scored_content_detail": ("page_read", "GET"),
    "scoring:conversation_detail": ("page_read", "GET"),
    # Revealing a sensitive piece: anyone who may read the conversation (audited).
    "scoring:reveal_piece": ("page_read", "POST"),
    "scoring:attack_result_list": ("page_read", "GET"),
    # The list's human verdicts as PyRIT's human-labeled CSV: who may read the list.
    "scoring:human_labels": ("page_read", "GET"),
    # The list pages' "Export as PyRIT memory" downloads: the viewer's rows, as the pages.
    "export_memory_conversations": ("page_read", "GET"),
    "export_memory_attack_results": ("page_read", "GET"),
    "scoring:attack_result_detail": ("page_read", "GET"),
    "scoring:verdict": ("page_verdict", "POST"),
    "scoring:objective_detail": ("page_read", "GET"),
    "scoring:review_queue": ("page_read", "GET"),
    "scoring:queue_detail": ("page_read", "GET"),
    "scoring:queue_step": ("page_read", "GET"),
    # Skipping an item of a queue: as recording a verdict on it.
    "scoring:queue_skip": ("page_verdict", "POST"),
    # The viewer's own recent verdicts; editing or undoing one answers 404 for a submission
    # that is not the viewer's (the matrix names none of theirs).
    "scoring:my_verdicts": ("page_read", "GET"),
    "scoring:edit_verdict": ("page_read", "GET"),
    "scoring:undo_verdict": ("page_read", "POST"),
    # Row 1 of the review queues is a built-in queue, which nobody may delete.
    "admin:scoring_reviewqueue_delete": ("closed", "GET"),
    # Saving a filtered results list as a queue: reviewers and above.
    "scoring:save_queue": ("page_verdict", "GET"),
    "scoring:dashboard": ("page_read", "GET"),
    # Live pages: has anything arrived since the page was rendered? As the pages themselves.
    "memory:live_conversations": ("page_read", "GET"),
    "scoring:live_conversation": ("page_read", "GET"),
    "scoring:live_queue": ("page_read", "GET"),
    "scoring:live_dashboard": ("page_read", "GET"),
    # Scorer calibration: pages and API read the caller's operations only.
    "scoring:scorer_list": ("page_read", "GET"),
    "scoring:scorer_detail": ("page_read", "GET"),
    "api:scorer-metrics": ("api_read", "GET"),
    # Blind double review: the adjudication queue, deciding one result (GET shows it; the
    # POST is checked the same way, tests/scoring/test_blind_review.py), reviewers' agreement.
    "scoring:adjudication_queue": ("page_adjudicate", "GET"),
    "scoring:adjudication_item": ("page_adjudicate", "GET"),
    "scoring:reviewers": ("page_adjudicate", "GET"),
}
LOGOUTS = {"logout", "admin:logout"}


def _closed_admin_urls() -> set[str]:
    """add/delete URL names of admin models that refuse them even to a superuser."""
    from django.contrib import admin
    from django.contrib.auth import get_user_model
    from django.test import RequestFactory

    request = RequestFactory().get("/admin/")
    request.user = get_user_model()(is_staff=True, is_superuser=True, is_active=True)
    closed = set()
    for model, model_admin in admin.site._registry.items():
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        if not model_admin.has_add_permission(request):
            closed.add(f"{prefix}_add")
        if not model_admin.has_delete_permission(request):
            closed.add(f"{prefix}_delete")
    return closed


def _walk(resolver: URLResolver, prefix: str = "", ns: str = "") -> Iterator[tuple[str, str]]:
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLResolver):
            namespace = ns + (f"{pattern.namespace}:" if pattern.namespace else "")
            yield from _walk(pattern, prefix + str(pattern.pattern), namespace)
        else:
            assert isinstance(pattern, URLPattern)
            route = prefix + str(pattern.pattern)
            yield route, (ns + pattern.name) if pattern.name else route


def all_routes() -> list[tuple[str, str]]:
    """(route, name) of every URL pattern the project serves."""
    return sorted(set(_walk(get_resolver())))


def _fill(route: str, name: str, m: Memory) -> str:
    """A concrete path for a route, parameters filled with rows that exist."""
    values = {
        "conversation_id": m.conversation_id,
        "attack_result_id": m.attack_result_id,
        "objective_sha256": m.objective_sha256,
        "sha256": m.media_sha256,
        "hash": m.identifier_hash,
        "scenario_id": m.scenario_id,
        "content_id": m.content_id,
        "app_label": "memory",
        "url": "no-such-page/",
        "object_id": "1",
        "id": "1",
        "content_type_id": "1",
        "slug": "unreviewed",
        "direction": "next",
        "submission": "00000000-0000-4000-8000-000000000000",
        # A 64-hex eval hash (the scorer page of a hash nobody calibrated is a 404).
        "eval_hash": m.identifier_hash,
    }
    pk = {
        "api:message-piece-detail": m.piece_id,
        "api:score-detail": m.score_id,
        "api:seed-detail": m.seed_id,
        "seeds:seed_preview": m.seed_id,
        "seeds:dataset_detail": str(m.dataset_pk),
        "api:scenario-result-detail": m.scenario_id,
    }
    if name in pk:
        values["pk"] = pk[name]
    elif name.startswith("admin:seeds_seeddataset_"):
        values["pk"] = str(m.dataset_pk)
    elif name.startswith("admin:seeds_seed_"):
        values["pk"] = m.seed_id

    def value(key: str) -> str:
        assert key in values, f"no value for URL parameter {key!r} in {route!r}"
        return values[key]

    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda g: value(g.group(1)), route)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda g: value(g.group(1)), path)
    return "/" + path.replace("^", "").replace("$", "").replace("\\", "")


def _client(role: str, roles: Roles) -> Client:
    client = Client(raise_request_exception=False)
    if role in roles.keys:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {roles.keys[role]}"
    elif role in roles.users:
        client.force_login(roles.users[role])
    return client


def _outcome(response: Any) -> str:
    if response.status_code in (401, 403):
        return D
    if response.status_code in (301, 302):
        location = response.headers.get("Location", "")
        if "/accounts/login/" in location or "/admin/login/" in location:
            return D
    return A


def _classify(name: str, closed: set[str] | None = None) -> tuple[str, str] | None:
    """(class, method) of a URL name; every admin URL not listed is staff-only."""
    if name in CLASSIFIED:
        return CLASSIFIED[name]
    if name in (closed or set()):
        return ("closed", "GET")
    if name.startswith("admin:") or name.startswith("admin/"):
        return ("admin", "GET")
    return None


def test_every_url_is_classified() -> None:
    unclassified = [name for _, name in all_routes() if _classify(name) is None]
    assert unclassified == [], f"decide who may use these URLs: {unclassified}"
    stale = sorted(set(CLASSIFIED) - {name for _, name in all_routes()})
    assert stale == [], f"classified URLs that no longer exist: {stale}"


@pytest.mark.long
@pytest.mark.usefixtures("quiet_request_log")
def test_access_matrix(roles: Roles, memory: Memory, settings: Any) -> None:
    # Every wrong key and every key without the needed scope counts as a failure from the one
    # test address; the lockout (tests/api/test_api_key_guarding.py) would answer 429 once
    # the matrix has more API URLs than its limit, hiding the answer under test.
    settings.REDTEAM_API_KEY_FAILURE_LIMIT = 0
    wrong: list[str] = []
    checked = 0
    # One client per role; logging out would end the session, so logout URLs get fresh ones.
    clients = {role: _client(role, roles) for role in ROLES}
    closed = _closed_admin_urls()
    for route, name in all_routes():
        classified = _classify(name, closed)
        assert classified is not None
        kind, method = classified
        path = _fill(route, name, memory)
        for role, expected in zip(ROLES, EXPECTED[kind], strict=True):
            client = _client(role, roles) if name in LOGOUTS else clients[role]
            if method == "POST":
                response = client.post(path, "{}", content_type="application/json")
            else:
                response = client.get(path)
            outcome = _outcome(response)
            if kind == "public":
                outcome = A if response.status_code < 400 else D
            checked += 1
            if outcome != expected:
                wrong.append(
                    f"{method} {path} [{kind}] as {role}: {response.status_code} {outcome}"
                )
    assert wrong == [], "\n".join(wrong)
    assert checked >= len(ROLES) * 100  # the admin alone has over a hundred URLs


def test_revoked_key_fails_on_the_very_next_request(roles: Roles) -> None:
    owner = roles.users["staff"]
    api_key, secret = ApiKey.objects.create_key(
        name="soon revoked", user=owner, scopes=["read", "ingest"]
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/conversations/").status_code == 200
    api_key.revoked = True
    api_key.save()
    assert client.get("/api/v1/conversations/").status_code == 401
    assert client.post("/api/v1/ingest/", "{}", content_type="application/json").status_code == 401


def test_key_of_a_deactivated_user_fails_at_once(roles: Roles) -> None:
    owner = roles.users["reviewer"]
    _, secret = ApiKey.objects.create_key(name="k", user=owner, scopes=["read"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/scores/").status_code == 200
    owner.is_active = False
    owner.save()
    assert client.get("/api/v1/scores/").status_code == 401
