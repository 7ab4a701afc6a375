"""Markdown is the one place user text becomes markup: rendered without raw HTML, sanitized by
nh3, loading nothing remote; and nothing else in the project marks text safe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from redteam.common.markdown import MAX_MARKDOWN_CHARS, render_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_markdown_renders_structure() -> None:
    html = render_markdown("## Plan\n\n**bold** and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "<h2>Plan</h2>" in html
    assert "<strong>bold</strong>" in html
    assert "<code>code</code>" in html
    assert "<td>1</td>" in html


@pytest.mark.parametrize(
    "payload",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "<iframe src='https://evil.example'></iframe>",
        '<a href="javascript:alert(1)">x</a>',
        "[x](javascript:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "<style>body{display:none}</style>",
    ],
)
def test_hostile_markup_stays_text(payload: str) -> None:
    html = render_markdown(payload)
    assert "<script" not in html
    assert "<img" not in html
    assert "<iframe" not in html
    assert "<style" not in html
    assert not re.search(r"<a [^>]*href=\"javascript:", html)
    assert not re.search(r"<a [^>]*href=\"data:", html)
    assert not re.search(r"<[a-z]+[^>]*\son[a-z]+=", html)


def test_images_become_labelled_links_and_links_are_inert() -> None:
    html = render_markdown(
        '![secret plan](https://evil.example/pixel.png "t") [site](https://e.example)'
    )
    assert "<img" not in html
    assert '<a class="md-image" href="https://evil.example/pixel.png"' in html
    assert "image: secret plan" in html
    assert html.count('rel="noopener noreferrer nofollow"') == 2


def test_work_is_bounded() -> None:
    html = render_markdown("> " * (MAX_MARKDOWN_CHARS * 2))
    assert len(html) < MAX_MARKDOWN_CHARS * 10


def test_nothing_else_marks_text_safe() -> None:
    offenders = []
    for path in ROOT.glob("**/*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith((".venv/", "tests/")) or rel == "redteam/common/markdown.py":
            continue
        text = path.read_text(encoding="utf-8")
        if "mark_safe" in text or "SafeString(" in text:
            offenders.append(rel)
    for path in ROOT.glob("templates/**/*.html"):
        text = path.read_text(encoding="utf-8")
        if re.search(r"\|\s*safe\b|autoescape\s+off", text):
            offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == []
