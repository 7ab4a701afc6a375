"""FilterSets of the scoring app's own pages (the rest are memory.filters')."""

from __future__ import annotations

import django_filters as df
from django.core.validators import RegexValidator
from django.db.models import QuerySet

from memory.filters import ScopedFilterSet, ScorerFilter
from memory.models import Score


class ScorerSideFilterSet(ScopedFilterSet):
    """The scorer half of the calibration filters: which automated scores count.

    ``scorer`` is memory's ScorerFilter (hash or class name, repeatable). ``eval_hash`` is
    only validated here: the eval hash may be computed from a scorer's dump, so it is applied
    to the groups (`scorer_calibrations`).
    """

    eval_hash = df.CharFilter(
        method="filter_eval_hash",
        max_length=64,
        validators=[RegexValidator(r"^[0-9a-f]{64}$", "An eval hash is 64 lowercase hex digits.")],
    )
    scorer = ScorerFilter(field_name="scorer_identifier")

    class Meta:
        model = Score
        fields: list[str] = []

    def filter_eval_hash(self, qs: QuerySet[Score], name: str, value: str) -> QuerySet[Score]:
        """Applied to the groups, not to the rows."""
        return qs
