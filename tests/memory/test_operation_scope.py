"""Memory pages answer a member of one operation with that operation's rows only.

Two operations share a target, an objective, search words and an image, and one holds rows
that point into the other (tests/memory/two_operations.py). The member of `alpha` gets 404
for every page of a `bravo` row (never a 403 that would confirm it exists), and lists,
searches, usage lists, counts and filter suggestions leave bravo out.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.models import AttackResult
from seeds.models import Seed
from tests.memory.row_factories import (
    PieceSpec,
    core_converter,
    core_target,
    make_attack_result,
    make_conversation,
)
from tests.memory.two_operations import (
    BRAVO_SCORE_VALUE,
    BRAVO_WORDS,
    SHARED_WORDS,
    TwoOperations,
    build_two_operations,
)
from tests.seeds.factories import make_dataset

pytestmark = pytest.mark.django_db
LIST = "memory:conversation_list"


@pytest.fixture
def ops() -> TwoOperations:
    return build_two_operations()


@pytest.fixture
def member(ops: TwoOperations) -> Client:
    """A browser session of alpha's reviewer."""
    client = Client()
    client.force_login(ops.member)
    return client


def _listed(client: Client, query: str = "") -> set[str]:
    response = client.get(reverse(LIST) + query)
    assert response.status_code == 200
    return {c.conversation_id for c in response.context["rows"]}


# --- conversation list, search, filters --------------------------------------------------------


def test_conversation_list_and_search_show_only_the_members_operation(
    ops: TwoOperations, member: Client
) -> None:
    alpha = ops.alpha_conversation.conversation_id
    assert _listed(member) == {alpha}
    # Both operations hold the words; the search finds alpha's conversation only.
    assert _listed(member, f"?q={SHARED_WORDS}") == {alpha}
    assert _listed(member, f"?q={BRAVO_WORDS}") == set()
    html = member.get(reverse(LIST)).content.decode()
    assert BRAVO_WORDS not in html
    assert ops.bravo_conversation.conversation_id not in html


def test_filters_never_match_through_another_operations_rows(
    ops: TwoOperations, member: Client
) -> None:
    # Bravo's result (labelled bravo_key) names alpha's conversation as related, and bravo
    # scored one of alpha's pieces: neither answers a filter for alpha's member.
    assert _listed(member, "?label=bravo_key:x") == set()
    assert _listed(member, f"?score_value={BRAVO_SCORE_VALUE}") == set()
    assert _listed(member, "?harm_category=bravo_harm") == set()
    assert _listed(member, "?converter=BravoOnlyConverter") == set()
    # The same filters do match for someone who reads bravo.
    boss = User.objects.create_superuser("boss", password="pw-boss-1")
    superuser = Client()
    superuser.force_login(boss)
    alpha = ops.alpha_conversation.conversation_id
    assert alpha in _listed(superuser, "?label=bravo_key:x")
    assert _listed(superuser, f"?score_value={BRAVO_SCORE_VALUE}") == {alpha}


def test_filter_suggestions_leave_out_the_other_operations_classes(
    ops: TwoOperations, member: Client
) -> None:
    names = member.get(reverse(LIST)).context["class_names"]
    assert "OpenAIChatTarget" in names  # the shared target
    assert "DualUseConverter" in names  # alpha's scorer
    assert "BravoOnlyConverter" not in names
    assert "BravoTarget" not in names


@pytest.mark.parametrize("n", [3, 30])
def test_scoped_list_query_count_is_constant(
    ops: TwoOperations, member: Client, django_assert_num_queries: Any, n: int
) -> None:
    start = timezone.now() - timedelta(days=1)
    for i in range(n):
        for operation in ("alpha", "bravo"):
            conv = make_conversation(
                2, start=start + timedelta(minutes=i), labels={"operation": operation}
            )
            make_attack_result(conv)
    # session, user, memberships, one page of conversations (joined with the target
    # identifier), class-name suggestions for the filter inputs.
    with django_assert_num_queries(5):
        response = member.get(reverse(LIST) + f"?q=turn&label=operation:alpha&size={n + 5}")
    assert len(response.context["rows"]) == n


# --- identifiers ----------------------------------------------------------------------------


def test_shared_identifier_page_lists_only_the_members_uses(
    ops: TwoOperations, member: Client
) -> None:
    response = member.get(reverse("memory:identifier_detail", args=[ops.shared_target]))
    assert response.status_code == 200
    context = response.context
    assert [c.conversation_id for c in context["conversations"]] == [
        ops.alpha_conversation.conversation_id
    ]
    assert [r.pk for r in context["attack_results"]] == [ops.alpha_result.pk]
    # Parents: alpha's attack tree holds the target; bravo's holds BravoTarget instead, but
    # a parent only bravo uses would be left out all the same.
    assert all(p.class_name != "BravoOnlyConverter" for p in context["parents"])
    html = response.content.decode()
    assert ops.bravo_conversation.conversation_id not in html
    assert "Conversation target (1)" in html


def test_identifier_used_elsewhere_only_is_a_404_on_its_page_and_in_a_diff(
    ops: TwoOperations, member: Client
) -> None:
    for hidden in (ops.bravo_converter, ops.bravo_target):
        assert member.get(reverse("memory:identifier_detail", args=[hidden])).status_code == 404
        diff = member.get(reverse("memory:identifier_diff"), {"a": ops.shared_target, "b": hidden})
        assert diff.status_code == 404
    both = member.get(
        reverse("memory:identifier_diff"), {"a": ops.shared_target, "b": ops.dual_use}
    )
    assert both.status_code == 200


def test_dual_use_identifier_shows_alpha_uses_not_bravo_converter_uses(
    ops: TwoOperations, member: Client
) -> None:
    response = member.get(reverse("memory:identifier_detail", args=[ops.dual_use]))
    assert response.status_code == 200
    assert response.context["converter_uses"] == []  # bravo's pieces use it as a converter
    assert len(response.context["scores"]) == 1  # alpha's score by it


@pytest.mark.parametrize("n", [3, 30])
def test_scoped_identifier_page_query_count_is_constant(
    ops: TwoOperations, member: Client, django_assert_num_queries: Any, n: int
) -> None:
    target = core_target()
    for i in range(n):
        for operation in ("alpha", "bravo"):
            conv = make_conversation(
                [[PieceSpec("x", converters=[core_converter(seed=i)])]],
                target=target,
                labels={"operation": operation},
            )
            make_attack_result(conv)
    # session, user, memberships; identifier; dumps; parents; conversations; attack
    # results; converter uses; 0.13 piece uses; scores.
    with django_assert_num_queries(11):
        response = member.get(reverse("memory:identifier_detail", args=[target.hash]))
    assert len(response.context["conversations"]) == min(n + 1, 20)


# --- media ----------------------------------------------------------------------------------


def test_media_is_served_only_through_a_visible_piece_or_a_seed(
    ops: TwoOperations, member: Client
) -> None:
    def status(blob: Any) -> int:
        return member.get(reverse("memory:media", args=[blob.sha256])).status_code

    assert status(ops.shared_media) == 200
    assert status(ops.seed_media) == 200  # seeds are the shared library
    assert status(ops.bravo_media) == 404
    assert status(ops.orphan_media) == 404
    boss = User.objects.create_superuser("boss", password="pw-boss-1")
    member.force_login(boss)
    assert status(ops.bravo_media) == 200
    assert status(ops.orphan_media) == 200


# --- scenarios and scored content ---------------------------------------------------------------


def test_scenario_pages_show_the_members_scenario_and_its_visible_results(
    ops: TwoOperations, member: Client
) -> None:
    listing = member.get(reverse("memory:scenario_list"))
    assert [row["s"].pk for row in listing.context["rows"]] == [ops.alpha_scenario.pk]
    # Alpha's scenario names bravo's result: it is neither counted nor listed.
    detail = member.get(reverse("memory:scenario_detail", args=[ops.alpha_scenario.pk]))
    assert detail.status_code == 200
    assert detail.context["total"].total == 1
    shown = [r.pk for a in detail.context["attacks"] for r in a.results]
    assert shown == [ops.alpha_result.pk]
    assert str(ops.bravo_result.pk) not in detail.content.decode()
    other = member.get(reverse("memory:scenario_detail", args=[ops.bravo_scenario.pk]))
    assert other.status_code == 404


def test_scored_content_pages_show_the_members_scores_only(
    ops: TwoOperations, member: Client
) -> None:
    listing = member.get(reverse("memory:scored_content_list"))
    assert [row["c"].pk for row in listing.context["rows"]] == [ops.shared_content.pk]
    detail = member.get(
        reverse("memory:scored_content_detail", args=[ops.shared_content.pk])
    ).content.decode()
    assert "alpha judged the loose text" in detail
    assert "bravo judged" not in detail
    hidden = member.get(reverse("memory:scored_content_detail", args=[ops.bravo_content.pk]))
    assert hidden.status_code == 404


# --- promote ----------------------------------------------------------------------------------


def test_promote_is_a_404_for_a_piece_or_result_of_another_operation(
    ops: TwoOperations, member: Client
) -> None:
    ops.member.user_permissions.add(Permission.objects.get(codename="add_seed"))
    member.force_login(User.objects.get(pk=ops.member.pk))
    dataset = make_dataset("reviewed")
    url = reverse("memory:promote_piece")

    def promote(piece: Any, result: AttackResult | None = None) -> int:
        data = {"piece_id": str(piece.id), "dataset": str(dataset.pk), "confirm": "yes"}
        if result is not None:
            data["attack_result_id"] = str(result.pk)
        return member.post(url, data).status_code

    assert promote(ops.bravo_piece) == 404
    assert promote(ops.alpha_piece, ops.bravo_result) == 404
    assert not Seed.objects.filter(dataset=dataset).exists()
    assert promote(ops.alpha_piece, ops.alpha_result) == 302
    assert Seed.objects.filter(dataset=dataset, source_piece_id=ops.alpha_piece.pk).exists()


def test_promote_of_an_unknown_piece_is_the_same_404(ops: TwoOperations, member: Client) -> None:
    ops.member.user_permissions.add(Permission.objects.get(codename="add_seed"))
    member.force_login(User.objects.get(pk=ops.member.pk))
    dataset = make_dataset("reviewed")
    response = member.post(
        reverse("memory:promote_piece"),
        {"piece_id": "00000000-0000-0000-0000-000000000000", "dataset": str(dataset.pk)},
    )
    assert response.status_code == 404
