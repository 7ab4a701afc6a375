"""The read API, media endpoints and exports answer for the caller's operations only.

Two operations overlap (tests/memory/two_operations.py); a key bound to `alpha` reads alpha's
rows, gets a 404 for every bravo row (as for one that does not exist), and no filter,
embedded row, media answer or export tells it anything of bravo. The export command reads
every operation unless `--operation` names some.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from memory.models import MessagePiece, Score
from redteam.common.models import ApiKey, MediaBlob
from tests.api.conftest import bearer_client
from tests.memory.row_factories import (
    PNG_1X1,
    PieceSpec,
    make_attack_result,
    make_conversation,
)
from tests.memory.two_operations import (
    BRAVO_SCORE_VALUE,
    OBJECTIVE,
    TwoOperations,
    build_two_operations,
)

pytestmark = pytest.mark.django_db
V1 = "/api/v1"


@pytest.fixture
def ops() -> TwoOperations:
    return build_two_operations()


@pytest.fixture
def alpha_key(ops: TwoOperations) -> APIClient:
    """A read+ingest key of alpha's member, bound to alpha."""
    row, secret = ApiKey.objects.create_key(
        name="alpha", user=ops.member, scopes=["ingest", "read"], default_operation=ops.alpha
    )
    row.operations.add(ops.alpha)
    return bearer_client(secret)


def _ids(client: APIClient, resource: str, key: str, **params: Any) -> set[str]:
    response = client.get(f"{V1}/{resource}/", {"page_size": 1000, **params})
    assert response.status_code == 200, response.content
    return {str(row[key]) for row in response.json()["results"]}


# --- lists and details ------------------------------------------------------------------------


def test_lists_hold_only_the_keys_operation(ops: TwoOperations, alpha_key: APIClient) -> None:
    alpha_conversation = ops.alpha_conversation.conversation_id
    pieces = _ids(alpha_key, "message-pieces", "conversation_id")
    assert pieces == {alpha_conversation}
    assert _ids(alpha_key, "conversations", "conversation_id") == {alpha_conversation}
    assert _ids(alpha_key, "attack-results", "attack_result_id") == {str(ops.alpha_result.pk)}
    assert _ids(alpha_key, "scenario-results", "id") == {str(ops.alpha_scenario.pk)}
    scores = alpha_key.get(f"{V1}/scores/", {"page_size": 1000}).json()["results"]
    assert scores
    assert BRAVO_SCORE_VALUE not in {s["score_value"] for s in scores}
    identifiers = _ids(alpha_key, "identifiers", "hash")
    assert {ops.shared_target, ops.dual_use} <= identifiers
    assert ops.bravo_converter not in identifiers
    assert ops.bravo_target not in identifiers


def test_details_of_the_other_operation_are_404(ops: TwoOperations, alpha_key: APIClient) -> None:
    score = Score.objects.get(message_piece_id=ops.bravo_piece.original_prompt_id)
    hidden = [
        f"{V1}/message-pieces/{ops.bravo_piece.pk}/",
        f"{V1}/scores/{score.pk}/",
        f"{V1}/attack-results/{ops.bravo_result.pk}/",
        f"{V1}/scenario-results/{ops.bravo_scenario.pk}/",
        f"{V1}/identifiers/{ops.bravo_converter}/",
        f"{V1}/identifiers/{ops.bravo_target}/",
        f"{V1}/conversations/{ops.bravo_conversation.conversation_id}/",
    ]
    for url in hidden:
        assert alpha_key.get(url).status_code == 404, url
    visible = [
        f"{V1}/message-pieces/{ops.alpha_piece.pk}/",
        f"{V1}/attack-results/{ops.alpha_result.pk}/",
        f"{V1}/identifiers/{ops.shared_target}/",
        f"{V1}/conversations/{ops.alpha_conversation.conversation_id}/",
    ]
    for url in visible:
        assert alpha_key.get(url).status_code == 200, url


def test_embedded_rows_of_the_other_operation_are_left_out(
    ops: TwoOperations, alpha_key: APIClient
) -> None:
    # Bravo scored one of alpha's pieces: the conversation endpoint leaves that score out.
    answer = alpha_key.get(f"{V1}/conversations/{ops.alpha_conversation.conversation_id}/")
    values = {
        s["score_value"]
        for m in answer.json()["messages"]
        for p in m["pieces"]
        for s in p["scores"]
    }
    assert values == {"true"}
    # Alpha's scenario names bravo's result: the scenario embeds alpha's only.
    scenario = alpha_key.get(f"{V1}/scenario-results/{ops.alpha_scenario.pk}/").json()
    embedded = [r["attack_result_id"] for r in scenario["attack_results"]["technique"]]
    assert embedded == [str(ops.alpha_result.pk)]


def test_filters_look_only_at_visible_rows(ops: TwoOperations, alpha_key: APIClient) -> None:
    # The same objective in both operations.
    assert _ids(alpha_key, "attack-results", "attack_result_id", objective=OBJECTIVE) == {
        str(ops.alpha_result.pk)
    }
    assert _ids(alpha_key, "message-pieces", "id", score_value=BRAVO_SCORE_VALUE) == set()
    assert _ids(alpha_key, "message-pieces", "id", label="bravo_key=x") == set()
    assert _ids(alpha_key, "conversations", "conversation_id", label="bravo_key=x") == set()
    bravo = ops.bravo_conversation.conversation_id
    assert _ids(alpha_key, "scores", "id", conversation_id=bravo) == set()
    # Alpha uses DualUseConverter as a scorer, bravo as a converter.
    assert ops.dual_use in _ids(alpha_key, "identifiers", "hash", used_as="scorer")
    assert ops.dual_use not in _ids(alpha_key, "identifiers", "hash", used_as="converter")


@pytest.mark.parametrize("n", [3, 30])
def test_scoped_lists_cost_constant_queries(
    ops: TwoOperations, alpha_key: APIClient, django_assert_num_queries: Any, n: int
) -> None:
    for _ in range(n):
        for operation in ("alpha", "bravo"):
            conv = make_conversation(2, labels={"operation": operation})
            make_attack_result(conv)
    alpha_key.get(f"{V1}/identifiers/")  # stamps last_used_at once
    # Each: the key with its scope; the page's rows. Pieces: + their converters. Results: +
    # related conversations, + the last responses' converters (no last scores: these have none).
    budgets = {"message-pieces": 3, "conversations": 2, "attack-results": 4, "identifiers": 2}
    for resource, budget in budgets.items():
        with django_assert_num_queries(budget):
            response = alpha_key.get(f"{V1}/{resource}/", {"page_size": 1000})
        assert response.status_code == 200
    assert len(_ids(alpha_key, "conversations", "conversation_id")) == n + 1


# --- media ------------------------------------------------------------------------------------


def test_media_download_needs_a_visible_piece_or_a_seed(
    ops: TwoOperations, alpha_key: APIClient
) -> None:
    def status(blob: MediaBlob) -> int:
        return alpha_key.get(f"{V1}/media/{blob.sha256}/").status_code

    assert status(ops.shared_media) == 200
    assert status(ops.seed_media) == 200
    assert status(ops.bravo_media) == 404
    assert status(ops.orphan_media) == 404


def test_missing_media_is_no_oracle_for_other_operations(
    ops: TwoOperations, alpha_key: APIClient
) -> None:
    hashes = [b.sha256 for b in (ops.shared_media, ops.seed_media, ops.bravo_media)]
    hashes.append(ops.orphan_media.sha256)
    response = alpha_key.post(f"{V1}/media/missing/", {"sha256": hashes}, format="json")
    assert response.status_code == 200
    assert response.json() == {"missing": [ops.bravo_media.sha256, ops.orphan_media.sha256]}


def _unhashed_image(operation: str) -> MessagePiece:
    """An image piece PyRIT left without sha256s, in `operation`."""
    conv = make_conversation(
        [[PieceSpec("/run/unhashed.png", data_type="image_path")]],
        labels={"operation": operation},
    )
    piece = conv.pieces.get()
    MessagePiece.objects.filter(pk=piece.pk).update(
        original_value_sha256=None, converted_value_sha256=None
    )
    return piece


def test_upload_links_named_pieces_only_where_the_key_may_write(
    ops: TwoOperations, alpha_key: APIClient
) -> None:
    mine, theirs = _unhashed_image("alpha"), _unhashed_image("bravo")
    data = PNG_1X1 + b"named"
    answer = alpha_key.post(
        f"{V1}/media/",
        {
            "file": SimpleUploadedFile("x.png", data),
            "converted_piece_id": [str(mine.pk), str(theirs.pk)],
        },
        format="multipart",
    )
    assert answer.status_code == 201
    digest = hashlib.sha256(data).hexdigest()
    assert MessagePiece.objects.get(pk=mine.pk).converted_media_id == digest
    assert MessagePiece.objects.get(pk=theirs.pk).converted_media_id is None


def test_upload_of_bytes_only_another_operation_holds_answers_as_new(
    ops: TwoOperations, alpha_key: APIClient
) -> None:
    data = PNG_1X1 + b"bravo"  # the bytes of bravo's image
    answer = alpha_key.post(
        f"{V1}/media/", {"file": SimpleUploadedFile("x.png", data)}, format="multipart"
    )
    assert answer.status_code == 201
    assert answer.json()["created"] is True
    assert MediaBlob.objects.filter(sha256=ops.bravo_media.sha256).count() == 1
    assert alpha_key.get(f"{V1}/media/{ops.bravo_media.sha256}/").status_code == 404


# --- exports ----------------------------------------------------------------------------------


def _export(*args: str) -> Any:
    out = io.StringIO()
    call_command("export_conversations", *args, stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_export_command_reads_every_operation_unless_told(ops: TwoOperations) -> None:
    everything = {p["conversation_id"] for p in _export("--shape", "1.x")}
    assert everything == {
        ops.alpha_conversation.conversation_id,
        ops.bravo_conversation.conversation_id,
    }
    alpha = _export("--shape", "1.x", "--operation", "alpha")
    assert {p["conversation_id"] for p in alpha} == {ops.alpha_conversation.conversation_id}
    both = _export("--shape", "1.x", "--operation", "alpha", "--operation", "bravo")
    assert {p["conversation_id"] for p in both} == everything
    # The 0.13 file carries each piece's scores: alpha's only.
    legacy = _export("--operation", "alpha")
    assert BRAVO_SCORE_VALUE not in {s["score_value"] for p in legacy for s in p["scores"]}
    with pytest.raises(CommandError, match="no such operation: charlie"):
        _export("--operation", "charlie")


def test_run_export_of_one_operation_holds_nothing_of_the_other(ops: TwoOperations) -> None:
    run = _export("--run", "--operation", "alpha")
    alpha_conversation = ops.alpha_conversation.conversation_id
    assert {c["conversation_id"] for c in run["conversations"]} == {alpha_conversation}
    assert {p["conversation_id"] for p in run["message_pieces"]} == {alpha_conversation}
    assert [r["attack_result_id"] for r in run["attack_results"]] == [str(ops.alpha_result.pk)]
    assert BRAVO_SCORE_VALUE not in {s["score_value"] for s in run["scores"]}
    assert "bravo judged the loose text" not in json.dumps(run["scores"])
    assert [s["id"] for s in run["scenario_results"]] == [str(ops.alpha_scenario.pk)]
    embedded = run["scenario_results"][0]["attack_results"]["technique"]
    assert [r["attack_result_id"] for r in embedded] == [str(ops.alpha_result.pk)]
    # Seeds belong to no operation: a run of some operations carries the seeds its results
    # name (none here); a run of everything, the whole library.
    assert run["seeds"] == []
    assert len(_export("--run")["seeds"]) == 1
    # Filtered runs stay inside the operation too.
    filtered = _export("--run", "--operation", "alpha", "--conversation-id", alpha_conversation)
    assert [r["attack_result_id"] for r in filtered["attack_results"]] == [str(ops.alpha_result.pk)]
    bravo = ops.bravo_conversation.conversation_id
    outside = _export("--run", "--operation", "alpha", "--conversation-id", bravo)
    assert all(rows == [] for rows in outside.values())


def test_a_superusers_key_reads_the_operations_it_is_bound_to(ops: TwoOperations) -> None:
    boss = User.objects.create_superuser("boss", password="pw-boss-1")
    row, secret = ApiKey.objects.create_key(name="bravo", user=boss, scopes=["read"])
    row.operations.add(ops.bravo)
    client = bearer_client(secret)
    assert _ids(client, "conversations", "conversation_id") == {
        ops.bravo_conversation.conversation_id
    }
    assert client.get(f"{V1}/attack-results/{ops.alpha_result.pk}/").status_code == 404
    _, unbound_secret = ApiKey.objects.create_key(name="none", user=boss, scopes=["read"])
    assert _ids(bearer_client(unbound_secret), "conversations", "conversation_id") == set()
