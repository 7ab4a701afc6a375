"""memory.store_scores: PyRIT's Score rules in all three shapes, replays, conflicts."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection

from memory.models import Score, ScoreSource
from memory.store_scores import store_scores
from redteam.common.models import Operation
from redteam.core.operations import UNASSIGNED
from tests.memory import factories as f

pytestmark = pytest.mark.django_db


def one(item: dict[str, Any]) -> Any:
    [outcome] = store_scores([item])
    return outcome


def fields_of(outcome: Any) -> list[str | None]:
    return [e.field for e in outcome.errors]


def test_stores_a_1x_score() -> None:
    piece_id = f.new_id()
    item = f.score(
        message_piece_id=piece_id,
        scorable={"scorable_type": "message", "message_piece_ids": [piece_id]},
        score_metadata={"latency_ms": 5, "confidence": 0.5},
    )
    outcome = one(item)
    assert (outcome.kind, outcome.status, outcome.id) == ("scores", "stored", item["id"])
    score = Score.objects.get(pk=item["id"])
    assert str(score.message_piece_id) == piece_id
    assert score.scorer_class == "SubStringScorer"
    assert score.source == ScoreSource.AUTOMATED
    assert score.source_shape == "1.x"
    assert score.score_metadata == {"latency_ms": 5, "confidence": 0.5}


def test_replay_is_unchanged_and_different_content_conflicts() -> None:
    item = f.score()
    one(item)
    assert one(dict(item)).status == "unchanged"
    outcome = one({**item, "score_rationale": "changed my mind"})
    assert outcome.status == "rejected"
    assert outcome.errors[0].code == "conflict"
    assert outcome.errors[0].field == "score_rationale"
    assert item["id"] in outcome.errors[0].message


def test_score_entry_row_view_of_a_stored_score_is_a_replay() -> None:
    piece_id = f.new_id()
    item = f.score(message_piece_id=piece_id, timestamp="2026-03-01T12:00:05.250000Z")
    one(item)
    entry = {k: v for k, v in item.items() if k != "message_piece_id"}
    entry.update(
        prompt_request_response_id=piece_id,
        scorable_content_id=None,
        timestamp="2026-03-01T12:00:05.250000+00:00",
    )
    assert one(entry).status == "unchanged"


def test_legacy_score_shape_is_accepted_with_its_task_column() -> None:
    item = f.legacy_score(task="the objective", objective="the objective")
    assert one(item).status == "stored"
    score = Score.objects.get(pk=item["id"])
    assert (score.source_shape, score.status, score.task) == ("0.13", "complete", "the objective")


def test_undetermined_score_needs_a_null_value() -> None:
    assert one(f.score(status="undetermined", score_value=None)).status == "stored"
    outcome = one(f.score(status="undetermined", score_value="true"))
    assert outcome.status == "rejected"
    assert "score_value" in fields_of(outcome)


def test_complete_score_needs_a_value() -> None:
    outcome = one(f.score(score_value=None))
    assert outcome.status == "rejected"
    assert "undetermined" in outcome.errors[0].message


@pytest.mark.parametrize("value", ["true", "False", "TRUE", "fAlSe"])
def test_true_false_is_case_insensitive(value: str) -> None:
    assert one(f.score(score_value=value)).status == "stored"


@pytest.mark.parametrize("value", ["yes", "1", "", "truee"])
def test_true_false_rejects_other_values(value: str) -> None:
    outcome = one(f.score(score_value=value))
    assert outcome.status == "rejected"
    assert fields_of(outcome) == ["score_value"]


@pytest.mark.parametrize("value", ["0", "0.0", "0.75", "1.0", "1"])
def test_float_scale_accepts_zero_to_one(value: str) -> None:
    assert one(f.score(score_type="float_scale", score_value=value)).status == "stored"


@pytest.mark.parametrize("value", ["-0.1", "1.01", "nan", "inf", "high"])
def test_float_scale_rejects_out_of_range_or_non_numbers(value: str) -> None:
    outcome = one(f.score(score_type="float_scale", score_value=value))
    assert outcome.status == "rejected"
    assert fields_of(outcome) == ["score_value"]


def test_unknown_score_type_accepts_any_string() -> None:
    assert one(f.score(score_type="unknown", score_value="meh")).status == "stored"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"score_type": "likert"}, "score_type"),
        ({"status": "pending"}, "status"),
        ({"id": "nope"}, "id"),
        ({"timestamp": "2026-03-01T12:00:00"}, "timestamp"),
        ({"score_value": 1}, "score_value"),
        ({"score_category": "jailbreak"}, "score_category"),
        ({"score_metadata": {"nested": {"a": 1}}}, "score_metadata.nested"),
        ({"score_metadata": {"flag": True}}, "score_metadata.flag"),
        ({"message_piece_id": "12"}, "message_piece_id"),
        ({"scorer_class_identifier": "SubStringScorer"}, "scorer_class_identifier"),
        ({"scorable": {"scorable_type": "tweet"}}, "scorable.scorable_type"),
        (
            {"scorable": {"scorable_type": "message", "message_piece_ids": []}},
            "scorable.message_piece_ids",
        ),
        ({"scorable": {"scorable_type": "content", "value": "x"}}, "scorable.data_type"),
        ({"extra_field": 1}, "extra_field"),
    ],
)
def test_invalid_score_is_rejected_naming_the_field(overrides: dict[str, Any], field: str) -> None:
    outcome = one(f.score(**overrides))
    assert outcome.status == "rejected"
    assert field in fields_of(outcome)
    assert not Score.objects.exists()


def test_legacy_score_needs_a_value_and_rejects_1x_keys() -> None:
    outcome = one(f.legacy_score(score_value=None))
    assert outcome.status == "rejected"
    item = f.legacy_score()
    item["task"] = None
    item["surprise"] = 1
    outcome = one(item)
    assert fields_of(outcome) == ["surprise"]


def test_message_scorable_fills_message_piece_id_and_checks_it() -> None:
    piece_id = f.new_id()
    item = f.score(scorable={"scorable_type": "message", "message_piece_ids": [piece_id]})
    one(item)
    assert str(Score.objects.get(pk=item["id"]).message_piece_id) == piece_id
    outcome = one(
        f.score(
            message_piece_id=f.new_id(),
            scorable={"scorable_type": "message", "message_piece_ids": [piece_id]},
        )
    )
    assert outcome.status == "rejected"
    assert fields_of(outcome) == ["message_piece_id"]


def test_human_scorer_scores_are_marked_human() -> None:
    item = f.score(scorer_class_identifier=f.identifier("HumanReviewScorer", reviewer="r"))
    one(item)
    assert Score.objects.get(pk=item["id"]).source == ScoreSource.HUMAN


def test_duplicates_inside_a_batch() -> None:
    item = f.score()
    outcomes = store_scores([item, dict(item), {**item, "score_value": "false"}])
    assert [o.status for o in outcomes] == ["stored", "unchanged", "rejected"]
    assert outcomes[2].errors[0].code == "conflict"


def test_non_object_items_are_rejected_not_crashing() -> None:
    outcomes = store_scores(["score", None, 3])  # type: ignore[list-item]
    assert [o.status for o in outcomes] == ["rejected"] * 3


@pytest.mark.parametrize("size", [2, 200])
def test_score_batch_costs_constant_queries(size: int, django_assert_num_queries: Any) -> None:
    items = [f.score(message_piece_id=str(uuid.uuid4())) for _ in range(size)]
    Operation.objects.create(name=UNASSIGNED)
    # SELECT stored scores by id; SELECT the scored pieces' operations; SELECT the default
    # operation; INSERT identifiers; INSERT identifier dumps; INSERT identifier operations (one
    # statement on PostgreSQL); INSERT (COPY on PostgreSQL) scores. The service runs inside
    # the caller's transaction: no savepoint.
    with django_assert_num_queries(5 if connection.vendor == "postgresql" else 7):
        outcomes = store_scores(items)
    assert {o.status for o in outcomes} == {"stored"}
    # SELECT stored scores.
    with django_assert_num_queries(1):
        outcomes = store_scores(items)
    assert {o.status for o in outcomes} == {"unchanged"}
