"""Admin for seed curation (basic registration; curation lives in its own module)."""

from __future__ import annotations

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from seeds.models import Seed, SeedDataset, SeedGroup


@admin.register(SeedDataset)
class SeedDatasetAdmin(SimpleHistoryAdmin):
    list_display = ["dataset_name", "description", "source"]
    search_fields = ["dataset_name", "description"]


@admin.register(SeedGroup)
class SeedGroupAdmin(SimpleHistoryAdmin):
    list_display = ["prompt_group_id", "alias", "dataset"]
    list_filter = ["dataset"]


@admin.register(Seed)
class SeedAdmin(SimpleHistoryAdmin):
    list_display = ["id", "seed_type", "data_type", "dataset", "value"]
    list_filter = ["seed_type", "data_type", "dataset"]
    search_fields = ["value", "name", "dataset_name"]
    raw_id_fields = ["group", "media"]
