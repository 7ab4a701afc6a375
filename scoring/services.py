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

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memory.bulk import insert_rows, store_identifier_uses
from memory.models import AttackResult, Conversation, MessagePiece
from memory.parsing import ParsedIdentifier, canonical, parse_identifier
from memory.parsing_pieces import ParsedScore, parse_score
from redteam.common.audit import record_audit
from redteam.common.roles import can_record_verdicts
from redteam.core.identity import LINE_PYRIT_VERSIONS, ComponentIdentifier
from redteam.core.outcomes import FieldError, ItemOutcome, ItemStatus
from redteam.core.roundtrip import identifier_compared
from scoring.models import ScorableContent, Score, ScoreSource
from scoring.review import effective_outcome

__all__ = ["KIND_SCORES", "record_verdict", "store_parsed_scores", "store_scores"]

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


# --- human verdicts ---------------------------------------------------------------------------

HUMAN_SCORER_CLASS = "HumanReviewScorer"
HUMAN_SCORER_MODULE = "redteam.review"
VERDICT_DESCRIPTION = "Human reviewer verdict"
MAX_RATIONALE_CHARS = 10_000


def human_scorer_identifier(username: str) -> ParsedIdentifier:
    """The human scorer's identifier (one per reviewer), parsed as ingestion parses dumps."""
    identifier = ComponentIdentifier(
        class_name=HUMAN_SCORER_CLASS,
        class_module=HUMAN_SCORER_MODULE,
        params={"reviewer": username},
        pyrit_version=LINE_PYRIT_VERSIONS["1.1"],
    )
    # A leaf scorer's eval hash is its content hash (as PyRIT stamps on HumanReviewScorer).
    dump = identifier.with_eval_hash(identifier.hash).model_dump()
    errors: list[Any] = []
    parsed = parse_identifier(dump, "scorer_class_identifier", legacy=False, errors=errors)
    if parsed is None:  # pragma: no cover - the dump above is well-formed by construction
        raise ValueError(f"human scorer identifier rejected: {errors}")
    return parsed


def _score_value(value: bool | float, score_type: str) -> str:
    if score_type == "true_false":
        if not isinstance(value, bool):
            raise ValidationError("A true/false verdict needs a boolean value.", code="invalid")
        return "true" if value else "false"
    if score_type == "float_scale":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("A 0..1 verdict needs a number.", code="invalid")
        number = float(value)
        if math.isnan(number) or not 0.0 <= number <= 1.0:
            raise ValidationError("A 0..1 verdict must be between 0 and 1.", code="out_of_range")
        return repr(number)
    raise ValidationError("Verdicts are true_false or float_scale.", code="invalid_type")


def _insert_verdict(
    *,
    attack_result: AttackResult,
    reviewer: Any,
    score_value: str,
    score_type: str,
    rationale: str,
    piece_id: Any,
    scorer: ParsedIdentifier,
    submission: uuid.UUID | None,
) -> Score:
    """INSERT the human Score row of a verdict (IntegrityError for a repeated submission)."""
    return Score.objects.create(
        id=uuid.uuid4(),
        score_value=score_value,
        status="complete",
        score_value_description=VERDICT_DESCRIPTION,
        score_type=score_type,
        score_category=list(attack_result.targeted_harm_categories or []) or None,
        score_rationale=rationale,
        score_metadata={},
        scorer_identifier_id=scorer.hash,
        scorer_dump_id=scorer.digest,
        scorer_class=HUMAN_SCORER_CLASS,
        message_piece_id=piece_id,
        timestamp=timezone.now(),
        objective=attack_result.objective,
        pyrit_version=LINE_PYRIT_VERSIONS["1.1"],
        source=ScoreSource.HUMAN,
        attack_result=attack_result,
        reviewer=reviewer,
        verdict_submission=submission,
    )


@transaction.atomic
def record_verdict(
    *,
    attack_result: AttackResult,
    reviewer: Any,
    value: bool | float,
    score_type: str,
    rationale: str,
    submission: uuid.UUID | None = None,
) -> Score:
    """Store a reviewer's verdict on an attack result as a human Score, and audit it.

    `submission` is the verdict form's one-time token: the same form posted again (double
    click, retry, concurrent requests) returns the row the first post stored, enforced by the
    `verdict_submitted_once` unique constraint rather than a check before the insert.

    Queries: permission check (cached per user), INSERT identifier, INSERT dump, SELECT the
    last response's original_prompt_id, INSERT score, UPDATE the conversation's outcome
    summary (when this is its newest result), INSERT audit event. A repeated submission stops
    after the refused INSERT with one SELECT of the stored row.
    """
    if not can_record_verdicts(reviewer):
        raise PermissionDenied("Recording verdicts needs the reviewer role.")
    score_value = _score_value(value, score_type)
    rationale = (rationale or "").strip()
    if not rationale:
        raise ValidationError("Give a rationale for the verdict.", code="required")
    if len(rationale) > MAX_RATIONALE_CHARS:
        raise ValidationError(
            f"The rationale is limited to {MAX_RATIONALE_CHARS} characters.", code="max_length"
        )
    scorer = human_scorer_identifier(reviewer.get_username())
    store_identifier_uses([scorer])
    # PyRIT scores attach to pieces through original_prompt_id; the last response may not
    # have arrived (no FK constraint), in which case the score hangs off the result only.
    piece_id = None
    if attack_result.last_response_id is not None:
        piece_id = (
            MessagePiece.objects.filter(pk=attack_result.last_response_id)
            .values_list("original_prompt_id", flat=True)
            .first()
        )
    try:
        # A savepoint, so a refused duplicate leaves the outer transaction usable.
        with transaction.atomic():
            score = _insert_verdict(
                attack_result=attack_result,
                reviewer=reviewer,
                score_value=score_value,
                score_type=score_type,
                rationale=rationale,
                piece_id=piece_id,
                scorer=scorer,
                submission=submission,
            )
    except IntegrityError:
        stored = Score.objects.filter(reviewer=reviewer, verdict_submission=submission).first()
        if submission is None or stored is None:
            raise
        if (
            stored.attack_result_id != attack_result.pk
            or stored.score_value != score_value
            or stored.score_type != score_type
            or stored.score_rationale != rationale
        ):
            raise ValidationError(
                "This form was already submitted with another verdict; reload the page to "
                "record a new one.",
                code="resubmitted",
            ) from None
        return stored
    # The conversation list reads this summary column, which follows the conversation's
    # newest result; human verdicts take precedence, so a verdict on that result updates it.
    conversation = Conversation.objects.filter(pk=attack_result.conversation_id)
    if attack_result.timestamp is not None:
        newer = AttackResult.objects.filter(
            conversation_id=OuterRef("pk"), timestamp__gt=attack_result.timestamp
        )
        conversation = conversation.filter(~Exists(newer))
    conversation.update(outcome=effective_outcome(attack_result.outcome, score))
    record_audit(
        actor=reviewer,
        action="verdict.recorded",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            "score_id": str(score.id),
            "score_type": score_type,
            "score_value": score_value,
            "automated_outcome": attack_result.outcome,
        },
    )
    return score
