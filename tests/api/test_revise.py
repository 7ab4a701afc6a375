"""`?revise=1`: a changed row PyRIT's memory updates in place is stored as the newer version.

What `redteam.client follow` sends when a row it already sent changes in the memory file (an
attack result finishing, a scenario's run state, a conversation's retries, a piece's labels
or prompt metadata). Without the flag the same items stay conflicts; with it, whatever PyRIT
never changes (a piece's value, a result's conversation, the operation) still is one.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memory.models import (
    AttackResult,
    Conversation,
    ConversationReference,
    MessagePiece,
    ScenarioResult,
)
from tests.api import factories
from tests.api.pyrit_fixtures import scenario_rows

pytestmark = pytest.mark.django_db

INGEST = "/api/v1/ingest/"


def _post(api: APIClient, payload: dict[str, Any], revise: int | None = 1) -> dict[str, Any]:
    url = f"{INGEST}?revise={revise}" if revise is not None else INGEST
    response = api.post(url, payload, format="json")
    assert response.status_code in (200, 207), response.content
    body: dict[str, Any] = response.json()
    return body


def _statuses(body: dict[str, Any]) -> list[str]:
    return [item["status"] for item in body["items"]]


def _run(cid: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """A running attack: its pieces and an undetermined result."""
    cid = cid or str(uuid.uuid4())
    pieces = factories.conversation_pieces(2, cid)
    result = factories.attack_result(
        cid,
        outcome="undetermined",
        executed_turns=0,
        related_conversations=[
            {
                "conversation_id": str(uuid.uuid4()),
                "conversation_type": "score",
                "description": "the scorer's chat",
            }
        ],
    )
    return {"message_pieces": pieces, "attack_results": [result]}


def _finished(result: dict[str, Any], turns: int = 3) -> dict[str, Any]:
    done = copy.deepcopy(result)
    done.update(outcome="success", outcome_reason="objective met", executed_turns=turns)
    return done


def test_a_finished_result_is_a_conflict_without_revise_and_the_newer_version_with_it(
    api: APIClient,
) -> None:
    run = _run()
    _post(api, run, revise=None)
    done = _finished(run["attack_results"][0])
    refused = _post(api, {"attack_results": [done]}, revise=None)
    assert refused["items"][0]["errors"][0]["code"] == "conflict"

    body = _post(api, {"attack_results": [done]})
    assert _statuses(body) == ["stored"]
    stored = AttackResult.objects.get(pk=done["attack_result_id"])
    assert (stored.outcome, stored.outcome_reason, stored.executed_turns) == (
        "success",
        "objective met",
        3,
    )
    # The conversation's summary follows its newest result.
    assert Conversation.objects.get(pk=done["conversation_id"]).outcome == "success"
    # Sent again: a replay of the newer version.
    assert _statuses(_post(api, {"attack_results": [done]})) == ["unchanged"]


def test_a_revision_keeps_the_related_conversations_memory_does_not_hold(api: APIClient) -> None:
    run = _run()
    _post(api, run)
    result = run["attack_results"][0]
    pruned = str(uuid.uuid4())
    # As memory reloads it: no score conversation; a pruned one was added.
    done = _finished(result)
    done["related_conversations"] = [
        {"conversation_id": pruned, "conversation_type": "pruned", "description": None}
    ]
    assert _statuses(_post(api, {"attack_results": [done]})) == ["stored"]
    kinds = sorted(
        ConversationReference.objects.filter(
            attack_result_id=result["attack_result_id"]
        ).values_list("conversation_type", flat=True)
    )
    assert kinds == ["pruned", "score"]


def test_a_revision_may_not_move_a_result(api: APIClient) -> None:
    run = _run()
    _post(api, run)
    moved = _finished(run["attack_results"][0])
    moved["conversation_id"] = str(uuid.uuid4())
    body = _post(api, {"attack_results": [moved]})
    assert body["items"][0]["errors"][0]["field"] == "conversation_id"
    relabelled = _finished(run["attack_results"][0])
    relabelled["labels"] = {"operation": "op2"}
    body = _post(api, {"attack_results": [relabelled]})
    assert body["items"][0]["errors"][0]["code"] == "conflict"
    assert AttackResult.objects.get(pk=moved["attack_result_id"]).outcome == "undetermined"


def test_a_piece_takes_new_labels_and_metadata_but_never_a_new_value(api: APIClient) -> None:
    run = _run()
    _post(api, run)
    first = run["message_pieces"][0]
    tagged = dict(first, prompt_metadata={"reviewed": True})
    assert _statuses(_post(api, {"message_pieces": [tagged]})) == ["stored"]
    assert MessagePiece.objects.get(pk=first["id"]).prompt_metadata == {"reviewed": True}
    rewritten = dict(tagged, original_value="something else", converted_value="something else")
    body = _post(api, {"message_pieces": [rewritten]})
    assert body["items"][0]["errors"][0]["code"] == "conflict"


def test_a_conversation_takes_its_new_retries(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    declared = factories.conversation(cid)
    _post(
        api, {"conversations": [declared], "message_pieces": factories.conversation_pieces(2, cid)}
    )
    retried = dict(declared, retries=[{"sequence": 1, "reason": "json_parsing"}])
    refused = _post(api, {"conversations": [retried]}, revise=None)
    assert refused["items"][0]["errors"][0]["code"] == "conflict"
    assert _statuses(_post(api, {"conversations": [retried]})) == ["stored"]
    assert Conversation.objects.get(pk=cid).retries == retried["retries"]


def test_a_scenario_takes_its_new_run_state(api: APIClient) -> None:
    completed = scenario_rows()[0]
    running = dict(completed, scenario_run_state="IN_PROGRESS", completion_time=None)
    _post(api, {"scenario_results": [running]})
    refused = _post(api, {"scenario_results": [completed]}, revise=None)
    assert refused["items"][0]["errors"][0]["code"] == "conflict"
    assert _statuses(_post(api, {"scenario_results": [completed]})) == ["stored"]
    stored = ScenarioResult.objects.get(pk=completed["id"])
    assert stored.scenario_run_state == completed["scenario_run_state"]
    assert _statuses(_post(api, {"scenario_results": [completed]})) == ["unchanged"]


def test_a_version_that_arrives_after_a_newer_one_is_kept_out(api: APIClient) -> None:
    """A request sent before a newer one but stored after it (its sender was killed while
    the server still worked on it) carries the smaller stamp: the newer version stays."""
    run = _run()
    _post(api, run, revise=100)
    done = _finished(run["attack_results"][0])
    assert _statuses(_post(api, {"attack_results": [done]}, revise=300)) == ["stored"]
    late = dict(run["attack_results"][0], outcome="failure")
    assert _statuses(_post(api, {"attack_results": [late]}, revise=200)) == ["unchanged"]
    assert AttackResult.objects.get(pk=done["attack_result_id"]).outcome == "success"
    piece = run["message_pieces"][0]
    _post(api, {"message_pieces": [dict(piece, prompt_metadata={"v": 2})]}, revise=300)
    _post(api, {"message_pieces": [dict(piece, prompt_metadata={"v": 1})]}, revise=200)
    assert MessagePiece.objects.get(pk=piece["id"]).prompt_metadata == {"v": 2}


def test_a_copy_inside_a_result_never_replaces_the_piece(api: APIClient) -> None:
    run = _run()
    answer = run["message_pieces"][1]
    _post(
        api,
        {
            **run,
            "message_pieces": [run["message_pieces"][0], dict(answer, prompt_metadata={"v": 2})],
        },
    )
    stale = _finished(run["attack_results"][0])
    stale["last_response"] = dict(answer, prompt_metadata={"v": 1})
    assert _statuses(_post(api, {"attack_results": [stale]}, revise=5)) == ["stored"]
    assert MessagePiece.objects.get(pk=answer["id"]).prompt_metadata == {"v": 2}


def test_a_bad_stamp_is_a_400(api: APIClient) -> None:
    for bad in ("yes", "-1", str(2**63)):
        response = api.post(f"{INGEST}?revise={bad}", {}, format="json")
        assert response.status_code == 400, bad


def _revision_queries(api: APIClient, n: int) -> list[str]:
    runs = [_run() for _ in range(n)]
    payload = {
        "message_pieces": [p for r in runs for p in r["message_pieces"]],
        "attack_results": [r["attack_results"][0] for r in runs],
    }
    _post(api, payload)
    newer = {
        "message_pieces": [dict(p, prompt_metadata={"n": 1}) for p in payload["message_pieces"]],
        "attack_results": [_finished(r) for r in payload["attack_results"]],
    }
    with CaptureQueriesContext(connection) as ctx:
        body = _post(api, newer)
    assert set(_statuses(body)) == {"stored"}
    return [q["sql"][:70] for q in ctx.captured_queries]


def test_revising_costs_the_same_queries_for_3_and_30_rows(api: APIClient) -> None:
    api.get("/api/schema/")  # stamps last_used_at once, so no request below updates it
    small, large = _revision_queries(api, 3), _revision_queries(api, 30)
    assert len(small) == len(large), "\n".join(["small:", *small, "large:", *large])
