"""Admin for API keys, media blobs and the audit trail, and the read-only base every app's
admin uses for rows written elsewhere (ingest, failed logins, the audit trail)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin

from redteam.common.media import store_media_bytes
from redteam.common.models import ApiKey, ApiKeyFailureWindow, AuditEvent, MediaBlob


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


@admin.register(ApiKey)
class ApiKeyAdmin(APIKeyModelAdmin):
    list_display = (*APIKeyModelAdmin.list_display, "user", "scopes")  # type: ignore[assignment]
    raw_id_fields = ["user"]
    actions = ["revoke_keys"]

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
