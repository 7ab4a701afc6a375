"""Markdown to HTML for pages: the one place user text is turned into markup.

Stored text is hostile, so the pipeline is: markdown-it-py with raw HTML off (an HTML tag in
the text stays text), then nh3 with a strict allowlist. Rendered output never loads anything
remote: an image becomes a labelled link, and every link gets `rel="noopener noreferrer
nofollow"`. Work is bounded: input past MAX_MARKDOWN_CHARS is cut (the caller says so) and the
parser's nesting is capped.
"""

from __future__ import annotations

from collections.abc import Sequence

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

MAX_MARKDOWN_CHARS = 50_000
MAX_NESTING = 20
LINK_REL = "noopener noreferrer nofollow"

ALLOWED_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "ol": {"start"},
    "th": {"align"},
    "td": {"align"},
}
URL_SCHEMES = {"http", "https", "mailto"}


def _image_as_link(
    _renderer: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    _options: OptionsDict,
    _env: EnvType,
) -> str:
    """An image never loads: it is shown as a link labelled with its alt text."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or [])
    label = f"image: {alt}" if alt else "image"
    return f'<a class="md-image" href="{escapeHtml(src)}">{escapeHtml(label)}</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "maxNesting": MAX_NESTING}).enable(
        ["table", "strikethrough"]
    )
    md.add_render_rule("image", _image_as_link)
    return md


_MARKDOWN = _parser()


def render_markdown(text: str) -> SafeString:
    """Sanitized HTML for a markdown text (its first MAX_MARKDOWN_CHARS characters)."""
    html = _MARKDOWN.render(text[:MAX_MARKDOWN_CHARS])
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel=LINK_REL,
        strip_comments=True,
    )
    # The one place user text becomes markup: sanitized by nh3 with the allowlist above.
    return mark_safe(clean)
