"""The audit trail: API keys, seed changes and verdicts are recorded with who and when."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from redteam.common.audit import acting_as, record_audit
from redteam.common.models import ApiKey, AuditEvent
from tests.access import grant, grant_everywhere

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db: None) -> Any:
    return get_user_model().objects.create_superuser("admin", "admin@example.org", "pw")


@pytest.fixture
def owner(db: None) -> Any:
    return get_user_model().objects.create_user("attacker-bot")


@pytest.fixture
def admin_client(staff: Any) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def _events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def test_key_created_in_admin_is_audited_with_the_admin_as_actor(
    admin_client: Client, staff: Any, owner: Any
) -> None:
    operation = grant(owner, "op1", "reviewer").operation
    response = admin_client.post(
        reverse("admin:redteam_apikey_add"),
        {
            "name": "ci pusher",
            "user": owner.pk,
            "scopes": '["ingest"]',
            "operations": [operation.pk],
            "default_operation": operation.pk,
        },
    )
    assert response.status_code == 302, response.content
    key = ApiKey.objects.get()
    [event] = _events("api_key.create")
    assert event.actor == staff
    assert event.actor_name == "admin"
    assert event.object_type == "api_key"
    assert event.object_id == key.prefix
    assert event.detail == {
        "name": "ci pusher",
        "user": "attacker-bot",
        "scopes": ["ingest"],
        "default_operation": "op1",
    }
    # The operations are saved after the key: their own event, also the admin's.
    [bound] = _events("api_key.operations")
    assert (bound.actor, bound.object_id) == (staff, key.prefix)
    assert (bound.detail["added"], bound.detail["operations"]) == (["op1"], ["op1"])
    assert event.at is not None
    # The key itself, or its hash, never lands in the trail.
    assert key.hashed_key not in str(event.detail)


def test_key_revoked_in_admin_is_audited_once(admin_client: Client, staff: Any, owner: Any) -> None:
    key, _ = ApiKey.objects.create_key(name="k", user=owner, scopes=["read"])
    response = admin_client.post(
        reverse("admin:redteam_apikey_change", args=[key.pk]),
        {"name": "k", "user": owner.pk, "scopes": '["read"]', "revoked": "on"},
    )
    assert response.status_code == 302, response.content
    [event] = _events("api_key.revoke")
    assert (event.actor, event.object_id) == (staff, key.prefix)
    # Saving the already-revoked key again is not a second revocation.
    key.refresh_from_db()
    key.save()
    assert len(_events("api_key.revoke")) == 1


def test_revoke_action_audits_each_key(admin_client: Client, staff: Any, owner: Any) -> None:
    keys = [ApiKey.objects.create_key(name=f"k{i}", user=owner, scopes=["read"])[0] for i in (1, 2)]
    response = admin_client.post(
        reverse("admin:redteam_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [k.pk for k in keys]},
    )
    assert response.status_code == 302
    assert ApiKey.objects.filter(revoked=True).count() == 2
    events = _events("api_key.revoke")
    assert sorted(e.object_id for e in events) == sorted(k.prefix for k in keys)
    assert {e.actor for e in events} == {staff}


def test_key_deletion_is_audited(owner: Any) -> None:
    key, _ = ApiKey.objects.create_key(name="k", user=owner, scopes=["read"])
    prefix = key.prefix
    with acting_as(name="cleanup-script"):
        key.delete()
    [event] = _events("api_key.delete")
    assert (event.actor, event.actor_name, event.object_id) == (None, "cleanup-script", prefix)


def test_outside_a_request_the_actor_is_whoever_acting_as_names(owner: Any, staff: Any) -> None:
    with acting_as(staff):
        ApiKey.objects.create_key(name="k", user=owner, scopes=["read"])
    ApiKey.objects.create_key(name="k2", user=owner, scopes=["read"])
    first, second = _events("api_key.create")
    assert (first.actor, first.actor_name) == (staff, "admin")
    assert (second.actor, second.actor_name) == (None, "system")


def test_audit_event_survives_the_actors_deletion(staff: Any) -> None:
    record_audit(actor=staff, action="test.action", object_type="thing", object_id=1)
    staff.delete()
    [event] = _events("test.action")
    assert (event.actor, event.actor_name, event.object_id) == (None, "admin", "1")


def test_audit_trail_is_visible_but_read_only_in_admin(admin_client: Client, staff: Any) -> None:
    event = record_audit(actor=staff, action="test.shown", object_type="thing", object_id="x")
    response = admin_client.get(reverse("admin:redteam_auditevent_changelist"))
    assert response.status_code == 200
    assert b"test.shown" in response.content
    assert admin_client.get(reverse("admin:redteam_auditevent_add")).status_code == 403
    response = admin_client.post(
        reverse("admin:redteam_auditevent_delete", args=[event.pk]), {"post": "yes"}
    )
    assert response.status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_seeds_ingested_through_the_api_are_versioned_with_the_keys_user(
    owner: Any, fixtures_dir: Any
) -> None:
    """Admin edits are covered in tests/seeds/test_admin.py; here the API path."""
    import json

    from seeds.models import Seed

    seeds = [
        json.loads(line)
        for line in (fixtures_dir / "pyrit-1.1" / "seeds.jsonl").read_text().splitlines()
        if line
    ][:3]
    _, key = ApiKey.objects.create_key(name="k", user=owner, scopes=["ingest"])
    response = Client().post(
        "/api/v1/ingest/",
        json.dumps({"seeds": seeds}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200, response.content
    rows = list(Seed.history.filter(id__in=[s["id"] for s in seeds]))
    assert len(rows) == 3
    assert {(r.history_type, r.history_user_id) for r in rows} == {("+", owner.pk)}
    assert all(r.history_date is not None for r in rows)


@pytest.mark.usefixtures("owner")
def test_create_api_key_command_is_audited_once_as_the_command() -> None:
    from io import StringIO

    from django.core.management import call_command

    grant(get_user_model().objects.get(username="attacker-bot"), "op1", "read-only")
    out = StringIO()
    call_command(
        "create_api_key",
        user="attacker-bot",
        scopes="read",
        operations="op1",
        stdout=out,
        stderr=StringIO(),
    )
    key = ApiKey.objects.get()
    assert out.getvalue().strip().startswith(key.prefix + ".")
    [event] = _events("api_key.create")
    assert (event.actor, event.actor_name) == (None, "manage.py create_api_key")
    assert event.object_id == key.prefix
    assert event.detail["scopes"] == ["read"]


def test_verdict_recorded_on_the_review_page_is_audited_with_the_reviewer(
    fixtures_dir: Any,
) -> None:
    import json

    from memory.models import AttackResult
    from redteam.site.ingest import ingest_batch

    base = fixtures_dir / "pyrit-1.1"

    def rows(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (base / name).read_text().splitlines() if line]

    report = ingest_batch(
        {
            "conversations": rows("conversations.jsonl"),
            "message_pieces": rows("pieces.jsonl"),
            "attack_results": rows("attack_results.jsonl"),
        }
    )
    assert report.errors == 0
    reviewer = get_user_model().objects.create_user("judge")
    grant_everywhere(reviewer, "reviewer")
    client = Client()
    client.force_login(reviewer)
    result = AttackResult.objects.order_by("pk").first()
    assert result is not None
    response = client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {
            "verdict": "true",
            "rationale": "the model gave working steps",
            "submission": "6a1f0c1e-0000-4000-8000-000000000001",
        },
    )
    assert response.status_code == 302
    [event] = _events("verdict.recorded")
    assert (event.actor, event.actor_name) == (reviewer, "judge")
    assert event.object_id == str(result.pk)
    assert event.at is not None
