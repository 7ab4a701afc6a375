"""manage.py create_operation, grant and create_api_key --operations: operations from the shell.

Every change is audited as the command that made it; refusals change nothing and say why.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from redteam.common.access import key_scope
from redteam.common.models import ApiKey, AuditEvent, Operation, OperationMembership

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user("alice")


@pytest.fixture
def ops(db: None) -> dict[str, Operation]:
    """Two operations, made by the command under test."""
    run("create_operation", "op-alpha", "--description", "first engagement")
    run("create_operation", "op-beta")
    return {op.name: op for op in Operation.objects.all()}


# create_operation


def test_create_operation_creates_it_and_audits_the_command() -> None:
    out, _ = run("create_operation", "op-alpha", "--description", "chatbot, week 1")
    operation = Operation.objects.get(name="op-alpha")
    assert operation.description == "chatbot, week 1"
    assert not operation.archived
    assert "Created operation 'op-alpha'" in out
    assert "manage.py grant --user USER --operation op-alpha" in out
    [event] = events("operation.create")
    assert (event.actor, event.actor_name) == (None, "manage.py create_operation")
    assert (event.object_type, event.object_id) == ("operation", "op-alpha")
    assert event.detail["operation"] == "op-alpha"
    assert event.detail["description"] == "chatbot, week 1"


def test_create_operation_refuses_a_duplicate_name() -> None:
    run("create_operation", "op-alpha")
    with pytest.raises(CommandError, match="already exists"):
        run("create_operation", "op-alpha", "--description", "again")
    assert Operation.objects.get().description == ""
    assert len(events("operation.create")) == 1


@pytest.mark.parametrize("name", ["", "   ", "x" * 256])
def test_create_operation_refuses_a_name_the_label_could_not_carry(name: str) -> None:
    with pytest.raises(CommandError, match="operation"):
        run("create_operation", name)
    assert not Operation.objects.exists()
    assert not events("operation.create")


def test_create_operation_keeps_the_name_exactly() -> None:
    # The name is matched against ingested labels as they are: nothing is trimmed or folded.
    run("create_operation", "Op Ünïcode  2026")
    assert Operation.objects.get().name == "Op Ünïcode  2026"


# grant


def test_grant_makes_a_member_and_audits_who_where_and_what(
    alice: User, ops: dict[str, Operation]
) -> None:
    out, _ = run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "reviewer")
    assert "Granted alice the reviewer role in 'op-alpha'" in out
    membership = OperationMembership.objects.get(user=alice)
    assert (membership.operation, membership.role) == (ops["op-alpha"], "reviewer")
    [event] = events("membership.grant")
    assert (event.actor, event.actor_name) == (None, "manage.py grant")
    assert (event.object_type, event.object_id) == ("operation", "op-alpha")
    assert event.detail == {"operation": "op-alpha", "user": "alice", "role": "reviewer"}


def test_grant_changes_the_role_and_records_the_previous_one(
    alice: User, ops: dict[str, Operation]
) -> None:
    run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "reviewer")
    out, _ = run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "lead")
    assert "from reviewer to lead" in out
    assert OperationMembership.objects.get(user=alice).role == "lead"
    assert OperationMembership.objects.count() == 1
    [event] = events("membership.role_change")
    assert event.actor_name == "manage.py grant"
    assert event.detail == {
        "operation": "op-alpha",
        "user": "alice",
        "role": "lead",
        "previous_role": "reviewer",
    }


def test_grant_of_the_role_already_held_changes_and_records_nothing(
    alice: User, ops: dict[str, Operation]
) -> None:
    run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "adjudicator")
    before = AuditEvent.objects.count()
    out, _ = run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "adjudicator")
    assert "already holds the adjudicator role" in out
    assert AuditEvent.objects.count() == before


def test_grant_in_one_operation_leaves_the_others_alone(
    alice: User, ops: dict[str, Operation]
) -> None:
    run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "lead")
    run("grant", "--user", "alice", "--operation", "op-beta", "--role", "read-only")
    roles = dict(
        OperationMembership.objects.filter(user=alice).values_list("operation__name", "role")
    )
    assert roles == {"op-alpha": "lead", "op-beta": "read-only"}


def test_revoke_ends_the_membership_and_audits_the_role_held(
    alice: User, ops: dict[str, Operation]
) -> None:
    run("grant", "--user", "alice", "--operation", "op-alpha", "--role", "adjudicator")
    out, _ = run("grant", "--user", "alice", "--operation", "op-alpha", "--revoke")
    assert "Revoked alice's adjudicator role in 'op-alpha'" in out
    assert not OperationMembership.objects.exists()
    [event] = events("membership.revoke")
    assert event.actor_name == "manage.py grant"
    assert event.detail == {"operation": "op-alpha", "user": "alice", "role": "adjudicator"}


def test_revoke_of_a_non_member_says_so_and_records_nothing(
    alice: User, ops: dict[str, Operation]
) -> None:
    out, _ = run("grant", "--user", "alice", "--operation", "op-alpha", "--revoke")
    assert "not a member" in out
    assert not events("membership.revoke")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody", "--operation", "op-alpha", "--role", "lead"], "No user named"),
        (["--user", "alice", "--operation", "op-gamma", "--role", "lead"], "create_operation"),
        (["--user", "alice", "--operation", "op-alpha", "--role", "boss"], "Unknown role 'boss'"),
        (["--user", "alice", "--operation", "op-alpha"], "--role"),
        (["--user", "alice", "--operation", "op-alpha", "--role", "lead", "--revoke"], "--role"),
    ],
)
@pytest.mark.usefixtures("alice", "ops")
def test_grant_refuses_unknown_names_and_ambiguous_requests(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("grant", *args)
    assert not OperationMembership.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="membership.").exists()


# create_api_key --operations


def _member(user: User, *names: str, role: str = "reviewer") -> None:
    for name in names:
        run("grant", "--user", user.username, "--operation", name, "--role", role)


def test_create_api_key_binds_the_named_operations_default_first(
    alice: User, ops: dict[str, Operation]
) -> None:
    _member(alice, "op-alpha", "op-beta")
    out, err = run(
        "create_api_key", "--user", "alice", "--scopes", "ingest,read",
        "--operations", "op-beta, op-alpha",
    )  # fmt: skip
    api_key = ApiKey.objects.get()
    assert out.strip().startswith(api_key.prefix + ".")
    assert set(api_key.operations.all()) == {ops["op-alpha"], ops["op-beta"]}
    assert api_key.default_operation == ops["op-beta"]
    assert "'op-beta'" in err
    assert key_scope(api_key).operation_ids == {ops["op-alpha"].pk, ops["op-beta"].pk}
    [created] = events("api_key.create")
    assert created.actor_name == "manage.py create_api_key"
    assert created.detail["default_operation"] == "op-beta"
    [bound] = events("api_key.operations")
    assert bound.actor_name == "manage.py create_api_key"
    assert bound.detail["added"] == ["op-alpha", "op-beta"]
    assert bound.detail["operations"] == ["op-alpha", "op-beta"]
    assert bound.detail["user"] == "alice"


def test_create_api_key_takes_an_explicit_default_operation(
    alice: User, ops: dict[str, Operation]
) -> None:
    _member(alice, "op-alpha", "op-beta")
    run(
        "create_api_key", "--user", "alice", "--operations", "op-alpha,op-beta",
        "--default-operation", "op-beta",
    )  # fmt: skip
    assert ApiKey.objects.get().default_operation == ops["op-beta"]


def test_a_key_reaches_only_operations_its_user_still_belongs_to(
    alice: User, ops: dict[str, Operation]
) -> None:
    _member(alice, "op-alpha", "op-beta")
    run("create_api_key", "--user", "alice", "--operations", "op-alpha,op-beta")
    run("grant", "--user", "alice", "--operation", "op-beta", "--revoke")
    assert key_scope(ApiKey.objects.get()).operation_ids == {ops["op-alpha"].pk}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--operations OP1,OP2"),
        (["--operations", " , "], "--operations OP1,OP2"),
        (["--operations", "op-alpha,op-gamma"], "No operation named 'op-gamma'"),
        (["--operations", "op-alpha", "--default-operation", "op-beta"], "not one of"),
        (
            ["--operations", "op-alpha,op-beta"],
            r"not a member of 'op-beta'; run `manage.py grant --user alice --operation op-beta",
        ),
    ],
)
def test_create_api_key_refuses_keys_that_could_not_reach_their_operations(
    alice: User, ops: dict[str, Operation], args: list[str], message: str
) -> None:
    _member(alice, "op-alpha")
    with pytest.raises(CommandError, match=message):
        run("create_api_key", "--user", "alice", *args)
    assert not ApiKey.objects.exists()
    assert not events("api_key.create")


def test_a_superusers_key_may_name_any_existing_operation(ops: dict[str, Operation]) -> None:
    User.objects.create_superuser("root", "root@example.org", "pw")
    run("create_api_key", "--user", "root", "--operations", "op-alpha,op-beta")
    api_key = ApiKey.objects.get()
    assert set(api_key.operations.all()) == set(ops.values())
    with pytest.raises(CommandError, match="No operation named"):
        run("create_api_key", "--user", "root", "--operations", "op-gamma")


def test_create_key_in_code_validates_operations_like_the_command(
    alice: User, ops: dict[str, Operation]
) -> None:
    from django.core.exceptions import ValidationError

    _member(alice, "op-alpha")
    kwargs: dict[str, Any] = {"name": "k", "user": alice, "scopes": ["read"]}
    with pytest.raises(ValidationError, match="not a member of op-beta"):
        ApiKey.objects.create_key(operations=[ops["op-beta"]], **kwargs)
    with pytest.raises(ValidationError, match="at least one operation"):
        ApiKey.objects.create_key(operations=[], **kwargs)
    with pytest.raises(ValidationError, match="default operation op-beta"):
        ApiKey.objects.create_key(
            operations=[ops["op-alpha"]], default_operation=ops["op-beta"], **kwargs
        )
    assert not ApiKey.objects.exists()
    api_key, _ = ApiKey.objects.create_key(
        operations=[ops["op-alpha"]], default_operation=ops["op-alpha"], **kwargs
    )
    assert list(api_key.operations.all()) == [ops["op-alpha"]]
