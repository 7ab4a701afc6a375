"""Ingestion service for PyRIT scores (1.x model_dump, ScoreEntry rows, 0.13 to_dict).

The ScoreEntry DB-row view (``score_entries.jsonl``, PyRIT's ``ScoreEntry.to_dict()``) is the
same Score with ``prompt_request_response_id`` for ``message_piece_id`` plus
``scorable_content_id``; it is stored on the same row, so sending both views of one score is
a replay ("unchanged"), not a conflict.

Scored loose content (1.1: a ``content`` scorable inline, or a ``content_entry`` scorable
with its ScorableContentEntries row under ``scorable_content``) is stored as a
content-addressed ScorableContent row linked from the score, so a score pushed from a live
run and the same score imported from a memory file derive identical rows and compare equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from django.db import transaction

from memory.bulk import insert_rows, store_identifier_uses
from memory.models import (
    ScorableContent,
    Score,
    ScoreSource,
)
from memory.parsing import canonical
from memory.parsing_pieces import ParsedScore, parse_score
from redteam.core.outcomes import FieldError, ItemOutcome, ItemStatus
from redteam.core.roundtrip import identifier_compared

__all__ = ["KIND_SCORES", "store_parsed_scores", "store_scores"]

KIND_SCORES = "scores"


def _compare(score: ParsedScore) -> dict[str, Any]:
    row = dict(score.row)
    # Identifiers compare by content hash: PyRIT stamps eval_hash into the dump it stores.
    scorer = score.scorer
    row["scorer_class_identifier"] = (
        identifier_compared(scorer.hash, scorer.digest) if scorer else None
    )
    return row


def _stored_compare(score: Score, fields: Sequence[str]) -> dict[str, Any]:
    """A stored score's compared values, in the form _compare gives an incoming one."""
    row = {name: getattr(score, name) for name in fields if name != "scorer_class_identifier"}
    row["scorer_class_identifier"] = identifier_compared(
        score.scorer_identifier_id, score.scorer_dump_id
    )
    return row


def _difference(
    new: Mapping[str, Any], old: Mapping[str, Any], fields: Sequence[str]
) -> str | None:
    for name in fields:
        if canonical(new.get(name)) != canonical(old.get(name)):
            return name
    return None


def _scorable_key(score: ParsedScore) -> Any:
    """What a score is about: its loose content, else its scorable as sent."""
    if score.loose is not None:
        return ("content", score.loose["id"])
    return canonical(score.row.get("scorable"))


def _same_scorable(score: ParsedScore, old: Score) -> bool:
    """Equal scorables, normalised as PyRIT's memory round trip does.

    PyRIT stores a ``content`` scorable as a ``content_entry`` naming a new entry row, so
    the inline and stored forms of one score compare by the loose content they name
    (ScorableContent ids are content-addressed). A ``content_entry`` sent without its
    content names the same entry as the stored score, or cannot be told apart from it.
    """
    if canonical(score.row.get("scorable")) == canonical(old.scorable):
        return True
    new_kind = (score.row.get("scorable") or {}).get("scorable_type")
    old_kind = (old.scorable or {}).get("scorable_type")
    loose_kinds = {"content", "content_entry"}
    if new_kind not in loose_kinds or old_kind not in loose_kinds:
        return False
    if score.loose is not None and old.loose_content_id is not None:
        return bool(score.loose["id"] == old.loose_content_id)
    new_entry = score.row.get("scorable_content_id")
    if new_entry is not None and old.scorable_content_id is not None:
        return bool(new_entry == old.scorable_content_id)
    return True


def _store_loose_content(rows: Iterable[dict[str, Any]]) -> None:
    """INSERT the scored loose content; rows are content-addressed, so existing ones stay."""
    unique = {row["id"]: row for row in rows}
    if unique:
        ScorableContent.objects.bulk_create(
            [ScorableContent(**row) for row in unique.values()], ignore_conflicts=True
        )


def _source(score: ParsedScore) -> str:
    # PyRIT's human scorers (HumanInTheLoopScorer..., review tools) name themselves Human*;
    # keeping them apart lets the review queue compare human and automated verdicts.
    if score.row["scorer_class"].startswith("Human"):
        return ScoreSource.HUMAN
    return ScoreSource.AUTOMATED


def _row(score: ParsedScore) -> dict[str, Any]:
    row = {**score.row, "source": _source(score)}
    if score.scorer is not None:
        row["scorer_identifier_id"] = score.scorer.hash
        row["scorer_dump_id"] = score.scorer.digest
    return row


def _outcome(score: ParsedScore, index: int, status: str, errors: list[FieldError]) -> ItemOutcome:
    item_id = str(score.id) if score.id is not None else score.raw_id
    return ItemOutcome(KIND_SCORES, index, item_id, cast(ItemStatus, status), errors)


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
            old = stored.get(score.id) if score.id is not None else None
            if old is None:
                new.append(score)
                status[i] = "stored"
                continue
            old_row = _stored_compare(old, score.compared)
            diff = _difference(_compare(score), old_row, score.compared)
            if diff is None and score.shape != "0.13" and not _same_scorable(score, old):
                diff = "scorable"
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
            _store_loose_content(s.loose for s in new if s.loose is not None)
            insert_rows(Score, [_row(s) for s in new])
    outcomes = [
        _outcome(s, i, "rejected" if errors[i] else status.get(i, "rejected"), errors[i])
        for i, s in enumerate(parsed)
    ]
    for i, j in duplicates.items():
        diff = _difference(_compare(parsed[i]), _compare(parsed[j]), parsed[i].compared)
        if diff is None and _scorable_key(parsed[i]) != _scorable_key(parsed[j]):
            diff = "scorable"
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
