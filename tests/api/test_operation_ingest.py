"""Ingestion respects operations: keys write only into theirs, and every row lands in one.

Rows join the operation their `operation` label names (`op_name` in older runs), else their
conversation's, else the key's default; 1.x conversations are claimed by the labelled attack
result that names them (memory/ownership.py).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    IdentifierOperation,
    MessagePiece,
    ScenarioResult,
    Score,
)
from redteam.common.models import ApiKey, Operation
from tests.access import grant
from tests.api.conftest import bearer_client
from tests.api.factories import TARGET, attack_result, conversation, piece, score
from tests.memory.factories import legacy_piece

pytestmark = pytest.mark.django_db

INGEST = "/api/v1/ingest/"


def key_for(
    user: User,
    *names: str,
    default: str | None = None,
    scopes: tuple[str, ...] = ("ingest", "read"),
) -> APIClient:
    """A client whose key is bound to the named operations (created; the user a member)."""
    return bearer_client(secret_for(user, *names, default=default, scopes=scopes))


def secret_for(
    user: User,
    *names: str,
    default: str | None = None,
    scopes: tuple[str, ...] = ("ingest", "read"),
) -> str:
    """An API key bound to the named operations (created; the user a member)."""
    operations = [Operation.objects.get_or_create(name=n)[0] for n in names]
    for op in operations:
        grant(user, op, "reviewer")
    row, secret = ApiKey.objects.create_key(name="k", user=user, scopes=list(scopes))
    row.operations.add(*operations)
    if default is not None:
        row.default_operation = Operation.objects.get(name=default)
        row.save()
    return secret


@pytest.fixture
def owner(db: Any) -> User:
    return User.objects.create_user("pusher")


def post(client: APIClient, payload: dict[str, Any], query: str = "") -> Any:
    return client.post(INGEST + query, payload, format="json")


def op(name: str) -> int:
    return Operation.objects.get(name=name).pk


def errors_of(response: Any) -> list[dict[str, Any]]:
    return [e for item in response.json()["items"] for e in item.get("errors", [])]


def test_unlabelled_items_go_to_the_keys_default_operation(owner: User) -> None:
    client = key_for(owner, "alpha", default="alpha")
    cid = str(uuid.uuid4())
    rows = [piece(cid, 0), piece(cid, 1, "assistant")]
    assert post(client, {"message_pieces": rows, "scores": [score(rows[1])]}).status_code == 200
    conv = Conversation.objects.get(pk=cid)
    assert conv.operation_id == op("alpha")
    assert not conv.operation_claimed
    assert Score.objects.get().operation_id == op("alpha")


def test_an_item_labelled_with_another_operation_is_rejected_and_never_stored(
    owner: User,
) -> None:
    Operation.objects.create(name="bravo")  # exists, but this key is not bound to it
    client = key_for(owner, "alpha", default="alpha")
    cid = str(uuid.uuid4())
    mine = legacy_piece(conversation_id="c-mine", labels={"operation": "alpha"})
    theirs = legacy_piece(conversation_id="c-theirs", labels={"operation": "bravo"})
    unknown = legacy_piece(conversation_id="c-unknown", labels={"op_name": "nowhere"})
    result = attack_result(cid, labels={"operation": "bravo"})
    response = post(client, {"message_pieces": [mine, theirs, unknown], "attack_results": [result]})
    assert response.status_code == 207
    statuses = [(i["kind"], i["index"], i["status"]) for i in response.json()["items"]]
    assert statuses == [
        ("message_pieces", 0, "stored"),
        ("message_pieces", 1, "rejected"),
        ("message_pieces", 2, "rejected"),
        ("attack_results", 0, "rejected"),
    ]
    fields = {e["field"] for e in errors_of(response)}
    assert fields == {"labels.operation"}
    # The same answer whether the operation exists or not: nothing to learn from it.
    messages = [e["message"] for e in errors_of(response)]
    assert all("may not write to" in m for m in messages), messages
    assert set(Conversation.objects.values_list("pk", flat=True)) == {"c-mine"}
    assert not AttackResult.objects.exists()
    assert not Operation.objects.filter(name="nowhere").exists()


def test_op_name_names_the_operation_of_older_runs(owner: User) -> None:
    client = key_for(owner, "alpha", "legacy_op", default="alpha")
    row = legacy_piece(conversation_id="old", labels={"op_name": "legacy_op", "username": "x"})
    assert post(client, {"message_pieces": [row]}).status_code == 200
    conv = Conversation.objects.get(pk="old")
    assert (conv.operation_id, conv.operation_claimed) == (op("legacy_op"), True)


def test_a_1x_run_is_claimed_by_its_labelled_results(owner: User) -> None:
    """Pieces, conversations and scores arrive unlabelled; the result names the operation."""
    client = key_for(owner, "alpha", "bravo", default="alpha")
    cid, adversarial = str(uuid.uuid4()), str(uuid.uuid4())
    rows = [piece(cid, 0), piece(cid, 1, "assistant")]
    chat = [piece(adversarial, 0, text="adversarial prompt")]
    first = {
        "conversations": [conversation(cid)],
        "message_pieces": rows + chat,
        "scores": [score(rows[1])],
    }
    assert post(client, first).status_code == 200
    assert set(Conversation.objects.values_list("operation_id", flat=True)) == {op("alpha")}
    result = attack_result(
        cid,
        labels={"operation": "bravo"},
        related_conversations=[
            {
                "conversation_id": adversarial,
                "conversation_type": "adversarial",
                "description": None,
            }
        ],
    )
    assert post(client, {"attack_results": [result]}).status_code == 200
    for conv_id in (cid, adversarial):
        conv = Conversation.objects.get(pk=conv_id)
        assert (conv.operation_id, conv.operation_claimed) == (op("bravo"), True)
    assert AttackResult.objects.get().operation_id == op("bravo")
    assert Score.objects.get().operation_id == op("bravo")
    # The identifiers the claimed conversations use are now visible from bravo.
    target = ComponentIdentifier.objects.get(pk=TARGET["hash"])
    assert IdentifierOperation.objects.filter(identifier=target, operation_id=op("bravo")).exists()
    # A related conversation arriving after its result joins the result's operation.
    late = str(uuid.uuid4())
    result2 = attack_result(
        str(uuid.uuid4()),
        labels={"operation": "bravo"},
        related_conversations=[
            {"conversation_id": late, "conversation_type": "pruned", "description": None}
        ],
    )
    assert post(client, {"attack_results": [result2]}).status_code == 200
    assert post(client, {"message_pieces": [piece(late, 0)]}).status_code == 200
    conv = Conversation.objects.get(pk=late)
    assert (conv.operation_id, conv.operation_claimed) == (op("bravo"), True)


def test_a_claimed_conversation_never_moves(owner: User) -> None:
    client = key_for(owner, "alpha", "bravo", default="alpha")
    row = legacy_piece(conversation_id="fixed", labels={"operation": "alpha"})
    assert post(client, {"message_pieces": [row]}).status_code == 200
    response = post(
        client, {"attack_results": [attack_result("fixed", labels={"operation": "bravo"})]}
    )
    assert response.status_code == 207
    assert errors_of(response)[0]["field"] == "labels.operation"
    assert Conversation.objects.get(pk="fixed").operation_id == op("alpha")
    assert not AttackResult.objects.exists()


def test_nothing_is_added_to_or_compared_with_another_operations_rows(owner: User) -> None:
    alpha = key_for(owner, "alpha", default="alpha")
    other = User.objects.create_user("other")
    bravo = key_for(other, "bravo", default="bravo")
    cid = str(uuid.uuid4())
    rows = [piece(cid, 0), piece(cid, 1, "assistant")]
    result = attack_result(cid, labels={"operation": "alpha"})
    assert post(alpha, {"message_pieces": rows, "attack_results": [result]}).status_code == 200
    # Replays, appended pieces and scores from a key of another operation are refused, with
    # no "unchanged" or "conflict" that would tell what alpha stored.
    changed = dict(rows[0], original_value="guess", converted_value="guess")
    response = post(
        bravo,
        {
            "message_pieces": [rows[0], piece(cid, 2)],
            "scores": [score(rows[1])],
            "attack_results": [result],
        },
    )
    assert response.status_code == 207
    items = response.json()["items"]
    assert {i["status"] for i in items} == {"rejected"}
    assert all("conflict" not in str(i) for i in items)
    response = post(bravo, {"message_pieces": [changed]})
    assert response.json()["items"][0]["errors"][0]["field"] == "id"
    assert MessagePiece.objects.filter(conversation_id=cid).count() == 2
    assert not Score.objects.exists()


def test_archived_operations_take_nothing_new(owner: User) -> None:
    client = key_for(owner, "alpha", "old", default="alpha")
    Operation.objects.filter(name="old").update(archived=True)
    row = legacy_piece(conversation_id="late", labels={"operation": "old"})
    response = post(client, {"message_pieces": [row]})
    assert response.status_code == 207
    assert "may not write to" in errors_of(response)[0]["message"]


def test_operation_parameter_sets_the_default_and_must_be_writable(owner: User) -> None:
    client = key_for(owner, "alpha", "bravo", default="alpha")
    cid = str(uuid.uuid4())
    assert post(client, {"message_pieces": [piece(cid, 0)]}, "?operation=bravo").status_code == 200
    assert Conversation.objects.get(pk=cid).operation_id == op("bravo")
    Operation.objects.create(name="charlie")
    response = post(client, {"message_pieces": [piece(str(uuid.uuid4()), 0)]}, "?operation=charlie")
    assert response.status_code == 207
    assert errors_of(response)[0]["field"] == "labels.operation"


def test_a_key_without_a_default_rejects_unlabelled_items(owner: User) -> None:
    client = key_for(owner, "alpha")
    response = post(client, {"message_pieces": [piece(str(uuid.uuid4()), 0)]})
    assert response.status_code == 207
    assert "names no operation" in errors_of(response)[0]["message"]


def test_revoking_the_membership_revokes_the_keys_writes(owner: User) -> None:
    client = key_for(owner, "alpha", default="alpha")
    owner.memberships.all().delete()
    response = post(client, {"message_pieces": [piece(str(uuid.uuid4()), 0)]})
    assert response.status_code == 207
    assert not MessagePiece.objects.exists()


def test_bad_operation_labels_are_rejected_per_item(owner: User) -> None:
    client = key_for(owner, "alpha", default="alpha")
    bad = [
        legacy_piece(conversation_id=f"bad{i}", labels={"operation": value})
        for i, value in enumerate(["", "   ", "x" * 300])
    ]
    response = post(client, {"message_pieces": bad})
    assert [i["status"] for i in response.json()["items"]] == ["rejected"] * 3
    assert {e["field"] for e in errors_of(response)} == {"labels.operation"}


def test_scenario_results_join_their_labelled_operation(owner: User, fixtures_dir: Path) -> None:
    from tests.api.pyrit_fixtures import SCENARIO_FIXTURES

    client = key_for(owner, "op_scenario", "op_other", default="op_scenario")
    text = (SCENARIO_FIXTURES / "scenario_results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert post(client, {"scenario_results": rows}).status_code == 200
    assert set(ScenarioResult.objects.values_list("operation__name", flat=True)) <= {
        "op_scenario",
        "op_other",
    }


def test_import_command_places_unlabelled_rows_in_its_operation(fixtures_dir: Path) -> None:
    call_command(
        "import_pyrit_memory",
        str(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite"),
        "--no-progress",
        "--operation",
        "imported",
    )
    names = set(Operation.objects.values_list("name", flat=True))
    assert "imported" in names
    assert not Conversation.objects.filter(operation=None).exists()
    assert not AttackResult.objects.filter(operation=None).exists()
    assert not Score.objects.filter(operation=None).exists()
    # Every conversation a result names is in that result's operation.
    for result in AttackResult.objects.select_related("conversation"):
        assert result.conversation.operation_id == result.operation_id


def test_the_client_names_the_operation_of_unlabelled_rows(live_server: Any, owner: User) -> None:
    from redteam.client import RedteamClient

    secret = secret_for(owner, "alpha", "bravo", default="alpha")
    cid = str(uuid.uuid4())
    with RedteamClient(live_server.url, secret, operation="bravo") as client:
        sent = client.push(pieces=[piece(cid, 0)])
    assert sent.rejected == []
    assert Conversation.objects.get(pk=cid).operation_id == op("bravo")
