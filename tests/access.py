"""Memberships for tests: users who see every operation a test creates, and explicit grants.

Most tests are about something other than access: their users are members (with a role) of
every operation that exists or is created during the test (`grant_everywhere`). The access
tests (tests/security/test_operations*.py) grant memberships one by one with `grant`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save

from redteam.common.models import ApiKey, Operation, OperationMembership
from redteam.core.operations import UNASSIGNED

# user -> role, for the operations created while the current test runs.
_EVERYWHERE: dict[Any, str] = {}
# API keys bound to every operation of the current test.
_KEYS: list[ApiKey] = []

# Operations the test data names in its labels (the fixtures' and the factories'): an API key
# may only write into operations that exist, so keys for general tests come with these.
TEST_OPERATIONS = (
    UNASSIGNED,
    "fixture_op_1",
    "op_scenario",
    "op_other",
    "op",
    "op1",
    "op2",
    "op-text",
    "op-vision",
    "demo_op",
    "op_2026_11",
    "hostile",
)


def grant(user: Any, operation: Operation | str, role: str = "reviewer") -> OperationMembership:
    """Make `user` a member of one operation (created when named and missing)."""
    if isinstance(operation, str):
        operation, _ = Operation.objects.get_or_create(name=operation)
    membership, _ = OperationMembership.objects.update_or_create(
        user=user, operation=operation, defaults={"role": role}
    )
    return membership


def grant_everywhere(user: Any, role: str = "reviewer") -> None:
    """Member of every operation that exists now or is created later in this test (at least
    `unassigned`, so pages outside operations, such as the seed library, let them in)."""
    Operation.objects.get_or_create(name=UNASSIGNED)
    _EVERYWHERE[user] = role
    for operation in Operation.objects.all():
        grant(user, operation, role)


def bind_everywhere(api_key: ApiKey, role: str = "reviewer") -> ApiKey:
    """A key (and its user) in every operation of the test, TEST_OPERATIONS created first;
    unlabelled items it sends go to `unassigned`."""
    for name in TEST_OPERATIONS:
        Operation.objects.get_or_create(name=name)
    grant_everywhere(api_key.user, role)
    api_key.operations.add(*Operation.objects.all())
    api_key.default_operation = Operation.objects.get(name=UNASSIGNED)
    api_key.save(update_fields=["default_operation"])
    _KEYS.append(api_key)
    return api_key


def _on_operation_saved(sender: Any, instance: Operation, created: bool, **kwargs: Any) -> None:
    if not created:
        return
    # Rows flushed during the test (fresh_state) are skipped.
    users = set(
        get_user_model()
        .objects.filter(pk__in=[u.pk for u in _EVERYWHERE])
        .values_list("pk", flat=True)
    )
    for user, role in list(_EVERYWHERE.items()):
        if user.pk in users:
            grant(user, instance, role)
    keys = set(ApiKey.objects.filter(pk__in=[k.pk for k in _KEYS]).values_list("pk", flat=True))
    for key in _KEYS:
        if key.pk in keys:
            key.operations.add(instance)


def connect() -> None:
    """Start granting new operations to the registered users (tests/conftest.py)."""
    post_save.connect(_on_operation_saved, sender=Operation, dispatch_uid="tests.grant")


def reset() -> None:
    """Forget the registered users (after each test)."""
    _EVERYWHERE.clear()
    _KEYS.clear()
