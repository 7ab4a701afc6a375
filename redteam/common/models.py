"""Project-wide models: media blobs, API keys with scopes, and the audit trail."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from rest_framework_api_key.models import AbstractAPIKey, APIKeyManager

from redteam.common.fields import ExactCharField, ExactJSONField
from redteam.core.digests import SHA256_ANCHORED
from redteam.core.operations import (
    OPERATION_NAME_MAX,
    OperationLabelError,
    labelled_operation,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from django.contrib.auth.models import User as AccountUser


def validate_operation_name(value: Any) -> None:
    """An operation's name is a value the `operation` label may hold (ingest names it so)."""
    try:
        labelled_operation({"operation": value})
    except OperationLabelError as exc:
        raise ValidationError(
            "Not a valid operation name: the `operation` label %(problem)s.",
            params={"problem": exc},
            code="invalid_name",
        ) from None


def validate_harm_categories(value: Any) -> None:
    """Sensitive harm categories are a JSON list of distinct, non-empty strings."""
    if (
        not isinstance(value, list)
        or not all(isinstance(c, str) and c.strip() for c in value)
        or len(set(value)) != len(value)
    ):
        raise ValidationError(
            'Harm categories are a JSON list of distinct non-empty strings, e.g. ["sexual"].',
            code="invalid_harm_categories",
        )


class Operation(models.Model):
    """One engagement: the access boundary of everything ingested under its name.

    Its name is the value of PyRIT's `operation` memory label (`op_name` in older runs).
    Members see it (OperationMembership); superusers see every operation.
    """

    # Not editable once created in the admin: rows are matched to it by this label value.
    name = ExactCharField(
        max_length=OPERATION_NAME_MAX, unique=True, validators=[validate_operation_name]
    )
    description = models.TextField(blank=True, default="")
    # Archived: still readable by its members; nothing new is ingested or judged in it.
    archived = models.BooleanField(default=False)
    # Reviewer safety: pieces of these harm categories render blurred or collapsed until a
    # reviewer reveals them (each reveal is audited).
    sensitive_harm_categories = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_harm_categories],
        help_text='Harm categories shown blurred until revealed, e.g. ["sexual", "violence"].',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return str(self.name) + (" (archived)" if self.archived else "")


class OperationRole(models.TextChoices):
    """What a member may do in an operation; each role includes the ones before it."""

    READ_ONLY = "read-only", "read-only"
    REVIEWER = "reviewer", "reviewer"
    ADJUDICATOR = "adjudicator", "adjudicator"
    LEAD = "lead", "lead"


class OperationMembership(models.Model):
    """A user's role in one operation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=OperationRole.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "operation"], name="membership_once"),
            models.CheckConstraint(
                condition=models.Q(role__in=OperationRole.values), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.operation.name}: {self.role}"


class MediaBlob(models.Model):
    """Bytes of an image/audio/video/binary value, stored once, addressed by their sha256."""

    sha256 = models.CharField(max_length=64, primary_key=True)
    size = models.BigIntegerField()
    # Sniffed from the bytes on upload, never taken from the client or the file name.
    content_type = models.CharField(max_length=100)
    # Relative name inside the media storage; derived from sha256 only, never from user input.
    storage_name = models.CharField(max_length=200, unique=True)
    original_filename = models.CharField(max_length=1024, blank=True, default="")
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sha256__regex=SHA256_ANCHORED), name="mediablob_sha256_hex"
            ),
            models.CheckConstraint(condition=models.Q(size__gte=0), name="mediablob_size_gte_0"),
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.content_type}, {self.size} B)"


class ApiKeyScope(models.TextChoices):
    """What an API key may do."""

    INGEST = "ingest", "ingest"
    READ = "read", "read"


def validate_scopes(value: Any) -> None:
    """A key's scopes are a list of distinct known scope names; anything else is refused."""
    known = ApiKeyScope.values
    if (
        not isinstance(value, list)
        or not all(isinstance(s, str) and s in known for s in value)
        or len(set(value)) != len(value)
    ):
        raise ValidationError(
            'Scopes are a JSON list drawn from %(known)s, e.g. ["read"].',
            params={"known": ", ".join(f'"{s}"' for s in known)},
            code="invalid_scopes",
        )


def granted_scopes(value: Any) -> frozenset[str]:
    """The scopes a stored value grants: all of a well-formed list, nothing for anything else.

    Membership on arbitrary JSON would let `{"read": false}` or `"readonly"` grant `read`.
    """
    try:
        validate_scopes(value)
    except ValidationError:
        return frozenset()
    return frozenset(value)


def operations_outside_memberships(user: AccountUser, operations: Iterable[Operation]) -> list[str]:
    """Names of the operations `user` is not a member of (none for a superuser); one query."""
    chosen = {op.pk: op.name for op in operations}
    if not chosen or user.is_superuser:
        return []
    member_of = set(
        OperationMembership.objects.filter(user=user, operation_id__in=sorted(chosen)).values_list(
            "operation_id", flat=True
        )
    )
    return sorted(name for pk, name in chosen.items() if pk not in member_of)


def validate_key_operations(
    user: AccountUser,
    operations: Iterable[Operation],
    default_operation: Operation | None,
    *,
    require_some: bool = True,
) -> None:
    """A key reaches only operations its user is a member of (any, for a superuser's key),
    and its default operation is one of them; ValidationError says what is wrong.

    Reading is narrowed to the user's memberships again on every request (access.key_scope),
    so this refuses at creation a key that could never do what it names.
    """
    chosen = list(operations)
    if require_some and not chosen:
        raise ValidationError(
            "Choose at least one operation: a key with none reads and writes nothing.",
            code="no_operations",
        )
    if default_operation is not None and default_operation.pk not in {op.pk for op in chosen}:
        raise ValidationError(
            "The default operation %(name)s is not one of the key's operations.",
            params={"name": default_operation.name},
            code="default_not_chosen",
        )
    outside = operations_outside_memberships(user, chosen)
    if outside:
        raise ValidationError(
            "%(user)s is not a member of %(names)s: grant them a role there first.",
            params={"user": user.get_username(), "names": ", ".join(outside)},
            code="not_a_member",
        )


class ApiKeyManager(APIKeyManager):
    """Creates keys only with valid scopes, however they are created (admin, command, shell)."""

    def create_key(
        self, *, operations: Iterable[Operation] | None = None, **kwargs: Any
    ) -> tuple[Any, str]:
        """Validate `scopes` (and `operations`, when given), create the key, return (row, secret).

        With `operations` the key is bound to them in the same transaction, after
        validate_key_operations (the user's memberships, `default_operation` among them).
        """
        validate_scopes(kwargs.get("scopes", []))
        if operations is None:
            return super().create_key(**kwargs)
        chosen = list(operations)
        validate_key_operations(kwargs["user"], chosen, kwargs.get("default_operation"))
        with transaction.atomic():
            api_key, secret = super().create_key(**kwargs)
            cast(ApiKey, api_key).operations.set(chosen)
        return api_key, secret


class ApiKey(AbstractAPIKey):
    """A per-user API key, stored hashed; scopes limit it to ingestion and/or reads."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    scopes = models.JSONField(
        default=list,
        validators=[validate_scopes],
        help_text='A list of "ingest" and/or "read", e.g. ["read"].',
    )
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The operations the key reads and writes (never more than its user's memberships);
    # unlabelled items it ingests go to `default_operation`.
    operations = models.ManyToManyField(Operation, blank=True, related_name="api_keys")
    default_operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects: ClassVar[ApiKeyManager] = ApiKeyManager()

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def clean(self) -> None:
        """Store scopes in one order, so equal keys compare and display alike."""
        super().clean()
        if granted_scopes(self.scopes):
            self.scopes = sorted(self.scopes)

    def has_scope(self, scope: str) -> bool:
        """True when the key's (well-formed) scopes include `scope`."""
        return scope in granted_scopes(self.scopes)


class ApiKeyFailureWindow(models.Model):
    """Failed API key attempts from one client address since `window_started_at`.

    One row per address, counted in the database so every app server sees the same count
    (like django-axes' login attempts). Rows of past windows are reset when that address fails
    again; deleting a row in the admin lifts its lockout at once.
    """

    address = models.GenericIPAddressField(unique=True)
    window_started_at = models.DateTimeField()
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "API key failure window"

    def __str__(self) -> str:
        return f"{self.address}: {self.failures} since {self.window_started_at:%Y-%m-%d %H:%M}"


class AuditEvent(models.Model):
    """Who did what, when: verdicts, seed changes, key creation and revocation."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # Kept as text too, so the trail survives the user's deletion.
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64)
    # Exact fields: audited values come from ingested data (operation names, labels) and may
    # hold NUL, which PostgreSQL's text and jsonb cannot store as such.
    object_id = ExactCharField(max_length=255, db_index=True)
    detail = ExactJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object_idx")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.object_type}"
