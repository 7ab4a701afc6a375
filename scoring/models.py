"""PyRIT scores, automated and human.

A human verdict is an ordinary PyRIT-shaped Score from a human scorer identifier; `source`
keeps it apart from automated scores so both can be shown side by side.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from redteam.common.choices import DATA_TYPE_CHOICES, SCORE_STATUS_CHOICES, SCORE_TYPE_CHOICES
from redteam.common.fields import ExactCharField, ExactJSONField, ExactTextField
from redteam.core.enums import PROMPT_DATA_TYPES, SCORE_STATUSES, SCORE_TYPES


class ScoreSource(models.TextChoices):
    """Where a score came from."""

    AUTOMATED = "automated", "automated"
    HUMAN = "human", "human"


class ScorableContent(models.Model):
    """Loose content a score was taken over (PyRIT 1.1's ScorableContentEntries), stored once.

    The row is content-addressed: its id is derived from (data_type, value), so a score that
    carries the content inline (``{"scorable_type": "content", ...}``, as a scorer returns it)
    and the same score read back from a PyRIT memory file (a ``content_entry`` anchor plus its
    ScorableContentEntries row) derive the identical row. PyRIT's own entry id stays on each
    score (``scorable`` and ``scorable_content_id``, as sent). It lives here because only
    scores refer to it: it is what a score is about when no conversation piece is.
    """

    id = models.UUIDField(primary_key=True)
    value = ExactTextField()
    # sha256 as PyRIT records it (of the bytes for media); computed for text when not sent.
    value_sha256 = ExactCharField(max_length=64, null=True, blank=True, db_index=True)
    data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(data_type__in=list(PROMPT_DATA_TYPES)),
                name="scorable_content_type_valid",
            ),
        ]
        indexes = [models.Index(fields=["-first_seen_at", "-id"], name="scorable_recent_idx")]

    def __str__(self) -> str:
        return f"{self.data_type} content {self.id}"


class Score(models.Model):
    """One PyRIT Score (1.1 fields plus the 0.13 `task` column)."""

    id = models.UUIDField(primary_key=True)
    score_value = ExactTextField(null=True, blank=True)
    status = ExactCharField(max_length=16, choices=SCORE_STATUS_CHOICES, default="complete")
    score_value_description = ExactTextField(null=True, blank=True)
    score_type = ExactCharField(max_length=16, choices=SCORE_TYPE_CHOICES)
    score_category = ExactJSONField(null=True, blank=True)
    score_rationale = ExactTextField(null=True, blank=True)
    score_metadata = ExactJSONField(default=dict, blank=True)
    scorer_identifier = models.ForeignKey(
        "memory.ComponentIdentifier",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    scorer_dump = models.ForeignKey(
        "memory.IdentifierDump", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Denormalised for filters and lists.
    scorer_class = ExactCharField(max_length=255, blank=True, default="", db_index=True)
    # Joins MessagePiece.original_prompt_id (PyRIT's prompt_request_response_id), so
    # duplicated pieces share their original's scores. Plain UUID: scores may arrive first.
    message_piece_id = models.UUIDField(null=True, blank=True, db_index=True)
    scorable = ExactJSONField(null=True, blank=True)
    scorable_content_id = models.UUIDField(null=True, blank=True)
    # The scored loose text, derived from the scorable (see ScorableContent).
    loose_content = models.ForeignKey(
        ScorableContent, null=True, blank=True, on_delete=models.PROTECT, related_name="scores"
    )
    timestamp = models.DateTimeField()
    objective = ExactTextField(null=True, blank=True)
    task = ExactTextField(null=True, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    source_shape = ExactCharField(max_length=8, default="1.x")

    source = ExactCharField(
        max_length=16, choices=ScoreSource.choices, default=ScoreSource.AUTOMATED, db_index=True
    )
    # For human verdicts: the attack result judged and the reviewer who judged it.
    attack_result = models.ForeignKey(
        "memory.AttackResult",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="scores",
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The verdict form's one-time token: a double click or a retried POST of the same form
    # finds its row through the unique constraint below instead of storing a second verdict.
    verdict_submission = models.UUIDField(null=True, blank=True, editable=False)
    ingested_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        permissions = [("record_verdict", "Can record human verdicts")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(score_type__in=list(SCORE_TYPES)), name="score_type_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=list(SCORE_STATUSES)), name="score_status_valid"
            ),
            # PyRIT: score_value is None if and only if the score is undetermined.
            models.CheckConstraint(
                condition=(
                    models.Q(status="undetermined", score_value__isnull=True)
                    | models.Q(status="complete", score_value__isnull=False)
                ),
                name="score_value_null_iff_undetermined",
            ),
            models.UniqueConstraint(
                fields=["reviewer", "verdict_submission"], name="verdict_submitted_once"
            ),
        ]
        indexes = [
            models.Index(fields=["-timestamp", "-id"], name="score_recent_idx"),
            models.Index(fields=["source", "attack_result"], name="score_source_result_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.scorer_class or 'score'} {self.score_type}={self.score_value}"


class OutcomeTally(models.Model):
    """Attack-result counts per dashboard dimension, key and effective outcome (a snapshot).

    Rebuilt by `scoring.services.refresh_outcome_tallies`; the dashboard adds the results and
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
