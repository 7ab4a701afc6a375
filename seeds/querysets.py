"""Named read shapes for the seed pages: one query per list, constant queries per page."""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet

from seeds.models import Seed, SeedDataset, SeedGroup


def datasets_for_list() -> QuerySet[SeedDataset]:
    """Datasets with their seed and group counts, by name (one query)."""
    return SeedDataset.objects.annotate(
        seed_count=Count("seeds", distinct=True), group_count=Count("seed_groups", distinct=True)
    ).order_by("dataset_name")


def groups_for_detail(dataset: SeedDataset) -> QuerySet[SeedGroup]:
    """A dataset's groups in import order with their seeds in PyRIT's order (two queries)."""
    return (
        SeedGroup.objects.filter(dataset=dataset)
        .order_by("id")
        .prefetch_related(Prefetch("seeds", queryset=Seed.objects.order_by("position", "id")))
    )
