"""Admin for operations and their members, API keys, media blobs and the audit trail, and the
read-only base every app's admin uses for rows written elsewhere (ingest, failed logins, the
audit trail).

Operations and memberships are managed by superusers, and by each operation's leads: a staff
account that is `lead` of an operation sees that operation (read-only) and manages its
memberships, with no model permission needed. Staff who lead nothing see neither. Another
operation's rows are a 404, as everywhere else (redteam.common.access). Every change is
audited by redteam/common/signals.py.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Count, ForeignKey, Q, QuerySet
from django.http import Http404, HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin

from redteam.common.access import scope_for
from redteam.common.media import store_media_bytes
from redteam.common.models import (
    ApiKey,
    ApiKeyFailureWindow,
    AuditEvent,
    MediaBlob,
    Operation,
    OperationMembership,
    OperationRole,
    validate_key_operations,
)


class ReadOnlyMixin:
    """Rows that only the server writes: viewable in the admin, never added or edited there."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Rows are written by the server, not the admin."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Rows are evidence: never edited."""
        return False


class ReadOnlyAdmin(ReadOnlyMixin, admin.ModelAdmin[Any]):
    """A read-only model admin, tuned for big tables."""

    show_full_result_count = False  # no COUNT(*) over millions of rows


class ReadOnlyTabularInline(ReadOnlyMixin, admin.TabularInline[Any, Any]):
    """A read-only inline (rows of a read-only parent)."""

    extra = 0


def led_operation_ids(request: HttpRequest) -> frozenset[int] | None:
    """The operations the signed-in user leads; None for a superuser (every operation).

    Read from the request's scope (one query per request, cached on it).
    """
    scope = scope_for(request)
    if scope.everything:
        return None
    return frozenset(op for op, role in scope.roles.items() if role == OperationRole.LEAD)


def manages(request: HttpRequest, operation_id: int | None = None) -> bool:
    """True when the user may manage the operation's members (None: any operation)."""
    led = led_operation_ids(request)
    if led is None:
        return True
    return bool(led) if operation_id is None else operation_id in led


def active_users() -> QuerySet[Any]:
    """The accounts a membership may name, by username."""
    users = get_user_model()
    return users._default_manager.filter(is_active=True).order_by(users.USERNAME_FIELD)


class ScopedAdminMixin:
    """Admin pages for rows a lead may reach: shown to superusers and leads only, and a row
    outside the user's operations is a 404 rather than the admin's redirect, which would say
    that it exists."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        """Superusers, and staff who lead at least one operation (no model permission)."""
        return manages(request)

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        """The row, from the user's own queryset; Http404 when it is not there."""
        obj = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if obj is None:
            raise Http404("No such row.")
        return obj


class OperationMembershipInline(admin.TabularInline[OperationMembership, Operation]):
    """The members of an operation, on its page (superusers and the operation's leads)."""

    model = OperationMembership
    extra = 0
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OperationMembership]:
        """The members with their accounts, in one query."""
        return super().get_queryset(request).select_related("user").order_by("user__username")

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        """Active accounts only."""
        if db_field.name == "user":
            kwargs["queryset"] = active_users()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _manages(self, request: HttpRequest, obj: Operation | None) -> bool:
        return manages(request, obj.pk if obj is not None else None)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers and the operation's leads."""
        return self._manages(request, obj)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers and the operation's leads."""
        return self._manages(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers and the operation's leads."""
        return self._manages(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers and the operation's leads."""
        return self._manages(request, obj)


@admin.register(Operation)
class OperationAdmin(ScopedAdminMixin, admin.ModelAdmin[Operation]):
    """Operations: superusers create and edit them; a lead sees theirs and manages its members."""

    list_display = ["name", "archived", "member_count", "created_at"]
    list_filter = ["archived"]
    search_fields = ["name", "description"]
    fields = ["name", "description", "archived", "sensitive_harm_categories", "created_at"]
    inlines = [OperationMembershipInline]
    actions = ["archive_operations", "unarchive_operations"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Operation]:
        """The operations the user manages, each with its member count (one query)."""
        rows = super().get_queryset(request).annotate(member_count=Count("memberships"))
        led = led_operation_ids(request)
        return rows if led is None else rows.filter(pk__in=sorted(led))

    @admin.display(description="members", ordering="member_count")
    def member_count(self, obj: Operation) -> int:
        """Members of the operation (annotated by get_queryset)."""
        return int(getattr(obj, "member_count", 0))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Leads change members only; the name is fixed once rows may carry it as a label."""
        if not request.user.is_superuser:
            return self.fields
        return ["created_at"] if obj is None else ["name", "created_at"]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, of the operations they lead."""
        return manages(request, obj.pk if obj is not None else None)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """As viewing: a lead's change page saves the members inline (every field is read-only
        to them, see get_readonly_fields)."""
        return self.has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Only superusers create operations."""
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Only superusers delete operations (and only ones nothing was ingested into)."""
        return bool(request.user.is_superuser)

    def has_manage_permission(self, request: HttpRequest) -> bool:
        """Archiving is for superusers."""
        return bool(request.user.is_superuser)

    def save_model(self, request: HttpRequest, obj: Operation, form: Any, change: bool) -> None:
        """Superusers save the operation; a lead's save changes only its members."""
        if request.user.is_superuser:
            super().save_model(request, obj, form, change)

    def _set_archived(
        self, request: HttpRequest, rows: QuerySet[Operation], archived: bool
    ) -> None:
        # One by one (not queryset.update) so each change is audited.
        changed = 0
        for operation in rows.filter(archived=not archived):
            operation.archived = archived
            operation.save(update_fields=["archived"])
            changed += 1
        verb = "Archived" if archived else "Unarchived"
        self.message_user(request, f"{verb} {changed} operation(s).", messages.SUCCESS)

    @admin.action(description="Archive selected operations", permissions=["manage"])
    def archive_operations(self, request: HttpRequest, queryset: QuerySet[Operation]) -> None:
        """Archive: members still read it; nothing new is ingested or judged in it."""
        self._set_archived(request, queryset, archived=True)

    @admin.action(description="Unarchive selected operations", permissions=["manage"])
    def unarchive_operations(self, request: HttpRequest, queryset: QuerySet[Operation]) -> None:
        """Open an archived operation again."""
        self._set_archived(request, queryset, archived=False)


@admin.register(OperationMembership)
class OperationMembershipAdmin(ScopedAdminMixin, admin.ModelAdmin[OperationMembership]):
    """Memberships: superusers manage all; a lead, those of the operations they lead."""

    list_display = ["operation", "user", "role", "created_at"]
    list_filter = [("operation", admin.RelatedOnlyFieldListFilter), "role"]
    list_select_related = ["operation", "user"]
    search_fields = ["user__username", "operation__name"]
    fields = ["operation", "user", "role", "created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[OperationMembership]:
        """The memberships of the operations the user manages."""
        rows = super().get_queryset(request).select_related("operation", "user")
        led = led_operation_ids(request)
        return rows if led is None else rows.filter(operation_id__in=sorted(led))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Once made, a membership changes its role only (another member is another row)."""
        return ["created_at"] if obj is None else ["operation", "user", "created_at"]

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        """Operations the user manages; active accounts."""
        if db_field.name == "operation":
            led = led_operation_ids(request)
            rows = Operation.objects.all()
            kwargs["queryset"] = rows if led is None else rows.filter(pk__in=sorted(led))
        elif db_field.name == "user":
            kwargs["queryset"] = active_users()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _manages(self, request: HttpRequest, obj: OperationMembership | None) -> bool:
        return manages(request, obj.operation_id if obj is not None else None)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, of their operations' memberships."""
        return self._manages(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Superusers and leads (into the operations they lead: see the form's choices)."""
        return manages(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, of their operations' memberships."""
        return self._manages(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, of their operations' memberships."""
        return self._manages(request, obj)


class ApiKeyForm(forms.ModelForm[ApiKey]):
    """An API key's fields, with its operations checked against its user's memberships."""

    class Meta:
        model = ApiKey
        fields = [
            "name",
            "user",
            "scopes",
            "operations",
            "default_operation",
            "expiry_date",
            "revoked",
        ]

    def clean(self) -> dict[str, Any]:
        """The key names at least one operation (unless revoked), all its user's, and its
        default among them (validate_key_operations)."""
        cleaned = super().clean() or {}
        user = cleaned.get("user")
        operations = cleaned.get("operations")
        if user is None or operations is None:
            return cleaned  # their own field errors are already shown
        revoked = cleaned.get("revoked", self.instance.revoked)
        try:
            validate_key_operations(
                user, operations, cleaned.get("default_operation"), require_some=not revoked
            )
        except ValidationError as exc:
            field = "default_operation" if exc.code == "default_not_chosen" else "operations"
            self.add_error(field, exc)
        return cleaned


@admin.register(ApiKey)
class ApiKeyAdmin(APIKeyModelAdmin):
    form = ApiKeyForm
    list_display = (*APIKeyModelAdmin.list_display, "user", "scopes", "operation_names")  # type: ignore[assignment]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    filter_horizontal = ["operations"]
    actions = ["revoke_keys"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The prefix (and, once revoked, what revocation freezes); last use is the server's."""
        return (*super().get_readonly_fields(request, obj), "last_used_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKey]:
        """Keys with their operations (one more query per page, whatever its length)."""
        return super().get_queryset(request).prefetch_related("operations")

    @admin.display(description="operations")
    def operation_names(self, obj: ApiKey) -> str:
        """The operations the key reaches (prefetched)."""
        return ", ".join(sorted(str(op.name) for op in obj.operations.all()))

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        """Operation choices: every operation for a superuser; otherwise the ones the user
        leads and those the key already reaches (so saving it never drops them unseen)."""
        form = super().get_form(request, obj, change, **kwargs)
        led = led_operation_ids(request)
        if led is None:
            return form
        visible = Q(pk__in=sorted(led))
        if obj is not None:
            visible |= Q(api_keys=obj)
        choices = Operation.objects.filter(visible).distinct()

        class ScopedApiKeyForm(form):  # type: ignore[valid-type,misc]
            def __init__(self, *args: Any, **form_kwargs: Any) -> None:
                super().__init__(*args, **form_kwargs)
                for name in ("operations", "default_operation"):
                    if name in self.fields:
                        self.fields[name].queryset = choices

        return ScopedApiKeyForm

    @admin.action(description="Revoke selected API keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Revoke one by one (not queryset.update) so each revocation is audited."""
        revoked = 0
        for key in queryset.filter(revoked=False):
            key.revoked = True
            key.save(update_fields=["revoked"])
            revoked += 1
        self.message_user(request, f"Revoked {revoked} API key(s).", messages.SUCCESS)


@admin.register(ApiKeyFailureWindow)
class ApiKeyFailureWindowAdmin(ReadOnlyAdmin):
    """Failed API key attempts per address; deleting a row lifts that address's lockout."""

    list_display = ["address", "failures", "window_started_at"]
    search_fields = ["=address"]
    ordering = ["-window_started_at"]


class MediaBlobAddForm(forms.ModelForm[MediaBlob]):
    """Adding a blob means uploading its bytes: every other field is derived from them."""

    file = forms.FileField(help_text="Stored once by its sha256; the type is sniffed.")

    class Meta:
        model = MediaBlob
        fields: list[str] = []

    def clean_file(self) -> Any:
        """Refuse files over the media limit before reading them."""
        upload = self.cleaned_data["file"]
        limit = int(settings.REDTEAM_MAX_MEDIA_BYTES)
        if upload.size > limit:
            raise forms.ValidationError(f"The file is {upload.size} bytes; the limit is {limit}.")
        return upload


@admin.register(MediaBlob)
class MediaBlobAdmin(admin.ModelAdmin[MediaBlob]):
    list_display = ["sha256", "content_type", "size", "created_at"]
    search_fields = ["=sha256"]
    readonly_fields = ["sha256", "size", "content_type", "storage_name", "uploaded_by"]

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Any]]:
        """The upload form to add (a bare file name cannot make a blob); the model's to change."""
        if obj is None:
            kwargs["form"] = MediaBlobAddForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Only the file on the add page."""
        if obj is None:
            return ["file"]
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Nothing read-only to show before the bytes exist."""
        return [] if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: MediaBlob, form: Any, change: bool) -> None:
        """New blobs go through store_media_bytes, like API uploads (idempotent by sha256)."""
        if change:
            super().save_model(request, obj, form, change)
            return
        upload = form.cleaned_data["file"]
        stored = store_media_bytes(upload.read(), filename=upload.name or "", user=request.user)
        # The admin goes on to log and redirect to `obj`: make it the stored row.
        for field in MediaBlob._meta.concrete_fields:
            setattr(obj, field.attname, getattr(stored, field.attname))
        obj._state.adding, obj._state.db = False, stored._state.db


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "actor_name", "action", "object_type", "object_id"]
    list_filter = ["action", "object_type"]
    search_fields = ["=object_id", "actor_name"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """The trail is append-only."""
        return False
