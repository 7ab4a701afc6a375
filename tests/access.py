"""Memberships for tests: users who see every operation a test creates, and explicit grants.

Most tests are about something other than access: their users are members (with a role) of
every operation that exists or is created during the test (`grant_everywhere`). The access
tests (tests/security/test_operations*.py) grant memberships one by one with `grant`.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save

from redteam.common.models import Operation, OperationMembership

# user -> role, for the operations created while the current test runs.
_EVERYWHERE: dict[Any, str] = {}


def grant(user: Any, operation: Operation | str, role: str = "reviewer") -> OperationMembership:
    """Make `user` a member of one operation (created when named and missing)."""
    if isinstance(operation, str):
        operation, _ = Operation.objects.get_or_create(name=operation)
    membership, _ = OperationMembership.objects.update_or_create(
        user=user, operation=operation, defaults={"role": role}
    )
    return membership


def grant_everywhere(user: Any, role: str = "reviewer") -> None:
    """Member of every operation that exists now or is created later in this test."""
    _EVERYWHERE[user] = role
    for operation in Operation.objects.all():
        grant(user, operation, role)


def _on_operation_saved(sender: Any, instance: Operation, created: bool, **kwargs: Any) -> None:
    if created:
        for user, role in list(_EVERYWHERE.items()):
            grant(user, instance, role)


def connect() -> None:
    """Start granting new operations to the registered users (tests/conftest.py)."""
    post_save.connect(_on_operation_saved, sender=Operation, dispatch_uid="tests.grant")


def reset() -> None:
    """Forget the registered users (after each test)."""
    _EVERYWHERE.clear()
