"""Memory review pages: conversation list, identifiers, media. Access, bad input, queries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.lookups import search_document_sql
from redteam.common.models import MediaBlob
from redteam.common.pagination import encode_cursor
from tests.memory.row_factories import (
    PieceSpec,
    core_atomic_attack,
    core_converter,
    core_target,
    make_attack_result,
    make_conversation,
    make_media,
    text_turns,
)
from tests.scoring.row_factories import make_score, make_user

pytestmark = pytest.mark.django_db
LIST = "memory:conversation_list"


def _conversations(n: int) -> list[Any]:
    start = timezone.now() - timedelta(days=1)
    out = []
    for i in range(n):
        conv = make_conversation(
            text_turns(2, prefix=f"#{i} "),
            start=start + timedelta(minutes=i),
            labels={"operation": "op", "operator": f"u{i % 2}"},
        )
        make_attack_result(conv, harm_categories=["violence"])
        out.append(conv)
    return out


# --- access -----------------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_login(client: Client) -> None:
    response = client.get(reverse(LIST))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_users_without_a_review_role_are_refused(client: Client) -> None:
    client.force_login(make_user("norole", role=None))
    assert client.get(reverse(LIST)).status_code == 403


def test_read_only_users_see_the_list(reader_client: Client) -> None:
    _conversations(1)
    response = reader_client.get(reverse(LIST))
    assert response.status_code == 200
    assert b"#0 user turn 0" in response.content


# --- conversation list --------------------------------------------------------------------------


def test_list_shows_summary_columns_newest_first(reviewer_client: Client) -> None:
    convs = _conversations(3)
    html = reviewer_client.get(reverse(LIST)).content.decode()
    positions = [html.index(c.conversation_id[:12]) for c in reversed(convs)]
    assert positions == sorted(positions)
    assert "PromptSendingAttack" in html
    assert "operation=op" in html
    assert "violence" in html


def test_list_filters_come_from_the_url(reviewer_client: Client) -> None:
    _conversations(4)
    html = reviewer_client.get(reverse(LIST) + "?label=operator:u1").content.decode()
    assert "#1 user turn 0" in html
    assert "#3 user turn 0" in html
    assert "#0 user turn 0" not in html
    # The form shows the filter it applied.
    assert 'value="operator:u1"' in html


def test_list_pages_with_cursors_both_ways(reviewer_client: Client) -> None:
    convs = _conversations(5)
    first = reviewer_client.get(reverse(LIST) + "?size=2")
    assert [c.pk for c in first.context["rows"]] == [convs[4].pk, convs[3].pk]
    second = reviewer_client.get(reverse(LIST), {"size": 2, "cursor": first.context["next_cursor"]})
    assert [c.pk for c in second.context["rows"]] == [convs[2].pk, convs[1].pk]
    back = reviewer_client.get(
        reverse(LIST), {"size": 2, "cursor": second.context["previous_cursor"]}
    )
    assert [c.pk for c in back.context["rows"]] == [convs[4].pk, convs[3].pk]
    assert back.context["previous_cursor"] is None


def test_list_pages_through_conversations_sharing_a_timestamp(reviewer_client: Client) -> None:
    same = timezone.now() - timedelta(hours=2)
    convs = [make_conversation(1, start=same) for _ in range(5)]
    seen: list[str] = []
    cursor: str | None = ""
    while True:
        response = reviewer_client.get(reverse(LIST), {"size": "2", "cursor": cursor or ""})
        seen += [c.pk for c in response.context["rows"]]
        cursor = response.context["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(c.pk for c in convs)
    assert len(seen) == len(set(seen))


def test_bad_filters_answer_400_with_the_reason(reviewer_client: Client) -> None:
    response = reviewer_client.get(reverse(LIST) + "?outcome=won&label=oops")
    assert response.status_code == 400
    assert b"Unknown value(s): won" in response.content


def test_bad_cursor_answers_400(reviewer_client: Client) -> None:
    assert reviewer_client.get(reverse(LIST) + "?cursor=garbage").status_code == 400
    forged = encode_cursor("x", timezone.now(), "a")
    assert reviewer_client.get(reverse(LIST), {"cursor": forged}).status_code == 400


@pytest.mark.parametrize("n", [3, 30])
def test_list_query_count_is_constant(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    _conversations(n)
    # session, user, memberships, one page of conversations (joined with the target
    # identifier), class-name suggestions for the filter inputs.
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse(LIST) + "?label=operation:op&harm_category=violence")
    assert len(response.context["rows"]) == n


def test_search_expression_matches_the_index_in_the_migration() -> None:
    from importlib import import_module

    migration = import_module("memory.migrations.0019_search_document_once")
    expected = search_document_sql("original_value", "converted_value")
    assert expected == migration.PIECE_SEARCH_DOCUMENT


@pytest.mark.skipif(connection.vendor != "postgresql", reason="tsvector documents are PostgreSQL's")
def test_search_document_holds_a_repeated_value_once() -> None:
    from memory.lookups import PieceSearchDocument, pieces_matching
    from memory.models import MessagePiece

    conv = make_conversation(
        [
            [PieceSpec("alpha beta")],
            [PieceSpec("gamma delta", converted="gamma delta", role="assistant")],
            [PieceSpec("lock pick", converted="ybpx cvpx")],
        ]
    )
    documents = dict(
        MessagePiece.objects.filter(conversation=conv)
        .annotate(document=PieceSearchDocument())
        .values_list("sequence", "document")
    )
    # Equal values: each word once, at its own position (no second copy after a seam).
    assert documents[0] == "'alpha':1 'beta':2"
    assert documents[1] == "'delta':2 'gamma':1"
    # Different values: both enter the document.
    assert documents[2] == "'cvpx':4 'lock':1 'pick':2 'ybpx':3"
    # A phrase across the seam of a repeated value no longer matches; a converted word does.
    assert not pieces_matching('"beta alpha"', "postgresql").exists()
    assert set(pieces_matching("ybpx", "postgresql").values_list("sequence", flat=True)) == {2}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="GIN index exists on PostgreSQL")
def test_search_uses_the_gin_index_on_postgresql() -> None:
    from memory.lookups import pieces_matching

    sql, params = pieces_matching("lock pick", "postgresql").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "piece_search_gin" in plan


# --- identifiers ------------------------------------------------------------------------------


def test_identifier_page_shows_tree_hashes_and_uses(reviewer_client: Client) -> None:
    target = core_target("OpenAIChatTarget", temperature=0.25)
    conv = make_conversation(
        [[PieceSpec("x", converters=[core_converter("Base64Converter")])]], target=target
    )
    result = make_attack_result(conv, atomic=core_atomic_attack(target=target))
    html = reviewer_client.get(
        reverse("memory:identifier_detail", args=[conv.target_identifier_id])
    ).content.decode()
    assert "OpenAIChatTarget" in html
    assert str(conv.target_identifier_id) in html
    assert "0.25" in html  # param from the tree
    assert conv.preview in html  # conversation using it as target
    # The attack identifier tree contains the target, so the strategy node is a parent.
    assert "PromptSendingAttack" in html
    assert result.objective in html  # attack result against it


def test_identifier_page_404s_for_unknown_or_malformed_hashes(reviewer_client: Client) -> None:
    assert reviewer_client.get("/identifiers/nothex/").status_code == 404
    assert reviewer_client.get("/identifiers/" + "a" * 64 + "/").status_code == 404


@pytest.mark.parametrize("n", [3, 30])
def test_identifier_page_query_count_is_constant(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    target = core_target()
    for _ in range(n):
        conv = make_conversation([[PieceSpec("x", converters=[core_converter()])]], target=target)
        make_attack_result(conv, atomic=core_atomic_attack(target=target))
    conv = make_conversation(1, target=target)
    # session, user, memberships; identifier; dumps; parents; conversations; attack
    # results; converter uses; 0.13 piece uses; scores.
    with django_assert_num_queries(11):
        response = reviewer_client.get(
            reverse("memory:identifier_detail", args=[conv.target_identifier_id])
        )
    assert response.status_code == 200


def test_identifier_diff_names_the_differing_param(reviewer_client: Client) -> None:
    a = make_conversation(1, target=core_target(temperature=0.7))
    b = make_conversation(1, target=core_target(temperature=1.0))
    response = reviewer_client.get(
        reverse("memory:identifier_diff"),
        {"a": str(a.target_identifier_id), "b": str(b.target_identifier_id)},
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "1 difference" in html
    assert "$.temperature" in html
    assert "0.7" in html
    assert "1.0" in html


def test_identifier_diff_rejects_bad_hashes(reviewer_client: Client) -> None:
    url = reverse("memory:identifier_diff")
    assert reviewer_client.get(url, {"a": "x", "b": "y"}).status_code == 400
    assert reviewer_client.get(url, {"a": "a" * 64, "b": "b" * 64}).status_code == 404
    assert reviewer_client.get(url).status_code == 200  # the empty form


# --- media ------------------------------------------------------------------------------------


def _shown(blob: MediaBlob) -> MediaBlob:
    """The blob, as the image of a stored piece (media is served to whoever sees a piece or
    seed that refers to it)."""
    make_conversation([[PieceSpec("/run/image.png", data_type="image_path", media=blob)]])
    return blob


def test_media_serves_images_inline_with_protective_headers(reviewer_client: Client) -> None:
    blob = _shown(make_media())
    response = reviewer_client.get(reverse("memory:media", args=[blob.sha256]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert response["Content-Disposition"].startswith("inline")
    assert b"".join(response.streaming_content).startswith(b"\x89PNG")  # type: ignore[attr-defined]


@pytest.mark.parametrize("content_type", ["image/svg+xml", "text/html", "application/pdf"])
def test_media_never_renders_active_types_inline(
    reviewer_client: Client, content_type: str
) -> None:
    blob = _shown(make_media(b"<svg onload=alert(1)>" + content_type.encode(), content_type))
    response = reviewer_client.get(reverse("memory:media", args=[blob.sha256]))
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")


def test_media_needs_login_and_a_known_digest(client: Client, reviewer: User) -> None:
    blob = _shown(make_media())
    assert client.get(reverse("memory:media", args=[blob.sha256])).status_code == 302
    client.force_login(reviewer)
    assert client.get(reverse("memory:media", args=["0" * 64])).status_code == 404
    assert client.get("/media/not-a-digest/").status_code == 404


def test_scores_filter_page_uses_the_same_filterset(reviewer_client: Client) -> None:
    conv = make_conversation(2)
    make_score(piece=conv.pieces.get(sequence=1), value="true")
    make_conversation(2)
    response = reviewer_client.get(reverse(LIST) + "?score_value=TRUE")
    assert [c.pk for c in response.context["rows"]] == [conv.pk]


def test_nested_identifiers_without_a_dump_get_a_tree_rebuilt_from_rows(
    reviewer_client: Client,
) -> None:
    # The target exists only inside the attack tree, so it has rows but no dump of its own.
    slow = core_target("OpenAIChatTarget", temperature=0.1)
    fast = core_target("OpenAIChatTarget", temperature=0.9)
    a = make_attack_result(make_conversation(1), atomic=core_atomic_attack(target=slow))
    b = make_attack_result(make_conversation(1), atomic=core_atomic_attack(target=fast))
    page = reviewer_client.get(reverse("memory:identifier_detail", args=[a.target_hash]))
    assert b"rebuilt from stored rows" in page.content
    assert b"0.1" in page.content
    diff = reviewer_client.get(
        reverse("memory:identifier_diff"), {"a": a.target_hash, "b": b.target_hash}
    )
    assert diff.status_code == 200
    assert [(d.path, d.a, d.b) for d in diff.context["differences"]] == [
        ("$.temperature", "0.1", "0.9")
    ]
    # The attack trees differ in exactly that param, one level down.
    attack_diff = reviewer_client.get(
        reverse("memory:identifier_diff"),
        {"a": str(a.atomic_attack_identifier_id), "b": str(b.atomic_attack_identifier_id)},
    )
    paths = [d.path for d in attack_diff.context["differences"] if d.kind == "changed"]
    assert paths == [
        "$.children.attack_technique.children.attack.children.objective_target.temperature"
    ]


@pytest.mark.parametrize("n", [3, 30])
def test_identifier_diff_query_count_is_constant(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    a = make_attack_result(
        make_conversation(1),
        atomic=core_atomic_attack(converters=[core_converter(seed=i) for i in range(n)]),
    )
    b = make_attack_result(
        make_conversation(1),
        atomic=core_atomic_attack(converters=[core_converter(seed=i + 1) for i in range(n)]),
    )
    # session, user, memberships; both identifiers; their child rows, one query per tree
    # level below the roots (attack technique, attack, target + converters), shared by both.
    with django_assert_num_queries(7):
        response = reviewer_client.get(
            reverse("memory:identifier_diff"),
            {"a": str(a.atomic_attack_identifier_id), "b": str(b.atomic_attack_identifier_id)},
        )
    assert len([d for d in response.context["differences"] if d.kind == "changed"]) == n
