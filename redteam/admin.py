"""Admin for API keys, media blobs and the audit trail."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework_api_key.admin import APIKeyModelAdmin

from redteam.models import ApiKey, ApiKeyFailureWindow, AuditEvent, MediaBlob


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
class ApiKeyFailureWindowAdmin(admin.ModelAdmin):
    """Failed API key attempts per address; deleting a row lifts that address's lockout."""

    list_display = ["address", "failures", "window_started_at"]
    search_fields = ["=address"]
    ordering = ["-window_started_at"]

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        """Rows are written by failed attempts only."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        """Counts are not edited, only deleted (to unlock)."""
        return False


@admin.register(MediaBlob)
class MediaBlobAdmin(admin.ModelAdmin):
    list_display = ["sha256", "content_type", "size", "created_at"]
    search_fields = ["=sha256"]
    readonly_fields = ["sha256", "size", "content_type", "storage_name", "uploaded_by"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "actor_name", "action", "object_type", "object_id"]
    list_filter = ["action", "object_type"]
    search_fields = ["=object_id", "actor_name"]

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False
