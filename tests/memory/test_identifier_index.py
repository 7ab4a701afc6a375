"""The identifier index: names people know, search, kind filter, scope, constant queries."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from memory.models import ComponentIdentifier, ScorableContent, Score
from tests.memory.row_factories import core_scorer, core_target, make_conversation
from tests.memory.two_operations import TwoOperations, build_two_operations
from tests.scoring.row_factories import make_score

pytestmark = pytest.mark.django_db
INDEX = "memory:identifier_index"


def _hashes(client: Client, query: str = "") -> set[str]:
    response = client.get(reverse(INDEX) + query)
    assert response.status_code == 200
    return {i.hash for i in response.context["rows"]}


def _judge() -> Any:
    return core_target(model_name="judge-deploy", endpoint="https://judge.example.invalid/v1")


def test_ingested_identifiers_carry_name_and_kind(reader_client: Client) -> None:
    conversation = make_conversation(target=_judge())
    make_score(piece=conversation.pieces.first())
    target = ComponentIdentifier.objects.get(hash=conversation.target_identifier_id)
    assert target.display_name == "OpenAIChatTarget · judge-deploy"
    assert target.kind == "target"
    assert set(ComponentIdentifier.objects.values_list("kind", flat=True)) == {"target", "scorer"}


def test_index_lists_names_with_short_hashes_and_links(reader_client: Client) -> None:
    conversation = make_conversation(target=_judge())
    target = conversation.target_identifier_id
    html = reader_client.get(reverse(INDEX)).content.decode()
    assert "OpenAIChatTarget · judge-deploy" in html
    assert target[:8] in html
    assert reverse("memory:identifier_detail", args=[target]) in html
    assert reverse("memory:identifier_diff") in html


def test_nav_links_to_the_index(reader_client: Client) -> None:
    html = reader_client.get(reverse("memory:conversation_list")).content.decode()
    assert f'href="{reverse(INDEX)}"' in html


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("?q=judge-deploy", {"judge"}),  # a model name (display name and params)
        ("?q=JUDGE.example", {"judge"}),  # a param value, case-insensitive
        ("?q=OpenAIChat", {"judge", "other"}),  # class name
        ("?q=nothing-like-this", set()),
        ("?kind=target", {"judge", "other"}),
        ("?kind=scorer", {"scorer"}),
        ("?kind=converter", set()),
        ("?kind=target&q=other-model", {"other"}),
    ],
)
def test_search_and_kind(reader_client: Client, query: str, found: set[str]) -> None:
    judge = make_conversation(target=_judge())
    other = make_conversation(target=core_target(model_name="other-model"))
    score = make_score(piece=judge.pieces.first())
    names = {
        judge.target_identifier_id: "judge",
        other.target_identifier_id: "other",
        score.scorer_identifier_id: "scorer",
    }
    assert {names[h] for h in _hashes(reader_client, query)} == found


def test_hash_prefix_search(reader_client: Client) -> None:
    target = make_conversation(target=_judge()).target_identifier_id
    make_conversation(target=core_target(model_name="other-model"))
    assert _hashes(reader_client, f"?q={target[:10]}") == {target}


def test_bad_kind_is_400(reader_client: Client) -> None:
    assert reader_client.get(reverse(INDEX) + "?kind=planet").status_code == 400
    assert reader_client.get(reverse(INDEX) + "?cursor=garbage").status_code == 400


def test_hostile_names_are_escaped_and_bounded(reader_client: Client) -> None:
    hostile = "<script>alert(1)</script>" + "w" * 5000
    make_conversation(target=core_target(model_name=hostile))
    html = reader_client.get(reverse(INDEX)).content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "w" * 300 not in html


def test_another_operations_identifiers_are_never_listed() -> None:
    ops: TwoOperations = build_two_operations()
    member = Client()
    member.force_login(ops.member)
    listed = _hashes(member)
    names = set(
        ComponentIdentifier.objects.filter(hash__in=listed).values_list("class_name", flat=True)
    )
    assert "OpenAIChatTarget" in names  # the shared target
    assert "DualUseConverter" in names  # alpha's scorer
    assert "BravoTarget" not in names
    assert "BravoOnlyConverter" not in names
    assert _hashes(member, "?q=BravoTarget") == set()
    assert _hashes(member, "?q=BravoOnly") == set()
    # The shared target counts alpha's use only.
    rows = member.get(reverse(INDEX) + "?kind=target").context["rows"]
    assert {r.operations for r in rows} == {1}


@pytest.mark.parametrize("n", [3, 30])
def test_index_costs_constant_queries(
    reader_client: Client, reader: User, django_assert_num_queries: Any, n: int
) -> None:
    for i in range(n):
        make_conversation(target=core_target(model_name=f"model-{i}"))
    reader_client.get(reverse(INDEX))  # warm the session
    with django_assert_num_queries(4):  # session, user, memberships, one page
        response = reader_client.get(reverse(INDEX) + "?kind=target&q=model")
    assert len(response.context["rows"]) == n


# --- names on the memory pages ------------------------------------------------------------------


def test_conversation_list_names_the_target(reader_client: Client) -> None:
    conversation = make_conversation(target=_judge())
    html = reader_client.get(reverse("memory:conversation_list")).content.decode()
    assert "OpenAIChatTarget · judge-deploy" in html
    assert conversation.target_identifier_id[:8] in html


@pytest.mark.parametrize("n", [3, 30])
def test_conversation_list_names_cost_no_query_per_row(
    reader_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    for i in range(n):
        make_conversation(target=core_target(model_name=f"model-{i}"))
    reader_client.get(reverse("memory:conversation_list"))
    # session, user, memberships, class-name suggestions, one page (targets joined).
    with django_assert_num_queries(5):
        html = reader_client.get(reverse("memory:conversation_list")).content.decode()
    assert html.count(">OpenAIChatTarget · model-") == n


def test_identifier_pages_show_the_name(reader_client: Client) -> None:
    a = make_conversation(target=_judge()).target_identifier_id
    b = make_conversation(target=core_target(model_name="other-model")).target_identifier_id
    detail = reader_client.get(reverse("memory:identifier_detail", args=[a])).content.decode()
    assert "<h1>OpenAIChatTarget · judge-deploy" in detail
    assert f'href="{reverse(INDEX)}?kind=target"' in detail
    diff = reader_client.get(reverse("memory:identifier_diff") + f"?a={a}&b={b}").content.decode()
    assert "OpenAIChatTarget · judge-deploy" in diff
    assert "OpenAIChatTarget · other-model" in diff


def test_scored_content_names_the_scorer(reader_client: Client) -> None:
    content = ScorableContent.objects.create(
        id=uuid.uuid4(), value="loose text", value_sha256="0" * 64, data_type="text"
    )
    score = make_score(scorer=core_scorer("SelfAskRefusalScorer", model_name="gpt-4o-mini"))
    Score.objects.filter(pk=score.pk).update(loose_content=content)
    html = reader_client.get(
        reverse("memory:scored_content_detail", args=[content.pk])
    ).content.decode()
    assert "SelfAskRefusalScorer · gpt-4o-mini" in html
    assert str(score.scorer_identifier_id)[:8] in html


# --- the data migration ---------------------------------------------------------------------------

BEFORE_NAMES = ("memory", "0011_media_link_indexes")
AFTER_NAMES = ("memory", "0012_identifier_display_name_and_kind")


def test_migration_names_the_identifiers_already_stored(transactional_db: Any) -> None:
    runner = MigrationExecutor(connection)
    runner.migrate([BEFORE_NAMES])
    try:
        old = runner.loader.project_state([BEFORE_NAMES]).apps.get_model(
            "memory", "ComponentIdentifier"
        )
        old.objects.create(
            hash="a" * 64,
            class_name="OpenAIChatTarget",
            class_module="pyrit.prompt_target.openai.openai_chat_target",
            params={"model_name": "judge-deploy", "underlying_model_name": "gpt-4o"},
        )
        old.objects.create(hash="b" * 64, class_name="Base64Converter", class_module="m")
        runner = MigrationExecutor(connection)
        runner.loader.build_graph()
        runner.migrate([AFTER_NAMES])
        new = runner.loader.project_state([AFTER_NAMES]).apps.get_model(
            "memory", "ComponentIdentifier"
        )
        assert sorted(new.objects.values_list("display_name", "kind")) == [
            ("Base64Converter", "converter"),
            ("OpenAIChatTarget · gpt-4o (deployment judge-deploy)", "target"),
        ]
    finally:
        runner = MigrationExecutor(connection)
        runner.loader.build_graph()
        runner.migrate(runner.loader.graph.leaf_nodes())
