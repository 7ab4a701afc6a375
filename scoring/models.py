"""PyRIT scores, automated and human.

A human verdict is an ordinary PyRIT-shaped Score from a human scorer identifier; `source`
keeps it apart from automated scores so both can be shown side by side.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, validate_slug
from django.db import models

from redteam.common.access import Scope, ScopedQuerySet
from redteam.common.fields import ExactCharField, ExactJSONField, ExactTextField
from redteam.common.models import Operation
from redteam.core.digests import SHA256_ANCHORED
from scoring.verdict_fields import VerdictFields


class OutcomeTally(models.Model):
    """Attack-result counts per operation, dashboard dimension, key and effective outcome.

    Kept by `scoring.tallies` in the transaction that stores a result or a verdict, as
    increments (INSERT ... ON CONFLICT DO UPDATE SET count = count + n): a cell's count is the
    sum of its shards' rows, and a writer adds to the shard no concurrent writer holds (see
    `scoring.tallies.SHARDS`), so concurrent ingests never queue on a popular cell. A shard
    row may go negative (a result moved out of the cell by another writer's shard); the sum
    does not. The dashboard sums the rows of the viewer's operations, never reading the
    attack-result table; `refresh_dashboard` rebuilds them from scratch (a repair tool).
    """

    # The attack results' operation (None only for results stored without one).
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # operation_id, or 0 for none: NULLs are distinct in a unique index, so the conflict
    # target of the increments names this column instead.
    operation_key = models.BigIntegerField(default=0)
    # "harm_category", "attack", "converter", "target", "reviewed", "all" or "label:<key>".
    dimension = ExactCharField(max_length=120)
    key = ExactCharField(max_length=300)
    outcome = ExactCharField(max_length=16)
    shard = models.SmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)

    objects = ScopedQuerySet["OutcomeTally"].as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["operation_key", "dimension", "key", "outcome", "shard"],
                name="outcome_tally_cell",
            ),
        ]
        indexes = [models.Index(fields=["dimension", "operation"], name="outcome_tally_read")]

    def __str__(self) -> str:
        return f"{self.dimension}={self.key} {self.outcome}: {self.count}"


class DailyOutcomeTally(models.Model):
    """OutcomeTally per UTC day of the result (its timestamp, or when it was ingested if it
    has none or a later one): what "ASR over time" sums, per day or week."""

    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    operation_key = models.BigIntegerField(default=0)
    dimension = ExactCharField(max_length=120)
    key = ExactCharField(max_length=300)
    day = models.DateField()
    outcome = ExactCharField(max_length=16)
    shard = models.SmallIntegerField(default=0)
    count = models.BigIntegerField(default=0)

    objects = ScopedQuerySet["DailyOutcomeTally"].as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["operation_key", "dimension", "key", "day", "outcome", "shard"],
                name="daily_outcome_tally_cell",
            ),
        ]
        indexes = [
            models.Index(fields=["dimension", "key", "day"], name="daily_outcome_tally_read")
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.dimension}={self.key} {self.outcome}: {self.count}"


class TalliedResult(models.Model):
    """What the tallies count for one attack result: its cells, as last written.

    An event that may move a result (a verdict, a withdrawal, new labels on its conversation)
    recomputes the result's cells and applies the difference with this row, under its row
    lock, so two writers moving the same result cannot both subtract the old cells.
    """

    # No constraint and no cascade: when a result is deleted, its row is still here for the
    # post_delete receiver (scoring.signals) to take its cells out of the counts.
    attack_result = models.OneToOneField(
        "memory.AttackResult",
        primary_key=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    operation_key = models.BigIntegerField(default=0)
    day = models.DateField()
    outcome = ExactCharField(max_length=16)
    reviewed = models.BooleanField(default=False)
    # [[dimension, key], ...]: every key the result counts under (scoring.tallies.result_keys).
    keys = ExactJSONField(default=list)

    def __str__(self) -> str:
        return f"{self.attack_result_id}: {self.outcome}"


class ReviewQueueQuerySet(ScopedQuerySet["ReviewQueue"]):
    """Queues a viewer sees: the team-wide ones and those of the viewer's operations."""

    def scope_filter(self, scope: Scope) -> models.Q:
        """Team-wide queues (no operation) plus the scope's operations' queues."""
        return models.Q(operation__isnull=True) | super().scope_filter(scope)


class ReviewQueue(models.Model):
    """A named review queue: a saved filter of the attack-results list, with instructions and
    the verdict fields it asks for.

    `filters` holds the results list's query parameters as {name: [values]} (the same names
    the list's URL uses, validated by memory.filters.AttackResultFilterSet); an item opened
    from the queue is walked in the list's order (newest ingested first). A queue tied to an
    operation is seen only by that operation's members; one without is seen by everyone, and
    each viewer walks only the results of their own operations.
    """

    name = ExactCharField(max_length=120, unique=True)
    slug = ExactCharField(max_length=80, unique=True, validators=[validate_slug])
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.CASCADE, related_name="review_queues"
    )
    instructions = ExactTextField(blank=True, default="", help_text="Markdown.")
    filters = ExactJSONField(default=dict, blank=True)
    # The review's restriction: every item, only those without a human verdict yet, or only
    # those whose verdict contradicts the automated outcome (scoring.review.REVIEW_VIEWS).
    review = ExactCharField(max_length=16, blank=True, default="unreviewed")
    ask_true_false = models.BooleanField(default=True)
    ask_scale = models.BooleanField(default=False)
    categories = ExactJSONField(default=list, blank=True)
    ask_notes = models.BooleanField(default=False)
    archived = models.BooleanField(default=False)
    # The built-in queues (unreviewed, disagree, reviewed: no filter) are made by a migration
    # and cannot be deleted or renamed.
    builtin = models.BooleanField(default=False, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ReviewQueueQuerySet.as_manager()
    scope_path = "operation"

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return str(self.name)

    def verdict_fields(self) -> VerdictFields:
        """The fields this queue's review form asks for."""
        return VerdictFields(
            true_false=self.ask_true_false,
            scale=self.ask_scale,
            categories=tuple(str(c) for c in (self.categories or [])),
            notes=self.ask_notes,
        )


class ReviewClaim(models.Model):
    """An attack result opened from a queue, held for one reviewer until `expires_at`.

    One claim per result whatever the queue: while it holds, "next" skips the result for
    every other reviewer. Expired claims are ignored (and replaced by the next claimant).
    """

    attack_result = models.OneToOneField(
        "memory.AttackResult", on_delete=models.CASCADE, related_name="review_claim"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    queue = models.ForeignKey(
        ReviewQueue, null=True, blank=True, on_delete=models.SET_NULL, related_name="claims"
    )
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.attack_result_id} held until {self.expires_at:%H:%M:%S}"


class ReviewSkip(models.Model):
    """A reviewer passed over an item of a queue: it moves to the end of that queue."""

    queue = models.ForeignKey(ReviewQueue, on_delete=models.CASCADE, related_name="skips")
    attack_result = models.ForeignKey(
        "memory.AttackResult", on_delete=models.CASCADE, related_name="review_skips"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    reason = ExactCharField(max_length=500, blank=True, default="")
    skipped_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["queue", "attack_result"], name="review_skip_item")]

    def __str__(self) -> str:
        return f"{self.attack_result_id} skipped in {self.queue_id}"


PUBLISHED_OBJECTIVE_HEADLINE = (
    "num_responses",
    "num_human_raters",
    "accuracy",
    "accuracy_standard_error",
    "f1_score",
    "precision",
    "recall",
)
PUBLISHED_HARM_HEADLINE = (
    "num_responses",
    "num_human_raters",
    "mean_absolute_error",
    "mae_standard_error",
    "t_statistic",
    "p_value",
    "krippendorff_alpha_combined",
)


class PublishedScorerMetrics(models.Model):
    """One line of a PyRIT ``*_metrics.jsonl`` registry: metrics published for a scorer
    configuration (eval hash), read by ``manage.py import_scorer_metrics``.

    A shared library like the seeds (not operation data): every member sees it beside the
    team's own calibration. PyRIT keeps one entry per eval hash per registry file
    (``replace_evaluation_results``), so (file name, eval hash) is the key and re-importing a
    file replaces its rows' values instead of adding copies.
    """

    eval_hash = ExactCharField(max_length=64, db_index=True)
    # "objective" (ObjectiveScorerMetrics) or "harm" (HarmScorerMetrics), from the metrics.
    kind = ExactCharField(max_length=16)
    scorer_class = ExactCharField(max_length=255, blank=True, default="")
    scorer_hash = ExactCharField(max_length=64, blank=True, default="")
    # The identifier's flat dump as the line holds it (without eval_hash and metrics).
    scorer_identifier = ExactJSONField(default=dict, blank=True)
    # The line's metrics object verbatim (NaN kept as NaN).
    metrics = ExactJSONField(default=dict, blank=True)
    # PyRIT joins the names and versions of combined datasets with "_": they run long.
    dataset_name = ExactCharField(max_length=1000, blank=True, default="")
    dataset_version = ExactCharField(max_length=255, blank=True, default="")
    harm_category = ExactCharField(max_length=120, blank=True, default="")
    pyrit_version = ExactCharField(max_length=32, blank=True, default="")
    # The registry file's base name (PyRIT names them <dataset>_metrics.jsonl) and its line.
    file_name = ExactCharField(max_length=255)
    line_number = models.PositiveIntegerField(default=0)
    imported_at = models.DateTimeField()
    imported_by = ExactCharField(max_length=150, blank=True, default="")

    class Meta:
        ordering = ["file_name", "line_number"]
        verbose_name_plural = "published scorer metrics"
        constraints = [
            models.UniqueConstraint(
                fields=["file_name", "eval_hash"], name="published_metrics_once_per_file"
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["objective", "harm"]),
                name="published_metrics_kind_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(eval_hash__regex=SHA256_ANCHORED),
                name="published_metrics_eval_hash_hex",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scorer_class or 'scorer'} {self.eval_hash[:8]} in {self.file_name}"

    def headline(self) -> list[tuple[str, Any]]:
        """The metrics a summary shows, by PyRIT's names, in PyRIT's order."""
        names = (
            PUBLISHED_OBJECTIVE_HEADLINE if self.kind == "objective" else PUBLISHED_HARM_HEADLINE
        )
        values = self.metrics if isinstance(self.metrics, dict) else {}
        return [(name, values.get(name)) for name in names if name in values]


class ReviewRequirementQuerySet(ScopedQuerySet["ReviewRequirement"]):
    """Requirements a viewer sees: the team-wide ones and those of the viewer's operations."""

    def scope_filter(self, scope: Scope) -> models.Q:
        """Team-wide requirements (no operation) plus the scope's operations' ones."""
        return models.Q(operation__isnull=True) | super().scope_filter(scope)


MIN_REQUIRED_VERDICTS = 2
MAX_REQUIRED_VERDICTS = 5


class ReviewRequirement(models.Model):
    """Blind double review: attack results matching this need `required_verdicts`
    independent human verdicts before the humans decide their outcome (scoring.blind).

    A requirement matches by one label value (`label_key` = `label_value`, e.g.
    operation=op_x, read from the result's labels over its conversation's) or by one of the
    result's targeted harm categories; tied to an operation it applies to that operation's
    results only (team-wide requirements are the superusers'). Where several match, the
    largest number applies.
    """

    operation = models.ForeignKey(
        Operation,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="review_requirements",
    )
    label_key = ExactCharField(max_length=100, blank=True, default="")
    label_value = ExactCharField(max_length=300, blank=True, default="")
    harm_category = ExactCharField(max_length=300, blank=True, default="")
    required_verdicts = models.PositiveSmallIntegerField(
        default=MIN_REQUIRED_VERDICTS,
        validators=[
            MinValueValidator(MIN_REQUIRED_VERDICTS),
            MaxValueValidator(MAX_REQUIRED_VERDICTS),
        ],
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ReviewRequirementQuerySet.as_manager()
    scope_path = "operation"

    class Meta:
        ordering = ["operation_id", "label_key", "label_value", "harm_category"]
        constraints = [
            # Exactly one way of matching: a label value, or a harm category.
            models.CheckConstraint(
                condition=(
                    models.Q(label_key__gt="", harm_category="")
                    | models.Q(label_key="", label_value="", harm_category__gt="")
                ),
                name="review_requirement_matches_one_way",
            ),
            models.CheckConstraint(
                condition=models.Q(
                    required_verdicts__gte=MIN_REQUIRED_VERDICTS,
                    required_verdicts__lte=MAX_REQUIRED_VERDICTS,
                ),
                name="review_requirement_verdicts_range",
            ),
        ]

    def __str__(self) -> str:
        what = (
            f"{self.label_key}={self.label_value}"
            if self.label_key
            else f"harm category {self.harm_category}"
        )
        return f"{what}: {self.required_verdicts} verdicts"

    def matches(
        self, operation_id: int | None, labels: dict[str, Any], categories: list[Any]
    ) -> bool:
        """Whether a result (its operation, merged labels, harm categories) is covered."""
        if self.operation_id is not None and self.operation_id != operation_id:
            return False
        if self.label_key:
            return self.label_key in labels and str(labels[self.label_key]) == self.label_value
        return self.harm_category in {str(c) for c in categories}
