"""Admin curation of seed datasets, groups and seeds.

Every write goes through seeds.services (the same code as the API and the commands), so PyRIT's
rules, hashes and the history trail apply alike. Rule violations are shown inline on the form
that caused them. History (who, when, what changed) is simple_history's, per object; reverting
to a past version posts that version through save_model, so it goes through the services too.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import Count, Q, QuerySet
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from simple_history.admin import SimpleHistoryAdmin

from redteam.common.fields import ExactJSONField
from redteam.core.visible import visible_text
from seeds import admin_views, services
from seeds.admin_views import export_problems_reported, shown_with_count, yaml_download
from seeds.forms import (
    DESCRIPTION_FIELDS,
    JSON_FORM_FIELD,
    PROMPT_FIELDS,
    SIMULATION_FIELDS,
    HarmCategoryForm,
    InlineSeedForm,
    MoveToDatasetForm,
    SeedForm,
    SeedInlineFormSet,
)
from seeds.importing import DATASET_DEFAULT_FIELDS, export_file_stem
from seeds.models import Seed, SeedDataset, SeedGroup

# Datasets up to this size are edited inline on their page; bigger ones list their groups
# (each posted inline row is ~10 fields, and Django caps a POST at 1000 fields).
INLINE_SEED_LIMIT = 60
CONTENTS_GROUP_LIMIT = 100


class _JsonListFilter(admin.SimpleListFilter):
    """Filter on one value of a JSON list column (harm categories, authors, groups)."""

    field_name = ""
    max_choices = 300

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        """The distinct values stored (one query over the distinct lists)."""
        values: set[str] = set()
        for stored in Seed.objects.values_list(self.field_name, flat=True).distinct():
            if isinstance(stored, list):
                values.update(v for v in stored if isinstance(v, str))
        # The label shows invisible characters; the value filtered on stays the stored one.
        return [(v, visible_text(v)) for v in sorted(values)[: self.max_choices]]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """Rows whose list holds the value (JSON-quoted, so 'hate' does not match 'hateful')."""
        value = self.value()
        if not value:
            return queryset
        needle = json.dumps(value) if value.isascii() else value
        return queryset.filter(**{f"{self.field_name}__icontains": needle})


class HarmCategoryFilter(_JsonListFilter):
    title = "harm category"
    parameter_name = "harm_category"
    field_name = "harm_categories"


class AuthorFilter(_JsonListFilter):
    title = "author"
    parameter_name = "author"
    field_name = "authors"


class AffiliationGroupFilter(_JsonListFilter):
    title = "group (affiliation)"
    parameter_name = "affiliation"
    field_name = "groups"


class _ServiceInline(admin.TabularInline[Seed, Any]):
    """Inline seed rows saved through the services (rules re-checked, hashes recomputed)."""

    model = Seed
    form = InlineSeedForm
    formset = SeedInlineFormSet
    formfield_overrides = {ExactJSONField: JSON_FORM_FIELD}
    extra = 0
    show_change_link = True
    ordering = ["group_id", "position", "id"]
    readonly_fields = ["position", "value_sha256"]


class SeedInGroupInline(_ServiceInline):
    """The seeds of a group, in PyRIT's order; role and type visible and editable."""

    fk_name = "group"
    fields = [
        "position",
        "seed_type",
        "role",
        "sequence",
        "data_type",
        "value",
        "harm_categories",
        "is_general_technique",
        "value_sha256",
    ]


class SeedInDatasetInline(_ServiceInline):
    """The seeds of a (small) dataset, grouped and ordered as PyRIT orders them."""

    fk_name = "dataset"
    raw_id_fields = ["group"]
    # The value's hash is left to the group and seed pages, so the row fits 1280 px.
    fields = ["group", *(f for f in SeedInGroupInline.fields if f != "value_sha256")]


class GroupInDatasetInline(admin.TabularInline[SeedGroup, SeedDataset]):
    """The groups of a (small) dataset: alias and content hash, with a link to edit each."""

    model = SeedGroup
    fk_name = "dataset"
    extra = 0
    fields = ["prompt_group_id", "alias", "content_sha256"]
    readonly_fields = ["prompt_group_id", "content_sha256"]
    show_change_link = True
    ordering = ["id"]


@admin.register(SeedDataset)
class SeedDatasetAdmin(SimpleHistoryAdmin):
    """Datasets: counts in the list, seeds and groups inline, import and export."""

    formfield_overrides = {ExactJSONField: JSON_FORM_FIELD}

    class Media:
        css = {"all": ["seeds/admin.css"]}

    list_display = ["shown_name", "seed_count", "group_count", "short_description", "updated_at"]
    search_fields = ["dataset_name", "name", "description"]
    readonly_fields = ["name_as_shown", "contents", "created_at", "updated_at"]
    actions = ["export_selected"]
    change_list_template = "admin/seeds/change_list_with_import.html"
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "dataset_name",
                    "name_as_shown",
                    "dataset_name_declared",
                    "name",
                    "description",
                ]
            },
        ),
        ("Defaults written to the YAML", {"fields": list(DATASET_DEFAULT_FIELDS)}),
        ("Contents", {"fields": ["contents", "created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[SeedDataset]:
        """Counts annotated in the same query as the rows."""
        rows: QuerySet[SeedDataset] = super().get_queryset(request)
        return rows.annotate(
            _seeds=Count("seeds", distinct=True), _groups=Count("seed_groups", distinct=True)
        )

    @admin.display(description="seeds", ordering="_seeds")
    def seed_count(self, obj: SeedDataset) -> int:
        """Seeds in the dataset."""
        return getattr(obj, "_seeds", 0)

    @admin.display(description="groups", ordering="_groups")
    def group_count(self, obj: SeedDataset) -> int:
        """Groups in the dataset."""
        return getattr(obj, "_groups", 0)

    @admin.display(description="dataset name", ordering="dataset_name")
    def shown_name(self, obj: SeedDataset) -> str:
        """The name with invisible characters shown as ⟨U+…⟩."""
        return visible_text(obj.dataset_name)

    @admin.display(description="name as shown")
    def name_as_shown(self, obj: SeedDataset) -> str:
        """The name with invisible characters made visible, and how many there are."""
        return shown_with_count(obj.dataset_name or "")

    @admin.display(description="description")
    def short_description(self, obj: SeedDataset) -> str:
        """The description, cut short."""
        return visible_text(Truncator(obj.description or "").chars(80))

    def get_inlines(self, request: HttpRequest, obj: SeedDataset | None) -> list[Any]:
        """Inline editing for small datasets; big ones link to their groups instead."""
        if obj is None or obj.seeds.count() > INLINE_SEED_LIMIT:
            return []
        return [GroupInDatasetInline, SeedInDatasetInline]

    @admin.display(description="groups and seeds")
    def contents(self, obj: SeedDataset) -> str:
        """For big datasets: the first groups, with links to edit them and to filter seeds."""
        if obj.pk is None:
            return "-"
        groups = list(
            SeedGroup.objects.filter(dataset=obj)
            .annotate(n=Count("seeds"))
            .order_by("id")[:CONTENTS_GROUP_LIMIT]
        )
        seeds_url = reverse("admin:seeds_seed_changelist") + f"?dataset__id__exact={obj.pk}"
        rows = format_html_join(
            "",
            '<li><a href="{}">{}</a> ({} seeds)</li>',
            ((reverse("admin:seeds_seedgroup_change", args=[g.pk]), str(g), g.n) for g in groups),
        )
        return format_html(
            '<p><a href="{}">All seeds of this dataset</a></p><ul class="seed-groups">{}</ul>',
            seeds_url,
            rows,
        )

    def save_model(
        self, request: HttpRequest, obj: SeedDataset, form: ModelForm[SeedDataset], change: bool
    ) -> None:
        """Through the services: a rename carries over to the seeds' dataset_name."""
        services.rename_dataset(dataset=obj, user=request.user)

    def save_formset(
        self,
        request: HttpRequest,
        form: ModelForm[SeedDataset],
        formset: BaseInlineFormSet[Any, SeedDataset, Any],
        change: bool,
    ) -> None:
        """Seed rows through the services; group rows (alias) saved with history."""
        _save_inline(request, formset, dataset=form.instance)

    @admin.action(description="Export selected datasets as PyRIT YAML")
    def export_selected(self, request: HttpRequest, queryset: QuerySet[SeedDataset]) -> Any:
        """One .prompt per dataset (a zip when several)."""
        with export_problems_reported(self, request) as report:
            files = {
                f"{export_file_stem(d.dataset_name)}.prompt": services.export_dataset(d)
                for d in queryset
                if d.seeds.exists()
            }
        if report.failed:
            return None
        if not files:
            self.message_user(request, "The selected datasets hold no seeds.", messages.WARNING)
            return None
        return yaml_download(files, "seed-datasets.zip")

    def get_urls(self) -> list[Any]:
        """The import page and a per-dataset export."""
        urls = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="seeds_seeddataset_import",
            ),
            path(
                "<int:pk>/export/",
                self.admin_site.admin_view(self.export_view),
                name="seeds_seeddataset_export",
            ),
        ]
        return [*urls, *super().get_urls()]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        """Upload -> preview -> confirm (see admin_views.import_view)."""
        return admin_views.import_view(self, request)

    def export_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Download one dataset as YAML."""
        if not self.has_view_permission(request):
            return HttpResponse(status=403)
        dataset = SeedDataset.objects.filter(pk=pk).first()
        if dataset is None or not dataset.seeds.exists():
            self.message_user(request, "Nothing to export.", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:seeds_seeddataset_changelist"))
        name = f"{export_file_stem(dataset.dataset_name)}.prompt"
        with export_problems_reported(self, request) as report:
            text = services.export_dataset(dataset)
        if report.failed:
            return HttpResponseRedirect(reverse("admin:seeds_seeddataset_change", args=[pk]))
        return yaml_download({name: text}, name)


def _save_inline(
    request: HttpRequest, formset: BaseInlineFormSet[Any, Any, Any], **parents: Any
) -> None:
    """Save an inline formset: seeds through the services, groups with their history."""
    instances = formset.save(commit=False)
    if formset.model is Seed:
        for seed in instances:
            group = parents.get("group")
            dataset = parents.get("dataset") or (group.dataset if group else None)
            if seed.dataset_id is None and dataset is not None:
                seed.dataset = dataset
        services.save_seed_changes(
            changed=instances, deleted=list(formset.deleted_objects), user=request.user
        )
        return
    for obj in instances:
        obj._history_user = request.user
        obj.save()
    for obj in formset.deleted_objects:
        obj._history_user = request.user
        obj.delete()


@admin.register(SeedGroup)
class SeedGroupAdmin(SimpleHistoryAdmin):
    """Groups: their seeds inline in PyRIT's order, with the group rules checked on save."""

    formfield_overrides = {ExactJSONField: JSON_FORM_FIELD}

    class Media:
        css = {"all": ["seeds/admin.css"]}

    list_display = ["__str__", "dataset", "seed_count", "pyrit_class", "prompt_group_id"]
    list_filter = ["dataset"]
    list_select_related = ["dataset"]
    search_fields = ["alias", "prompt_group_id", "dataset__dataset_name"]
    readonly_fields = ["prompt_group_id", "content_sha256", "created_at"]
    fields = ["dataset", "alias", "prompt_group_id", "content_sha256", "created_at"]
    inlines = [SeedInGroupInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[SeedGroup]:
        """Seed and objective counts in the same query."""
        rows: QuerySet[SeedGroup] = super().get_queryset(request)
        return rows.annotate(
            _seeds=Count("seeds"),
            _objectives=Count("seeds", filter=Q(seeds__seed_type="objective")),
            _general=Count("seeds", filter=Q(seeds__is_general_technique=True)),
        )

    @admin.display(description="seeds", ordering="_seeds")
    def seed_count(self, obj: SeedGroup) -> int:
        """Seeds in the group."""
        return getattr(obj, "_seeds", 0)

    @admin.display(description="PyRIT class")
    def pyrit_class(self, obj: SeedGroup) -> str:
        """AttackSeedGroup with exactly one objective, else SeedGroup (or a technique group)."""
        objectives = getattr(obj, "_objectives", 0)
        if objectives == 1:
            return "AttackSeedGroup"
        if objectives == 0 and getattr(obj, "_seeds", 0) == getattr(obj, "_general", -1):
            return "AttackTechniqueSeedGroup"
        return "SeedGroup"

    def save_model(
        self, request: HttpRequest, obj: SeedGroup, form: ModelForm[SeedGroup], change: bool
    ) -> None:
        """A group's own fields (dataset, alias); its seeds follow the dataset."""
        obj._history_user = request.user  # type: ignore[attr-defined]
        obj.save()
        stale = list(obj.seeds.exclude(dataset_id=obj.dataset_id))
        for seed in stale:
            seed.dataset = obj.dataset
        if stale:
            services.save_seed_changes(changed=stale, user=request.user)

    def save_formset(
        self,
        request: HttpRequest,
        form: ModelForm[SeedGroup],
        formset: BaseInlineFormSet[Seed, SeedGroup, Any],
        change: bool,
    ) -> None:
        """Seed rows through the services."""
        _save_inline(request, formset, group=form.instance)


@admin.register(Seed)
class SeedAdmin(SimpleHistoryAdmin):
    """Seeds: search, filters, bulk actions, media upload and preview, template preview."""

    formfield_overrides = {ExactJSONField: JSON_FORM_FIELD}

    form = SeedForm
    list_display = [
        "short_value",
        "seed_type",
        "data_type",
        "role",
        "sequence",
        "dataset",
        "harm_list",
        "is_general_technique",
    ]
    list_select_related = ["dataset"]
    list_filter = [
        "dataset",
        "seed_type",
        "data_type",
        HarmCategoryFilter,
        AuthorFilter,
        AffiliationGroupFilter,
        "is_general_technique",
    ]
    search_fields = ["value", "name", "dataset_name"]
    raw_id_fields = ["group"]
    readonly_fields = [
        "id",
        "value_as_shown",
        "value_sha256",
        "shown_dataset_name",
        "position",
        "media_preview",
        "template_preview_link",
        "provenance",
        "created_at",
        "updated_at",
    ]
    actions = ["export_selected", "move_to_dataset", "add_harm_category", "remove_harm_category"]
    change_list_template = "admin/seeds/change_list_with_import.html"
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "seed_type",
                    "value",
                    "value_as_shown",
                    "value_sha256",
                    "data_type",
                    "dataset",
                    "shown_dataset_name",
                    "group",
                    "position",
                    "prompt_group_alias",
                ]
            },
        ),
        ("Prompt", {"fields": list(PROMPT_FIELDS)}),
        ("Description", {"fields": list(DESCRIPTION_FIELDS)}),
        ("Media", {"fields": ["media_upload", "media_preview"]}),
        (
            "Simulated conversation",
            {
                "classes": ["collapse"],
                "fields": list(SIMULATION_FIELDS),
            },
        ),
        ("Template and provenance", {"fields": ["template_preview_link", "provenance"]}),
        ("Timestamps", {"fields": ["created_at", "updated_at"]}),
    ]

    class Media:
        css = {"all": ["seeds/admin.css"]}

    @admin.display(description="value", ordering="value")
    def short_value(self, obj: Seed) -> str:
        """The value, cut short, invisible characters shown as ⟨U+…⟩."""
        return visible_text(Truncator(obj.value).chars(90))

    @admin.display(description="value as shown")
    def value_as_shown(self, obj: Seed) -> str:
        """The value with invisible characters made visible, and how many there are."""
        return shown_with_count(obj.value or "")

    @admin.display(description="dataset name")
    def shown_dataset_name(self, obj: Seed) -> str:
        """The dataset name the seed carries, invisible characters shown as ⟨U+…⟩."""
        return visible_text(obj.dataset_name or "") or "-"

    @admin.display(description="harm categories")
    def harm_list(self, obj: Seed) -> str:
        """Harm categories, comma-separated."""
        return visible_text(", ".join(obj.harm_categories or []))

    @admin.display(description="media")
    def media_preview(self, obj: Seed) -> str:
        """An inline player or image for stored media (served with a safe content type)."""
        if not obj.media_id:
            return "-"
        url = reverse("api:media-detail", kwargs={"sha256": obj.media_id})
        if obj.data_type == "image_path":
            return format_html('<img class="seed-media" src="{}" alt="seed image">', url)
        if obj.data_type == "audio_path":
            return format_html('<audio class="seed-media" controls src="{}"></audio>', url)
        if obj.data_type == "video_path":
            return format_html('<video class="seed-media" controls src="{}"></video>', url)
        return format_html('<a href="{}">download</a>', url)

    @admin.display(description="template")
    def template_preview_link(self, obj: Seed) -> str:
        """Link to the sandboxed preview form."""
        if obj.pk is None:
            return "-"
        return format_html(
            '<a href="{}">Preview this template with parameters</a>',
            reverse("admin:seeds_seed_preview", args=[obj.pk]),
        )

    @admin.display(description="promoted from")
    def provenance(self, obj: Seed) -> str:
        """The conversation piece and attack result a promoted seed came from."""
        if not obj.source_piece_id:
            return "-"
        return format_html(
            "piece {} / attack result {}", obj.source_piece_id, obj.source_attack_result_id or "-"
        )

    def save_model(
        self, request: HttpRequest, obj: Seed, form: ModelForm[Seed], change: bool
    ) -> None:
        """Through the services (rules, hashes, positions, history with the user)."""
        upload = form.cleaned_data.get("media_upload")
        if upload is not None:
            services.attach_media(
                seed=obj, data=upload.read(), filename=upload.name or "", user=request.user
            )
        else:
            services.save_seed_changes(changed=[obj], user=request.user)

    def delete_model(self, request: HttpRequest, obj: Seed) -> None:
        """Through the services: the group is re-hashed (and removed when empty)."""
        services.delete_seeds(seeds=[obj], user=request.user)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Seed]) -> None:
        """Bulk delete through the services."""
        services.delete_seeds(seeds=list(queryset), user=request.user)

    def get_urls(self) -> list[Any]:
        """The sandboxed template preview."""
        urls = [
            path(
                "<uuid:pk>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="seeds_seed_preview",
            ),
        ]
        return [*urls, *super().get_urls()]

    def preview_view(self, request: HttpRequest, pk: Any) -> HttpResponse:
        """Render the seed's value with given parameters (admin_views.preview_view)."""
        return admin_views.preview_view(self, request, pk)

    # -- bulk actions --------------------------------------------------------------------

    @admin.action(description="Export selected seeds as PyRIT YAML (whole groups)")
    def export_selected(self, request: HttpRequest, queryset: QuerySet[Seed]) -> Any:
        """A .prompt per dataset of the selection (zip when several)."""
        with export_problems_reported(self, request) as report:
            files = services.export_seeds(queryset)
        if report.failed:
            return None
        return yaml_download(files, "seeds.zip")

    @admin.action(description="Move selected seeds' groups to a dataset", permissions=["change"])
    def move_to_dataset(self, request: HttpRequest, queryset: QuerySet[Seed]) -> Any:
        """Ask for the dataset, then move whole groups (identical ones already there stay)."""

        def apply(form: Any) -> str:
            result = services.move_seeds_to_dataset(
                seeds=queryset, dataset=form.cleaned_data["dataset"], user=request.user
            )
            return (
                f"Moved {result.moved_groups} group(s) ({result.moved_seeds} seeds); "
                f"{result.skipped_groups} group(s) left in place because the dataset already "
                "holds an identical one."
            )

        return self._action_form(request, queryset, MoveToDatasetForm, apply, "Move to dataset")

    @admin.action(description="Add a harm category to selected seeds", permissions=["change"])
    def add_harm_category(self, request: HttpRequest, queryset: QuerySet[Seed]) -> Any:
        """Ask for the category, then append it where missing."""

        def apply(form: Any) -> str:
            n = services.add_harm_category(
                seeds=queryset, category=form.cleaned_data["category"], user=request.user
            )
            return f"Added the harm category to {n} seed(s)."

        return self._action_form(request, queryset, HarmCategoryForm, apply, "Add harm category")

    @admin.action(description="Remove a harm category from selected seeds", permissions=["change"])
    def remove_harm_category(self, request: HttpRequest, queryset: QuerySet[Seed]) -> Any:
        """Ask for the category, then remove it where present."""

        def apply(form: Any) -> str:
            n = services.remove_harm_category(
                seeds=queryset, category=form.cleaned_data["category"], user=request.user
            )
            return f"Removed the harm category from {n} seed(s)."

        return self._action_form(request, queryset, HarmCategoryForm, apply, "Remove harm category")

    def _action_form(
        self,
        request: HttpRequest,
        queryset: QuerySet[Seed],
        form_class: type[Any],
        apply: Any,
        title: str,
    ) -> HttpResponse | None:
        """An intermediate page for an action that needs input (Django's usual pattern)."""
        if "apply" in request.POST:
            form = form_class(request.POST)
            if form.is_valid():
                try:
                    self.message_user(request, apply(form), messages.SUCCESS)
                except ValueError as exc:
                    self.message_user(request, str(exc), messages.ERROR)
                return None
        else:
            form = form_class()
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "form": form,
            "queryset": queryset,
            "count": queryset.count(),
            "action": request.POST.get("action", ""),
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/seeds/seed/action_form.html", context)
