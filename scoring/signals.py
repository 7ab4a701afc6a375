"""Receivers: the dashboard's tallies follow ingestion, and a deleted verdict is audited.

Ingestion (memory.hooks) announces new results and relabelled conversations inside its
transaction; the tallies are updated there (scoring.tallies.retally). A database whose
results were never tallied (one from before incremental tallies) is counted once after
`migrate`.

The admin refuses to delete verdicts (scoring/admin.py); the audit receiver keeps the trail
complete for every other path (a cascade from its attack result, the shell), with the
verdict's content in the event since the row itself is gone.
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, router
from django.db.models.signals import post_delete
from django.dispatch import receiver

from memory.hooks import results_changed
from memory.models import AttackResult, Score, ScoreSource
from redteam.common.audit import record_audit
from scoring.models import TalliedResult
from scoring.tallies import rebuild_tallies, retally, tallies_missing


@receiver(results_changed)
def _retally(
    sender: object, result_ids: list[Any], conversation_ids: list[str], **kwargs: Any
) -> None:
    """Count the new results, and recount those of relabelled conversations."""
    retally(result_ids, conversation_ids=conversation_ids, fresh=True)


@receiver(post_delete, sender=AttackResult)
def _untally_deleted_result(
    sender: type[AttackResult], instance: AttackResult, **kwargs: Any
) -> None:
    """A deleted result (the shell; the services never delete one) leaves the counts."""
    retally([instance.pk])


def build_missing_tallies(using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """post_migrate: count every result once when none was ever tallied (in the database
    the application writes to; another alias is left to `refresh_dashboard`)."""
    if using != router.db_for_write(AttackResult):
        return
    # Migrating backwards past the tallies (e.g. `migrate memory 0016`) drops their tables;
    # there is nothing to count into then.
    if TalliedResult._meta.db_table not in connections[using].introspection.table_names():
        return
    if tallies_missing(using):
        rebuild_tallies()


@receiver(post_delete, sender=Score)
def _audit_verdict_deleted(sender: type[Score], instance: Score, **kwargs: Any) -> None:
    """verdict.deleted on the attack result, holding everything the verdict said."""
    if instance.source != ScoreSource.HUMAN:
        return
    record_audit(
        action="verdict.deleted",
        object_type="attack_result",
        object_id=instance.attack_result_id or "",
        detail={
            "score_id": str(instance.id),
            "score_type": instance.score_type,
            "score_value": instance.score_value,
            "score_rationale": instance.score_rationale,
            "reviewer": _reviewer_name(instance),
            "timestamp": instance.timestamp.isoformat() if instance.timestamp else None,
        },
        using=kwargs.get("using"),
    )


def _reviewer_name(score: Score) -> str | None:
    """The reviewer's username, or None once their account is gone."""
    reviewer = score.reviewer if score.reviewer_id else None
    return reviewer.get_username() if reviewer is not None else None
