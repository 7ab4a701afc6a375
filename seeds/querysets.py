"""Named read shapes for the seed pages: one query per list, constant queries per page."""

from __future__ import annotations

from django.db.models import Count, Prefetch, QuerySet

from seeds.models import Seed, SeedDataset, SeedGroup


def datasets_for_list() -> QuerySet[SeedDataset]:
    """Datasets with their seed and group counts, by name (one query)."""
    return SeedDataset.objects.annotate(
        seed_count=Count("seeds", distinct=True), group_count=Count("seed_groups", distinct=True)
    ).order_by("dataset_name")


# A page shows at most this many seeds of one group (a group ingested with thousands of seeds
# must not make one page of 50 groups huge); the count says how many there are.
SEEDS_SHOWN_PER_GROUP = 50


def groups_for_detail(dataset: SeedDataset) -> QuerySet[SeedGroup]:
    """A dataset's groups in import order with their first seeds in PyRIT's order (two queries).

    Each group carries `seed_count` and `shown_seeds` (at most SEEDS_SHOWN_PER_GROUP).
    """
    first_seeds = Seed.objects.order_by("position", "id")[:SEEDS_SHOWN_PER_GROUP]
    return (
        SeedGroup.objects.filter(dataset=dataset)
        .annotate(seed_count=Count("seeds"))
        .order_by("id")
        .prefetch_related(Prefetch("seeds", queryset=first_seeds, to_attr="shown_seeds"))
    )
