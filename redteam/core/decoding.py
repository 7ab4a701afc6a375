"""Decoded views of hostile text: the decodings of a value that come out cleanly.

Attack prompts and answers are often encoded (PyRIT's converters: base64, ROT13, Caesar,
Atbash, binary, Morse, URL-encoding, reversed text, Unicode tag smuggling). A reviewer should
not decode them by hand, and must never be shown noise for ordinary text. So a decoding is
offered only when it comes out *cleanly*:

- structural encodings (base64, hex, binary, Morse, percent-encoding, Unicode tags) must match
  their alphabet exactly over a long enough run and decode to printable, mostly-letter text
  (valid UTF-8 for the byte encodings);
- ciphers that turn any text into some other text (Caesar shifts, Atbash, reversal) must read
  clearly more like English than the input (common words and letter frequencies).

Nested encodings (base64 of hex, ROT13 inside base64) are followed one level further, with the
label naming both steps ("base64 → ROT13").

Framework-free, and the work is bounded: only the first MAX_INPUT_CHARS characters are
examined, each decoding is cut at MAX_OUTPUT_CHARS, runs are found by linear regexes, and an
optional ``Work`` counter tallies every character a pass touches (tests assert the tally).
Outputs are plain text; the caller escapes them and makes invisible characters visible.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
import unicodedata
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

# Characters of a value examined; the rest of a longer value is not decoded.
MAX_INPUT_CHARS = 20_000
# Characters kept of one decoding.
MAX_OUTPUT_CHARS = 5_000
# Decodings offered for one value at most.
MAX_DECODINGS = 6
# Encoded runs decoded per encoding (a text of many short runs is not decoded run by run).
MAX_RUNS = 12
# Characters of a text scored for English; the Caesar shift is chosen on this sample.
SCORE_SAMPLE_CHARS = 2_000
# Shortest run taken for base64 / hex (characters) and binary / Morse (symbols).
MIN_BASE64_RUN = 16
MIN_HEX_BYTES = 8
MIN_BINARY_BYTES = 4
MIN_MORSE_LETTERS = 4
MIN_PERCENT_ESCAPES = 3
# A cipher's output must score at least this, and this much better than its input.
MIN_CIPHER_SCORE = 0.4
MIN_CIPHER_GAIN = 0.25
# Fewer ASCII letters (or different letters) than this and a text is too short or too
# repetitive to call English or not.
MIN_SCORED_LETTERS = 8
MIN_DISTINCT_LETTERS = 5
# A cipher is tried only on text that is at least this share letters (spaces aside).
MIN_CIPHER_LETTER_SHARE = 0.5


@dataclass(frozen=True)
class Decoding:
    """One clean decoding: how it was decoded, and the text it gave (cut at MAX_OUTPUT_CHARS)."""

    label: str
    text: str
    truncated: bool = False


class Work:
    """Tallies the characters every decoding pass examines (an operation count for tests)."""

    def __init__(self) -> None:
        self.chars = 0

    def spend(self, amount: int) -> None:
        """Count ``amount`` characters examined."""
        self.chars += amount


# The most frequent English words (and a few the red-teaming domain uses all the time).
COMMON_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as ask at be because been
    before being below between both but by can could did do does doing done down during each
    even every few first for from get give go good had has have having he her here hers him
    his how i if in into is it its just know like make many may me more most much must my
    need new no nor not now of off on once one only or other our out over own people please
    same say see she should so some step steps such sure take tell than that the their them
    then there these they thing think this those through time to too two under until up us
    use used using very want was way we well were what when where which while who why will
    with without would write you your yours hello world explain instructions help how
    answer question here example information make made work works way ways following
    secret password system prompt ignore previous message text code user assistant model
    lock pick picking bomb weapon build create describe detail details list
    """.split()  # noqa: SIM905 - a word list reads best as words
)
# Letter frequencies of English text (per cent), a..z.
_ENGLISH_FREQ = (
    8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.8, 4.0, 2.4,
    6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8, 1.0, 2.4, 0.15, 2.0, 0.07,
)  # fmt: skip
_ENGLISH = tuple(f / sum(_ENGLISH_FREQ) for f in _ENGLISH_FREQ)
_WORD_RE = re.compile(r"[a-z]+")

_BASE64_RUN_RE = re.compile(rf"[A-Za-z0-9+/_-]{{{MIN_BASE64_RUN},}}={{0,2}}")
_HEX_RUN_RE = re.compile(rf"(?:(?:0x|\\x)?[0-9a-fA-F]{{2}}[ :,]?){{{MIN_HEX_BYTES},}}")
_HEX_NOISE_RE = re.compile(r"0x|\\x|[ :,]")
_BINARY_RUN_RE = re.compile(rf"(?:[01]{{8}}[ ,]?){{{MIN_BINARY_BYTES},}}")
# Dots and dashes as typed or typeset (middle dot, bullet, minus sign, en dash).
_MORSE_RE = re.compile("[.\\-_/| \n\u00b7\u2022\u2212\u2013]+")
_PERCENT_RE = re.compile(r"%[0-9a-fA-F]{2}")
_TAG_RE = re.compile("[\U000e0000-\U000e007f]+")

_MORSE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", "-----": "0",
    ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5", "-....": "6",
    "--...": "7", "---..": "8", "----.": "9", ".-.-.-": ".", "--..--": ",", "..--..": "?",
    ".----.": "'", "-.-.--": "!", "-..-.": "/", "-.--.": "(", "-.--.-": ")", ".-...": "&",
    "---...": ":", "-.-.-.": ";", "-...-": "=", ".-.-.": "+", "-....-": "-", ".-..-.": '"',
    ".--.-.": "@",
}  # fmt: skip
_MORSE_SYMBOLS = str.maketrans(
    {"\u00b7": ".", "\u2022": ".", "\u2212": "-", "\u2013": "-", "_": "-"}
)

_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_ATBASH = str.maketrans(_LOWER + _UPPER, _LOWER[::-1] + _UPPER[::-1])
_SHIFTS = {
    k: str.maketrans(_LOWER + _UPPER, _LOWER[k:] + _LOWER[:k] + _UPPER[k:] + _UPPER[:k])
    for k in range(1, 26)
}


def english_score(text: str, work: Work | None = None) -> float:
    """How much ``text`` reads like English, 0..1: the share of its letters in common words,
    blended with how close its letter frequencies are to English's. 0 for too few letters."""
    sample = text[:SCORE_SAMPLE_CHARS].lower()
    if work:
        work.spend(len(sample))
    words = _WORD_RE.findall(sample)
    letters = sum(len(w) for w in words)
    if letters < MIN_SCORED_LETTERS:
        return 0.0
    counts = [0] * 26
    for word in words:
        for ch in word:
            counts[ord(ch) - 97] += 1
    if sum(1 for c in counts if c) < MIN_DISTINCT_LETTERS:
        # "x x x" shifted to "a a a" is all common words and still not language.
        return 0.0
    common = sum(len(w) for w in words if w in COMMON_WORDS)
    distance = sum(abs(c / letters - e) for c, e in zip(counts, _ENGLISH, strict=True)) / 2
    return 0.65 * (common / letters) + 0.35 * (1 - distance)


def _printable(text: str) -> bool:
    """Text without control, private or unassigned characters (line breaks, tabs and the
    invisible format characters a page shows as stand-ins are allowed)."""
    return bool(text.strip()) and all(
        ch.isprintable() or ch in "\n\r\t" or unicodedata.category(ch) in ("Cf", "Zs")
        for ch in text
    )


def _is_clean(text: str) -> bool:
    """Printable text that is mostly letters and spaces (any script), not bytes or symbols."""
    if not _printable(text):
        return False
    letters = sum(1 for ch in text if ch.isalpha())
    spaces = sum(1 for ch in text if ch.isspace())
    visible = len(text) - spaces
    return visible > 0 and letters >= 0.6 * visible and (letters + spaces) >= 0.65 * len(text)


def _wordy(text: str) -> bool:
    """Clean text that has words (a space between letters), not one long token."""
    return _is_clean(text) and " " in text.strip()


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _runs(pattern: re.Pattern[str], text: str) -> list[str]:
    """The text itself when it is one run of the pattern, else its first MAX_RUNS runs."""
    stripped = text.strip()
    if pattern.fullmatch(stripped):
        return [stripped]
    out: list[str] = []
    for match in pattern.finditer(text):
        out.append(match.group().strip())
        if len(out) >= MAX_RUNS:
            break
    return out


def _join_runs(decoded: list[str]) -> str | None:
    """Decoded runs as one text; None when no run decoded to printable text. (Printable but not
    letters, such as hex inside base64, may still decode further: see ``decodings``.)"""
    kept = [d for d in decoded if _printable(d)]
    return "\n".join(kept) if kept else None


def _base64(text: str, work: Work) -> list[tuple[str, str]]:
    found: dict[str, list[str]] = {}
    for run in _runs(_BASE64_RUN_RE, text):
        work.spend(len(run))
        body = run.rstrip("=")
        if len(body) % 4 == 1:
            continue
        urlsafe = "-" in body or "_" in body
        if urlsafe and ("+" in body or "/" in body):
            continue
        padded = body + "=" * (-len(body) % 4)
        try:
            raw = (
                base64.urlsafe_b64decode(padded)
                if urlsafe
                else base64.b64decode(padded, validate=True)
            )
        except (binascii.Error, ValueError):
            continue
        decoded = _utf8(raw)
        if decoded is not None:
            found.setdefault("base64 (URL-safe)" if urlsafe else "base64", []).append(decoded)
    return [(label, out) for label, runs in found.items() if (out := _join_runs(runs))]


def _hex(text: str, work: Work) -> list[tuple[str, str]]:
    decoded: list[str] = []
    for run in _runs(_HEX_RUN_RE, text):
        work.spend(len(run))
        digits = _HEX_NOISE_RE.sub("", run)
        if len(digits) % 2:
            continue
        out = _utf8(bytes.fromhex(digits))
        if out is not None:
            decoded.append(out)
    joined = _join_runs(decoded)
    return [("hex", joined)] if joined else []


def _binary(text: str, work: Work) -> list[tuple[str, str]]:
    decoded: list[str] = []
    for run in _runs(_BINARY_RUN_RE, text):
        work.spend(len(run))
        bits = run.replace(" ", "").replace(",", "")
        if len(bits) % 8:
            continue
        raw = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
        out = _utf8(raw)
        if out is not None:
            decoded.append(out)
    joined = _join_runs(decoded)
    return [("binary", joined)] if joined else []


def _morse(text: str, work: Work) -> list[tuple[str, str]]:
    stripped = text.strip()
    if not stripped or not _MORSE_RE.fullmatch(stripped):
        return []
    work.spend(len(stripped))
    normal = stripped.translate(_MORSE_SYMBOLS)
    words = [w for w in re.split(r"\s*[/|\n]\s*|\s{3,}", normal) if w.strip()]
    letters: list[str] = []
    unknown = 0
    out_words: list[str] = []
    for word in words:
        codes = word.split()
        chars = [_MORSE.get(code, "") for code in codes]
        unknown += sum(1 for c in chars if not c)
        letters.extend(c for c in chars if c)
        out_words.append("".join(chars))
    if len(letters) < MIN_MORSE_LETTERS or unknown > len(letters) // 10:
        return []
    out = " ".join(out_words)
    return [("Morse", out)] if _printable(out) else []


def _percent(text: str, work: Work) -> list[tuple[str, str]]:
    work.spend(len(text))
    escapes = len(_PERCENT_RE.findall(text))
    if escapes < MIN_PERCENT_ESCAPES:
        return []
    try:
        out = urllib.parse.unquote(text, errors="strict")
    except UnicodeDecodeError:
        return []
    if " " not in text and "+" in out:
        out = out.replace("+", " ")
    return [("URL-encoding", out)] if out != text and _printable(out) else []


def _tags(text: str, work: Work) -> list[tuple[str, str]]:
    if text.isascii():
        return []
    work.spend(len(text))
    runs = _TAG_RE.findall(text)
    out = "\n".join(
        "".join(chr(ord(ch) - 0xE0000) for ch in run if 0xE0020 <= ord(ch) <= 0xE007E)
        for run in runs[:MAX_RUNS]
    ).strip()
    return [("Unicode tags", out)] if len(out) >= 2 else []


_STRUCTURAL: tuple[Callable[[str, Work], list[tuple[str, str]]], ...] = (
    _base64,
    _hex,
    _binary,
    _morse,
    _percent,
    _tags,
)


def _structural(text: str, work: Work) -> list[tuple[str, str]]:
    """Every structural decoding of ``text`` that gives clean text."""
    found: list[tuple[str, str]] = []
    for codec in _STRUCTURAL:
        found.extend(codec(text, work))
    return found


def _ciphers(text: str, work: Work) -> list[tuple[str, str]]:
    """The Caesar shift, Atbash or reversal that reads clearly more like English than ``text``
    (at most one: the best), or nothing."""
    sample = text[:SCORE_SAMPLE_CHARS]
    visible = sum(1 for ch in sample if not ch.isspace())
    if sum(1 for ch in sample if ch.isascii() and ch.isalpha()) < MIN_CIPHER_LETTER_SHARE * visible:
        return []
    baseline = english_score(sample, work)
    candidates: list[tuple[float, str, Callable[[str], str]]] = []
    for k, table in _SHIFTS.items():
        label = "ROT13" if k == 13 else f"Caesar shift {26 - k}"
        candidates.append((english_score(sample.translate(table), work), label, _translator(table)))
    candidates.append((english_score(sample.translate(_ATBASH), work), "Atbash", _atbash))
    candidates.append((english_score(sample[::-1], work), "reversed", _reverse))
    score, label, decode = max(candidates, key=lambda c: c[0])
    if score < MIN_CIPHER_SCORE or score < baseline + MIN_CIPHER_GAIN:
        return []
    work.spend(len(text))
    return [(label, decode(text))]


def _translator(table: dict[int, int]) -> Callable[[str], str]:
    return lambda text: text.translate(table)


def _atbash(text: str) -> str:
    return text.translate(_ATBASH)


def _reverse(text: str) -> str:
    return text[::-1]


def decodings(text: str, work: Work | None = None) -> list[Decoding]:
    """The clean decodings of ``text`` (its first MAX_INPUT_CHARS characters), best first:
    structural decodings (and what they in turn decode to), then a cipher. Empty for text
    that reads as it is."""
    work = work or Work()
    text = text[:MAX_INPUT_CHARS]
    if not text.strip():
        return []
    found: list[tuple[str, str]] = []
    for label, out in _structural(text, work):
        inner = [
            (f"{label} → {inner_label}", inner_out)
            for inner_label, inner_out in _structural(out, work) + _ciphers(out, work)
            if _is_clean(inner_out)
        ]
        # A step that gives words is shown; one that only gives another encoding is shown
        # through what that decodes to.
        if _is_clean(out) and (_wordy(out) or not inner):
            found.append((label, out))
        found.extend(inner)
    found.extend(_ciphers(text, work))
    result: list[Decoding] = []
    seen = {text.strip()}
    for label, out in found:
        out = out.strip()
        if out in seen:
            continue
        seen.add(out)
        result.append(Decoding(label, out[:MAX_OUTPUT_CHARS], len(out) > MAX_OUTPUT_CHARS))
        if len(result) >= MAX_DECODINGS:
            break
    return result
