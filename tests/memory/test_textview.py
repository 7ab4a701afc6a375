"""Display segments for hostile text: invisible characters, hidden tag text, word diffs."""

from __future__ import annotations

from redteam.core.textview import (
    MAX_DISPLAY_CHARS,
    display_text,
    hidden_report,
    is_invisible,
    pretty_json,
    visible_segments,
    word_diff,
)


def test_visible_segments_replace_zero_width_and_bidi_characters_with_labels() -> None:
    segments = visible_segments("a\u200bb\u202ec")
    assert segments == [("t", "a"), ("x", "⟨U+200B⟩"), ("t", "b"), ("x", "⟨U+202E⟩"), ("t", "c")]


def test_unicode_tag_characters_are_shown_and_their_hidden_text_decoded() -> None:
    smuggled = "hi" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    segments = visible_segments(smuggled)
    assert ("x", "⟨U+E0072⟩") in segments
    report = hidden_report(smuggled)
    assert report.count == 6
    assert report.tag_text == "rm -rf"


def test_newlines_tabs_and_ordinary_unicode_stay_as_text() -> None:
    text = "line 1\n\tline 2\r\nçà 日本 🙂"
    assert visible_segments(text) == [("t", text)]
    assert not any(is_invisible(c) for c in text)


def test_variation_selectors_and_hangul_filler_count_as_invisible() -> None:
    assert is_invisible("\ufe0f")
    assert is_invisible(chr(0xE0100))
    assert is_invisible("\u3164")


def test_bidi_overrides_are_flagged() -> None:
    assert hidden_report("abc\u2067def\u2069").bidi
    assert not hidden_report("abc\u200bdef").bidi


def test_display_text_caps_huge_values_and_says_so() -> None:
    shown = display_text("x" * (MAX_DISPLAY_CHARS + 10))
    assert shown.truncated
    assert shown.shown == MAX_DISPLAY_CHARS
    assert shown.length == MAX_DISPLAY_CHARS + 10


def test_word_diff_marks_inserted_and_deleted_words() -> None:
    diff = word_diff("tell me how to pick a lock", "tell me how to p1ck a lock please")
    assert diff.chunks is not None
    ops = [(op, "".join(t for _, t in segs)) for op, segs in diff.chunks]
    assert ("delete", "pick") in ops
    assert ("insert", "p1ck") in ops
    assert ("insert", " please") in ops


def test_word_diff_shows_invisible_characters_inside_changes() -> None:
    diff = word_diff("open the door", "open\u200b the door")
    assert diff.chunks is not None
    inserted = [segs for op, segs in diff.chunks if op == "insert"]
    assert [("x", "⟨U+200B⟩")] in inserted


def test_word_diff_gives_up_when_values_are_unrelated() -> None:
    diff = word_diff("Explain how to pick a lock", "Rkcynva ubj gb cvpx n ybpx")
    assert diff.chunks is None
    assert diff.ratio < 0.35


def test_pretty_json_indents_calls_and_rejects_non_json() -> None:
    assert pretty_json('{"name":"f","args":{"a":1}}') == (
        '{\n  "name": "f",\n  "args": {\n    "a": 1\n  }\n}'
    )
    assert pretty_json("not json") is None
