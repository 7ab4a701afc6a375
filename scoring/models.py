"""PyRIT scores, automated and human.

A human verdict is an ordinary PyRIT-shaped Score from a human scorer identifier; `source`
keeps it apart from automated scores so both can be shown side by side.
"""

from __future__ import annotations

from django.db import models

from redteam.common.access import ScopedQuerySet
from redteam.common.fields import ExactCharField
from redteam.common.models import Operation


class OutcomeTally(models.Model):
    """Attack-result counts per operation, dashboard dimension, key and effective outcome.

    Rebuilt by `scoring.tallies.refresh_outcome_tallies`; the dashboard sums the rows of the
    viewer's operations and adds the results and verdicts that arrived after the snapshot, so
    it reads a few hundred rows per operation, never the attack-result table. The effective
    outcome is the latest human verdict when there is one.
    """

    # The attack results' operation (None only for results stored without one).
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # "harm_category", "attack", "converter", "target", or "label:<key>".
    dimension = ExactCharField(max_length=120)
    key = ExactCharField(max_length=300)
    # What the dashboard shows for the key (e.g. "OpenAIChatTarget::1a2b3c4d" for a hash).
    display = ExactCharField(max_length=300, blank=True, default="")
    outcome = ExactCharField(max_length=16)
    count = models.PositiveIntegerField(default=0)

    objects = ScopedQuerySet["OutcomeTally"].as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            # The unique index also serves the dashboard's read: operation, then dimension.
            models.UniqueConstraint(
                fields=["operation", "dimension", "key", "outcome"], name="outcome_tally_once"
            ),
            # NULLs are distinct in a unique index: results without an operation get their own.
            models.UniqueConstraint(
                fields=["dimension", "key", "outcome"],
                condition=models.Q(operation__isnull=True),
                name="outcome_tally_unplaced_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.key} {self.outcome}: {self.count}"


class TallySnapshot(models.Model):
    """When the outcome tallies were last rebuilt: results ingested up to `watermark`.

    One snapshot covers every operation (a rebuild recounts them all at one watermark), so
    the results added since are found with one condition whatever the viewer's operations.
    """

    watermark = models.DateTimeField()
    taken_at = models.DateTimeField()
    # Every operation's results (a viewer's share is the sum of their operations' tallies).
    results = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"tallies up to {self.watermark:%Y-%m-%d %H:%M:%S}"
