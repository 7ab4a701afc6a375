"""Creating operations and granting or revoking roles in them: the writes the commands make.

The admin edits the same rows through its forms. Either way the audit trail is written by
redteam/common/operation_signals.py, so every path (command, admin, shell) is recorded alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from redteam.common.models import (
    Operation,
    OperationMembership,
    OperationRole,
    validate_operation_name,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser


@dataclass(frozen=True)
class GrantOutcome:
    """What `grant_role` did: the membership, and the role held before (None: new member)."""

    membership: OperationMembership
    previous_role: str | None

    @property
    def changed(self) -> bool:
        """False when the user already held exactly this role."""
        return self.previous_role != self.membership.role


@transaction.atomic
def create_operation(*, name: str, description: str = "") -> Operation:
    """Create an operation, refusing a name the `operation` label could not carry or one
    already taken (ValidationError). Queries: the uniqueness check, the insert, its audit."""
    # First, so an empty name is refused by the label's rule rather than as a blank field.
    validate_operation_name(name)
    operation = Operation(name=name, description=description)
    operation.full_clean()
    operation.save()
    return operation


@transaction.atomic
def grant_role(*, user: AccountUser, operation: Operation, role: str) -> GrantOutcome:
    """Make `user` a member of `operation` with `role`, or change the role they hold.

    The row is locked while it is read, so concurrent grants to a member apply one after the
    other (two first grants at once: the unique constraint refuses the second). Queries: the
    locked read, then (when something changes) the write with its audit.
    """
    if role not in OperationRole.values:
        raise ValidationError(
            "Unknown role %(role)s; choose from %(roles)s.",
            params={"role": role, "roles": ", ".join(OperationRole.values)},
            code="invalid_role",
        )
    membership = (
        OperationMembership.objects.select_for_update()
        .filter(user=user, operation=operation)
        .first()
    )
    if membership is None:
        membership = OperationMembership.objects.create(user=user, operation=operation, role=role)
        return GrantOutcome(membership=membership, previous_role=None)
    previous = membership.role
    if previous != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return GrantOutcome(membership=membership, previous_role=previous)


@transaction.atomic
def revoke_role(*, user: AccountUser, operation: Operation) -> str | None:
    """End `user`'s membership of `operation`; the role they held, None when they held none.

    Their API keys stop reaching the operation at once: a key reads and writes only where its
    user is still a member (redteam.common.access.key_scope).
    """
    membership = (
        OperationMembership.objects.select_for_update()
        .filter(user=user, operation=operation)
        .first()
    )
    if membership is None:
        return None
    role = membership.role
    membership.delete()
    return role
