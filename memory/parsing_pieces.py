"""Parse and validate PyRIT message pieces and scores (no database access).

The rules are those of memory/parsing.py (shared readers, identifiers, JSON safety); see its
docstring for the choices made where PyRIT is lenient.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memory.parsing import (
    EXTENSION_KEYS,
    MISSING,
    ParsedIdentifier,
    _id_string,
    _identifier_list,
    _parse_uuid,
    _pyrit_version,
    _Reader,
    _sha256_field,
    _type_name,
    parse_identifier,
    raw_id,
)
from memory.shapes import (
    LEGACY_PIECE_ONLY,
    LOOSE_CONTENT_KEY,
    LOOSE_CONTENT_KEYS,
    PIECE_KEYS_013,
    PIECE_KEYS_1X,
    SCORABLE_KEYS,
    SCORE_COMPARE_013,
    SCORE_COMPARE_1X,
    SCORE_COMPARE_ENTRY,
    SCORE_EXTRA_013,
    SCORE_KEYS_013,
    SCORE_KEYS_1X,
    SCORE_KEYS_ENTRY,
)
from redteam.core.enums import (
    CHAT_MESSAGE_ROLES,
    ORIGINATORS,
    PROMPT_DATA_TYPES,
    PROMPT_RESPONSE_ERRORS,
    SCORE_STATUSES,
    SCORE_TYPES,
    TEXT_HASHED_DATA_TYPES,
)
from redteam.core.outcomes import FieldError
from redteam.core.reassembly import NULL_CONVERTED_VALUE

__all__ = ["ParsedPiece", "ParsedScore", "parse_piece", "parse_score", "piece_shape", "score_shape"]


# --- pieces --------------------------------------------------------------------------------


@dataclass
class ParsedPiece:
    """A validated MessagePiece: model field values plus the identifiers it uses."""

    index: int
    shape: str
    row: dict[str, Any] = field(default_factory=dict)
    converters: list[ParsedIdentifier] = field(default_factory=list)
    target: ParsedIdentifier | None = None
    attack: ParsedIdentifier | None = None
    scorer: ParsedIdentifier | None = None
    scores: list[ParsedScore] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)
    raw_id: str | None = None

    @property
    def id(self) -> uuid.UUID | None:
        """The piece id (None when it did not parse)."""
        value: uuid.UUID | None = self.row.get("id")
        return value

    @property
    def message_key(self) -> tuple[str, int]:
        """(conversation_id, sequence): pieces sharing it form one Message."""
        return (self.row.get("conversation_id") or "", self.row.get("sequence", 0))

    def identifiers(self) -> Iterator[ParsedIdentifier]:
        """Every identifier use of the piece."""
        yield from self.converters
        for ident in (self.target, self.attack, self.scorer):
            if ident is not None:
                yield ident


def piece_shape(item: Mapping[str, Any]) -> str:
    """'0.13' when any 0.13-only key is present, else '1.x'."""
    return "1.x" if LEGACY_PIECE_ONLY.isdisjoint(item) else "0.13"


_ALLOWED_KEYS = {
    "0.13": frozenset(PIECE_KEYS_013) | EXTENSION_KEYS,
    "1.x": frozenset(PIECE_KEYS_1X) | EXTENSION_KEYS,
}


def parse_piece(item: Any, index: int, *, prefix: str = "") -> ParsedPiece:
    """Validate one MessagePiece dict in either shape."""
    errors: list[FieldError] = []
    if not isinstance(item, Mapping):
        piece = ParsedPiece(index=index, shape="1.x", errors=errors)
        errors.append(
            FieldError(prefix.rstrip(".") or None, "Each message piece must be an object.")
        )
        return piece
    shape = piece_shape(item)
    legacy = shape == "0.13"
    piece = ParsedPiece(index=index, shape=shape, errors=errors, raw_id=raw_id(item, "id"))
    r = _Reader(item, prefix, errors)
    r.unknown_keys(_ALLOWED_KEYS[shape], "0.13 MessagePiece" if legacy else "MessagePiece")

    piece_id = r.uuid("id", required=True, nullable=False)
    original_value = r.string("original_value", required=True, nullable=False, default="") or ""
    original_type = r.choice("original_value_data_type", PROMPT_DATA_TYPES, default="text")
    converted = item.get("converted_value", MISSING)
    if converted is MISSING:
        # PyRIT mirrors a missing converted value (and its data type) from the original.
        converted_value = original_value
    elif converted is None:
        r.error("converted_value", NULL_CONVERTED_VALUE)
        converted_value = original_value
    elif not isinstance(converted, str):
        r.error("converted_value", f"Must be a string, not {_type_name(converted)}.")
        converted_value = original_value
    elif converted == "" and original_value != "":
        r.error(
            "converted_value",
            "Empty converted value next to a non-empty original: PyRIT replaces a falsy "
            "converted value with the original, so it never serializes this.",
        )
        converted_value = original_value
    else:
        converted_value = converted
    converted_type = r.choice("converted_value_data_type", PROMPT_DATA_TYPES, default=original_type)
    if piece_id is not None and item.get("original_prompt_id") == item["id"]:
        original_prompt_id = piece_id  # a piece that is its own original: parsed once
    else:
        original_prompt_id = r.uuid("original_prompt_id", nullable=False)
    row: dict[str, Any] = {
        "id": piece_id,
        "conversation_id": _id_string(r, "conversation_id"),
        "sequence": r.integer("sequence", required=True),
        "role": r.choice("role", CHAT_MESSAGE_ROLES, required=True),
        "timestamp": r.timestamp("timestamp", required=True),
        "original_value": original_value,
        "original_value_data_type": original_type,
        "original_value_sha256": _sha256_field(r, "original_value_sha256"),
        "converted_value": converted_value,
        "converted_value_data_type": converted_type,
        "converted_value_sha256": _sha256_field(r, "converted_value_sha256"),
        "response_error": r.choice("response_error", PROMPT_RESPONSE_ERRORS, default="none"),
        "original_prompt_id": original_prompt_id or piece_id,
        "prompt_metadata": r.json_object("prompt_metadata"),
        "labels": None,
        "targeted_harm_categories": None,
        "originator": None,
        "pyrit_version": _pyrit_version(r),
        "source_shape": shape,
    }
    _check_reserved_metadata(r, row["prompt_metadata"])
    piece.converters = _identifier_list(r, "converter_identifiers", legacy=legacy)
    if legacy:
        row["labels"] = r.str_dict("labels")
        harm = r.str_list("targeted_harm_categories")
        # 0.13's to_dict() writes null for an empty list; store it the way it exports.
        row["targeted_harm_categories"] = harm or None
        row["originator"] = r.choice("originator", ORIGINATORS, default="undefined")
        piece.target = parse_identifier(
            item.get("prompt_target_identifier"),
            r.name("prompt_target_identifier"),
            legacy=True,
            errors=errors,
        )
        piece.attack = parse_identifier(
            item.get("attack_identifier"), r.name("attack_identifier"), legacy=True, errors=errors
        )
        piece.scorer = parse_identifier(
            item.get("scorer_identifier"), r.name("scorer_identifier"), legacy=True, errors=errors
        )
        scores = item.get("scores", [])
        if scores is None:
            scores = []
        if not isinstance(scores, list):
            r.error("scores", "Must be a list of scores.")
        else:
            for i, raw in enumerate(scores):
                parsed = parse_score(raw, i, prefix=f"{prefix}scores[{i}].", force_shape="0.13")
                errors.extend(parsed.errors)
                piece.scores.append(parsed)
    piece.row = row
    return piece


def _check_reserved_metadata(reader: _Reader, metadata: Mapping[str, Any]) -> None:
    """PyRIT's reserved prompt_metadata keys have fixed types."""
    if "structured_refusal" in metadata and not isinstance(metadata["structured_refusal"], str):
        reader.error("prompt_metadata.structured_refusal", "Must be a string.")
    for key in ("truncated", "adversarial_placeholder"):
        if key in metadata and not isinstance(metadata[key], bool):
            reader.error(f"prompt_metadata.{key}", "Must be a boolean.")


# --- scores --------------------------------------------------------------------------------


@dataclass
class ParsedScore:
    """A validated Score: model field values plus its scorer identifier."""

    index: int
    shape: str
    row: dict[str, Any] = field(default_factory=dict)
    scorer: ParsedIdentifier | None = None
    errors: list[FieldError] = field(default_factory=list)
    raw_id: str | None = None
    # Fields the incoming shape carries (conflict checks compare only these).
    compared: tuple[str, ...] = ()
    # The scored loose content (a ScorableContent row), when the scorable names some.
    loose: dict[str, Any] | None = None

    @property
    def id(self) -> uuid.UUID | None:
        """The score id (None when it did not parse)."""
        value: uuid.UUID | None = self.row.get("id")
        return value


def score_shape(item: Mapping[str, Any]) -> str:
    """'entry' (ScoreEntry DB-row view), '1.x' (model_dump) or '0.13' (to_dict)."""
    if "prompt_request_response_id" in item or "scorable_content_id" in item:
        return "entry"
    if "status" in item or "scorable" in item:
        return "1.x"
    return "0.13"


def parse_score(
    item: Any, index: int, *, prefix: str = "", force_shape: str | None = None
) -> ParsedScore:
    """Validate one Score dict: 1.x model_dump, the ScoreEntry row view, or 0.13 to_dict."""
    errors: list[FieldError] = []
    if not isinstance(item, Mapping):
        errors.append(FieldError(prefix.rstrip(".") or None, "Each score must be an object."))
        return ParsedScore(index=index, shape="1.x", errors=errors)
    shape = force_shape or score_shape(item)
    score = ParsedScore(index=index, shape=shape, errors=errors, raw_id=raw_id(item, "id"))
    r = _Reader(item, prefix, errors)
    keys = {"1.x": SCORE_KEYS_1X, "entry": SCORE_KEYS_ENTRY, "0.13": SCORE_KEYS_013}[shape]
    allowed = (
        frozenset(keys)
        | EXTENSION_KEYS
        | (SCORE_EXTRA_013 if shape == "0.13" else frozenset({LOOSE_CONTENT_KEY}))
    )
    r.unknown_keys(
        allowed, {"1.x": "Score", "entry": "ScoreEntry row", "0.13": "0.13 Score"}[shape]
    )

    legacy = shape == "0.13"
    status = "complete" if legacy else r.choice("status", SCORE_STATUSES, default="complete")
    score_type = r.choice("score_type", SCORE_TYPES, required=True)
    score_value = r.string("score_value", required=legacy)
    _check_score_value(r, status, score_type, score_value, legacy)
    metadata = r.json_object("score_metadata", nullable=True)
    if metadata is None:
        metadata = {}  # PyRIT turns None into {}
    for k, v in metadata.items():
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            r.error(f"score_metadata.{k}", "Values must be strings or numbers.")
    if shape == "entry" and item.get("prompt_request_response_id") == "None":
        # ScoreEntry.to_dict() writes str(None) for a score anchored on no piece.
        message_piece_id = None
    elif shape == "entry":
        message_piece_id = r.uuid("prompt_request_response_id")
    elif "message_piece_id" in item:
        message_piece_id = r.uuid("message_piece_id")
    else:
        message_piece_id = None
    scorable = None if legacy else _parse_scorable(r, item.get("scorable"))
    if isinstance(scorable, dict) and scorable.get("scorable_type") == "message":
        ids = scorable["message_piece_ids"]
        if message_piece_id is None and ids:
            # PyRIT: a message scorable's message_piece_id defaults to its first id.
            message_piece_id = uuid.UUID(ids[0])
        elif message_piece_id is not None and str(message_piece_id) not in ids:
            r.error("message_piece_id", "Must be one of the scorable's message_piece_ids.")
    score.scorer = parse_identifier(
        item.get("scorer_class_identifier"),
        r.name("scorer_class_identifier"),
        legacy=legacy,
        errors=errors,
    )
    score.row = {
        "id": r.uuid("id", required=True, nullable=False),
        "score_value": score_value,
        "status": status,
        "score_value_description": r.string("score_value_description"),
        "score_type": score_type,
        "score_category": r.str_list("score_category"),
        "score_rationale": r.string("score_rationale"),
        "score_metadata": metadata,
        "message_piece_id": message_piece_id,
        "scorable": scorable,
        "scorable_content_id": _scorable_content_id(r, scorable, shape),
        "timestamp": r.timestamp("timestamp", required=True),
        "objective": r.string("objective"),
        "task": r.string("task") if legacy else None,
        "pyrit_version": _pyrit_version(r),
        "source_shape": "0.13" if legacy else "1.x",
        "scorer_class": score.scorer.class_name[:255] if score.scorer else "",
    }
    if not legacy:
        score.loose = _loose_content(r, scorable, item.get(LOOSE_CONTENT_KEY))
        score.row["loose_content_id"] = score.loose["id"] if score.loose else None
    score.compared = {
        "1.x": SCORE_COMPARE_1X,
        "entry": SCORE_COMPARE_ENTRY,
        # `task` (0.13's DB copy of objective) is not part of to_dict(), like pyrit_version:
        # kept when sent, never compared, so the file and its to_dict() export agree.
        "0.13": SCORE_COMPARE_013,
    }[shape]
    return score


def _check_score_value(r: _Reader, status: Any, score_type: Any, value: Any, legacy: bool) -> None:
    """PyRIT's Score validation: null iff undetermined; per-type value rules when complete."""
    if status == "undetermined":
        if value is not None:
            r.error("score_value", "Must be null when status is 'undetermined'.")
        return
    if value is None:
        if not legacy:  # 0.13 already reported the missing/null field
            r.error("score_value", "Must not be null unless status is 'undetermined'.")
        elif "score_value" in r.item:
            r.error("score_value", "This field may not be null.")
        return
    if not isinstance(value, str):
        return
    if score_type == "true_false" and value.lower() not in ("true", "false"):
        r.error("score_value", f"{value[:40]!r} is not 'true' or 'false' (case-insensitive).")
    elif score_type == "float_scale":
        try:
            number = float(value)
        except ValueError:
            r.error("score_value", f"{value[:40]!r} is not a number.")
            return
        if not 0.0 <= number <= 1.0:
            r.error("score_value", f"{value[:40]!r} is outside 0..1 for a float_scale score.")


def _parse_scorable(r: _Reader, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        r.error("scorable", f"Must be an object or null, not {_type_name(value)}.")
        return None
    kind = value.get("scorable_type")
    if not isinstance(kind, str) or kind not in SCORABLE_KEYS:
        r.error("scorable.scorable_type", f"{kind!r} is not one of {', '.join(SCORABLE_KEYS)}.")
        return None
    for key in value:
        if key not in SCORABLE_KEYS[kind]:
            r.error(f"scorable.{key}", f"Unknown field for a {kind} scorable.")
    sub = _Reader(value, r.name("scorable."), r.errors)
    out = dict(value)
    if kind == "message":
        ids = value.get("message_piece_ids")
        if not isinstance(ids, list) or not ids:
            sub.error("message_piece_ids", "Must be a non-empty list of UUIDs.")
            return None
        parsed = [_parse_uuid(v, sub, f"message_piece_ids[{i}]") for i, v in enumerate(ids)]
        if any(p is None for p in parsed):
            return None
        out["message_piece_ids"] = [str(p) for p in parsed]
    elif kind == "content":
        sub.string("value", required=True, nullable=False)
        sub.choice("data_type", PROMPT_DATA_TYPES, required=True)
    else:
        sub.uuid("content_id", required=True, nullable=False)
        sub.choice("data_type", PROMPT_DATA_TYPES, required=True)
    return out


# --- loose content -------------------------------------------------------------------------

# Namespace of the content-addressed ScorableContent ids (a fixed, arbitrary uuid4).
LOOSE_CONTENT_NAMESPACE = uuid.UUID("4f7d1c2e-9a3b-4e8f-b1d6-2c5a7e9f0b13")


def loose_content_id(data_type: str, value: str) -> uuid.UUID:
    """The ScorableContent id of a value: the same content always derives the same row."""
    return uuid.uuid5(LOOSE_CONTENT_NAMESPACE, f"{data_type}\n{value}")


def loose_content_row(
    value: str, data_type: str, value_sha256: str | None = None
) -> dict[str, Any]:
    """The ScorableContent row of scored loose content, however it arrived.

    PyRIT hashes text as UTF-8 and media by their bytes; a media value sent inline (a path)
    has no hash here unless one is sent.
    """
    if value_sha256 is None and data_type in TEXT_HASHED_DATA_TYPES:
        value_sha256 = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return {
        "id": loose_content_id(data_type, value),
        "value": value,
        "value_sha256": value_sha256,
        "data_type": data_type,
    }


def _scorable_content_id(r: _Reader, scorable: Any, shape: str) -> uuid.UUID | None:
    """PyRIT derives scorable_content_id from a content_entry scorable; the row view repeats it."""
    derived = None
    if isinstance(scorable, dict) and scorable.get("scorable_type") == "content_entry":
        derived = _parse_uuid(scorable.get("content_id"), r, "scorable.content_id")
    if shape != "entry":
        return derived
    sent: uuid.UUID | None = r.uuid("scorable_content_id")
    if sent != derived and (sent is not None or derived is not None):
        r.error(
            "scorable_content_id", "Must be the content_id of a content_entry scorable, else null."
        )
    return sent


def _loose_content(r: _Reader, scorable: Any, entry: Any) -> dict[str, Any] | None:
    """The loose content a content scorable holds, or the entry row sent beside a
    content_entry scorable (LOOSE_CONTENT_KEY)."""
    kind = scorable.get("scorable_type") if isinstance(scorable, dict) else None
    if entry is not None or LOOSE_CONTENT_KEY in r.item:
        if kind != "content_entry":
            r.error(LOOSE_CONTENT_KEY, "Only a score with a content_entry scorable names content.")
            return None
        if not isinstance(entry, Mapping):
            r.error(LOOSE_CONTENT_KEY, f"Must be an object, not {_type_name(entry)}.")
            return None
        sub = _Reader(entry, r.name(f"{LOOSE_CONTENT_KEY}."), r.errors)
        sub.unknown_keys(LOOSE_CONTENT_KEYS, "ScorableContentEntries row")
        content_id = sub.uuid("id", required=True, nullable=False)
        if content_id is not None and str(content_id) != str(scorable.get("content_id")):
            sub.error("id", "Must be the scorable's content_id.")
        value = sub.string("value", required=True, nullable=False)
        data_type = sub.choice("data_type", PROMPT_DATA_TYPES, required=True)
        if data_type is not None and data_type != scorable.get("data_type"):
            sub.error("data_type", "Must be the scorable's data_type.")
        sha = _sha256_field(sub, "value_sha256")
        sub.timestamp("timestamp")
        if not isinstance(value, str) or data_type is None:
            return None
        return loose_content_row(value, data_type, sha)
    if kind == "content":
        value, data_type = scorable.get("value"), scorable.get("data_type")
        if isinstance(value, str) and isinstance(data_type, str):
            return loose_content_row(value, data_type)
    return None
