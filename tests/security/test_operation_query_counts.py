"""Scoping costs no queries per row: a member's lists cost the same at 2 and 20 conversations
per operation, with a second operation's rows beside them."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from redteam.common.access import Writer
from redteam.common.models import ApiKey, Operation, OperationRole
from redteam.site.ingest import ingest_batch
from tests.access import grant
from tests.security.operation_worlds import (
    ALPHA,
    BRAVO,
    SHARED_ATTACK,
    SHARED_CONVERTER,
    SHARED_SCORER,
    SHARED_TARGET,
    attack_result_dict,
    piece_dict,
    score_dict,
)

pytestmark = pytest.mark.django_db

PAGES = ("/conversations/", "/attack-results/", "/review/")
API_LISTS = ("/api/v1/message-pieces/", "/api/v1/conversations/", "/api/v1/attack-results/")


def add_conversations(count: int, start: int = 0) -> list[str]:
    """`count` more attacks in each of alpha and bravo (a converted user turn, a scored reply,
    a labelled result); alpha's conversation ids."""
    alpha_ids = []
    for operation in (ALPHA, BRAVO):
        payload: dict[str, list[dict[str, Any]]] = {
            "conversations": [],
            "message_pieces": [],
            "scores": [],
            "attack_results": [],
        }
        for index in range(start, start + count):
            cid = str(uuid.uuid4())
            user = piece_dict(
                cid,
                0,
                "user",
                f"{operation} prompt {index}",
                seconds=index,
                converters=(SHARED_CONVERTER,),
            )
            reply = piece_dict(cid, 1, "assistant", f"{operation} reply {index}", seconds=index)
            labels = {"operation": operation, "operator": "someone"}
            payload["conversations"].append(
                {
                    "conversation_id": cid,
                    "target_identifier": SHARED_TARGET.model_dump(),
                    "retries": [],
                }
            )
            payload["message_pieces"] += [user, reply]
            payload["scores"].append(score_dict(SHARED_SCORER, "r", ["illegal"], "o", piece=reply))
            payload["attack_results"].append(
                attack_result_dict(
                    cid, f"objective {index}", SHARED_ATTACK, labels, ["illegal"], outcome="success"
                )
            )
            if operation == ALPHA:
                alpha_ids.append(cid)
        report = ingest_batch(payload, writer=Writer.trusted(default=operation))
        assert report.errors == 0, [o for o in report.outcomes if o.status == "rejected"][:2]
    return alpha_ids


def queries(client: Client, path: str) -> list[str]:
    """The SQL one request runs (after a first request has warmed every cache)."""
    assert client.get(path).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return [q["sql"] for q in captured.captured_queries]


@pytest.fixture
def callers(db: None) -> tuple[Client, Client]:
    """A reviewer of alpha (session) and a read key bound to alpha."""
    alpha = Operation.objects.create(name=ALPHA)
    Operation.objects.create(name=BRAVO)
    member = get_user_model().objects.create_user("alpha-member")
    grant(member, alpha, OperationRole.REVIEWER)
    session = Client()
    session.force_login(member)
    row, secret = ApiKey.objects.create_key(name="read", user=member, scopes=["read"])
    row.operations.add(alpha)
    return session, Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def test_a_members_lists_cost_the_same_at_2_and_20_conversations_per_operation(
    callers: tuple[Client, Client],
) -> None:
    session, key = callers
    add_conversations(2)
    few = {path: queries(session, path) for path in PAGES}
    few |= {path: queries(key, path) for path in API_LISTS}
    alpha_ids = add_conversations(18, start=2)
    many = {path: queries(session, path) for path in PAGES}
    many |= {path: queries(key, path) for path in API_LISTS}
    grown = {
        path: (len(few[path]), len(many[path])) for path in few if len(few[path]) != len(many[path])
    }
    assert grown == {}, "\n\n".join(
        f"{path}: {n} -> {m} queries:\n" + "\n".join(many[path]) for path, (n, m) in grown.items()
    )
    # The counts were taken over pages that show alpha's rows.
    page = session.get("/conversations/").content.decode()
    assert all(cid in page for cid in alpha_ids)
    assert len(key.get("/api/v1/message-pieces/").json()["results"]) >= 2 * len(alpha_ids)
