"""PyRIT scores, automated and human.

A human verdict is an ordinary PyRIT-shaped Score from a human scorer identifier; `source`
keeps it apart from automated scores so both can be shown side by side.
"""

from __future__ import annotations

from django.db import models

from redteam.common.fields import ExactCharField


class OutcomeTally(models.Model):
    """Attack-result counts per dashboard dimension, key and effective outcome (a snapshot).

    Rebuilt by `scoring.tallies.refresh_outcome_tallies`; the dashboard adds the results and
    verdicts that arrived after the snapshot, so it reads a few hundred rows, never the
    attack-result table. The effective outcome is the latest human verdict when there is one.
    """

    # "harm_category", "attack", "converter", "target", or "label:<key>".
    dimension = ExactCharField(max_length=120)
    key = ExactCharField(max_length=300)
    # What the dashboard shows for the key (e.g. "OpenAIChatTarget::1a2b3c4d" for a hash).
    display = ExactCharField(max_length=300, blank=True, default="")
    outcome = ExactCharField(max_length=16)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dimension", "key", "outcome"], name="outcome_tally_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.dimension}={self.key} {self.outcome}: {self.count}"


class TallySnapshot(models.Model):
    """When the outcome tallies were last rebuilt: results ingested up to `watermark`."""

    watermark = models.DateTimeField()
    taken_at = models.DateTimeField()
    results = models.PositiveIntegerField(default=0)
    duration_ms = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"tallies up to {self.watermark:%Y-%m-%d %H:%M:%S}"
