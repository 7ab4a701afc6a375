"""Admin for review queues: a saved results filter, markdown instructions, the verdict fields.

Queues are managed as operations are (redteam.common.admin): superusers manage every queue,
a lead those of the operations they lead (team-wide queues, without an operation, are the
superusers'); another operation's queue is a 404. The filter is edited as the results list's
query string and checked by its FilterSet; categories are edited one per line. The built-in
queues keep their name, slug, filter and review restriction, and cannot be deleted.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import ForeignKey, QuerySet
from django.http import HttpRequest

from redteam.common.access import Scope, scope_for
from redteam.common.admin import ReadOnlyAdmin, ScopedAdminMixin, led_operation_ids, manages
from redteam.common.audit import record_audit
from redteam.common.markdown import render_markdown
from redteam.common.models import Operation
from scoring.blind import refresh_review_states
from scoring.models import PublishedScorerMetrics, ReviewQueue, ReviewRequirement
from scoring.queue_forms import (
    MAX_FILTER_CHARS,
    MAX_INSTRUCTIONS_CHARS,
    REVIEW_CHOICES,
    categories_as_text,
    check_slug,
    clean_filters,
    filters_as_text,
    filters_from_text,
    parse_categories,
    require_a_verdict_field,
)
from scoring.verdict_fields import MAX_CATEGORIES, MAX_CATEGORY_CHARS

BUILTIN_FIXED = ["name", "slug", "filter_query", "review", "operation"]


class ReviewQueueForm(forms.ModelForm[ReviewQueue]):
    """A queue's settings, with the filter as a query string and categories one per line."""

    filter_query = forms.CharField(
        label="Filter",
        required=False,
        max_length=MAX_FILTER_CHARS,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=(
            "The attack-results list's query string (or its URL), e.g. "
            "outcome=success&harm_category=hate. Empty: every result."
        ),
    )
    review = forms.ChoiceField(choices=REVIEW_CHOICES, required=False)
    instructions = forms.CharField(
        required=False,
        max_length=MAX_INSTRUCTIONS_CHARS,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Markdown, shown above the queue and its items (preview below once saved).",
    )
    categories_text = forms.CharField(
        label="Categories",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=(
            f"One per line, at most {MAX_CATEGORIES}, each at most {MAX_CATEGORY_CHARS} "
            "characters (e.g. refused, partial, complied). Empty: no category asked."
        ),
    )

    class Meta:
        model = ReviewQueue
        fields = [
            "name",
            "slug",
            "operation",
            "instructions",
            "review",
            "ask_true_false",
            "ask_scale",
            "ask_notes",
            "archived",
        ]

    scope: Scope = Scope.nothing()
    superuser: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            # A built-in queue's filter is read-only: the admin leaves its field out.
            if "filter_query" in self.fields:
                self.fields["filter_query"].initial = filters_as_text(self.instance.filters)
            self.fields["categories_text"].initial = categories_as_text(self.instance.categories)

    def clean_slug(self) -> str:
        """Not the name of a page under /review/."""
        slug = str(self.cleaned_data.get("slug") or "")
        if "slug" in self.changed_data:
            check_slug(slug)
        return slug

    def clean_filter_query(self) -> dict[str, list[str]]:
        """The filter, checked by the results list's FilterSet."""
        if self.instance.builtin:
            return dict(self.instance.filters or {})
        return clean_filters(
            filters_from_text(self.cleaned_data.get("filter_query", "")), self.scope
        )

    def clean_categories_text(self) -> list[str]:
        """One category per line, bounded and unique."""
        return parse_categories(self.cleaned_data.get("categories_text", ""))

    def clean_operation(self) -> Operation | None:
        """Team-wide queues are the superusers'."""
        operation: Operation | None = self.cleaned_data.get("operation")
        if operation is None and not self.superuser and not self.instance.builtin:
            raise ValidationError("Choose the operation this queue belongs to.", code="required")
        return operation

    def clean(self) -> dict[str, Any]:
        """At least one verdict field is asked."""
        data = super().clean() or {}
        require_a_verdict_field(data, "categories_text")
        return data

    def save(self, commit: bool = True) -> ReviewQueue:
        """Store the parsed filter and categories with the rest."""
        queue = super().save(commit=False)
        if not queue.builtin:
            queue.filters = self.cleaned_data["filter_query"]
        queue.categories = self.cleaned_data["categories_text"]
        if commit:
            queue.save()
        return queue


class LedOperationAdminMixin:
    """Admin of rows that belong to one operation or, with none, to the whole team: leads
    manage those of the operations they lead, superusers every one (the team-wide ones too)."""

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> Any:
        """The operations the user leads."""
        if db_field.name == "operation":
            led = led_operation_ids(request)
            rows = Operation.objects.order_by("name")
            kwargs["queryset"] = rows if led is None else rows.filter(pk__in=sorted(led))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)  # type: ignore[misc]

    def _manages(self, request: HttpRequest, obj: Any) -> bool:
        if obj is None:
            return manages(request)
        if obj.operation_id is None:
            return bool(request.user.is_superuser)
        return manages(request, obj.operation_id)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, their operations' rows."""
        return self._manages(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Superusers and leads."""
        return manages(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Superusers; leads, their operations' rows."""
        return self._manages(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """As changing."""
        return self._manages(request, obj)


@admin.register(ReviewQueue)
class ReviewQueueAdmin(LedOperationAdminMixin, ScopedAdminMixin, admin.ModelAdmin[ReviewQueue]):
    """Review queues of the operations the user manages (every queue for a superuser)."""

    form = ReviewQueueForm
    list_display = ["name", "slug", "operation", "review", "builtin", "archived", "updated_at"]
    list_filter = ["builtin", "archived"]
    list_select_related = ["operation"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ("name",)}
    fields = [
        "name",
        "slug",
        "operation",
        "instructions",
        "instructions_preview",
        "filter_query",
        "review",
        "ask_true_false",
        "ask_scale",
        "categories_text",
        "ask_notes",
        "archived",
        "builtin",
        "created_by",
        "created_at",
        "updated_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewQueue]:
        """Every queue for a superuser; a lead's, of the operations they lead."""
        rows = super().get_queryset(request).select_related("operation")
        led = led_operation_ids(request)
        return rows if led is None else rows.filter(operation_id__in=sorted(led))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Bookkeeping always; a built-in queue's identity and filter too."""
        fixed = ["instructions_preview", "builtin", "created_by", "created_at", "updated_at"]
        if obj is not None and obj.builtin:
            return [*BUILTIN_FIXED, *fixed]
        return fixed

    def get_prepopulated_fields(self, request: HttpRequest, obj: Any = None) -> dict[str, Any]:
        """None once the slug is read-only (a built-in queue)."""
        return {} if obj is not None and obj.builtin else dict(self.prepopulated_fields)

    @admin.display(description="instructions as shown")
    def instructions_preview(self, obj: ReviewQueue) -> str:
        """The stored instructions rendered as the queue page shows them (sanitized)."""
        return render_markdown(obj.instructions) if obj.instructions else "(none)"

    @admin.display(description="filter")
    def filter_query(self, obj: ReviewQueue) -> str:
        """The stored filter as a query string (read-only display)."""
        return filters_as_text(obj.filters) or "(none)"

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The form, told the user's scope (the FilterSet checks values with it)."""
        form = super().get_form(request, obj, change, **kwargs)
        scope, superuser = scope_for(request), bool(request.user.is_superuser)

        class ScopedReviewQueueForm(form):  # type: ignore[valid-type,misc]
            pass

        ScopedReviewQueueForm.scope = scope
        ScopedReviewQueueForm.superuser = superuser
        return ScopedReviewQueueForm

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """As changing, except the built-in queues, which stay."""
        if obj is not None and obj.builtin:
            return False
        return self._manages(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ReviewQueue]) -> None:
        """Bulk delete leaves the built-in queues alone, and audits each queue deleted."""
        for queue in queryset.exclude(builtin=True):
            self.delete_model(request, queue)

    def delete_model(self, request: HttpRequest, obj: ReviewQueue) -> None:
        """Delete a queue (never a built-in one), audited."""
        if obj.builtin:
            return
        record_audit(
            actor=request.user,
            action="review_queue.deleted",
            object_type="review_queue",
            object_id=obj.pk,
            detail={"name": obj.name, "slug": obj.slug, "filters": obj.filters},
        )
        super().delete_model(request, obj)

    def save_model(self, request: HttpRequest, obj: ReviewQueue, form: Any, change: bool) -> None:
        """Save, with its creator when new, audited."""
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        record_audit(
            actor=request.user,
            action="review_queue.changed" if change else "review_queue.created",
            object_type="review_queue",
            object_id=obj.pk,
            detail={
                "name": obj.name,
                "slug": obj.slug,
                "operation": obj.operation_id,
                "filters": obj.filters,
                "changed": list(form.changed_data),
            },
        )


@admin.register(PublishedScorerMetrics)
class PublishedScorerMetricsAdmin(ReadOnlyAdmin):
    """PyRIT's published metrics, as imported (manage.py import_scorer_metrics): read-only."""

    list_display = ["scorer_class", "eval_hash", "kind", "dataset_name", "file_name", "imported_at"]
    list_filter = ["kind", "file_name"]
    search_fields = ["=eval_hash", "scorer_class", "dataset_name"]


class ReviewRequirementForm(forms.ModelForm[ReviewRequirement]):
    """A requirement: the label (key=value) or harm category it matches, and the number of
    independent verdicts."""

    label = forms.CharField(
        required=False,
        max_length=402,
        help_text="key=value, e.g. operation=op_x (results whose labels hold it). Or:",
    )

    class Meta:
        model = ReviewRequirement
        fields = ["operation", "harm_category", "required_verdicts"]
        help_texts = {
            "harm_category": "A harm category of the results (targeted_harm_categories).",
            "operation": "Only this operation's results (empty: every operation).",
        }

    superuser: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and self.instance.label_key:
            self.fields["label"].initial = f"{self.instance.label_key}={self.instance.label_value}"

    def clean_operation(self) -> Operation | None:
        """Team-wide requirements are the superusers'."""
        operation: Operation | None = self.cleaned_data.get("operation")
        if operation is None and not self.superuser:
            raise ValidationError("Choose the operation this requirement applies to.")
        return operation

    def clean(self) -> dict[str, Any]:
        """Exactly one of a label value and a harm category."""
        data = super().clean() or {}
        label = str(data.get("label") or "").strip()
        category = str(data.get("harm_category") or "").strip()
        if bool(label) == bool(category):
            raise ValidationError("Give either a label (key=value) or a harm category.")
        if label:
            key, sep, value = label.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key or len(key) > 100 or len(value) > 300:
                raise ValidationError(
                    "Write the label as key=value (key up to 100 characters, value up to 300)."
                )
            data["label_key"], data["label_value"] = key, value
        else:
            data["label_key"], data["label_value"] = "", ""
        data["harm_category"] = category
        self.instance.label_key = data["label_key"]
        self.instance.label_value = data["label_value"]
        return data

    def save(self, commit: bool = True) -> ReviewRequirement:
        """Store the parsed label."""
        requirement = super().save(commit=False)
        requirement.label_key = self.cleaned_data["label_key"]
        requirement.label_value = self.cleaned_data["label_value"]
        requirement.harm_category = self.cleaned_data["harm_category"]
        if commit:
            requirement.save()
        return requirement


def _requirement_detail(obj: ReviewRequirement) -> dict[str, Any]:
    return {
        "operation": obj.operation_id,
        "label_key": obj.label_key,
        "label_value": obj.label_value,
        "harm_category": obj.harm_category,
        "required_verdicts": obj.required_verdicts,
    }


@admin.register(ReviewRequirement)
class ReviewRequirementAdmin(
    LedOperationAdminMixin, ScopedAdminMixin, admin.ModelAdmin[ReviewRequirement]
):
    """Blind double review settings of the operations the user leads (every one for a
    superuser); each change is audited and re-evaluates the affected results at once."""

    form = ReviewRequirementForm
    list_display = ["__str__", "operation", "required_verdicts", "updated_at"]
    list_select_related = ["operation"]
    fields = ["operation", "label", "harm_category", "required_verdicts"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewRequirement]:
        """Every requirement for a superuser; a lead's, of the operations they lead."""
        rows = super().get_queryset(request).select_related("operation")
        led = led_operation_ids(request)
        return rows if led is None else rows.filter(operation_id__in=sorted(led))

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The form, told whether the user may make team-wide requirements."""
        form = super().get_form(request, obj, change, **kwargs)

        class ScopedRequirementForm(form):  # type: ignore[valid-type,misc]
            pass

        ScopedRequirementForm.superuser = bool(request.user.is_superuser)
        return ScopedRequirementForm

    def _refresh(self, *operation_ids: int | None) -> None:
        """Re-evaluate the results of these operations (every one when one is None)."""
        ids = None if None in operation_ids else [op for op in operation_ids if op is not None]
        refresh_review_states(ids)

    def save_model(
        self, request: HttpRequest, obj: ReviewRequirement, form: Any, change: bool
    ) -> None:
        """Save, with its creator when new, audited; the affected results follow."""
        before = (
            ReviewRequirement.objects.filter(pk=obj.pk)
            .values_list("operation_id", flat=True)
            .first()
            if change
            else obj.operation_id
        )
        if not change:
            obj.created_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)
        record_audit(
            actor=request.user,
            action="review_requirement.changed" if change else "review_requirement.created",
            object_type="review_requirement",
            object_id=obj.pk,
            detail={**_requirement_detail(obj), "changed": list(form.changed_data)},
        )
        self._refresh(before, obj.operation_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ReviewRequirement]) -> None:
        """Bulk delete, each requirement audited."""
        for requirement in queryset:
            self.delete_model(request, requirement)

    def delete_model(self, request: HttpRequest, obj: ReviewRequirement) -> None:
        """Delete a requirement, audited; the affected results follow."""
        operation_id = obj.operation_id
        record_audit(
            actor=request.user,
            action="review_requirement.deleted",
            object_type="review_requirement",
            object_id=obj.pk,
            detail=_requirement_detail(obj),
        )
        super().delete_model(request, obj)
        self._refresh(operation_id)
