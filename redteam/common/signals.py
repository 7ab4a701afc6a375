"""Audit API keys however they change (admin, create_api_key, shell): creation, revocation,
deletion. Signals only record; they decide nothing (see redteam/common/audit.py for the actor)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver

from redteam.common.audit import record_audit
from redteam.common.models import ApiKey, granted_scopes

OBJECT_TYPE = "api_key"


def _key_detail(key: ApiKey) -> dict[str, Any]:
    # Never the key or its hash: the prefix identifies it, the rest says what it could do.
    return {
        "name": key.name,
        "user": key.user.get_username() if key.user_id else None,
        "scopes": sorted(granted_scopes(key.scopes)),
    }


@receiver(pre_save, sender=ApiKey)
def _remember_revoked(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    """Note whether the stored key was already revoked, to spot the revocation itself."""
    if instance._state.adding:
        instance._audit_was_revoked = False  # type: ignore[attr-defined]
        return
    stored = (
        ApiKey.objects.using(kwargs.get("using"))
        .filter(pk=instance.pk)
        .values_list("revoked", flat=True)
        .first()
    )
    instance._audit_was_revoked = bool(stored)  # type: ignore[attr-defined]


@receiver(post_save, sender=ApiKey)
def _audit_key_saved(sender: type[ApiKey], instance: ApiKey, created: bool, **kwargs: Any) -> None:
    """api_key.create on creation; api_key.revoke when `revoked` turns true."""
    revoked = instance.revoked and not getattr(instance, "_audit_was_revoked", False)
    for action, happened in (("api_key.create", created), ("api_key.revoke", revoked)):
        if happened:
            record_audit(
                action=action,
                object_type=OBJECT_TYPE,
                object_id=instance.prefix,
                detail=_key_detail(instance),
                using=kwargs.get("using"),
            )
    instance._audit_was_revoked = instance.revoked  # type: ignore[attr-defined]


@receiver(post_delete, sender=ApiKey)
def _audit_key_deleted(sender: type[ApiKey], instance: ApiKey, **kwargs: Any) -> None:
    """api_key.delete: a deleted key stops working just like a revoked one."""
    record_audit(
        action="api_key.delete",
        object_type=OBJECT_TYPE,
        object_id=instance.prefix,
        detail=_key_detail(instance),
    )
