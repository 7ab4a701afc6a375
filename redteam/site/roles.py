"""The reviewer and read-only groups: created (or completed) after every migrate.

The site app sits above every app, so it may list their models; `redteam.common.roles` holds
the group names and the access checks the apps use.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType

from memory.models import Score
from redteam.common.roles import READ_ONLY_GROUP, REVIEWER_GROUP

# Apps whose rows the review pages show; both roles get their view_* permissions.
VIEWABLE_APPS = ("memory", "scoring", "seeds")


def _view_permissions() -> list[Permission]:
    """The view_* permission of every model in VIEWABLE_APPS, creating any that is missing."""
    models = [m for label in VIEWABLE_APPS for m in apps.get_app_config(label).get_models()]
    content_types = ContentType.objects.get_for_models(*models, for_concrete_models=False)
    wanted = {
        (ct.pk, f"view_{model._meta.model_name}"): (ct, model)
        for model, ct in content_types.items()
    }
    existing = {
        (p.content_type_id, p.codename): p
        for p in Permission.objects.filter(
            content_type__in=[ct for ct, _ in wanted.values()],
            codename__in=[codename for _, codename in wanted],
        )
    }
    # post_migrate runs app by app, so a later app's permissions may not exist yet.
    missing = [
        Permission(
            content_type=ct, codename=codename, name=f"Can view {model._meta.verbose_name_raw}"
        )
        for (ct_id, codename), (ct, model) in wanted.items()
        if (ct_id, codename) not in existing
    ]
    Permission.objects.bulk_create(missing, ignore_conflicts=True)
    if missing:
        return list(
            Permission.objects.filter(
                content_type__in=[ct for ct, _ in wanted.values()],
                codename__in=[codename for _, codename in wanted],
            )
        )
    return list(existing.values())


def _verdict_permission() -> Permission:
    ct = ContentType.objects.get_for_model(Score)
    perm, _ = Permission.objects.get_or_create(
        content_type=ct,
        codename="record_verdict",
        defaults={"name": "Can record human verdicts"},
    )
    return perm


def ensure_roles() -> tuple[Group, Group]:
    """Create (or complete) the reviewer and read-only groups; never removes permissions."""
    view = _view_permissions()
    reviewer, _ = Group.objects.get_or_create(name=REVIEWER_GROUP)
    read_only, _ = Group.objects.get_or_create(name=READ_ONLY_GROUP)
    read_only.permissions.add(*view)
    reviewer.permissions.add(*view, _verdict_permission())
    return reviewer, read_only


def ensure_roles_after_migrate(sender: Any, **kwargs: Any) -> None:
    """post_migrate receiver: after the site app (the last app) has migrated."""
    # Runs once per migrate; _view_permissions creates any permission not made yet, so the
    # order in which apps emit post_migrate does not matter.
    if getattr(sender, "label", None) == "site":
        ensure_roles()
