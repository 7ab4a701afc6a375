"""memory.services: validation, idempotency, conflicts, Message rules, summaries, query counts."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import pytest
from django.db import connection

from memory import services
from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    IdentifierDump,
    MessagePiece,
    PieceConverter,
    Score,
)
from redteam.common.media import store_media_bytes
from redteam.common.models import Operation
from redteam.core.identity import ComponentIdentifier as CI
from redteam.core.operations import UNASSIGNED
from redteam.core.reassembly import INCONSISTENT_ROLES
from tests.memory import factories as f

ON_POSTGRESQL = connection.vendor == "postgresql"

pytestmark = pytest.mark.django_db


def one(items: list[dict[str, Any]]) -> Any:
    [outcome] = services.store_message_pieces(items)
    return outcome


def fields_of(outcome: Any) -> list[str | None]:
    return [e.field for e in outcome.errors]


# --- storing and replaying -----------------------------------------------------------------


def test_stores_a_1x_piece_with_its_fields() -> None:
    item = f.piece(prompt_metadata={"k": "v"}, converter_identifiers=[f.identifier()])
    outcome = one([item])
    assert (outcome.kind, outcome.index, outcome.id, outcome.status) == (
        "message_pieces",
        0,
        item["id"],
        "stored",
    )
    piece = MessagePiece.objects.get(pk=item["id"])
    assert piece.conversation_id == "conv-1"
    assert piece.prompt_metadata == {"k": "v"}
    assert piece.source_shape == "1.x"
    assert piece.timestamp.isoformat() == "2026-03-01T12:00:00+00:00"
    assert PieceConverter.objects.get(piece=piece).identifier.class_name == "ROT13Converter"


def test_replaying_the_same_piece_is_unchanged_and_stores_nothing() -> None:
    item = f.piece(converter_identifiers=[f.identifier()])
    assert one([item]).status == "stored"
    before = (MessagePiece.objects.count(), PieceConverter.objects.count())
    assert one([json.loads(json.dumps(item))]).status == "unchanged"
    assert (MessagePiece.objects.count(), PieceConverter.objects.count()) == before
    assert Conversation.objects.get(pk="conv-1").piece_count == 1


def test_same_id_with_different_content_is_a_conflict_naming_the_id() -> None:
    item = f.piece()
    one([item])
    outcome = one([{**item, "converted_value": "changed"}])
    assert outcome.status == "rejected"
    [error] = outcome.errors
    assert error.code == "conflict"
    assert error.field == "converted_value"
    assert item["id"] in error.message
    assert MessagePiece.objects.get(pk=item["id"]).converted_value == "hello"


def test_comparison_is_canonical_timestamp_spelling_and_key_order_do_not_matter() -> None:
    item = f.piece(prompt_metadata={"a": 1, "b": 2})
    one([item])
    replay = {**item, "timestamp": "2026-03-01T13:00:00+01:00", "prompt_metadata": {"b": 2, "a": 1}}
    assert one([replay]).status == "unchanged"


def test_int_and_float_are_different_content() -> None:
    item = f.piece(prompt_metadata={"temperature": 1})
    one([item])
    outcome = one([{**item, "prompt_metadata": {"temperature": 1.0}}])
    assert outcome.status == "rejected"
    assert outcome.errors[0].code == "conflict"
    assert outcome.errors[0].field == "prompt_metadata"


def test_duplicate_id_inside_one_batch() -> None:
    item = f.piece()
    same, different = dict(item), {**item, "original_value": "other", "converted_value": "other"}
    outcomes = services.store_message_pieces([item, same, different])
    assert [o.status for o in outcomes] == ["stored", "unchanged", "rejected"]
    assert outcomes[2].errors[0].code == "conflict"
    assert MessagePiece.objects.count() == 1


def test_outcomes_follow_input_order_with_indexes() -> None:
    good, bad = f.piece(), f.piece(role="wizard", conversation_id="other")
    outcomes = services.store_message_pieces([bad, good])
    assert [(o.index, o.status, o.id) for o in outcomes] == [
        (0, "rejected", bad["id"]),
        (1, "stored", good["id"]),
    ]


def test_missing_converted_value_mirrors_the_original_and_its_type() -> None:
    item = f.piece(original_value_data_type="reasoning")
    del item["converted_value"], item["converted_value_data_type"]
    assert one([item]).status == "stored"
    piece = MessagePiece.objects.get(pk=item["id"])
    assert (piece.converted_value, piece.converted_value_data_type) == ("hello", "reasoning")


def test_missing_original_prompt_id_defaults_to_the_id() -> None:
    item = f.piece()
    del item["original_prompt_id"]
    one([item])
    assert str(MessagePiece.objects.get(pk=item["id"]).original_prompt_id) == item["id"]


# --- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"role": "wizard"}, "role"),
        ({"original_value_data_type": "hologram"}, "original_value_data_type"),
        ({"converted_value_data_type": "hologram"}, "converted_value_data_type"),
        ({"response_error": "exploded"}, "response_error"),
        ({"id": "not-a-uuid"}, "id"),
        ({"original_prompt_id": "1234"}, "original_prompt_id"),
        # Equal to a bad id: still named (an equal id is parsed once, a bad one not at all).
        ({"id": "not-a-uuid", "original_prompt_id": "not-a-uuid"}, "original_prompt_id"),
        ({"id": 42}, "id"),
        ({"sequence": "1"}, "sequence"),
        ({"sequence": True}, "sequence"),
        ({"sequence": 2**40}, "sequence"),
        ({"original_value": 5}, "original_value"),
        ({"prompt_metadata": []}, "prompt_metadata"),
        ({"prompt_metadata": {"truncated": "yes"}}, "prompt_metadata.truncated"),
        ({"converter_identifiers": {}}, "converter_identifiers"),
        ({"converter_identifiers": ["ROT13"]}, "converter_identifiers[0]"),
        ({"original_value_sha256": "abc"}, "original_value_sha256"),
        ({"conversation_id": ""}, "conversation_id"),
        ({"conversation_id": None}, "conversation_id"),
        ({"conversation_id": "x" * 256}, "conversation_id"),
        ({"timestamp": "yesterday"}, "timestamp"),
        ({"timestamp": 1767225600}, "timestamp"),
        ({"labels_typo": {}}, "labels_typo"),
        ({"not_in_memory": True}, "not_in_memory"),
    ],
)
def test_invalid_piece_is_rejected_naming_the_field(overrides: dict[str, Any], field: str) -> None:
    outcome = one([f.piece(**overrides)])
    assert outcome.status == "rejected"
    assert field in fields_of(outcome)
    assert MessagePiece.objects.count() == 0


@pytest.mark.parametrize("key", ["id", "role", "conversation_id", "sequence", "timestamp"])
def test_missing_required_field_is_rejected(key: str) -> None:
    item = f.piece()
    del item[key]
    outcome = one([item])
    assert outcome.status == "rejected"
    assert key in fields_of(outcome)


def test_naive_timestamp_is_rejected_in_both_shapes() -> None:
    outcome = one([f.piece(timestamp="2026-03-01T12:00:00.000001")])
    assert "naive" in outcome.errors[0].message
    outcome = one([f.legacy_piece(timestamp="2026-03-01T12:00:00")])
    assert outcome.status == "rejected"
    assert "timestamp" in fields_of(outcome)


def test_null_converted_value_is_rejected_with_pyrits_text() -> None:
    outcome = one([f.piece(converted_value=None)])
    assert outcome.errors[0].field == "converted_value"
    assert outcome.errors[0].message == "Converted prompt text is None."


def test_empty_converted_value_next_to_a_non_empty_original_is_rejected() -> None:
    outcome = one([f.piece(converted_value="")])
    assert outcome.status == "rejected"
    assert "converted_value" in fields_of(outcome)


def test_empty_original_and_converted_values_are_accepted() -> None:
    assert one([f.piece(original_value="", converted_value="")]).status == "stored"


@pytest.mark.parametrize(
    "overrides",
    [
        {"original_value": "a\x00b"},
        {"prompt_metadata": {"k": "a\x00"}},
        {"prompt_metadata": {"bad\x00key": 1}},
        {"prompt_metadata": {"x": float("nan"), "y": float("-inf")}},
    ],
)
def test_values_postgresql_cannot_hold_as_they_are_are_stored_exactly(
    overrides: dict[str, Any],
) -> None:
    piece = f.piece(**overrides)
    assert one([piece]).status == "stored"
    stored = MessagePiece.objects.get(id=piece["id"])
    for key, value in overrides.items():
        assert repr(getattr(stored, key)) == repr(value)
    assert one([piece]).status == "unchanged"


def test_identifier_with_reserved_param_is_rejected() -> None:
    bad = {"class_name": "X", "class_module": "m", "params": {"a": 1}, "stray": 2}
    outcome = one([f.piece(converter_identifiers=[bad])])
    assert outcome.status == "rejected"
    assert outcome.errors[0].field == "converter_identifiers[0]"


# --- Message rules -------------------------------------------------------------------------


def test_multi_piece_message_is_stored_whole() -> None:
    items = f.message("conv-m", 0, 3)
    outcomes = services.store_message_pieces(items)
    assert [o.status for o in outcomes] == ["stored"] * 3
    conv = Conversation.objects.get(pk="conv-m")
    assert (conv.message_count, conv.piece_count) == (1, 3)


def test_pieces_of_one_message_with_different_roles_are_all_rejected() -> None:
    items = f.message("conv-m", 0, 2)
    items[1]["role"] = "assistant"
    outcomes = services.store_message_pieces(items)
    assert [o.status for o in outcomes] == ["rejected", "rejected"]
    assert all(o.errors[0].message == INCONSISTENT_ROLES for o in outcomes)
    assert not Conversation.objects.filter(pk="conv-m").exists()


def test_one_invalid_piece_rejects_its_whole_message_but_not_other_messages() -> None:
    items = f.message("conv-m", 0, 2) + f.message("conv-m", 1, 1, role="assistant")
    items[0]["response_error"] = "exploded"
    outcomes = services.store_message_pieces(items)
    assert [o.status for o in outcomes] == ["rejected", "rejected", "stored"]
    assert "whole or not at all" in outcomes[1].errors[0].message
    assert MessagePiece.objects.count() == 1


def test_a_piece_joining_a_stored_message_must_share_its_role() -> None:
    services.store_message_pieces(f.message("conv-m", 0, 1))
    outcome = one(f.message("conv-m", 0, 1, role="assistant"))
    assert outcome.status == "rejected"
    assert INCONSISTENT_ROLES in outcome.errors[0].message
    assert one(f.message("conv-m", 0, 1)).status == "stored"
    assert Conversation.objects.get(pk="conv-m").message_count == 1


def test_conflict_in_one_piece_rejects_the_new_pieces_of_its_message() -> None:
    stored = f.piece(conversation_id="conv-m")
    one([stored])
    changed = {**stored, "original_value": "x", "converted_value": "x"}
    sibling = f.piece(conversation_id="conv-m")
    outcomes = services.store_message_pieces([changed, sibling])
    assert [o.status for o in outcomes] == ["rejected", "rejected"]
    assert outcomes[0].errors[0].code == "conflict"
    assert not MessagePiece.objects.filter(pk=sibling["id"]).exists()


def test_conflicting_id_from_another_conversation_leaves_no_empty_conversation() -> None:
    item = f.piece(conversation_id="first")
    one([item])
    outcome = one([{**item, "conversation_id": "second"}])
    assert outcome.errors[0].code == "conflict"
    assert not Conversation.objects.filter(pk="second").exists()


# --- 0.13 shape ----------------------------------------------------------------------------


def test_legacy_piece_keeps_its_legacy_fields_and_identifiers() -> None:
    target = f.identifier("OpenAIChatTarget", model_name="m")
    item = f.legacy_piece(
        prompt_target_identifier=target,
        attack_identifier=f.identifier("PromptSendingAttack"),
        targeted_harm_categories=["violence"],
        originator="attack",
    )
    assert one([item]).status == "stored"
    piece = MessagePiece.objects.select_related("target_dump").get(pk=item["id"])
    assert piece.source_shape == "0.13"
    assert piece.labels == {"operation": "op"}
    assert piece.targeted_harm_categories == ["violence"]
    assert piece.originator == "attack"
    assert piece.target_dump is not None
    assert json.loads(piece.target_dump.dump_json) == target
    conv = Conversation.objects.get(pk="legacy-conv")
    assert conv.labels == {"operation": "op"}
    assert conv.harm_categories == ["violence"]
    assert conv.target_identifier_id == target["hash"]


def test_legacy_empty_harm_list_and_empty_identifier_are_stored_as_null() -> None:
    item = f.legacy_piece(targeted_harm_categories=[], prompt_target_identifier={})
    one([item])
    piece = MessagePiece.objects.get(pk=item["id"])
    assert piece.targeted_harm_categories is None
    assert piece.target_dump_id is None


def test_legacy_truncated_identifier_keeps_its_stored_hash() -> None:
    long_prompt = "x" * 200
    full = CI("OpenAIChatTarget", "pyrit.prompt_target", {"system_prompt": long_prompt})
    truncated = full.to_dict(max_value_length=80)
    assert truncated["system_prompt"].endswith("...")
    one([f.legacy_piece(prompt_target_identifier=truncated)])
    row = ComponentIdentifier.objects.get(pk=full.hash)
    assert row.hash_is_stored is True
    assert row.params["system_prompt"] == truncated["system_prompt"]


def test_legacy_nested_scores_are_stored_and_a_conflicting_one_rejects_the_piece() -> None:
    piece_id = f.new_id()
    nested = f.legacy_score(message_piece_id=piece_id)
    item = f.legacy_piece(id=piece_id, scores=[nested])
    assert one([item]).status == "stored"
    assert Score.objects.filter(pk=nested["id"], message_piece_id=piece_id).exists()
    other = f.legacy_piece(scores=[{**nested, "score_value": "0.9"}])
    outcome = one([other])
    assert outcome.status == "rejected"
    assert outcome.errors[0].field.startswith("scores[0].")
    assert outcome.errors[0].code == "conflict"
    assert not MessagePiece.objects.filter(pk=other["id"]).exists()


def test_1x_replay_of_a_legacy_piece_compares_only_1x_fields() -> None:
    item = f.legacy_piece()
    one([item])
    projection = {k: item[k] for k in f.piece() if k in item}
    projection["timestamp"] = "2026-03-01T12:00:00Z"
    assert one([projection]).status == "unchanged"


# --- identifiers ---------------------------------------------------------------------------


def test_every_node_of_an_identifier_tree_is_stored_once_with_one_dump_per_text() -> None:
    atomic = f.attack_identifier()
    items = [f.legacy_piece(attack_identifier=atomic) for _ in range(3)]
    for i, item in enumerate(items):
        item["sequence"] = i
    services.store_message_pieces(items)
    # AtomicAttack, AttackTechnique, PromptSendingAttack, target, converter
    assert ComponentIdentifier.objects.count() == 5
    assert IdentifierDump.objects.count() == 1
    root = ComponentIdentifier.objects.get(pk=atomic["hash"])
    technique_hash = atomic["children"]["attack_technique"]["hash"]
    assert root.children == {"attack_technique": technique_hash, "seed_identifiers": []}


def test_dump_digest_is_sha256_of_canonical_json() -> None:
    dump = f.identifier(temperature=0.5)
    one([f.piece(converter_identifiers=[dump])])
    digest = hashlib.sha256(
        json.dumps(dump, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert IdentifierDump.objects.get(pk=digest).dump == dump


@pytest.mark.parametrize("value", [1, 1.0])
def test_json_params_keep_int_and_float_apart(value: float) -> None:
    dump = f.identifier("OpenAIChatTarget", temperature=value)
    other = f.identifier("OpenAIChatTarget", temperature=2 - value if value == 1 else 1)
    item = f.piece(converter_identifiers=[dump], prompt_metadata={"t": value})
    one([item])
    row = ComponentIdentifier.objects.get(pk=dump["hash"])
    assert type(row.params["temperature"]) is type(value)
    piece = MessagePiece.objects.get(pk=item["id"])
    assert type(piece.prompt_metadata["t"]) is type(value)
    assert json.loads(IdentifierDump.objects.get(identifier=row).dump_json)["temperature"] == value
    assert other["hash"] != dump["hash"] or value == 1


def test_int_and_float_params_give_two_identifier_rows() -> None:
    as_int = f.identifier("OpenAIChatTarget", temperature=1)
    as_float = f.identifier("OpenAIChatTarget", temperature=1.0)
    assert as_int["hash"] != as_float["hash"]
    services.store_message_pieces(
        [
            f.piece(converter_identifiers=[as_int], sequence=0),
            f.piece(converter_identifiers=[as_float], sequence=1),
        ]
    )
    params = [
        ComponentIdentifier.objects.get(pk=h).params["temperature"]
        for h in (as_int["hash"], as_float["hash"])
    ]
    assert [type(p) for p in params] == [int, float]


# --- conversation summaries ----------------------------------------------------------------


def test_summary_columns_follow_each_batch() -> None:
    first = [
        f.piece(
            conversation_id="c", sequence=0, role="system", original_value="sys", timestamp=f.ts(0)
        ),
        f.piece(
            conversation_id="c", sequence=1, original_value="first question", timestamp=f.ts(1)
        ),
    ]
    services.store_message_pieces(first)
    second = [
        f.piece(
            conversation_id="c",
            sequence=2,
            role="assistant",
            original_value="err",
            original_value_data_type="error",
            converted_value_data_type="error",
            response_error="blocked",
            timestamp=f.ts(5),
            converter_identifiers=[f.identifier("Base64Converter")],
        ),
        f.piece(
            conversation_id="c",
            sequence=3,
            original_value="/tmp/x.png",
            original_value_data_type="image_path",
            converted_value_data_type="image_path",
            original_value_sha256=None,
            converted_value_sha256=None,
            timestamp=f.ts(6),
        ),
    ]
    services.store_message_pieces(second)
    conv = Conversation.objects.get(pk="c")
    assert (conv.message_count, conv.piece_count) == (4, 4)
    assert conv.first_timestamp is not None
    assert conv.last_timestamp is not None
    assert conv.first_timestamp.isoformat() == "2026-03-01T12:00:00+00:00"
    assert conv.last_timestamp.isoformat() == "2026-03-01T12:00:06+00:00"
    assert conv.data_types == ["error", "image_path", "text"]
    assert conv.converter_classes == ["Base64Converter"]
    assert conv.has_error is True
    assert conv.preview == "first question"
    assert conv.declared is False


def test_an_earlier_user_turn_arriving_late_takes_over_the_preview() -> None:
    one([f.piece(conversation_id="c", sequence=2, original_value="later", timestamp=f.ts(9))])
    one([f.piece(conversation_id="c", sequence=0, original_value="earliest", timestamp=f.ts(1))])
    assert Conversation.objects.get(pk="c").preview == "earliest"


# --- query counts --------------------------------------------------------------------------


def batch(n: int, tag: str) -> list[dict[str, Any]]:
    converter = [f.identifier()]
    return [
        f.piece(
            conversation_id=f"{tag}-{i % 7}",
            sequence=i,
            role="user" if i % 2 == 0 else "assistant",
            converter_identifiers=converter,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("size", [2, 200])
def test_piece_batch_costs_the_same_queries_whatever_its_size(
    size: int, django_assert_num_queries: Any
) -> None:
    items = batch(size, f"q{size}")
    Operation.objects.create(name=UNASSIGNED)
    # INSERT conversation stubs (ON CONFLICT DO NOTHING); SELECT conversations FOR UPDATE (on
    # PostgreSQL, one INSERT ... ON CONFLICT DO UPDATE ... RETURNING does both); SELECT stored
    # pieces (ids UNION conversation+sequence); SELECT the default operation; SELECT attack
    # results naming the new conversations; INSERT identifiers; INSERT identifier dumps;
    # INSERT identifier operations (one statement on PostgreSQL); INSERT (COPY on PostgreSQL)
    # pieces; INSERT piece converters; UPDATE the conversations' summaries and operations (one
    # executemany). The service runs inside the caller's transaction: no savepoint. On
    # PostgreSQL a couple of pieces go in with their identifiers and converters in one
    # statement (two fewer), a large batch with COPY.
    expected = (6 if size <= 16 else 8) if ON_POSTGRESQL else 11
    with django_assert_num_queries(expected):
        outcomes = services.store_message_pieces(items)
    assert {o.status for o in outcomes} == {"stored"}
    # INSERT stubs; SELECT conversations (one statement on PostgreSQL); SELECT stored pieces;
    # SELECT their converters (nothing to write on a replay).
    with django_assert_num_queries(3 if ON_POSTGRESQL else 4):
        outcomes = services.store_message_pieces(items)
    assert {o.status for o in outcomes} == {"unchanged"}


@pytest.mark.parametrize("size", [2, 100])
def test_conversation_and_attack_result_batches_cost_constant_queries(
    size: int, django_assert_num_queries: Any
) -> None:
    convs = [f.conversation(conversation_id=f"k{size}-{i}") for i in range(size)]
    Operation.objects.create(name=UNASSIGNED)
    # INSERT stubs; SELECT FOR UPDATE (one statement on PostgreSQL); SELECT the default
    # operation; SELECT attack results naming them; INSERT identifiers; INSERT dumps; INSERT
    # identifier operations (one statement on PostgreSQL); UPDATE conversations with their
    # operations.
    with django_assert_num_queries(5 if ON_POSTGRESQL else 8):
        services.store_conversations(convs)
    results = [
        f.attack_result(
            conversation_id=f"k{size}-{i}",
            last_response=f.piece(conversation_id=f"k{size}-{i}"),
            last_score=f.score(),
            related_conversations=[
                {"conversation_id": "adv", "conversation_type": "adversarial", "description": None}
            ],
        )
        for i in range(size)
    ]
    # Last responses: INSERT stubs, SELECT conversations, SELECT pieces, SELECT
    # the default operation, INSERT pieces, UPDATE summaries; last scores: SELECT scores,
    # INSERT identifiers, INSERT dumps, INSERT identifier operations, INSERT scores; results:
    # INSERT stubs, SELECT conversations, SELECT related conversations, SELECT results, SELECT
    # the labelled operation, create it (SELECT, SAVEPOINT, INSERT, audit event, RELEASE), INSERT
    # identifiers, INSERT dumps, INSERT identifier operations, INSERT results, INSERT
    # references, UPDATE summaries. The results' label claims the conversations placed in the
    # default operation: UPDATE their operation, UPDATE their scores, SELECT the identifiers
    # they use (target, piece identifiers, converters), one SELECT per identifier tree level,
    # INSERT identifier operations. On PostgreSQL the last responses' stubs are inserted and
    # locked in one statement, and each INSERT identifiers, dumps, identifier operations
    # triple is one statement. The dashboard's tallies (scoring.tallies.retally, through
    # memory.hooks): SELECT the results of the relabelled conversations, SELECT the results,
    # INSERT ... ON CONFLICT the all-time and the daily cells, INSERT the ledger.
    with django_assert_num_queries(34 if ON_POSTGRESQL else 39):
        outcomes = services.store_attack_results(results)
    assert {o.status for o in outcomes} == {"stored"}


# --- conversations -------------------------------------------------------------------------


def test_conversation_is_stored_replayed_and_conflicts() -> None:
    item = f.conversation(retries=[{"sequence": 1, "reason": "json_parsing"}])
    assert services.store_conversations([item])[0].status == "stored"
    conv = Conversation.objects.get(pk="conv-1")
    assert conv.declared
    assert conv.retries == [{"sequence": 1, "reason": "json_parsing"}]
    assert services.store_conversations([item])[0].status == "unchanged"
    [outcome] = services.store_conversations([{**item, "retries": []}])
    assert outcome.status == "rejected"
    assert outcome.errors[0].code == "conflict"


def test_declaring_a_conversation_created_by_its_pieces_fills_it_in() -> None:
    one([f.piece()])
    target = f.identifier("OpenAIChatTarget", model_name="m", temperature=0.7)
    assert services.store_conversations([f.conversation(target_identifier=target)])[0].ok
    conv = Conversation.objects.get(pk="conv-1")
    assert conv.declared
    assert conv.target_identifier_id == target["hash"]
    assert conv.piece_count == 1


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"retries": [{"sequence": 1, "reason": "bored"}]}, "retries[0].reason"),
        ({"retries": [{"sequence": "1", "reason": "json_parsing"}]}, "retries[0].sequence"),
        ({"labels": {}}, "labels"),
        ({"conversation_id": 3}, "conversation_id"),
        ({"target_identifier": "OpenAI"}, "target_identifier"),
    ],
)
def test_invalid_conversation_is_rejected(overrides: dict[str, Any], field: str) -> None:
    [outcome] = services.store_conversations([f.conversation(**overrides)])
    assert outcome.status == "rejected"
    assert field in fields_of(outcome)


# --- attack results ------------------------------------------------------------------------


def test_attack_result_stores_its_last_response_score_and_references() -> None:
    last = f.piece(role="assistant", sequence=1)
    score = f.score(message_piece_id=last["id"])
    related = [
        {"conversation_id": "p", "conversation_type": "pruned", "description": "pruned"},
        {"conversation_id": "a", "conversation_type": "adversarial", "description": None},
        {"conversation_id": "p", "conversation_type": "score", "description": "dup id"},
    ]
    item = f.attack_result(last_response=last, last_score=score, related_conversations=related)
    [outcome] = services.store_attack_results([item])
    assert outcome.status == "stored"
    result = AttackResult.objects.get(pk=item["attack_result_id"])
    assert str(result.last_response_id) == last["id"]
    assert str(result.last_score_id) == score["id"]
    assert result.attack_class == "PromptSendingAttack"
    assert result.target_class == "OpenAIChatTarget"
    assert result.converter_classes == ["ROT13Converter"]
    assert result.objective_sha256 == hashlib.sha256(b"do the thing").hexdigest()
    assert MessagePiece.objects.filter(pk=last["id"]).exists()
    assert Score.objects.filter(pk=score["id"]).exists()
    # PyRIT's set semantics: one reference per conversation id, the first wins.
    refs = ConversationReference.objects.filter(attack_result=result).order_by("pk")
    assert [(r.conversation_id, r.conversation_type) for r in refs] == [
        ("p", "pruned"),
        ("a", "adversarial"),
    ]
    assert services.store_attack_results([item])[0].status == "unchanged"


def test_attack_result_conflicts_and_related_order_does_not_matter() -> None:
    related = [
        {"conversation_id": "a", "conversation_type": "adversarial", "description": None},
        {"conversation_id": "b", "conversation_type": "pruned", "description": None},
    ]
    item = f.attack_result(related_conversations=related)
    services.store_attack_results([item])
    reordered = {**item, "related_conversations": related[::-1]}
    assert services.store_attack_results([reordered])[0].status == "unchanged"
    [outcome] = services.store_attack_results([{**item, "outcome": "failure"}])
    assert outcome.status == "rejected"
    assert outcome.errors[0].code == "conflict"
    assert outcome.errors[0].field == "outcome"


def test_conversation_outcome_follows_the_newest_result_and_labels_accumulate() -> None:
    newer = f.attack_result(outcome="failure", timestamp=f.ts(50), labels={"a": "1"})
    older = f.attack_result(outcome="success", timestamp=f.ts(10), labels={"b": "2"})
    services.store_attack_results([newer])
    services.store_attack_results([older])
    conv = Conversation.objects.get(pk="conv-1")
    assert conv.outcome == "failure"
    assert conv.attack_class == "PromptSendingAttack"
    assert conv.labels == {"a": "1", "b": "2"}
    newest = f.attack_result(outcome="error", timestamp=f.ts(90), targeted_harm_categories=["x"])
    services.store_attack_results([newest])
    conv.refresh_from_db()
    assert (conv.outcome, conv.harm_categories) == ("error", ["x"])


def test_attack_result_with_invalid_embedded_piece_is_rejected_with_prefixed_field() -> None:
    item = f.attack_result(last_response=f.piece(role="wizard"))
    [outcome] = services.store_attack_results([item])
    assert outcome.status == "rejected"
    assert "last_response.role" in fields_of(outcome)
    assert not AttackResult.objects.exists()


def test_attack_result_whose_last_response_conflicts_is_rejected() -> None:
    last = f.piece()
    one([last])
    item = f.attack_result(last_response={**last, "original_value": "x", "converted_value": "x"})
    [outcome] = services.store_attack_results([item])
    assert outcome.status == "rejected"
    assert outcome.errors[0].code == "conflict"
    assert (outcome.errors[0].field or "").startswith("last_response.")


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"outcome": "victory"}, "outcome"),
        ({"objective": None}, "objective"),
        ({"attack_result_id": "x"}, "attack_result_id"),
        ({"timestamp": "2026-01-01T00:00:00"}, "timestamp"),
        ({"executed_turns": 1.5}, "executed_turns"),
        ({"labels": {"k": 1}}, "labels.k"),
        ({"retry_events": [{"surprise": 1}]}, "retry_events[0].surprise"),
        (
            {"related_conversations": [{"conversation_id": "a", "conversation_type": "other"}]},
            "related_conversations[0].conversation_type",
        ),
        ({"extra": 1}, "extra"),
    ],
)
def test_invalid_attack_result_is_rejected(overrides: dict[str, Any], field: str) -> None:
    [outcome] = services.store_attack_results([f.attack_result(**overrides)])
    assert outcome.status == "rejected"
    assert field in fields_of(outcome)


def test_legacy_attack_result_shape_is_accepted() -> None:
    item = f.attack_result()
    legacy = {
        k: item[k]
        for k in (
            "conversation_id",
            "objective",
            "attack_result_id",
            "atomic_attack_identifier",
            "last_response",
            "last_score",
            "executed_turns",
            "execution_time_ms",
            "outcome",
            "outcome_reason",
            "related_conversations",
            "metadata",
        )
    }
    assert services.store_attack_results([legacy])[0].status == "stored"
    result = AttackResult.objects.get(pk=item["attack_result_id"])
    assert (result.source_shape, result.timestamp) == ("0.13", None)


# --- media ---------------------------------------------------------------------------------


def test_link_media_links_pieces_by_sha256_and_new_pieces_link_on_arrival() -> None:
    data = b"\x89PNG\r\n\x1a\n" + b"0" * 20
    sha = hashlib.sha256(data).hexdigest()
    image = {
        "original_value": "/attacker/img.png",
        "converted_value": "/attacker/img.png",
        "original_value_data_type": "image_path",
        "converted_value_data_type": "image_path",
        "original_value_sha256": sha,
        "converted_value_sha256": sha,
    }
    before = f.piece(**image)
    one([before])
    blob = store_media_bytes(data, filename="img.png")
    assert services.link_media(blob) == 2
    linked = MessagePiece.objects.get(pk=before["id"])
    assert (linked.original_media_id, linked.converted_media_id) == (sha, sha)
    after = f.piece(conversation_id="later", **image)
    one([after])
    assert MessagePiece.objects.get(pk=after["id"]).original_media_id == sha


def test_text_piece_with_the_same_sha_is_not_linked() -> None:
    data = b"plain words"
    sha = hashlib.sha256(data).hexdigest()
    one([f.piece(original_value="plain words", original_value_sha256=sha)])
    assert services.link_media(store_media_bytes(data, filename="x.txt")) == 0


def test_unique_ids_per_test() -> None:
    # Guard for the factories: fresh ids each call, so tests never collide.
    assert len({f.piece()["id"] for _ in range(5)}) == 5
    assert uuid.UUID(f.new_id())
