"""Reviewer roles: the `reviewer` and `read-only` groups, and the page access decorator.

Both groups may read every review page; only reviewers may record human verdicts
(`scoring.record_verdict`). `ensure_roles()` is idempotent and runs after every migrate.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.apps import apps
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase

REVIEWER_GROUP = "reviewer"
READ_ONLY_GROUP = "read-only"
# Apps whose rows the review pages show; both roles get their view_* permissions.
VIEWABLE_APPS = ("memory", "scoring", "seeds")
VIEW_PERMISSION = "memory.view_conversation"
VERDICT_PERMISSION = "scoring.record_verdict"


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
    score_model = apps.get_model("scoring", "Score")
    ct = ContentType.objects.get_for_model(score_model)
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
    """post_migrate receiver: after the scoring app (the last reviewed app) has migrated."""
    # Runs once per migrate; _view_permissions creates any permission not made yet, so the
    # order in which apps emit post_migrate does not matter.
    if getattr(sender, "label", None) == "scoring":
        ensure_roles()


def viewer_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Login required (redirect), then the view permission (403 when missing)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.has_perm(VIEW_PERMISSION):
            raise PermissionDenied("Your account has no review role.")
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def can_record_verdicts(user: Any) -> bool:
    """True when the user may record human verdicts."""
    return bool(user.is_authenticated and user.has_perm(VERDICT_PERMISSION))
