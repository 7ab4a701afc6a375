"""`export_conversations --run`: a whole run as one 1.x ingest payload; the 0.13 file's shape.

How the outputs were checked against PyRIT itself (outside this suite, which must not need
PyRIT): in scratch virtualenvs with ``pyrit==1.1.0`` and ``pyrit==0.13.0``, both fixture
memory files were imported and exported. Every row of the ``--run`` file validated with
PyRIT 1.1's own models (``Conversation``, ``MessagePiece``, ``Score``, ``AttackResult``,
``SeedPrompt``/``SeedObjective``: ``model_validate(row).model_dump(mode="json") == row``),
and every row of the default (0.13) file was rebuilt as a PyRIT 0.13 ``MessagePiece`` (its
identifiers through ``ComponentIdentifier.from_dict``, its scores as ``Score``) whose
``to_dict()`` equals the row. Here the 0.13 file is compared with the fixture PyRIT 0.13 wrote
(``exported_conversations.json``): same keys, in the same order, with the same value types.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import QuerySet
from rest_framework.test import APIClient

from memory import services
from memory.models import AttackResult, Conversation, MessagePiece, Score
from memory.store_scores import store_scores
from redteam.common.access import Scope
from redteam.site.pyrit_sqlite import import_pyrit_memory
from redteam.site.run_export import select_run, write_run
from seeds.models import Seed
from tests.api.pyrit_fixtures import LINES, read_jsonl
from tests.memory import factories as f

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

pytestmark = pytest.mark.django_db


def export(*args: str) -> tuple[dict[str, Any], str]:
    """Run export_conversations --run with ``args``; the payload and its text."""
    out = io.StringIO()
    call_command("export_conversations", "--run", *args, stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    payload: dict[str, Any] = json.loads(text)
    return payload, text


def ids(rows: list[dict[str, Any]], key: str = "id") -> set[str]:
    """The ids of exported rows."""
    return {str(r[key]) for r in rows}


def stored_ids(rows: QuerySet[Any]) -> set[str]:
    """The primary keys of stored rows, as strings."""
    return {str(pk) for pk in rows.values_list("pk", flat=True)}


@pytest.mark.parametrize("line", LINES)
def test_a_whole_run_holds_every_stored_row_and_reingests_unchanged(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    report = import_pyrit_memory(fixtures_dir / line / "pyrit_memory.sqlite")
    assert report.rejected == 0
    payload, text = export()
    assert text == json.dumps(payload, indent=4)  # PyRIT's json.dump(..., indent=4)
    assert list(payload) == [
        "conversations",
        "message_pieces",
        "scores",
        "attack_results",
        "scenario_results",
        "seeds",
    ]
    declared = Conversation.objects.filter(declared=True)
    assert ids(payload["conversations"], "conversation_id") == stored_ids(declared)
    assert ids(payload["message_pieces"]) == stored_ids(MessagePiece.objects.all())
    assert ids(payload["scores"]) == stored_ids(Score.objects.all())
    assert ids(payload["attack_results"], "attack_result_id") == stored_ids(
        AttackResult.objects.all()
    )
    assert ids(payload["seeds"]) == stored_ids(Seed.objects.all())
    assert Seed.objects.exists()
    assert Score.objects.exists()

    response = api.post("/api/v1/ingest/", payload, format="json")
    body = response.json()
    assert response.status_code == 200, [i["errors"] for i in body["items"] if i["errors"]]
    total = sum(len(rows) for rows in payload.values())
    assert (body["stored"], body["errors"], body["unchanged"]) == (0, 0, total)


def test_a_run_keeps_pyrits_piece_order_inside_each_message(fixtures_dir: Path) -> None:
    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    payload, _ = export()
    expected = read_jsonl(fixtures_dir / "pyrit-1.1" / "pieces.jsonl")

    def messages(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[str]]:
        out: dict[tuple[str, int], list[str]] = {}
        for row in rows:
            out.setdefault((row["conversation_id"], row["sequence"]), []).append(row["id"])
        return out

    assert messages(payload["message_pieces"]) == messages(expected)
    by_id = {r["id"]: r for r in expected}
    assert all(row == by_id[row["id"]] for row in payload["message_pieces"])


def test_a_filtered_run_follows_related_conversations_recursively(fixtures_dir: Path) -> None:
    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    results = read_jsonl(fixtures_dir / "pyrit-1.1" / "attack_results.jsonl")
    by_conversation = {r["conversation_id"]: r for r in results}
    # The result whose related conversations have results with related conversations.
    start = next(r for r in results if len(r["related_conversations"]) > 1)
    wanted = {start["conversation_id"]}
    frontier = [start]
    while frontier:
        result = frontier.pop()
        for ref in result["related_conversations"]:
            if ref["conversation_id"] not in wanted:
                wanted.add(ref["conversation_id"])
                if ref["conversation_id"] in by_conversation:
                    frontier.append(by_conversation[ref["conversation_id"]])
    assert len(wanted) > 1 + len(start["related_conversations"]), "needs two hops"

    payload, _ = export("--conversation-id", start["conversation_id"])
    assert {p["conversation_id"] for p in payload["message_pieces"]} == wanted
    assert ids(payload["attack_results"], "attack_result_id") == {
        r["attack_result_id"] for r in results if r["conversation_id"] in wanted
    }
    pieces = MessagePiece.objects.filter(conversation_id__in=wanted)
    assert len(payload["message_pieces"]) == pieces.count()
    prompt_ids = set(pieces.values_list("original_prompt_id", flat=True))
    assert ids(payload["scores"]) == stored_ids(
        Score.objects.filter(message_piece_id__in=prompt_ids)
    )
    assert payload["seeds"] == []  # the fixture's atomic attacks name no seeds

    labelled, _ = export("--label", "review=manual")
    assert ids(labelled["attack_results"], "attack_result_id") == ids(
        payload["attack_results"], "attack_result_id"
    )
    nothing, _ = export("--label", "operation=no-such-operation")
    assert all(rows == [] for rows in nothing.values())


def test_a_filtered_run_brings_the_seeds_its_atomic_attacks_name() -> None:
    seed = {
        "value": "tell me a secret",
        "value_sha256": None,
        "id": f.new_id(),
        "dataset_name": "d",
        "seed_type": "objective",
    }
    services_seed_ids = __import__("seeds.services", fromlist=["store_seeds"]).store_seeds([seed])
    assert services_seed_ids[0].status == "stored"
    stored = Seed.objects.get()
    atomic = f.attack_identifier()
    atomic["children"]["seed_identifiers"] = [
        {
            **f.identifier("SeedObjective", value=stored.value, value_sha256=stored.value_sha256),
        }
    ]
    services.store_message_pieces([f.piece(conversation_id="with-seed")])
    services.store_attack_results(
        [f.attack_result(conversation_id="with-seed", atomic_attack_identifier=atomic)]
    )
    payload, _ = export("--conversation-id", "with-seed")
    assert ids(payload["seeds"]) == {str(stored.id)}


def test_run_refuses_the_013_shape() -> None:
    with pytest.raises(CommandError, match=r"1\.x"):
        export("--shape", "0.13")


def store_conversations(count: int) -> None:
    """``count`` declared conversations, each with a piece, its score and an attack result."""
    for i in range(count):
        conversation = f"run-{count}-{i}"
        piece = f.piece(conversation_id=conversation)
        services.store_conversations([f.conversation(conversation_id=conversation)])
        services.store_message_pieces([piece])
        store_scores([f.score(message_piece_id=piece["id"])])
        services.store_attack_results([f.attack_result(conversation_id=conversation)])


@pytest.mark.parametrize("count", [3, 30])
def test_a_run_costs_constant_queries(count: int, django_assert_num_queries: Any) -> None:
    store_conversations(count)
    chunks: list[str] = []
    # Selection: the conversation ids. Conversations: one page. Pieces: pieces with their
    # dumps, their converters. Scores: one page and the empty page after it. Attack results:
    # one page with their references (no last response or score here), the empty page after.
    # Scenario results: the empty page. Seeds: the empty page.
    with django_assert_num_queries(11):
        counts = write_run(chunks.append, select_run(None, scope=EVERYTHING))
    assert counts == {
        "conversations": count,
        "message_pieces": count,
        "scores": count,
        "attack_results": count,
        "scenario_results": 0,
        "seeds": 0,
    }
    # Filtered: the matching conversations, one hop of references (the next frontier is
    # empty), the ordered ids; then conversations; pieces and their converters; the pieces'
    # scores; the results and their references. No seed or scenario is named, so no query
    # for either.
    pieces = MessagePiece.objects.filter(
        conversation_id__in=[f"run-{count}-{i}" for i in range(count)]
    )
    with django_assert_num_queries(9):
        counts = write_run(chunks.append, select_run(pieces, scope=EVERYTHING))
    assert counts["attack_results"] == counts["scores"] == count


# PyRIT 0.13's MessagePiece.to_dict() / Score.to_dict() value types (PYRIT-MODEL.md 2.2, 5.2).
PIECE_TYPES_013: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "role": (str,),
    "conversation_id": (str,),
    "sequence": (int,),
    "timestamp": (str,),
    "labels": (dict,),
    "targeted_harm_categories": (list, type(None)),
    "prompt_metadata": (dict,),
    "converter_identifiers": (list,),
    "prompt_target_identifier": (dict, type(None)),
    "attack_identifier": (dict, type(None)),
    "scorer_identifier": (dict, type(None)),
    "original_value_data_type": (str,),
    "original_value": (str,),
    "original_value_sha256": (str, type(None)),
    "converted_value_data_type": (str,),
    "converted_value": (str,),
    "converted_value_sha256": (str, type(None)),
    "response_error": (str,),
    "originator": (str,),
    "original_prompt_id": (str,),
    "scores": (list,),
}
SCORE_TYPES_013: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "score_value": (str,),  # required in 0.13: an undetermined 1.1 score cannot be written
    "score_value_description": (str, type(None)),
    "score_type": (str,),
    "score_category": (list, type(None)),
    "score_rationale": (str, type(None)),
    "score_metadata": (dict,),
    "scorer_class_identifier": (dict, type(None)),
    "message_piece_id": (str, type(None)),
    "timestamp": (str,),
    "objective": (str, type(None)),
}


def assert_013_shape(rows: list[dict[str, Any]]) -> int:
    """Every row has 0.13's keys in 0.13's order and value types; returns the scores seen."""
    scores = 0
    for row in rows:
        assert list(row) == list(PIECE_TYPES_013), row["id"]
        for key, types in PIECE_TYPES_013.items():
            assert isinstance(row[key], types), (row["id"], key, row[key])
        assert row["timestamp"].endswith("+00:00")
        for score in row["scores"]:
            assert list(score) == list(SCORE_TYPES_013), score["id"]
            for key, types in SCORE_TYPES_013.items():
                assert isinstance(score[key], types), (score["id"], key, score[key])
            scores += 1
    return scores


def test_the_013_file_of_a_11_run_has_the_shape_pyrit_013_wrote(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    reference = json.loads(
        (fixtures_dir / "pyrit-0.13" / "exported_conversations.json").read_text()
    )
    assert assert_013_shape(reference) > 0  # the table above describes PyRIT's own file
    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    target = tmp_path / "exported.json"
    call_command("export_conversations", "-o", str(target), stderr=io.StringIO())
    rows = json.loads(target.read_text())
    assert len(rows) == MessagePiece.objects.count()
    written = assert_013_shape(rows)
    determined = Score.objects.filter(score_value__isnull=False, message_piece_id__isnull=False)
    assert Score.objects.filter(score_value__isnull=True).exists()
    assert written == determined.count()


def test_a_run_carries_its_scenarios_and_the_loose_text_of_its_scores() -> None:
    from memory.models import ScenarioResult, ScorableContent
    from redteam.site.ingest import ingest_batch
    from tests.api.pyrit_fixtures import SCENARIO_FIXTURES

    assert import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite").rejected == 0
    chunks: list[str] = []
    counts = write_run(chunks.append, select_run(None, scope=EVERYTHING))
    assert counts["scenario_results"] == 2
    payload = json.loads("".join(chunks))
    # Filtered to one scenario conversation: its scenario comes along.
    one = MessagePiece.objects.filter(conversation_id="00000000-0000-0000-0000-000000001001")
    filtered: list[str] = []
    assert write_run(filtered.append, select_run(one, scope=EVERYTHING))["scenario_results"] == 1
    # Another server receiving the file stores the same scenarios and loose text.
    rows = [(c.value, c.data_type) for c in ScorableContent.objects.order_by("pk")]
    for model in (Score, ScenarioResult, AttackResult):
        model.objects.all().delete()
    ScorableContent.objects.all().delete()
    assert ingest_batch(payload).errors == 0
    assert [(c.value, c.data_type) for c in ScorableContent.objects.order_by("pk")] == rows
    assert ScenarioResult.objects.count() == 2
