"""Parse and validate PyRIT's serialized shapes (0.13 ``to_dict()`` and 1.x ``model_dump``).

No database access here: every check that needs only the item itself lives in this module and
returns plain dataclasses whose ``row`` dicts are ready for ``Model(**row)``. The services add
the checks that need stored rows (conflicts, Message roles across batches).

Validation follows what PyRIT would have produced (PYRIT-MODEL.md sections 1-6):

* Unknown keys are rejected (PyRIT's pydantic models are ``extra="forbid"``). The one
  extension is an optional ``pyrit_version`` string on every kind, the column PyRIT's own
  memory tables keep per row; it is stored and never exported in the PyRIT shapes.
* ``id``, ``timestamp`` (and a piece's ``sequence``) are required even where PyRIT has a
  default: a default made up here (a fresh uuid4, "now") would break idempotent replays.
* Timestamps must carry an offset or ``Z`` in both lines (1.x rejects naive datetimes and
  0.13's ``isoformat()`` always wrote ``+00:00``). They are stored as UTC.
* A piece's ``converted_value`` may be missing (PyRIT then mirrors ``original_value``), but an
  explicit null, or ``""`` next to a non-empty original, is something PyRIT never serializes
  (its validator replaces falsy values), so it is rejected.
* Strings may hold any character and JSON columns any float (NUL, NaN, +/-Infinity): the
  model fields store them exactly (redteam/core/storedtext.py). Sizes, nesting and lone
  surrogates are checked per item before parsing, by redteam/core/jsonguard.py
  (redteam.site.ingest calls it on every item of every path).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from redteam.core.digests import is_sha256
from redteam.core.identity import ComponentIdentifier
from redteam.core.identity.display import display_name, identifier_kind
from redteam.core.outcomes import FieldError

__all__ = [
    "EXTENSION_KEYS",
    "MISSING",
    "ParsedIdentifier",
    "dump_digest",
    "parse_identifier",
    "raw_id",
]

INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)
MAX_ID_LENGTH: Final = 255
MAX_IDENTIFIER_DEPTH: Final = 64
EXTENSION_KEYS: Final = frozenset({"pyrit_version"})

MISSING: Final = object()


# --- identifier dumps ---------------------------------------------------------------------


def dump_digest(dump: Mapping[str, Any]) -> str:
    """IdentifierDump primary key: sha256 of the dump's canonical JSON (sorted keys)."""
    text = json.dumps(dump, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- a small field reader ------------------------------------------------------------------


class _Reader:
    """Reads typed fields from one item, collecting FieldErrors named by field path."""

    def __init__(self, item: Mapping[str, Any], prefix: str, errors: list[FieldError]):
        self.item = item
        self.prefix = prefix
        self.errors = errors

    def name(self, key: str) -> str:
        return f"{self.prefix}{key}"

    def error(self, key: str, message: str) -> None:
        self.errors.append(FieldError(self.name(key), message))

    def absent(self, key: str, *, required: bool, default: Any) -> Any:
        """What a missing field reads as (`default`), after naming it when it is required."""
        if required:
            self.error(key, "This field is required.")
        return default

    def raw(self, key: str, *, required: bool) -> Any:
        value = self.item.get(key, MISSING)
        if value is MISSING:
            self.absent(key, required=required, default=MISSING)
        return value

    def string(
        self,
        key: str,
        *,
        required: bool = False,
        nullable: bool = True,
        default: Any = None,
        max_length: int | None = None,
        non_empty: bool = False,
    ) -> Any:
        value = self.item.get(key, MISSING)
        # The common case first: every piece of a batch passes through here a dozen times.
        if (
            type(value) is str
            and (value or not non_empty)
            and (max_length is None or len(value) <= max_length)
        ):
            return value
        if value is MISSING:
            return self.absent(key, required=required, default=default)
        if value is None:
            if not nullable:
                self.error(key, "This field may not be null.")
            return None
        if not isinstance(value, str):
            self.error(key, f"Must be a string, not {_type_name(value)}.")
            return default
        if non_empty and not value:
            self.error(key, "Must not be empty.")
        if max_length is not None and len(value) > max_length:
            self.error(key, f"Must be at most {max_length} characters (got {len(value)}).")
        return value

    def choice(
        self,
        key: str,
        choices: Sequence[str],
        *,
        required: bool = False,
        default: str | None = None,
        nullable: bool = False,
    ) -> Any:
        value = self.item.get(key, MISSING)
        if type(value) is str and value in choices:
            return value
        if value is MISSING:
            return self.absent(key, required=required, default=default)
        if value is None and nullable:
            return None
        if not isinstance(value, str) or value not in choices:
            self.error(key, f"{value!r} is not one of {', '.join(choices)}.")
            return default
        return value

    def uuid(self, key: str, *, required: bool = False, nullable: bool = True) -> Any:
        value = self.item.get(key, MISSING)
        if type(value) is str:
            return _parse_uuid(value, self, key)
        if value is MISSING:
            return self.absent(key, required=required, default=None)
        if value is None:
            if not nullable or required:
                self.error(key, "This field may not be null.")
            return None
        return _parse_uuid(value, self, key)

    def integer(
        self, key: str, *, required: bool = False, default: int = 0, bounds: tuple[int, int] = INT32
    ) -> Any:
        value = self.item.get(key, MISSING)
        # bool is an int in Python but not in PyRIT's JSON (type() tells them apart).
        if type(value) is int and bounds[0] <= value <= bounds[1]:
            return value
        if value is MISSING:
            return self.absent(key, required=required, default=default)
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(key, f"Must be an integer, not {_type_name(value)}.")
            return default
        if not bounds[0] <= value <= bounds[1]:
            self.error(key, f"Must be between {bounds[0]} and {bounds[1]}.")
            return default
        return value

    def timestamp(self, key: str, *, required: bool = False) -> Any:
        value = self.item.get(key, MISSING)
        if value is MISSING:
            return self.absent(key, required=required, default=None)
        if value is None:
            self.error(key, "This field may not be null.")
            return None
        return _parse_timestamp(value, self, key)

    def json_object(self, key: str, *, default_empty: bool = True, nullable: bool = False) -> Any:
        value = self.item.get(key, MISSING)
        if type(value) is dict:
            return dict(value)
        if value is MISSING:
            return {} if default_empty else None
        if value is None:
            if nullable:
                return None
            self.error(key, "Must be an object, not null.")
            return {}
        if not isinstance(value, Mapping):
            self.error(key, f"Must be an object, not {_type_name(value)}.")
            return {}
        return dict(value)

    def str_dict(self, key: str) -> dict[str, str]:
        value: dict[str, Any] = self.json_object(key)
        for k, v in value.items():
            if not isinstance(v, str):
                self.error(f"{key}.{k}", f"Label values must be strings, not {_type_name(v)}.")
        return value

    def str_list(self, key: str, *, nullable: bool = True, default: Any = None) -> Any:
        value = self.raw(key, required=False)
        if value is MISSING:
            return default
        if value is None:
            if not nullable:
                self.error(key, "Must be a list, not null.")
                return default
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(key, "Must be a list of strings.")
            return default
        return list(value)

    def unknown_keys(self, allowed: frozenset[str], what: str) -> None:
        if allowed.issuperset(self.item):
            return
        for key in self.item:
            if key not in allowed:
                self.error(
                    str(key),
                    f"Unknown field for a {what} (PyRIT's model forbids extra fields).",
                )


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _parse_uuid(value: Any, reader: _Reader, key: str) -> uuid.UUID | None:
    if not isinstance(value, str):
        reader.error(key, f"Must be a UUID string, not {_type_name(value)}.")
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        reader.error(key, f"{value[:80]!r} is not a valid UUID.")
        return None


def _parse_timestamp(value: Any, reader: _Reader, key: str) -> datetime | None:
    if not isinstance(value, str):
        reader.error(key, f"Must be an ISO-8601 string, not {_type_name(value)}.")
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        reader.error(key, f"{value[:80]!r} is not an ISO-8601 datetime.")
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        reader.error(
            key,
            f"{value[:80]!r} is a naive datetime; add 'Z' or a UTC offset "
            "(PyRIT rejects naive timestamps).",
        )
        return None
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # e.g. 0001-01-01T00:00:00+05:00: a valid datetime whose UTC instant is not.
        reader.error(key, f"{value[:80]!r} is out of range once converted to UTC.")
        return None


def _sha256_field(reader: _Reader, key: str) -> Any:
    value = reader.string(key)
    if value is not None and not is_sha256(value):
        reader.error(key, "Must be 64 lowercase hex characters (a SHA-256 digest) or null.")
        return None
    return value


def _id_string(reader: _Reader, key: str) -> Any:
    return reader.string(
        key, required=True, nullable=False, max_length=MAX_ID_LENGTH, non_empty=True
    )


def _pyrit_version(reader: _Reader) -> Any:
    return reader.string("pyrit_version", max_length=32)


# --- identifiers ---------------------------------------------------------------------------


@dataclass
class ParsedIdentifier:
    """One identifier use: its dump (kept verbatim) and the rows of every node of its tree."""

    digest: str
    dump_json: str
    identifier: ComponentIdentifier
    nodes: list[dict[str, Any]]

    @property
    def hash(self) -> str:
        """The root node's hash (the ComponentIdentifier row this use points at)."""
        return self.identifier.hash

    @property
    def class_name(self) -> str:
        """The root node's class name."""
        return self.identifier.class_name


def _check_identifier_structure(value: Any, legacy: bool, depth: int = 0) -> str | None:
    """Type-check the flat dump before handing it to ComponentIdentifier (which trusts types)."""
    if depth > MAX_IDENTIFIER_DEPTH:
        return f"is nested more than {MAX_IDENTIFIER_DEPTH} levels deep"
    if not isinstance(value, Mapping):
        return f"must be an identifier object, not {_type_name(value)}"
    for key, limit in (("class_name", 255), ("class_module", 512), ("__type__", 255)):
        v = value.get(key)
        if v is not None and (not isinstance(v, str) or len(v) > limit):
            return f"'{key}' must be a string of at most {limit} characters"
    for key in ("eval_hash",) + (("hash",) if legacy else ()):
        v = value.get(key)
        if v is not None and v != "" and not is_sha256(v):
            return f"'{key}' must be 64 lowercase hex characters"
    v = value.get("pyrit_version")
    if v is not None and (not isinstance(v, str) or len(v) > 32):
        return "'pyrit_version' must be a string of at most 32 characters"
    children = value.get("children")
    if children is not None:
        if not isinstance(children, Mapping):
            return "'children' must be an object"
        for name, child in children.items():
            for item in child if isinstance(child, list) else [child]:
                problem = _check_identifier_structure(item, legacy, depth + 1)
                if problem:
                    return f"child {name!r} {problem}"
    attributes = value.get("attributes")
    if attributes is not None and not isinstance(attributes, Mapping):
        return "'attributes' must be an object"
    return None


def _iter_nodes(root: ComponentIdentifier) -> Iterator[ComponentIdentifier]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        for child in node.children.values():
            stack.extend(child if isinstance(child, list) else [child])


def _node_row(node: ComponentIdentifier) -> dict[str, Any]:
    children = {
        name: child.hash if isinstance(child, ComponentIdentifier) else [c.hash for c in child]
        for name, child in node.children.items()
    }
    return {
        "hash": node.hash,
        "class_name": node.class_name,
        "class_module": node.class_module,
        "params": dict(node.params),
        "children": children,
        "attributes": dict(node.attributes),
        "pyrit_version": node.pyrit_version,
        "eval_hash": node.eval_hash,
        # A legacy row's hash was computed on untruncated params: keep it, and say so.
        "hash_is_stored": node.stored_hash is not None and node.stored_hash != node.content_hash,
        "display_name": display_name(node.class_name, node.params),
        "kind": identifier_kind(node.class_name, node.class_module),
    }


IDENTIFIER_CACHE_SIZE: Final = 4096
# (legacy?, dump text) -> parse; entries are never mutated, so sharing them is safe.
_IDENTIFIER_CACHE: dict[tuple[bool, str | None], ParsedIdentifier] = {}
# json.dumps(value, ensure_ascii=False), without building a new encoder on every call.
_dump_text = json.JSONEncoder(ensure_ascii=False).encode


def parse_identifier(
    value: Any, field_name: str, *, legacy: bool, errors: list[FieldError]
) -> ParsedIdentifier | None:
    """Parse one identifier dump (legacy ``from_dict`` or 1.x ``model_validate``)."""
    if value is None or value is MISSING:
        return None
    # 0.13 memory wrote an absent identifier as {} (NOT NULL columns); it means "none".
    if legacy and isinstance(value, Mapping) and not value:
        return None
    # A batch usually repeats the same few identifiers thousands of times: parse each
    # distinct dump text once (the text keeps key order and 1 vs 1.0, so equal text means
    # an equal parse).
    try:
        dump_json = _dump_text(value)
    except (TypeError, ValueError, RecursionError):
        dump_json = None
    cached = _IDENTIFIER_CACHE.get((legacy, dump_json)) if dump_json is not None else None
    if cached is not None:
        return cached
    problem = _check_identifier_structure(value, legacy)
    if problem:
        errors.append(FieldError(field_name, f"Identifier {problem}."))
        return None
    try:
        identifier = (
            ComponentIdentifier.from_dict(value)
            if legacy
            else ComponentIdentifier.model_validate(value)
        )
    except (ValueError, TypeError) as exc:
        errors.append(FieldError(field_name, f"Invalid identifier: {exc}"))
        return None
    except RecursionError:
        errors.append(FieldError(field_name, "Identifier is nested too deeply."))
        return None
    nodes: dict[str, dict[str, Any]] = {}
    for node in _iter_nodes(identifier):
        nodes.setdefault(node.hash, _node_row(node))
    parsed = ParsedIdentifier(
        digest=dump_digest(value),
        dump_json=dump_json or _dump_text(value),
        identifier=identifier,
        nodes=list(nodes.values()),
    )
    if dump_json is not None:
        if len(_IDENTIFIER_CACHE) >= IDENTIFIER_CACHE_SIZE:
            _IDENTIFIER_CACHE.clear()
        _IDENTIFIER_CACHE[(legacy, dump_json)] = parsed
    return parsed


def _identifier_list(reader: _Reader, key: str, *, legacy: bool) -> list[ParsedIdentifier]:
    value = reader.raw(key, required=False)
    if value is MISSING or value is None:
        return []
    if not isinstance(value, list):
        reader.error(key, f"Must be a list of identifiers, not {_type_name(value)}.")
        return []
    out: list[ParsedIdentifier] = []
    for i, item in enumerate(value):
        parsed = parse_identifier(
            item, reader.name(f"{key}[{i}]"), legacy=legacy, errors=reader.errors
        )
        if parsed is not None:
            out.append(parsed)
        elif item is not None and isinstance(item, Mapping) and not item:
            reader.error(f"{key}[{i}]", "An empty identifier is not allowed in a list.")
    return out


def raw_id(item: Any, key: str) -> str | None:
    """The item's id as sent (a string, cut to 255), for outcomes of unparseable items."""
    if isinstance(item, Mapping):
        value = item.get(key)
        if isinstance(value, str):
            return value[:255]
    return None
