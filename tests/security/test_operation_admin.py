"""The operations admin: superusers manage everything, a lead only their operations' members.

A lead is a staff account whose role in an operation is `lead`; they need no model
permission. Another operation's rows are a 404 to them, its name never appears in their
lists or choices, and every change (admin, command, shell) leaves an audit event naming the
actor, the operation, the user and the role.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from redteam.common.access import scope_for
from redteam.common.models import (
    ApiKey,
    AuditEvent,
    Operation,
    OperationMembership,
    validate_harm_categories,
)
from tests.access import grant

pytestmark = pytest.mark.django_db


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:redteam_{name}", args=args)


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


class World:
    """Two operations; a superuser, a lead of alpha (reviewer in beta), a staff account that
    leads nothing, and one plain member in each operation."""

    def __init__(self) -> None:
        self.alpha = Operation.objects.create(name="op-alpha")
        self.beta = Operation.objects.create(name="op-beta")
        self.root = User.objects.create_superuser("root", "root@example.org", "pw")
        self.lead = User.objects.create_user("lena", is_staff=True)
        self.staff = User.objects.create_user("sam", is_staff=True)
        self.mia = User.objects.create_user("mia")
        self.bob = User.objects.create_user("bob")
        self.newcomer = User.objects.create_user("nora")
        self.lead_alpha = grant(self.lead, self.alpha, "lead")
        self.lead_beta = grant(self.lead, self.beta, "reviewer")
        self.staff_alpha = grant(self.staff, self.alpha, "adjudicator")
        self.mia_alpha = grant(self.mia, self.alpha, "reviewer")
        self.bob_beta = grant(self.bob, self.beta, "read-only")


@pytest.fixture
def world(db: None) -> World:
    return World()


def memberships_formset(
    operation: Operation, rows: list[OperationMembership], **changes: Any
) -> dict[str, str]:
    """The inline formset of an operation's page as the browser posts it: `rows` unchanged
    unless `changes` says (`role_<pk>`, `delete_<pk>`), plus `new` = [(user, role)]."""
    new: list[tuple[User, str]] = changes.get("new", [])
    data = {
        "memberships-TOTAL_FORMS": str(len(rows) + len(new)),
        "memberships-INITIAL_FORMS": str(len(rows)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    forms: list[dict[str, Any]] = [
        {
            "id": row.pk,
            "user": row.user_id,
            "role": changes.get(f"role_{row.pk}", row.role),
            **({"DELETE": "on"} if changes.get(f"delete_{row.pk}") else {}),
        }
        for row in rows
    ]
    forms += [{"id": "", "user": user.pk, "role": role} for user, role in new]
    for i, form in enumerate(forms):
        data[f"memberships-{i}-operation"] = str(operation.pk)
        for key, value in form.items():
            data[f"memberships-{i}-{key}"] = str(value)
    return data


def operation_form(operation: Operation, **fields: Any) -> dict[str, str]:
    """A superuser's change form of an operation, with `fields` changed."""
    values = {
        "description": operation.description,
        "sensitive_harm_categories": str(operation.sensitive_harm_categories).replace("'", '"'),
        **fields,
    }
    data = {k: str(v) for k, v in values.items() if k != "archived"}
    if fields.get("archived", operation.archived):
        data["archived"] = "on"
    return data


# Who reaches the operations admin


def test_lead_sees_operations_and_memberships_in_the_admin_index(world: World) -> None:
    response = login(world.lead).get(reverse("admin:index"))
    assert response.status_code == 200
    models = {m["object_name"] for app in response.context["app_list"] for m in app["models"]}
    # Leads also curate their operations' review queues and blind-review requirements.
    assert models == {"Operation", "OperationMembership", "ReviewQueue", "ReviewRequirement"}


def test_staff_who_lead_nothing_see_no_operations_or_memberships(world: World) -> None:
    client = login(world.staff)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    assert response.context["app_list"] == []
    for path in (
        url("operation_changelist"),
        url("operation_change", world.alpha.pk),
        url("operationmembership_changelist"),
        url("operationmembership_add"),
        url("operationmembership_change", world.mia_alpha.pk),
    ):
        assert client.get(path).status_code in (403, 404), path
    response = client.post(
        url("operationmembership_add"),
        {"operation": world.alpha.pk, "user": world.staff.pk, "role": "lead"},
    )
    assert response.status_code == 403
    assert OperationMembership.objects.get(user=world.staff).role == "adjudicator"


def test_a_lead_gets_nothing_else_in_the_admin(world: World) -> None:
    client = login(world.lead)
    for name in ("auditevent_changelist", "apikey_changelist", "operation_add"):
        assert client.get(url(name)).status_code == 403, name
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403


def test_a_reviewer_role_does_not_open_the_admin(world: World) -> None:
    world.lead.is_staff = False
    world.lead.save()
    response = login(world.lead).get(url("operation_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


# Operations, as a lead


def test_lead_lists_only_the_operations_they_lead(world: World) -> None:
    response = login(world.lead).get(url("operation_changelist"))
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [world.alpha]
    assert b"op-beta" not in response.content


def test_lead_opens_their_operation_and_another_is_a_404(world: World) -> None:
    client = login(world.lead)
    response = client.get(url("operation_change", world.alpha.pk))
    assert response.status_code == 200
    # Every field of the operation itself is read-only to a lead.
    assert list(response.context["adminform"].form.fields) == []
    for path in (
        url("operation_change", world.beta.pk),
        url("operation_history", world.beta.pk),
        url("operation_delete", world.beta.pk),
        url("operation_change", 999_999),
    ):
        assert client.get(path).status_code == 404, path


def test_lead_cannot_create_delete_archive_or_edit_operations(world: World) -> None:
    client = login(world.lead)
    assert client.get(url("operation_add")).status_code == 403
    assert client.post(url("operation_add"), {"name": "op-new"}).status_code == 403
    assert client.post(url("operation_delete", world.alpha.pk), {"post": "yes"}).status_code == 403
    response = client.post(
        url("operation_changelist"),
        {"action": "archive_operations", "_selected_action": [world.alpha.pk]},
    )
    assert response.status_code == 200  # the action is not offered: nothing runs
    data = {
        "description": "edited by the lead",
        "archived": "on",
        "sensitive_harm_categories": '["violence"]',
        **memberships_formset(world.alpha, [world.lead_alpha, world.mia_alpha, world.staff_alpha]),
    }
    assert client.post(url("operation_change", world.alpha.pk), data).status_code == 302
    alpha = Operation.objects.get(pk=world.alpha.pk)
    assert (alpha.description, alpha.archived, alpha.sensitive_harm_categories) == ("", False, [])
    assert Operation.objects.filter(name="op-new").count() == 0
    assert not AuditEvent.objects.filter(action__startswith="operation.", actor=world.lead).exists()


# Memberships, as a lead


def test_lead_lists_and_filters_only_their_operations_memberships(world: World) -> None:
    response = login(world.lead).get(url("operationmembership_changelist"))
    assert response.status_code == 200
    assert set(response.context["cl"].result_list) == {
        world.lead_alpha,
        world.mia_alpha,
        world.staff_alpha,
    }
    assert b"op-beta" not in response.content  # not in the rows, nor in the filter sidebar
    assert b"bob" not in response.content


def test_lead_add_form_offers_only_the_operations_they_lead(world: World) -> None:
    response = login(world.lead).get(url("operationmembership_add"))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert list(form.fields["operation"].queryset) == [world.alpha]
    assert world.newcomer in form.fields["user"].queryset


def test_lead_cannot_grant_anyone_into_another_operation(world: World) -> None:
    client = login(world.lead)
    for user in (world.lead, world.newcomer):
        response = client.post(
            url("operationmembership_add"),
            {"operation": world.beta.pk, "user": user.pk, "role": "lead"},
        )
        assert response.status_code == 200
        assert "operation" in response.context["adminform"].form.errors
    assert OperationMembership.objects.get(user=world.lead, operation=world.beta).role == "reviewer"
    assert not OperationMembership.objects.filter(user=world.newcomer).exists()
    assert not AuditEvent.objects.filter(actor=world.lead).exists()


def test_lead_adds_a_member_to_their_operation_and_it_is_audited(world: World) -> None:
    response = login(world.lead).post(
        url("operationmembership_add"),
        {"operation": world.alpha.pk, "user": world.newcomer.pk, "role": "reviewer"},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    assert OperationMembership.objects.get(user=world.newcomer).operation == world.alpha
    event = events("membership.grant")[-1]
    assert (event.actor, event.actor_name) == (world.lead, "lena")
    assert (event.object_type, event.object_id) == ("operation", "op-alpha")
    assert event.detail == {"operation": "op-alpha", "user": "nora", "role": "reviewer"}
    # The new member reads the operation at once.
    assert scope_for_user(world.newcomer).operation_ids == {world.alpha.pk}


def scope_for_user(user: User) -> Any:
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = user
    return scope_for(request)


def test_lead_refused_a_duplicate_membership(world: World) -> None:
    response = login(world.lead).post(
        url("operationmembership_add"),
        {"operation": world.alpha.pk, "user": world.mia.pk, "role": "lead"},
    )
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert OperationMembership.objects.get(user=world.mia).role == "reviewer"


def test_lead_changes_a_role_in_their_operation_and_it_is_audited(world: World) -> None:
    client = login(world.lead)
    response = client.get(url("operationmembership_change", world.mia_alpha.pk))
    assert response.status_code == 200
    # Only the role is editable: a membership never moves to another user or operation.
    assert list(response.context["adminform"].form.fields) == ["role"]
    response = client.post(
        url("operationmembership_change", world.mia_alpha.pk), {"role": "adjudicator"}
    )
    assert response.status_code == 302
    assert OperationMembership.objects.get(pk=world.mia_alpha.pk).role == "adjudicator"
    [event] = events("membership.role_change")
    assert event.actor == world.lead
    assert event.detail == {
        "operation": "op-alpha",
        "user": "mia",
        "role": "adjudicator",
        "previous_role": "reviewer",
    }


def test_lead_deletes_a_member_of_their_operation_and_it_is_audited(world: World) -> None:
    response = login(world.lead).post(
        url("operationmembership_delete", world.mia_alpha.pk), {"post": "yes"}
    )
    assert response.status_code == 302
    assert not OperationMembership.objects.filter(pk=world.mia_alpha.pk).exists()
    [event] = events("membership.revoke")
    assert event.actor == world.lead
    assert event.detail == {"operation": "op-alpha", "user": "mia", "role": "reviewer"}


def test_another_operations_memberships_are_404_to_a_lead(world: World) -> None:
    client = login(world.lead)
    for membership in (world.bob_beta, world.lead_beta):
        change = url("operationmembership_change", membership.pk)
        assert client.get(change).status_code == 404
        assert client.post(change, {"role": "lead"}).status_code == 404
        delete = url("operationmembership_delete", membership.pk)
        assert client.post(delete, {"post": "yes"}).status_code == 404
    response = client.post(
        url("operationmembership_changelist"),
        {
            "action": "delete_selected",
            "_selected_action": [world.bob_beta.pk, world.lead_beta.pk],
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert OperationMembership.objects.get(pk=world.bob_beta.pk).role == "read-only"
    assert OperationMembership.objects.get(pk=world.lead_beta.pk).role == "reviewer"
    assert not events("membership.revoke")
    assert not events("membership.role_change")


def test_lead_manages_members_inline_on_their_operation_page(world: World) -> None:
    data = memberships_formset(
        world.alpha,
        [world.lead_alpha, world.mia_alpha, world.staff_alpha],
        **{f"role_{world.mia_alpha.pk}": "adjudicator"},
        new=[(world.newcomer, "read-only")],
    )
    response = login(world.lead).post(url("operation_change", world.alpha.pk), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    roles = dict(
        OperationMembership.objects.filter(operation=world.alpha).values_list(
            "user__username", "role"
        )
    )
    assert roles == {
        "lena": "lead",
        "mia": "adjudicator",
        "sam": "adjudicator",
        "nora": "read-only",
    }
    granted = events("membership.grant")[-1]
    assert (granted.actor, granted.detail["user"], granted.detail["role"]) == (
        world.lead,
        "nora",
        "read-only",
    )
    [change] = events("membership.role_change")
    assert (change.actor, change.detail["user"], change.detail["previous_role"]) == (
        world.lead,
        "mia",
        "reviewer",
    )


def test_lead_revokes_a_member_inline_and_it_is_audited(world: World) -> None:
    data = memberships_formset(
        world.alpha,
        [world.lead_alpha, world.mia_alpha, world.staff_alpha],
        **{f"delete_{world.mia_alpha.pk}": True},
    )
    response = login(world.lead).post(url("operation_change", world.alpha.pk), data)
    assert response.status_code == 302
    assert not OperationMembership.objects.filter(pk=world.mia_alpha.pk).exists()
    [event] = events("membership.revoke")
    assert (event.actor, event.detail["user"], event.detail["role"]) == (
        world.lead,
        "mia",
        "reviewer",
    )


def test_lead_cannot_use_the_inline_of_another_operation(world: World) -> None:
    data = memberships_formset(
        world.beta,
        [world.bob_beta],
        **{f"role_{world.bob_beta.pk}": "lead"},
        new=[(world.lead, "lead")],
    )
    response = login(world.lead).post(url("operation_change", world.beta.pk), data)
    assert response.status_code == 404
    assert OperationMembership.objects.get(pk=world.bob_beta.pk).role == "read-only"
    assert OperationMembership.objects.get(pk=world.lead_beta.pk).role == "reviewer"


# Operations, as a superuser


def test_superuser_lists_every_operation_with_its_member_count(world: World) -> None:
    response = login(world.root).get(url("operation_changelist"))
    rows = {op.name: op.member_count for op in response.context["cl"].result_list}
    assert rows == {"op-alpha": 3, "op-beta": 2}


def test_operation_changelist_costs_the_same_queries_at_3_and_30_operations(
    world: World, django_assert_num_queries: Any
) -> None:
    client = login(world.root)
    client.get(url("operation_changelist"))
    # 1 the session, 2 its user, 3 a superuser's scope (which operations are archived), 4 the
    # count of matching rows, 5 the count of all rows, 6 the page of operations with their
    # member counts (one GROUP BY). The archived filter's choices are fixed.
    for total in (3, 30):
        for i in range(Operation.objects.count(), total):
            grant(world.mia, Operation.objects.create(name=f"op-{i:02}"), "reviewer")
        with django_assert_num_queries(6):
            response = client.get(url("operation_changelist"))
        assert len(response.context["cl"].result_list) == total


def test_superuser_creates_an_operation_in_the_admin_and_it_is_audited(world: World) -> None:
    response = login(world.root).post(
        url("operation_add"),
        {
            "name": "op-gamma",
            "description": "new engagement",
            "sensitive_harm_categories": '["sexual"]',
            **memberships_formset(Operation(pk=None), [], new=[(world.mia, "lead")]),
        },
    )
    assert response.status_code == 302, response.context and response.context["errors"]
    gamma = Operation.objects.get(name="op-gamma")
    assert gamma.sensitive_harm_categories == ["sexual"]
    assert OperationMembership.objects.get(operation=gamma).user == world.mia
    [created] = [e for e in events("operation.create") if e.object_id == "op-gamma"]
    assert created.actor == world.root
    assert created.detail["sensitive_harm_categories"] == ["sexual"]
    granted = events("membership.grant")[-1]
    assert (granted.actor, granted.detail) == (
        world.root,
        {"operation": "op-gamma", "user": "mia", "role": "lead"},
    )


@pytest.mark.parametrize("name", ["   ", "x" * 256, "op-alpha"])
def test_superuser_cannot_create_an_operation_with_an_unusable_or_taken_name(
    world: World, name: str
) -> None:
    response = login(world.root).post(
        url("operation_add"),
        {"name": name, "sensitive_harm_categories": "[]", **memberships_formset(Operation(), [])},
    )
    assert response.status_code == 200
    assert "name" in response.context["adminform"].form.errors
    assert Operation.objects.count() == 2


def test_an_operations_name_is_fixed_once_created(world: World) -> None:
    client = login(world.root)
    data = {
        **operation_form(world.alpha),
        "name": "renamed",
        **memberships_formset(world.alpha, []),
    }
    assert client.post(url("operation_change", world.alpha.pk), data).status_code == 302
    assert Operation.objects.get(pk=world.alpha.pk).name == "op-alpha"
    assert not events("operation.rename")


@pytest.mark.parametrize(
    "value",
    ['{"sexual": true}', '"sexual"', '["sexual", "sexual"]', '[""]', '["  "]', "[1]", "[null]"],
)
def test_sensitive_harm_categories_must_be_distinct_non_empty_strings(
    world: World, value: str
) -> None:
    data = {
        **operation_form(world.alpha, sensitive_harm_categories=value),
        **memberships_formset(world.alpha, []),
    }
    response = login(world.root).post(url("operation_change", world.alpha.pk), data)
    assert response.status_code == 200
    assert "sensitive_harm_categories" in response.context["adminform"].form.errors
    assert Operation.objects.get(pk=world.alpha.pk).sensitive_harm_categories == []
    assert not events("operation.sensitive_categories")


def test_validate_harm_categories_accepts_lists_of_distinct_names() -> None:
    validate_harm_categories([])
    validate_harm_categories(["sexual", "violence", "self-harm"])
    with pytest.raises(ValidationError):
        validate_harm_categories(["Sexual", "Sexual"])


def test_changing_sensitive_categories_and_archiving_are_audited(world: World) -> None:
    client = login(world.root)
    data = {
        **operation_form(world.alpha, sensitive_harm_categories='["violence", "sexual"]'),
        **memberships_formset(world.alpha, []),
    }
    assert client.post(url("operation_change", world.alpha.pk), data).status_code == 302
    [event] = events("operation.sensitive_categories")
    assert (event.actor, event.object_id) == (world.root, "op-alpha")
    assert event.detail == {
        "operation": "op-alpha",
        "sensitive_harm_categories": ["violence", "sexual"],
        "previous": [],
    }
    world.alpha.refresh_from_db()
    data = {**operation_form(world.alpha, archived=True), **memberships_formset(world.alpha, [])}
    assert client.post(url("operation_change", world.alpha.pk), data).status_code == 302
    assert Operation.objects.get(pk=world.alpha.pk).archived
    [archived] = events("operation.archive")
    assert (archived.actor, archived.detail) == (world.root, {"operation": "op-alpha"})
    assert len(events("operation.sensitive_categories")) == 1  # unchanged this time


def test_archive_actions_audit_each_operation(world: World) -> None:
    client = login(world.root)
    selected = [world.alpha.pk, world.beta.pk]
    response = client.post(
        url("operation_changelist"),
        {"action": "archive_operations", "_selected_action": selected},
    )
    assert response.status_code == 302
    assert set(Operation.objects.filter(archived=True)) == {world.alpha, world.beta}
    assert sorted(e.object_id for e in events("operation.archive")) == ["op-alpha", "op-beta"]
    client.post(
        url("operation_changelist"),
        {"action": "unarchive_operations", "_selected_action": [world.beta.pk]},
    )
    [event] = events("operation.unarchive")
    assert (event.actor, event.object_id) == (world.root, "op-beta")


def test_superuser_manages_memberships_of_every_operation(world: World) -> None:
    client = login(world.root)
    response = client.get(url("operationmembership_changelist"))
    assert len(response.context["cl"].result_list) == OperationMembership.objects.count()
    response = client.post(
        url("operationmembership_change", world.bob_beta.pk), {"role": "reviewer"}
    )
    assert response.status_code == 302
    [event] = events("membership.role_change")
    assert (event.actor, event.detail["operation"], event.detail["user"]) == (
        world.root,
        "op-beta",
        "bob",
    )


# API keys' operations in the admin


def key_form(
    user: User, *operations: Operation, default: Operation | None = None
) -> dict[str, Any]:
    return {
        "name": "ci pusher",
        "user": user.pk,
        "scopes": '["ingest", "read"]',
        "operations": [op.pk for op in operations],
        "default_operation": default.pk if default else "",
    }


def test_key_added_in_admin_reaches_its_operations_and_is_audited(world: World) -> None:
    response = login(world.root).post(
        url("apikey_add"), key_form(world.mia, world.alpha, default=world.alpha)
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    key = ApiKey.objects.get()
    assert list(key.operations.all()) == [world.alpha]
    assert key.default_operation == world.alpha
    [event] = events("api_key.operations")
    assert (event.actor, event.object_id) == (world.root, key.prefix)
    assert event.detail == {
        "name": "ci pusher",
        "user": "mia",
        "added": ["op-alpha"],
        "removed": [],
        "operations": ["op-alpha"],
    }


@pytest.mark.parametrize(
    ("operations", "default", "field", "message"),
    [
        ([], None, "operations", "at least one operation"),
        (["beta"], None, "operations", "mia is not a member of op-beta"),
        (["alpha"], "beta", "default_operation", "not one of the key"),
    ],
)
def test_key_admin_refuses_operations_the_user_could_not_reach(
    world: World, operations: list[str], default: str | None, field: str, message: str
) -> None:
    ops = [getattr(world, name) for name in operations]
    response = login(world.root).post(
        url("apikey_add"),
        key_form(world.mia, *ops, default=getattr(world, default) if default else None),
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors.get(field, [])), errors
    assert not ApiKey.objects.exists()


def test_a_superusers_key_may_reach_any_operation(world: World) -> None:
    response = login(world.root).post(
        url("apikey_add"), key_form(world.root, world.alpha, world.beta, default=world.beta)
    )
    assert response.status_code == 302
    assert set(ApiKey.objects.get().operations.all()) == {world.alpha, world.beta}


def test_changing_a_keys_operations_is_audited_with_what_was_added_and_removed(
    world: World,
) -> None:
    grant(world.mia, world.beta, "reviewer")
    key, _ = ApiKey.objects.create_key(
        name="ci pusher", user=world.mia, scopes=["read"], operations=[world.alpha]
    )
    client = login(world.root)
    data = {**key_form(world.mia, world.beta, default=world.beta), "scopes": '["read"]'}
    response = client.post(url("apikey_change", key.pk), data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    details = [
        (e.actor, e.detail["added"], e.detail["removed"]) for e in events("api_key.operations")
    ]
    # The key's creation (no actor), then the admin's edit: one removal and one addition.
    assert details[1:] == [(world.root, [], ["op-alpha"]), (world.root, ["op-beta"], [])]
    assert events("api_key.operations")[-1].detail["operations"] == ["op-beta"]
    [default] = events("api_key.default_operation")
    assert (default.actor, default.detail["default_operation"]) == (world.root, "op-beta")
    assert default.detail["previous_default_operation"] is None


def test_staff_with_key_permissions_choose_among_the_operations_they_lead(world: World) -> None:
    world.lead.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_apikey", "change_apikey", "view_apikey"])
    )
    response = login(world.lead).get(url("apikey_add"))
    assert response.status_code == 200
    form = response.context["adminform"].form
    assert list(form.fields["operations"].queryset) == [world.alpha]
    assert list(form.fields["default_operation"].queryset) == [world.alpha]


# Audit of the other paths (shell, cascades)


def test_deleting_a_user_revokes_and_audits_each_membership(world: World) -> None:
    world.lead.delete()
    revoked = {
        (e.object_id, e.detail["user"], e.detail["role"]) for e in events("membership.revoke")
    }
    assert revoked == {("op-alpha", "lena", "lead"), ("op-beta", "lena", "reviewer")}


def test_key_operations_changed_from_the_operations_side_are_audited(world: World) -> None:
    grant(world.mia, world.beta, "reviewer")
    key, _ = ApiKey.objects.create_key(
        name="k", user=world.mia, scopes=["read"], operations=[world.alpha, world.beta]
    )
    world.beta.api_keys.remove(key)
    key.operations.clear()
    removed = [e.detail["removed"] for e in events("api_key.operations")][1:]
    assert removed == [["op-beta"], ["op-alpha"]]
    assert events("api_key.operations")[-1].detail["operations"] == []


def test_deleting_an_empty_operation_is_audited(world: World) -> None:
    gamma = Operation.objects.create(name="op-gamma")
    gamma.delete()
    [event] = events("operation.delete")
    assert event.detail == {"operation": "op-gamma"}


def test_a_lead_manages_only_their_operations_review_requirements(world: World) -> None:
    from scoring.models import ReviewRequirement

    mine = ReviewRequirement.objects.create(operation=world.alpha, harm_category="hate")
    theirs = ReviewRequirement.objects.create(operation=world.beta, harm_category="hate")
    team = ReviewRequirement.objects.create(harm_category="fraud")
    client = login(world.lead)
    listing = client.get(reverse("admin:scoring_reviewrequirement_changelist"))
    assert listing.status_code == 200
    assert [r.pk for r in listing.context["cl"].result_list] == [mine.pk]
    for other in (theirs, team):
        url = reverse("admin:scoring_reviewrequirement_change", args=[other.pk])
        assert client.get(url).status_code == 404
    # A lead cannot make a team-wide requirement, nor one for an operation they do not lead.
    add = reverse("admin:scoring_reviewrequirement_add")
    for operation in ("", str(world.beta.pk)):
        response = client.post(
            add, {"operation": operation, "harm_category": "x", "required_verdicts": "2"}
        )
        assert response.status_code == 200
    assert ReviewRequirement.objects.count() == 3
    # Staff who lead nothing (an adjudicator) do not reach it at all.
    staff = login(world.staff)
    assert staff.get(reverse("admin:scoring_reviewrequirement_changelist")).status_code == 403
