"""Ingestion service for PyRIT scores (1.x model_dump, ScoreEntry rows, 0.13 to_dict).

The ScoreEntry DB-row view (``score_entries.jsonl``, PyRIT's ``ScoreEntry.to_dict()``) is the
same Score with ``prompt_request_response_id`` for ``message_piece_id`` plus
``scorable_content_id``; it is stored on the same row, so sending both views of one score is
a replay ("unchanged"), not a conflict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from memory.bulk import bulk_insert, store_identifier_uses
from memory.parsing import canonical
from memory.parsing_pieces import ParsedScore, parse_score
from redteam.outcomes import FieldError, ItemOutcome
from scoring.models import Score, ScoreSource

__all__ = ["KIND_SCORES", "store_parsed_scores", "store_scores"]

KIND_SCORES = "scores"


def _compare(score: ParsedScore) -> dict[str, Any]:
    row = dict(score.row)
    row["scorer_dump_id"] = score.scorer.digest if score.scorer else None
    return row


def _difference(
    new: Mapping[str, Any], old: Mapping[str, Any], fields: Sequence[str]
) -> str | None:
    for name in fields:
        if canonical(new.get(name)) != canonical(old.get(name)):
            return name
    return None


def _source(score: ParsedScore) -> str:
    # PyRIT's human scorers (HumanInTheLoopScorer..., review tools) name themselves Human*;
    # keeping them apart lets the review queue compare human and automated verdicts.
    if score.row["scorer_class"].startswith("Human"):
        return ScoreSource.HUMAN
    return ScoreSource.AUTOMATED


def _model(score: ParsedScore) -> Score:
    obj = Score(**score.row, source=_source(score))
    if score.scorer is not None:
        obj.scorer_identifier_id = score.scorer.hash
        obj.scorer_dump_id = score.scorer.digest
    return obj


def _outcome(score: ParsedScore, index: int, status: str, errors: list[FieldError]) -> ItemOutcome:
    item_id = str(score.id) if score.id is not None else score.raw_id
    return ItemOutcome(KIND_SCORES, index, item_id, status, errors)  # type: ignore[arg-type]


def store_parsed_scores(parsed: Sequence[ParsedScore]) -> list[ItemOutcome]:
    """Store already-parsed scores (also the hook memory uses for embedded scores).

    Queries, whatever len(parsed): SELECT stored scores with these ids; INSERT identifiers;
    INSERT identifier dumps; INSERT scores.
    """
    errors = [list(s.errors) for s in parsed]
    status: dict[int, str] = {}
    first: dict[Any, int] = {}
    duplicates: dict[int, int] = {}
    for i, score in enumerate(parsed):
        if errors[i] or score.id is None:
            continue
        if score.id in first:
            duplicates[i] = first[score.id]
        else:
            first[score.id] = i
    valid = [i for i in first.values()]
    if valid:
        stored = {s.pk: s for s in Score.objects.filter(pk__in=[parsed[i].id for i in valid])}
        new: list[ParsedScore] = []
        for i in valid:
            score = parsed[i]
            old = stored.get(score.id)
            if old is None:
                new.append(score)
                status[i] = "stored"
                continue
            old_row = {name: getattr(old, name) for name in score.compared}
            diff = _difference(_compare(score), old_row, score.compared)
            if diff is None:
                status[i] = "unchanged"
            else:
                errors[i].append(
                    FieldError(
                        diff,
                        f"A score with id {score.id} is already stored with different content "
                        f"(field {diff!r} differs); stored items are never overwritten.",
                        code="conflict",
                    )
                )
        if new:
            store_identifier_uses(s.scorer for s in new if s.scorer is not None)
            bulk_insert(Score, [_model(s) for s in new])
    outcomes = [
        _outcome(s, i, "rejected" if errors[i] else status.get(i, "rejected"), errors[i])
        for i, s in enumerate(parsed)
    ]
    for i, j in duplicates.items():
        diff = _difference(_compare(parsed[i]), _compare(parsed[j]), parsed[i].compared)
        if diff is not None:
            outcomes[i] = _outcome(
                parsed[i],
                i,
                "rejected",
                [
                    FieldError(
                        diff,
                        f"Id {parsed[i].id} appears twice in this batch with different content "
                        f"(field {diff!r} differs).",
                        code="conflict",
                    )
                ],
            )
        else:
            outcomes[i] = _outcome(
                parsed[i],
                i,
                outcomes[j].status if outcomes[j].status == "rejected" else "unchanged",
                list(outcomes[j].errors),
            )
    return outcomes


@transaction.atomic
def store_scores(items: Sequence[Mapping[str, Any]]) -> list[ItemOutcome]:
    """Validate and store Score dicts in any of PyRIT's three shapes, in bulk."""
    return store_parsed_scores([parse_score(item, i) for i, item in enumerate(items)])
