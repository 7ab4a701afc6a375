"""Audit API keys, operations and memberships however they change (admin, manage.py, shell).

API keys: creation, revocation, deletion, the operations they reach and their default
operation (object_type "api_key", object_id the key's prefix).

Operations and memberships are filed under the operation (object_type "operation", object_id
its name), so one search in the audit admin shows an operation's whole history: created,
archived, its sensitive categories, who joined, whose role changed, who left. Membership
events name the operation, the user and the role. Rows written with bulk_create (the ingest
creates the operations its trusted commands name) send no signals and are not recorded here.

Signals only record; they decide nothing (see redteam/common/audit.py for the actor).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ObjectDoesNotExist
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import receiver

from redteam.common.audit import record_audit
from redteam.common.models import ApiKey, Operation, OperationMembership, granted_scopes

OBJECT_TYPE = "api_key"
OPERATION_OBJECT_TYPE = "operation"


def _key_detail(key: ApiKey) -> dict[str, Any]:
    # Never the key or its hash: the prefix identifies it, the rest says what it could do.
    return {
        "name": key.name,
        "user": key.user.get_username() if key.user_id else None,
        "scopes": sorted(granted_scopes(key.scopes)),
        "default_operation": _default_operation_name(key),
    }


def _default_operation_name(key: ApiKey) -> str | None:
    """The name of the key's default operation, read from the key when it holds the row."""
    if key.default_operation_id is not None and ApiKey.default_operation.is_cached(key):
        return str(key.default_operation.name)  # type: ignore[union-attr]
    return _operation_name(key.default_operation_id)


def _operation_name(operation_id: int | None, using: str | None = None) -> str | None:
    """The operation's name (its id once the row is gone); None for no operation."""
    if operation_id is None:
        return None
    names = Operation.objects.using(using).filter(pk=operation_id).values_list("name", flat=True)
    return str(names.first() or f"#{operation_id}")


@receiver(pre_save, sender=ApiKey)
def _remember_revoked(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    """Note whether the stored key was already revoked, to spot the revocation itself, and
    its default operation, to spot a change of it."""
    if instance._state.adding:
        instance._audit_was_revoked = False  # type: ignore[attr-defined]
        instance._audit_default = instance.default_operation_id  # type: ignore[attr-defined]
        return
    stored = (
        ApiKey.objects.using(kwargs.get("using"))
        .filter(pk=instance.pk)
        .values_list("revoked", "default_operation_id")
        .first()
    )
    revoked, default = stored if stored is not None else (False, instance.default_operation_id)
    instance._audit_was_revoked = bool(revoked)  # type: ignore[attr-defined]
    instance._audit_default = default  # type: ignore[attr-defined]


@receiver(post_save, sender=ApiKey)
def _audit_key_saved(sender: type[ApiKey], instance: ApiKey, created: bool, **kwargs: Any) -> None:
    """api_key.create on creation; api_key.revoke when `revoked` turns true."""
    revoked = instance.revoked and not getattr(instance, "_audit_was_revoked", False)
    using = kwargs.get("using")
    for action, happened in (("api_key.create", created), ("api_key.revoke", revoked)):
        if happened:
            record_audit(
                action=action,
                object_type=OBJECT_TYPE,
                object_id=instance.prefix,
                detail=_key_detail(instance),
                using=using,
            )
    previous_default = getattr(instance, "_audit_default", instance.default_operation_id)
    if not created and previous_default != instance.default_operation_id:
        record_audit(
            action="api_key.default_operation",
            object_type=OBJECT_TYPE,
            object_id=instance.prefix,
            detail={
                **_key_detail(instance),
                "previous_default_operation": _operation_name(previous_default, using),
            },
            using=using,
        )
    instance._audit_was_revoked = instance.revoked  # type: ignore[attr-defined]
    instance._audit_default = instance.default_operation_id  # type: ignore[attr-defined]


@receiver(post_delete, sender=ApiKey)
def _audit_key_deleted(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    """api_key.delete: a deleted key stops working just like a revoked one."""
    record_audit(
        action="api_key.delete",
        object_type=OBJECT_TYPE,
        object_id=instance.prefix,
        detail=_key_detail(instance),
    )


def _record_key_operations(
    key: ApiKey, added: Iterable[int], removed: Iterable[int], using: str | None
) -> None:
    """api_key.operations: which operations a key gained or lost, and all it now reaches."""
    changed = set(added) | set(removed)
    names = dict(
        Operation.objects.using(using).filter(pk__in=sorted(changed)).values_list("pk", "name")
    )
    current = key.operations.using(using).order_by("name").values_list("name", flat=True)
    record_audit(
        action="api_key.operations",
        object_type=OBJECT_TYPE,
        object_id=key.prefix,
        detail={
            "name": key.name,
            "user": key.user.get_username() if key.user_id else None,
            "added": sorted(str(names.get(pk, f"#{pk}")) for pk in added),
            "removed": sorted(str(names.get(pk, f"#{pk}")) for pk in removed),
            "operations": [str(name) for name in current],
        },
        using=using,
    )


@receiver(m2m_changed, sender=ApiKey.operations.through)
def _audit_key_operations(
    sender: Any,
    instance: ApiKey | Operation,
    action: str,
    reverse: bool,
    pk_set: set[int] | None,
    **kwargs: Any,
) -> None:
    """api_key.operations for every change of the operations a key reaches, from either side
    (`key.operations.set(...)`, the admin, `operation.api_keys.remove(key)`, clear())."""
    using = kwargs.get("using")
    if action == "pre_clear":
        # post_clear is sent without the rows it removed: remember them now.
        related = instance.api_keys if reverse else instance.operations  # type: ignore[union-attr]
        instance._audit_cleared = set(  # type: ignore[union-attr]
            related.using(using).values_list("pk", flat=True)
        )
        return
    if action == "post_clear":
        pk_set = getattr(instance, "_audit_cleared", set())
        instance._audit_cleared = set()  # type: ignore[union-attr]
    elif action not in ("post_add", "post_remove"):
        return
    if not pk_set:
        return
    added = action == "post_add"
    if not reverse:
        assert isinstance(instance, ApiKey)
        ops = sorted(pk_set)
        _record_key_operations(instance, ops if added else [], [] if added else ops, using)
        return
    assert isinstance(instance, Operation)
    for key in ApiKey.objects.using(using).filter(pk__in=sorted(pk_set)).select_related("user"):
        ops = [instance.pk]
        _record_key_operations(key, ops if added else [], [] if added else ops, using)


def _record_operation(
    action: str, operation_name: str, detail: dict[str, Any], using: str | None
) -> None:
    record_audit(
        action=action,
        object_type=OPERATION_OBJECT_TYPE,
        object_id=operation_name,
        detail={"operation": operation_name, **detail},
        using=using,
    )


@receiver(pre_save, sender=Operation)
def _remember_operation(sender: type[Operation], instance: Operation, **kwargs: Any) -> None:
    """Note the stored name, archived flag and sensitive categories, to spot what changes."""
    instance._audit_stored = (  # type: ignore[attr-defined]
        None
        if instance._state.adding
        else Operation.objects.using(kwargs.get("using"))
        .filter(pk=instance.pk)
        .values("name", "archived", "sensitive_harm_categories")
        .first()
    )


@receiver(post_save, sender=Operation)
def _audit_operation_saved(
    sender: type[Operation], instance: Operation, created: bool, **kwargs: Any
) -> None:
    """operation.create; operation.rename, .archive / .unarchive, .sensitive_categories."""
    using = kwargs.get("using")
    name = str(instance.name)
    if created:
        _record_operation(
            "operation.create",
            name,
            {
                "description": instance.description,
                "archived": instance.archived,
                "sensitive_harm_categories": instance.sensitive_harm_categories,
            },
            using,
        )
        return
    stored = getattr(instance, "_audit_stored", None)
    if stored is None:
        return
    if stored["name"] != name:
        _record_operation("operation.rename", name, {"previous_name": stored["name"]}, using)
    if stored["archived"] != instance.archived:
        _record_operation(
            "operation.archive" if instance.archived else "operation.unarchive", name, {}, using
        )
    if stored["sensitive_harm_categories"] != instance.sensitive_harm_categories:
        _record_operation(
            "operation.sensitive_categories",
            name,
            {
                "sensitive_harm_categories": instance.sensitive_harm_categories,
                "previous": stored["sensitive_harm_categories"],
            },
            using,
        )
    instance._audit_stored = None  # type: ignore[attr-defined]


@receiver(post_delete, sender=Operation)
def _audit_operation_deleted(sender: type[Operation], instance: Operation, **kwargs: Any) -> None:
    """operation.delete (only an operation nothing was ingested into can be deleted)."""
    _record_operation("operation.delete", str(instance.name), {}, kwargs.get("using"))


def _member(membership: OperationMembership) -> tuple[str, str]:
    """(operation name, username) of a membership, also while a cascade removes them."""
    try:
        operation = str(membership.operation.name)
    except ObjectDoesNotExist:
        operation = f"#{membership.operation_id}"
    try:
        user = membership.user.get_username()
    except ObjectDoesNotExist:
        user = f"#{membership.user_id}"
    return operation, user


@receiver(pre_save, sender=OperationMembership)
def _remember_membership(
    sender: type[OperationMembership], instance: OperationMembership, **kwargs: Any
) -> None:
    """Note the stored user, operation and role, to tell a role change from a move."""
    instance._audit_stored = (  # type: ignore[attr-defined]
        None
        if instance._state.adding
        else OperationMembership.objects.using(kwargs.get("using"))
        .filter(pk=instance.pk)
        .values("user_id", "operation_id", "role")
        .first()
    )


@receiver(post_save, sender=OperationMembership)
def _audit_membership_saved(
    sender: type[OperationMembership],
    instance: OperationMembership,
    created: bool,
    **kwargs: Any,
) -> None:
    """membership.grant for a new member; membership.role_change when only the role changes.

    A row moved to another user or operation (possible in the shell) is recorded as the old
    membership revoked and the new one granted.
    """
    using = kwargs.get("using")
    stored = None if created else getattr(instance, "_audit_stored", None)
    operation, user = _member(instance)
    if created:
        _record_operation(
            "membership.grant", operation, {"user": user, "role": instance.role}, using
        )
        return
    if stored is None:
        return
    instance._audit_stored = None  # type: ignore[attr-defined]
    if (stored["user_id"], stored["operation_id"]) != (instance.user_id, instance.operation_id):
        users = get_user_model()
        old_user = (
            users._default_manager.using(using)
            .filter(pk=stored["user_id"])
            .values_list(users.USERNAME_FIELD, flat=True)
            .first()
        )
        _record_operation(
            "membership.revoke",
            _operation_name(stored["operation_id"], using) or "",
            {"user": old_user or f"#{stored['user_id']}", "role": stored["role"]},
            using,
        )
        _record_operation(
            "membership.grant", operation, {"user": user, "role": instance.role}, using
        )
    elif stored["role"] != instance.role:
        _record_operation(
            "membership.role_change",
            operation,
            {"user": user, "role": instance.role, "previous_role": stored["role"]},
            using,
        )


@receiver(post_delete, sender=OperationMembership)
def _audit_membership_deleted(
    sender: type[OperationMembership], instance: OperationMembership, **kwargs: Any
) -> None:
    """membership.revoke, with the role the user held (also when a cascade removes it)."""
    operation, user = _member(instance)
    _record_operation(
        "membership.revoke", operation, {"user": user, "role": instance.role}, kwargs.get("using")
    )
