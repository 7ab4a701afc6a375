"""Links only where the page exists: a related conversation never ingested (or of another
operation) is shown as its id, marked "not ingested", on the conversation and result pages."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation

pytestmark = pytest.mark.django_db

NEVER_SENT = "never-sent-adversarial-0001"


@pytest.fixture
def world() -> dict[str, Any]:
    adversarial = make_conversation(2, labels={"operation": "alpha"})
    elsewhere = make_conversation(2, labels={"operation": "bravo"})
    main = make_conversation(2, labels={"operation": "alpha"})
    result = make_attack_result(
        main,
        related=[
            (adversarial.pk, "adversarial"),
            (NEVER_SENT, "adversarial"),
            (elsewhere.pk, "pruned"),
        ],
    )
    user = User.objects.create_user("amy", password="pw-links-123")
    grant(user, "alpha", "reviewer")
    client = Client()
    client.force_login(user)
    return {"client": client, "result": result, "adversarial": adversarial, "other": elsewhere}


def _linked(html: str, conversation_id: str) -> bool:
    return bool(re.search(rf'href="/conversations/{re.escape(conversation_id)}/"', html))


@pytest.mark.parametrize("page", ["conversation", "result"])
def test_related_conversations_link_only_when_ingested_and_visible(
    world: dict[str, Any], page: str
) -> None:
    result = world["result"]
    url = (
        reverse("scoring:conversation_detail", args=[result.conversation_id])
        if page == "conversation"
        else reverse("scoring:attack_result_detail", args=[result.pk])
    )
    html = world["client"].get(url).content.decode()
    assert _linked(html, world["adversarial"].pk)
    assert not _linked(html, NEVER_SENT)
    assert not _linked(html, world["other"].pk)
    assert NEVER_SENT[:20] in html
    assert html.count(">not ingested</span>") == 2
    # Each link that is offered leads to a page.
    assert world["client"].get(f"/conversations/{world['adversarial'].pk}/").status_code == 200


def test_the_existence_check_costs_no_query_per_related_row(
    world: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    from memory.models import ConversationReference

    result = world["result"]
    for i in range(30):
        ConversationReference.objects.create(
            attack_result=result, conversation_id=f"missing-{i}", conversation_type="pruned"
        )
    with django_assert_max_num_queries(8):
        response = world["client"].get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert response.content.decode().count(">not ingested</span>") == 32
