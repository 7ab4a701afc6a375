"""memory.export / memory.export: PyRIT key order, timestamp spellings, constant queries."""

from __future__ import annotations

from typing import Any

import pytest

from memory import services
from memory.export import (
    export_attack_results,
    export_conversation,
    export_piece,
    export_pieces_with_scores,
    export_score,
)
from memory.models import Score
from memory.querysets import attack_results_for_export, conversations_for_export, pieces_for_export
from memory.shapes import ATTACK_RESULT_KEYS_1X, PIECE_KEYS_013, PIECE_KEYS_1X, SCORE_KEYS_1X
from memory.store_scores import store_scores
from redteam.common.access import Scope
from redteam.core.timestamps import timestamp_013, timestamp_1x
from tests.memory import factories as f

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

pytestmark = pytest.mark.django_db


def test_timestamps_use_each_lines_spelling() -> None:
    from datetime import UTC, datetime

    whole_second = datetime(2026, 1, 1, 9, 0, 0, tzinfo=UTC)
    # pydantic leaves out a zero fraction (PyRIT 1.1's scenario dumps show it).
    assert timestamp_1x(whole_second) == "2026-01-01T09:00:00Z"
    assert timestamp_1x(whole_second.replace(microsecond=5)) == "2026-01-01T09:00:00.000005Z"
    assert timestamp_013(whole_second) == "2026-01-01T09:00:00+00:00"
    assert timestamp_013(whole_second.replace(microsecond=5)) == "2026-01-01T09:00:00.000005+00:00"
    assert timestamp_1x(None) is None


@pytest.mark.parametrize(
    ("shape", "expected"), [("1.x", "2026-01-01T09:00:00Z"), ("0.13", "2026-01-01T09:00:00+00:00")]
)
def test_seeds_export_their_dates_with_the_same_spelling(shape: str, expected: str) -> None:
    from datetime import UTC, datetime

    from seeds.api.views import export_seed
    from tests.seeds.factories import make_seed

    seed = make_seed(None, save=False, date_added=datetime(2026, 1, 1, 9, tzinfo=UTC))
    assert export_seed(seed, shape)["date_added"] == expected


def test_1x_piece_exports_in_pyrit_key_order_with_verbatim_identifiers() -> None:
    converter = f.identifier(temperature=1.0, top_p=1)
    item = f.piece(converter_identifiers=[converter], prompt_metadata={"n": 1.0})
    services.store_message_pieces([item])
    [exported] = export_pieces_with_scores(pieces_for_export(EVERYTHING), "1.x", scope=EVERYTHING)
    assert list(exported) == list(PIECE_KEYS_1X)
    assert exported == item
    assert repr(exported["converter_identifiers"][0]["temperature"]) == "1.0"
    assert repr(exported["prompt_metadata"]["n"]) == "1.0"


def test_1x_piece_in_the_013_shape_takes_labels_and_target_from_its_conversation() -> None:
    target = f.identifier("OpenAIChatTarget", model_name="m")
    services.store_conversations([f.conversation(target_identifier=target)])
    item = f.piece()
    services.store_message_pieces([item])
    services.store_attack_results(
        [f.attack_result(labels={"op": "x"}, targeted_harm_categories=["violence"])]
    )
    piece = pieces_for_export(EVERYTHING).get(pk=item["id"])
    exported = export_piece(piece, "0.13")
    assert list(exported) == list(PIECE_KEYS_013)
    assert exported["labels"] == {"op": "x"}
    assert exported["targeted_harm_categories"] == ["violence"]
    assert exported["prompt_target_identifier"] == target
    assert (exported["originator"], exported["scores"]) == ("undefined", [])
    assert exported["timestamp"] == "2026-03-01T12:00:00+00:00"


def test_conversation_and_score_exports() -> None:
    item = f.conversation(retries=[{"sequence": 2, "reason": "json_parsing"}])
    services.store_conversations([item])
    assert export_conversation(conversations_for_export(EVERYTHING).get()) == item
    score = f.score(status="undetermined", score_value=None)
    store_scores([score])
    exported = export_score(Score.objects.select_related("scorer_dump").get())
    assert list(exported) == list(SCORE_KEYS_1X)
    assert exported == score


def test_attack_result_without_its_last_response_stored_exports_null() -> None:
    item = f.attack_result()
    services.store_attack_results([item])
    [exported] = export_attack_results(attack_results_for_export(EVERYTHING), scope=EVERYTHING)
    assert list(exported) == list(ATTACK_RESULT_KEYS_1X)
    assert exported == item


def seed(count: int) -> None:
    for i in range(count):
        conv = f"x{count}-{i}"
        last = f.piece(conversation_id=conv, converter_identifiers=[f.identifier()])
        score = f.score(message_piece_id=last["id"])
        services.store_attack_results(
            [
                f.attack_result(
                    conversation_id=conv,
                    last_response=last,
                    last_score=score,
                    related_conversations=[
                        {
                            "conversation_id": "a",
                            "conversation_type": "adversarial",
                            "description": None,
                        }
                    ],
                )
            ]
        )


@pytest.mark.parametrize("count", [3, 30])
def test_exports_cost_constant_queries(count: int, django_assert_num_queries: Any) -> None:
    seed(count)
    # pieces with their dumps and conversation (one JOIN); their converters; their scores.
    with django_assert_num_queries(3):
        pieces = export_pieces_with_scores(pieces_for_export(EVERYTHING), "0.13", scope=EVERYTHING)
    assert len(pieces) == count
    assert all(len(p["scores"]) == 1 for p in pieces)
    # results with dumps and last responses (JOINs); references; last responses' converters;
    # last scores.
    with django_assert_num_queries(4):
        results = export_attack_results(
            attack_results_for_export(EVERYTHING), "1.x", scope=EVERYTHING
        )
    assert len(results) == count
    assert all(r["last_score"] for r in results)
    # ... plus the last responses' nested scores in the 0.13 shape.
    with django_assert_num_queries(5):
        export_attack_results(attack_results_for_export(EVERYTHING), "0.13", scope=EVERYTHING)
    # conversations with their target dumps.
    with django_assert_num_queries(1):
        conversations = [export_conversation(c) for c in conversations_for_export(EVERYTHING)]
    assert len(conversations) == count
