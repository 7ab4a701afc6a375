"""FilterSet for seeds, after PyRIT's get_seeds (PYRIT-MODEL.md section 9).

The filters are redteam.common.filters', as for every other list. PyRIT's list filters (harm
categories, authors, groups) match when every given value appears as a substring of the
stored JSON list (AllSubstringsFilter).
"""

from __future__ import annotations

import re

import django_filters as df
from django.db.models import QuerySet

from redteam.common.choices import DATA_TYPE_CHOICES, SEED_TYPE_CHOICES
from redteam.common.datebounds import DateBoundFilter
from redteam.common.filters import AllSubstringsFilter, ChoicesFilter
from seeds.models import Seed


def like_to_regex(pattern: str) -> str:
    """Translate a SQL LIKE pattern (% and _) to an anchored regular expression."""
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return "^" + "".join(parts) + "$"


class SeedFilterSet(df.FilterSet):
    """Filters for seed lists: dataset, type, data type, harm category, text, provenance."""

    dataset_name = df.CharFilter(field_name="dataset_name", max_length=255)
    dataset_name_pattern = df.CharFilter(
        method="filter_dataset_pattern", max_length=255, label="Dataset name (SQL LIKE)"
    )
    seed_type = ChoicesFilter(field_name="seed_type", choices=SEED_TYPE_CHOICES)
    data_type = ChoicesFilter(field_name="data_type", choices=DATA_TYPE_CHOICES)
    value = df.CharFilter(field_name="value", lookup_expr="icontains", max_length=300)
    value_sha256 = df.CharFilter(field_name="value_sha256", max_length=64)
    harm_category = AllSubstringsFilter(field_name="harm_categories")
    author = AllSubstringsFilter(field_name="authors")
    group = AllSubstringsFilter(field_name="groups")
    added_by = df.CharFilter(field_name="added_by", max_length=255)
    source = df.CharFilter(field_name="source", max_length=2000)
    prompt_group_id = df.UUIDFilter(field_name="group__prompt_group_id")
    after = DateBoundFilter(field_name="date_added", bound="gte")
    before = DateBoundFilter(field_name="date_added", bound="lte")

    class Meta:
        model = Seed
        fields: list[str] = []

    def filter_dataset_pattern(self, qs: QuerySet[Seed], name: str, value: str) -> QuerySet[Seed]:
        """PyRIT's dataset_name_pattern: SQL LIKE with % and _ (exact name takes precedence)."""
        if not value or self.form.cleaned_data.get("dataset_name"):
            return qs
        return qs.filter(dataset_name__regex=like_to_regex(value))
