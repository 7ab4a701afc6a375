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
from typing import Any

from django.db import transaction

from memory.bulk import insert_rows, store_identifier_uses
from memory.models import (
    MessagePiece,
    ScorableContent,
    Score,
    ScoreSource,
    original_prompt_in,
)
from memory.ownership import NOT_WRITABLE, LabelRefused, default_operation
from memory.parsing_pieces import ParsedScore, parse_score
from memory.store_common import row_replay
from redteam.common.access import Writer
from redteam.core.batch import Batch, Entry, canonical, first_difference
from redteam.core.outcomes import FieldError, ItemOutcome
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


def _repeat_difference(score: ParsedScore, first: ParsedScore) -> str | None:
    """Two scores of one batch with one id: their compared fields, then what they score."""
    diff = first_difference(_compare(score), _compare(first), score.compared)
    if diff is None and _scorable_key(score) != _scorable_key(first):
        return "scorable"
    return diff


SCORES = row_replay(
    KIND_SCORES, "score", _compare, lambda score: score.compared, repeat=_repeat_difference
)


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


def _place_scores(
    valid: Sequence[Entry[ParsedScore]],
    writer: Writer,
    given: Mapping[int, int | None],
) -> dict[int, int]:
    """The operation of each new score (by id of its entry): the one given by the caller
    (scores embedded in a piece), else the scored piece's, else the sender's default.
    One query for the scored pieces' operations."""
    wanted = {
        pid
        for e in valid
        if id(e) not in given and (pid := e.parsed.row.get("message_piece_id")) is not None
    }
    piece_ops: dict[Any, set[int]] = {}
    if wanted:
        for pid, piece_op in MessagePiece.objects.filter(original_prompt_in(wanted)).values_list(
            "original_prompt_id", "conversation__operation_id"
        ):
            if piece_op is not None:
                piece_ops.setdefault(pid, set()).add(piece_op)
    placed: dict[int, int] = {}
    if any(id(e) not in given for e in valid):
        writer.load([])
    for entry in valid:
        op = given.get(id(entry))
        if op is None:
            ops = piece_ops.get(entry.parsed.row.get("message_piece_id"), set())
            # Duplicated pieces share their original's id; score into one the sender writes.
            writable = sorted(o for o in ops if writer.may_write(o))
            if ops and not writable:
                entry.errors.append(
                    FieldError("message_piece_id", f"The scored piece {NOT_WRITABLE}.")
                )
                continue
            try:
                op = writable[0] if writable else default_operation(writer, "message_piece_id")
            except LabelRefused as refused:
                entry.errors.append(refused.error)
                continue
        assert op is not None
        placed[id(entry)] = op
    return placed


def store_parsed_scores(
    parsed: Sequence[ParsedScore],
    writer: Writer,
    *,
    operations: Sequence[int | None] | None = None,
) -> list[ItemOutcome]:
    """Store already-parsed scores (also the hook memory uses for embedded scores).

    `operations` (aligned with `parsed`) places scores whose operation the caller knows
    (scores inside a piece); the rest join their scored piece's operation or the sender's
    default. Queries, whatever len(parsed): SELECT stored scores with these ids; SELECT the
    scored pieces' operations; INSERT identifiers; INSERT identifier dumps; INSERT the
    identifiers' operations; INSERT scores.
    """
    batch = Batch.of(SCORES, parsed)
    if not (valid := batch.pending()):
        return batch.outcomes()
    stored = {s.pk: s for s in Score.objects.filter(pk__in=[e.parsed.id for e in valid])}
    given: dict[int, int | None] = {}
    if operations is not None:
        position = {id(e): k for k, e in enumerate(batch.entries)}
        given = {
            id(e): operations[position[id(e)]]
            for e in valid
            if operations[position[id(e)]] is not None
        }
    fresh = [e for e in valid if (e.parsed.id is None or e.parsed.id not in stored)]
    placed = _place_scores(fresh, writer, given)
    new: list[ParsedScore] = []
    for entry in valid:
        score = entry.parsed
        old = stored.get(score.id) if score.id is not None else None
        if old is not None and not writer.may_write(old.operation_id):
            # Never compared: the answer would tell what another operation holds.
            entry.errors.append(FieldError("id", f"This score {NOT_WRITABLE}."))
            continue
        if old is None:
            if id(entry) not in placed:
                continue
            score.row["operation_id"] = placed[id(entry)]
            new.append(score)
            entry.status = "stored"
            continue
        diff = SCORES.difference(score, _stored_compare(old, score.compared))
        if diff is None and score.shape != "0.13" and not _same_scorable(score, old):
            diff = "scorable"
        batch.settle(entry, diff)
    if new:
        store_identifier_uses(
            (s.scorer, s.row["operation_id"]) for s in new if s.scorer is not None
        )
        _store_loose_content(s.loose for s in new if s.loose is not None)
        insert_rows(Score, [_row(s) for s in new])
    return batch.outcomes()


@transaction.atomic(savepoint=False)
def store_scores(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Validate and store Score dicts in any of PyRIT's three shapes, in bulk.

    `writer` says who sends them and into which operations (None: trusted, see
    Writer.trusted); automated scores keep no author.
    """
    return store_parsed_scores(
        [parse_score(item, i) for i, item in enumerate(items)], writer or Writer.trusted()
    )
