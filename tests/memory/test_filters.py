"""ConversationFilterSet and AttackResultFilterSet: every parameter, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.http import QueryDict
from django.utils import timezone

from memory.filters import AttackResultFilterSet, ConversationFilterSet
from memory.models import Conversation, MessagePiece
from memory.querysets import attack_results_for_list, conversations_for_list
from redteam.common.access import Scope
from tests.memory.row_factories import (
    PieceSpec,
    core_atomic_attack,
    core_converter,
    core_target,
    make_attack_result,
    make_conversation,
    text_turns,
)
from tests.scoring.row_factories import make_score

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

pytestmark = pytest.mark.django_db


def _ids(params: str) -> set[str]:
    fs = ConversationFilterSet(
        QueryDict(params), queryset=conversations_for_list(EVERYTHING), scope=EVERYTHING
    )
    assert fs.is_valid(), fs.errors
    return {c.conversation_id for c in fs.qs}


def _result_ids(params: str) -> set[str]:
    fs = AttackResultFilterSet(
        QueryDict(params), queryset=attack_results_for_list(EVERYTHING), scope=EVERYTHING
    )
    assert fs.is_valid(), fs.errors
    return {str(r.pk) for r in fs.qs}


@pytest.fixture
def corpus() -> dict[str, Any]:
    """Three conversations that differ in every filtered column."""
    now = timezone.now()
    a = make_conversation(
        [[PieceSpec("how to pick a lock", converters=[core_converter("ROT13Converter")])]],
        conversation_id="conv-a",
        target=core_target("OpenAIChatTarget"),
        start=now - timedelta(days=10),
    )
    ra = make_attack_result(
        a,
        outcome="success",
        labels={"operation": "op1", "operator": "alice", "team.name": "red"},
        harm_categories=["violence", "illegal"],
        atomic=core_atomic_attack(converters=[core_converter("ROT13Converter")]),
    )
    b = make_conversation(
        [[PieceSpec("draw a cat")], [PieceSpec("/tmp/x.png", data_type="image_path")]],
        conversation_id="conv-b",
        target=core_target("AzureMLChatTarget"),
        start=now - timedelta(days=1),
    )
    rb = make_attack_result(
        b,
        outcome="failure",
        labels={"operation": "op2", "operator": "bob"},
        harm_categories=["hate_speech"],
        atomic=core_atomic_attack("RedTeamingAttack", target=core_target("AzureMLChatTarget")),
    )
    c = make_conversation(
        [[PieceSpec("boom")], [PieceSpec("failed", role="assistant", response_error="blocked")]],
        conversation_id="conv-c",
        start=now,
        labels={"operation": "op1", "operator": "bob"},
    )
    make_score(piece=b.pieces.get(sequence=0), value="False")
    return {"a": a, "b": b, "c": c, "ra": ra, "rb": rb, "now": now}


@pytest.mark.usefixtures("corpus")
def test_no_filters_lists_every_conversation_with_pieces() -> None:
    Conversation.objects.create(conversation_id="declared-only", declared=True)
    assert _ids("") == {"conv-a", "conv-b", "conv-c"}


@pytest.mark.usefixtures("corpus")
def test_label_filters_and_across_keys_or_within_a_key() -> None:
    assert _ids("label=operation:op1") == {"conv-a", "conv-c"}
    assert _ids("label=operation:op1&label=operator:bob") == {"conv-c"}
    assert _ids("label=operator:alice&label=operator:bob") == {"conv-a", "conv-b", "conv-c"}
    assert _ids("label=team.name:red") == {"conv-a"}
    assert _ids("label=operation:nope") == set()


@pytest.mark.usefixtures("corpus")
def test_operation_and_operator_are_label_shortcuts() -> None:
    assert _ids("operation=op2") == {"conv-b"}
    assert _ids("operator=bob") == {"conv-b", "conv-c"}


def test_target_by_class_name_or_hash(corpus: dict[str, Any]) -> None:
    assert _ids("target=AzureMLChatTarget") == {"conv-b"}
    assert _ids(f"target={corpus['a'].target_identifier_id}") == {"conv-a", "conv-c"}


@pytest.mark.usefixtures("corpus")
def test_attack_converter_harm_outcome() -> None:
    assert _ids("attack=RedTeamingAttack") == {"conv-b"}
    assert _ids("converter=ROT13Converter") == {"conv-a"}
    assert _ids("harm_category=hate_speech&harm_category=violence") == {"conv-a", "conv-b"}
    assert _ids("outcome=success") == {"conv-a"}
    assert _ids("outcome=success&outcome=failure") == {"conv-a", "conv-b"}


@pytest.mark.usefixtures("corpus")
def test_data_type_error_and_score_value() -> None:
    assert _ids("data_type=image_path") == {"conv-b"}
    assert _ids("has_error=true") == {"conv-c"}
    assert _ids("has_error=false") == {"conv-a", "conv-b"}
    assert _ids("score_value=false") == {"conv-b"}


def test_date_bounds_are_inclusive_and_accept_dates(corpus: dict[str, Any]) -> None:
    today = corpus["now"].date().isoformat()
    assert _ids(f"after={today}") == {"conv-c"}
    five_days_ago = (corpus["now"] - timedelta(days=5)).isoformat()
    assert _ids(f"before={five_days_ago}") == {"conv-a"}


@pytest.mark.usefixtures("corpus")
def test_full_text_search_matches_original_and_converted_values() -> None:
    assert _ids("q=lock") == {"conv-a"}
    assert _ids("q=cat") == {"conv-b"}
    assert _ids("q=absent") == set()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ("label=novalue", "label"),
        ("label=bad key:x", "label"),
        ("outcome=won", "outcome"),
        ("data_type=pdf", "data_type"),
        ("after=yesterday", "after"),
        ("has_error=maybe", "has_error"),
    ],
)
def test_bad_values_are_form_errors_naming_the_parameter(params: str, field: str) -> None:
    fs = ConversationFilterSet(
        QueryDict(params), queryset=conversations_for_list(EVERYTHING), scope=EVERYTHING
    )
    assert not fs.is_valid()
    assert field in fs.errors


def test_attack_result_filters(corpus: dict[str, Any]) -> None:
    ra, rb = str(corpus["ra"].pk), str(corpus["rb"].pk)
    assert _result_ids("outcome=failure") == {rb}
    assert _result_ids("attack=PromptSendingAttack") == {ra}
    assert _result_ids("target=AzureMLChatTarget") == {rb}
    assert _result_ids(f"target={corpus['ra'].target_hash}") == {ra}
    assert _result_ids("converter=ROT13Converter") == {ra}
    assert _result_ids("has_converters=false") == {rb}
    assert _result_ids("harm_category=illegal") == {ra}
    assert _result_ids("label=operator:bob") == {rb}
    assert _result_ids("operation=op1") == {ra}
    assert _result_ids("objective=PICK") == {ra, rb}
    assert _result_ids(f"conversation_id={corpus['b'].pk}") == {rb}


def test_many_conversations_filter_without_error() -> None:
    for i in range(5):
        make_conversation(text_turns(2, prefix=f"c{i} "), labels={"operation": f"op{i % 2}"})
    assert len(_ids("label=operation:op1")) == 2


def test_related_conversations_are_found_by_the_labels_of_the_result_referencing_them(
    fixtures_dir: Any,
) -> None:
    from memory.filters import MessagePieceFilterSet
    from redteam.site.pyrit_sqlite import import_pyrit_memory

    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite", media=False)
    main, pruned, adversarial = (
        "5d0d85c5-3efa-4f64-b261-64864804d9d8",
        "8a03ed75-c712-4a63-9a83-1c16efdefbd6",
        "1f62f162-ad68-4382-ba17-e394db9c67e2",
    )
    # The result of `main` is labelled review=manual and references the other two.
    assert _ids("label=review:manual") == {main, pruned, adversarial}
    # The red-teaming chat a581... carries no labels: found through 8a03's result.
    assert "a5810299-e1e5-44df-bd60-6214d2336f36" in _ids("operation=fixture_op_1")
    # Their stored labels are not changed.
    assert "review" not in Conversation.objects.get(pk=adversarial).labels
    pieces = MessagePieceFilterSet(
        QueryDict("label=review:manual"), queryset=MessagePiece.objects.all(), scope=EVERYTHING
    )
    assert pieces.is_valid(), pieces.errors
    assert {p.conversation_id for p in pieces.qs} == {main, pruned, adversarial}
