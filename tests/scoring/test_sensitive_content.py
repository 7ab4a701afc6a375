"""Reviewer safety: pieces of an operation's sensitive harm categories render collapsed until a
reviewer reveals them, and each reveal is audited (who, when, which piece, why it was hidden)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memory.models import Conversation, MessagePiece
from memory.sensitive import REVEAL_ACTION, revealed_url
from redteam.common.models import AuditEvent, Operation
from tests.access import grant
from tests.memory.row_factories import (
    PieceSpec,
    make_attack_result,
    make_conversation,
    make_media,
    text_turns,
)
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

SECRET_TEXT = "graphic description the reviewer should not see by default"
COLLAPSED = 'class="sensitive is-collapsed"'
MP4_HEADER = bytes.fromhex("000000186674797069736f6d0000020069736f6d69736f32")


def _operation(name: str = "op-safe", sensitive: list[Any] | None = None) -> Operation:
    operation, _ = Operation.objects.get_or_create(name=name)
    operation.sensitive_harm_categories = ["sexual"] if sensitive is None else sensitive
    operation.save()
    return operation


def _conversation(operation: Operation, *, result_harm: list[str] | None = None) -> Conversation:
    """Text, image and video pieces in `operation`, with an attack result of `result_harm`."""
    image = make_media()
    video = make_media(MP4_HEADER, content_type="video/mp4")
    conv = make_conversation(
        [
            [
                PieceSpec("describe what is in this picture", role="user"),
                PieceSpec("/home/op/a.png", data_type="image_path", media=image),
            ],
            [PieceSpec(SECRET_TEXT, role="assistant")],
            [PieceSpec("/home/op/clip.mp4", role="assistant", data_type="video_path", media=video)],
        ],
        labels={"operation": operation.name},
    )
    make_attack_result(
        conv, labels={"operation": operation.name}, harm_categories=result_harm or []
    )
    return conv


def _page(client: Client, conversation_id: str, query: str = "") -> str:
    url = reverse("scoring:conversation_detail", args=[conversation_id]) + query
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _reveal(client: Client, conv: Conversation, piece: MessagePiece, **extra: Any) -> Any:
    return client.post(
        reverse("scoring:reveal_piece", args=[conv.pk]), {"piece": str(piece.id)}, **extra
    )


def _piece_html(html: str, piece: MessagePiece) -> str:
    """The markup of one piece block on the conversation page."""
    start = html.index(f'id="piece-{piece.id}"')
    end = html.find('<div class="piece" id="piece-', start + 1)
    return html[start : end if end != -1 else len(html)]


# --- rendering -----------------------------------------------------------------------------


def test_sensitive_pieces_render_collapsed_behind_a_reveal_control(
    reviewer_client: Client,
) -> None:
    conv = _conversation(_operation(sensitive=["Sexual"]), result_harm=["SEXUAL"])
    html = _page(reviewer_client, conv.pk)
    reveal_url = reverse("scoring:reveal_piece", args=[conv.pk])
    for piece in conv.pieces.all():
        block = _piece_html(html, piece)
        assert COLLAPSED in block
        assert f'id="sensitive-{piece.id}"' in block
        assert "Sensitive: Sexual" in block
        assert f'action="{reveal_url}"' in block
        assert f'name="piece" value="{piece.id}"' in block
        assert "csrfmiddlewaretoken" in block
        assert ">Reveal</button>" in block
    # The value sits inside the collapsed block, after its control.
    reply = conv.pieces.get(sequence=1)
    block = _piece_html(html, reply)
    assert block.index("sensitive-body") < block.index(SECRET_TEXT)
    # Collapsed video loads nothing, cannot be tabbed to, and never autoplays.
    video = _piece_html(html, conv.pieces.get(sequence=2))
    assert 'preload="none" tabindex="-1"' in video
    assert "autoplay" not in html


def test_pieces_render_normally_when_nothing_sensitive_matches(reviewer_client: Client) -> None:
    # The operation hides "sexual"; this conversation is about violence.
    other = _conversation(_operation(sensitive=["sexual"]), result_harm=["violence"])
    # The operation hides nothing.
    plain = _conversation(_operation("op-plain", sensitive=[]), result_harm=["sexual"])
    for conv in (other, plain):
        html = _page(reviewer_client, conv.pk)
        assert "sensitive" not in html.replace("sensitive_harm", "")
        assert "Reveal" not in html
        assert SECRET_TEXT in html
        assert 'preload="metadata"' in html


def test_piece_categories_collapse_only_that_piece(reviewer_client: Client) -> None:
    conv = _conversation(_operation(sensitive=["self-harm"]))
    reply = conv.pieces.get(sequence=1)
    MessagePiece.objects.filter(pk=reply.pk).update(targeted_harm_categories=["  Self-Harm "])
    html = _page(reviewer_client, conv.pk)
    assert COLLAPSED in _piece_html(html, reply)
    assert "Sensitive: self-harm" in _piece_html(html, reply)
    first = conv.pieces.get(sequence=0, position=0)
    assert "sensitive" not in _piece_html(html, first)


def test_conversation_summary_categories_collapse_every_piece(reviewer_client: Client) -> None:
    conv = _conversation(_operation(sensitive=["hate"]))
    Conversation.objects.filter(pk=conv.pk).update(harm_categories=["Hate"])
    html = _page(reviewer_client, conv.pk)
    assert html.count(COLLAPSED) == conv.pieces.count()


def test_result_and_objective_pages_collapse_the_last_response(reviewer_client: Client) -> None:
    operation = _operation(sensitive=["sexual"])
    conv = make_conversation(
        [[PieceSpec("hi")], [PieceSpec(SECRET_TEXT, role="assistant")]],
        labels={"operation": operation.name},
    )
    result = make_attack_result(
        conv, labels={"operation": operation.name}, harm_categories=["sexual"]
    )
    reply = conv.pieces.get(sequence=1)
    for url in (
        reverse("scoring:attack_result_detail", args=[result.pk]),
        reverse("scoring:objective_detail", args=[result.objective_sha256]),
    ):
        html = reviewer_client.get(url).content.decode()
        assert f'{COLLAPSED} id="sensitive-{reply.id}"' in html
        assert html.index("sensitive-body") < html.index(SECRET_TEXT)
        assert "js/reveal.js" in html
    # Without a sensitive category they render as before.
    Operation.objects.filter(pk=operation.pk).update(sensitive_harm_categories=[])
    html = reviewer_client.get(
        reverse("scoring:attack_result_detail", args=[result.pk])
    ).content.decode()
    assert "is-collapsed" not in html


def test_pages_carry_no_inline_script_handlers_or_styles(reviewer_client: Client) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    html = _page(reviewer_client, conv.pk)
    assert COLLAPSED in html
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts
    assert all(re.search(r'\bsrc="/static/js/[\w.-]+\.js"', s) for s in scripts)
    assert not re.search(r"<script\b[^>]*>(?!</script>)", html)  # no inline body
    assert not re.search(r"\son[a-z]+\s*=", html)  # no inline event handler
    assert not re.search(r"\sstyle\s*=", html)  # the CSP forbids inline styles too
    assert 'src="/static/js/reveal.js"' in html


# --- reveal ---------------------------------------------------------------------------------


def test_reveal_audits_who_and_when_and_answers_the_script(
    reviewer_client: Client, reviewer: User
) -> None:
    operation = _operation(sensitive=["Sexual"])
    conv = _conversation(operation, result_harm=["sexual"])
    reply = conv.pieces.get(sequence=1)
    before = timezone.now()
    response = _reveal(reviewer_client, conv, reply, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    answer = response.json()
    assert answer["piece"] == str(reply.id)
    assert answer["categories"] == ["Sexual"]
    assert answer["revealed_by"] == reviewer.username
    event = AuditEvent.objects.get(action=REVEAL_ACTION)
    assert event.actor == reviewer
    assert event.actor_name == reviewer.username
    assert before <= event.at <= timezone.now()
    assert event.object_type == "message_piece"
    assert event.object_id == str(reply.id)
    assert event.detail == {
        "conversation_id": conv.pk,
        "piece_id": str(reply.id),
        "operation_id": operation.pk,
        "operation": operation.name,
        "categories": ["Sexual"],
    }


def test_reveal_without_script_returns_to_the_page_with_the_piece_shown(
    reviewer_client: Client,
) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    reply = conv.pieces.get(sequence=1)
    page = reverse("scoring:conversation_detail", args=[conv.pk]) + "?queue=unreviewed"
    response = reviewer_client.post(
        reverse("scoring:reveal_piece", args=[conv.pk]), {"piece": str(reply.id), "next": page}
    )
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert location.path == reverse("scoring:conversation_detail", args=[conv.pk])
    assert parse_qs(location.query) == {"queue": ["unreviewed"], "reveal": [str(reply.id)]}
    assert location.fragment == f"sensitive-{reply.id}"
    html = _page(reviewer_client, conv.pk, "?" + location.query)
    block = _piece_html(html, reply)
    assert COLLAPSED not in block
    assert 'class="sensitive" id="sensitive-' in block
    assert "revealed; recorded in the audit trail" in block
    # Only the revealed piece: the others stay collapsed.
    assert html.count(COLLAPSED) == conv.pieces.count() - 1
    assert AuditEvent.objects.filter(action=REVEAL_ACTION).count() == 1


def test_the_url_alone_reveals_nothing(reviewer_client: Client, reader: User) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    reply = conv.pieces.get(sequence=1)
    query = f"?reveal={reply.id}"
    # No audit event: the flag is ignored.
    assert COLLAPSED in _piece_html(_page(reviewer_client, conv.pk, query), reply)
    # Another user's reveal does not count for this one.
    reader_client = Client()
    reader_client.force_login(reader)
    assert _reveal(reader_client, conv, reply).status_code == 302
    assert COLLAPSED in _piece_html(_page(reviewer_client, conv.pk, query), reply)
    assert COLLAPSED not in _piece_html(_page(reader_client, conv.pk, query), reply)
    # Malformed flags are ignored, not errors.
    assert COLLAPSED in _page(reviewer_client, conv.pk, "?reveal=not-a-uuid&reveal=")


def test_reveal_is_404_for_a_conversation_outside_the_users_operations(client: Client) -> None:
    mine, theirs = _operation("op-mine"), _operation("op-theirs")
    outsider = make_user("olga", None)
    grant(outsider, mine, "reviewer")
    client.force_login(outsider)
    hidden = _conversation(theirs, result_harm=["sexual"])
    secret = hidden.pieces.get(sequence=1)
    response = _reveal(client, hidden, secret, HTTP_ACCEPT="application/json")
    assert response.status_code == 404
    assert not AuditEvent.objects.filter(action=REVEAL_ACTION).exists()
    # A piece of another conversation is not revealed through a visible one.
    visible = _conversation(mine, result_harm=["sexual"])
    assert _reveal(client, visible, secret).status_code == 404
    assert not AuditEvent.objects.filter(action=REVEAL_ACTION).exists()


def test_reveal_rejects_bad_requests(reviewer_client: Client, client: Client) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    url = reverse("scoring:reveal_piece", args=[conv.pk])
    assert reviewer_client.post(url, {"piece": "nope"}).status_code == 400
    assert reviewer_client.post(url).status_code == 400
    assert reviewer_client.get(url).status_code == 405
    assert (
        reviewer_client.post(
            reverse("scoring:reveal_piece", args=["no-such-conversation"]),
            {"piece": str(conv.pieces.get(sequence=1).id)},
        ).status_code
        == 404
    )
    anonymous = client.post(url, {"piece": str(conv.pieces.get(sequence=1).id)})
    assert anonymous.status_code == 302
    assert "/accounts/login/" in anonymous["Location"]
    assert not AuditEvent.objects.filter(action=REVEAL_ACTION).exists()


def test_reveal_needs_the_csrf_token(reviewer: User) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(reviewer)
    assert _reveal(strict, conv, conv.pieces.get(sequence=1)).status_code == 403
    assert not AuditEvent.objects.filter(action=REVEAL_ACTION).exists()


def test_reveal_never_redirects_off_site(reviewer_client: Client) -> None:
    conv = _conversation(_operation(), result_harm=["sexual"])
    piece = conv.pieces.get(sequence=1)
    response = reviewer_client.post(
        reverse("scoring:reveal_piece", args=[conv.pk]),
        {"piece": str(piece.id), "next": "https://evil.example/steal"},
    )
    assert response.status_code == 302
    assert response["Location"].startswith(
        reverse("scoring:conversation_detail", args=[conv.pk]) + f"?reveal={piece.id}"
    )


def test_revealed_url_keeps_earlier_reveals_once() -> None:
    url = revealed_url("/conversations/c/?queue=x&reveal=a&reveal=b#old", "a")
    assert url == "/conversations/c/?queue=x&reveal=b&reveal=a#sensitive-a"


# --- query budget ---------------------------------------------------------------------------


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("n", [3, 30])
def test_sensitivity_costs_constant_queries(reviewer_client: Client, n: int) -> None:
    operation = _operation(sensitive=["sexual"])
    conv = make_conversation(text_turns(n), labels={"operation": operation.name})
    make_attack_result(conv, labels={"operation": operation.name}, harm_categories=["sexual"])
    plain = make_conversation(text_turns(n), labels={"operation": "op-plain"})
    make_attack_result(plain, labels={"operation": "op-plain"})
    page = reverse("scoring:conversation_detail", args=[conv.pk])
    # Every piece is collapsed, for the one lookup of the operation's settings that any
    # conversation page makes.
    sensitive_cost = _queries(reviewer_client, page)
    assert _queries(reviewer_client, reverse("scoring:conversation_detail", args=[plain.pk])) == (
        sensitive_cost
    )
    assert len(re.findall(COLLAPSED, reviewer_client.get(page).content.decode())) == n
    # Naming revealed pieces in the URL adds one query (this user's reveal events), however
    # many are named.
    for piece in conv.pieces.all():
        _reveal(reviewer_client, conv, piece)
    query = "&".join(f"reveal={p.id}" for p in conv.pieces.all())
    assert _queries(reviewer_client, f"{page}?{query}") == sensitive_cost + 1
    assert COLLAPSED not in reviewer_client.get(f"{page}?{query}").content.decode()
