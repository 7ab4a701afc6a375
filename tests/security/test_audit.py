"""The audit trail: API keys, seed changes and verdicts are recorded with who and when."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from redteam.audit import acting_as, record_audit
from redteam.models import ApiKey, AuditEvent

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
    response = admin_client.post(
        reverse("admin:redteam_apikey_add"),
        {"name": "ci pusher", "user": owner.pk, "scopes": '["ingest"]'},
    )
    assert response.status_code == 302, response.content
    key = ApiKey.objects.get()
    [event] = _events("api_key.create")
    assert event.actor == staff
    assert event.actor_name == "admin"
    assert event.object_type == "api_key"
    assert event.object_id == key.prefix
    assert event.detail == {"name": "ci pusher", "user": "attacker-bot", "scopes": ["ingest"]}
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


def test_seed_change_in_admin_is_versioned_with_who_and_when(
    admin_client: Client, staff: Any
) -> None:
    from seeds.models import SeedDataset

    dataset = SeedDataset.objects.create(dataset_name="jailbreaks", description="v1")
    response = admin_client.post(
        reverse("admin:seeds_seeddataset_change", args=[dataset.pk]),
        {
            "dataset_name": "jailbreaks",
            "description": "v2",
            "harm_categories": "[]",
            "authors": "[]",
            "groups": "[]",
        },
    )
    assert response.status_code == 302, response.content
    latest = dataset.history.order_by("-history_date", "-history_id").first()
    assert latest is not None
    assert (latest.description, latest.history_type, latest.history_user) == ("v2", "~", staff)
    assert latest.history_date is not None


def test_create_api_key_command_is_audited_once_as_the_command(owner: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command(
        "create_api_key", user="attacker-bot", scopes="read", stdout=out, stderr=StringIO()
    )
    key = ApiKey.objects.get()
    assert out.getvalue().strip().startswith(key.prefix + ".")
    [event] = _events("api_key.create")
    assert (event.actor, event.actor_name) == (None, "manage.py create_api_key")
    assert event.object_id == key.prefix
    assert event.detail["scopes"] == ["read"]
