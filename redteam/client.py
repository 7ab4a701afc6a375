"""Push PyRIT memory to a redteam server, and read it back. Standard library only.

    from redteam.client import RedteamClient

    with RedteamClient("https://redteam.example", api_key="abcd1234.secret") as client:
        client.push_memory(memory, labels={"operation": "op_2026_11"})  # a whole run
        client.push_memory("dbdata/pyrit.db")                         # a memory file
        client.push(pieces=[...], scores=[...], attack_results=[...])   # chosen rows

    python -m redteam.client push dbdata/pyrit.db --url https://redteam.example
    python -m redteam.client follow dbdata/pyrit.db --url https://redteam.example
    (the key from REDTEAM_API_KEY; `follow` pushes new and changed rows while PyRIT writes
    the file, see MemoryFollower)

Accepts PyRIT objects (1.x pydantic models: ``model_dump(mode="json")``; 0.13 objects:
``to_dict()``; dataclasses) or plain dicts. Items are sent in batches in dependency order
(conversations, pieces, scores, attack results, scenario results, seeds), never splitting a
message across two batches. Ingestion is idempotent, so a batch that failed on a network error
or a 5xx is simply sent again. A batch the server refuses as a whole (413: too large; 400: a
value it cannot take) is halved down to the single item (or message), which is then reported.
NaN and +/-Infinity are sent as JSON's NaN/Infinity tokens (as PyRIT's own json.dumps writes
them), NUL characters as they are. Media files (image/audio/video/binary paths) that exist
locally are uploaded once per distinct content; a piece PyRIT left without a sha256 gets the
file's sha256 computed here and is linked to the bytes by its id. Every rejected item of the
whole push is reported in one RedteamPushError, after everything else was sent.

``PyritMemoryFile`` reads PyRIT's SQLite memory files (0.13 and 1.x schemas) into PyRIT's own
dict shapes; the server's ``import_pyrit_memory`` uses the same reader, so a file pushed and the
same file imported give the same rows.

This module must stay importable without Django (attack code does not install it).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import datetime as dt
import enum
import hashlib
import http.client
import json
import mimetypes
import os
import random
import re
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

__all__ = [
    "KINDS",
    "MEMORY_TABLES",
    "FollowState",
    "FollowStateError",
    "MemoryFollower",
    "MemoryTable",
    "PushResult",
    "PyritMemoryFile",
    "PyritMemoryFileError",
    "RedteamClient",
    "RedteamError",
    "RedteamHTTPError",
    "RedteamPushError",
    "item_digest",
    "json_column",
    "main",
    "path_id",
    "resolve_media_path",
    "to_jsonable",
]

# Payload keys, in the order the client sends them (the server's dependency order).
KINDS: tuple[str, ...] = (
    "conversations",
    "message_pieces",
    "scores",
    "attack_results",
    "scenario_results",
    "seeds",
)
MEDIA_PATH_DATA_TYPES = frozenset({"image_path", "audio_path", "video_path", "binary_path"})
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# A whole batch refused for its content (too large, or a value the server cannot take): split
# it to find the item, instead of losing the batch.
SPLIT_STATUSES = frozenset({400, 413})
USER_AGENT = "redteam-client/2"
MAX_LINKS_PER_UPLOAD = 1000
# datetime.UTC is 3.11+; attack code may run on the 3.10 that PyRIT still supports.
UTC = dt.timezone.utc  # noqa: UP017
ID_KEYS = {"conversations": "conversation_id", "attack_results": "attack_result_id"}
# One request's items: kind -> [(index in the caller's list, item)].
Batch = dict[str, list[tuple[int, dict[str, Any]]]]


# A stored id goes into a URL path as itself only when made of these characters (every uuid).
PLAIN_PATH_ID_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
ENCODED_PATH_ID_PREFIX = "~"


def path_id(value: str) -> str:
    """A stored id as one URL path segment, as the server spells it: a plain id as it is,
    any other (``/``, ``..``, ``?``, ``#``, spaces, newlines, ...) as ``~`` + base64url."""
    if PLAIN_PATH_ID_RE.fullmatch(value):
        return value
    raw = value.encode("utf-8", "surrogatepass")
    return ENCODED_PATH_ID_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class RedteamError(Exception):
    """Base class for client errors."""


class RedteamHTTPError(RedteamError):
    """The server answered with an error status (after retries, for retryable ones)."""

    def __init__(self, status: int, body: Any, method: str, path: str) -> None:
        detail = body.get("detail") if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> HTTP {status}: {detail}")
        self.status = status
        self.body = body


class RedteamPushError(RedteamError):
    """Some items were rejected. `rejected` lists them with the caller's own indexes."""

    def __init__(self, rejected: list[dict[str, Any]], result: PushResult) -> None:
        lines = [f"{len(rejected)} item(s) rejected:"]
        lines += [f"  {line}" for line in _rejection_lines(rejected[:50])]
        if len(rejected) > 50:
            lines.append(f"  ... and {len(rejected) - 50} more (see .rejected)")
        super().__init__("\n".join(lines))
        self.rejected = rejected
        self.result = result


def _rejection_lines(rejected: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """One line per error of each rejected item: kind[index] id field [code]: message."""
    for item in rejected:
        for error in item.get("errors") or [{}]:
            yield (
                f"{item['kind']}[{item.get('index')}] id={item.get('id')} "
                f"field={error.get('field')} [{error.get('code')}]: {error.get('message')}"
            )


@dataclasses.dataclass
class PushResult:
    """Totals over every batch of one push()."""

    stored: int = 0
    unchanged: int = 0
    errors: int = 0
    batches: int = 0
    media_uploaded: int = 0
    rejected: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # Media paths no file could be read for (their pieces are stored, without bytes).
    media_unreadable: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        """One line: what was stored, already there, rejected, and media."""
        return (
            f"stored {self.stored}, unchanged {self.unchanged}, rejected {len(self.rejected)}, "
            f"media uploaded {self.media_uploaded}, media unreadable {len(self.media_unreadable)}"
            f" ({self.batches} batches)"
        )


def _rejection(
    kind: str, index: int | None, item_id: Any, field: str | None, message: str, code: str
) -> dict[str, Any]:
    """A rejected item in the server's per-item shape, for problems found on this side."""
    return {
        "kind": kind,
        "index": index,
        "id": item_id if isinstance(item_id, str) else None,
        "status": "rejected",
        "errors": [{"field": field, "message": message, "code": code}],
    }


# --- turning PyRIT objects into JSON-ready dicts -------------------------------------------


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy: PyRIT models, dataclasses, enums, UUIDs, datetimes, sets, paths."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # PyRIT 1.x / 0.14 pydantic models
        return to_jsonable(model_dump(mode="json"))
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # PyRIT 0.12-0.13 objects
        return to_jsonable(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    raise TypeError(f"Cannot send a {type(value).__name__} to redteam: not JSON-serialisable.")


def _as_item(obj: Any) -> dict[str, Any]:
    item = to_jsonable(obj)
    if not isinstance(item, dict):
        raise TypeError(f"Expected a PyRIT object or dict, got {type(obj).__name__}.")
    return item


def _flatten_pieces(objs: Iterable[Any]) -> Iterator[Any]:
    """Messages (anything with `message_pieces`) are expanded into their pieces."""
    for obj in objs:
        pieces = getattr(obj, "message_pieces", None)
        if pieces is None and isinstance(obj, Mapping) and "message_pieces" in obj:
            pieces = obj["message_pieces"]
        if pieces is not None:
            yield from pieces
        else:
            yield obj


def _encode(payload: Mapping[str, Any]) -> bytes:
    """The request body. NaN/Infinity become JSON tokens, as PyRIT writes them; NUL is kept."""
    return json.dumps(payload, separators=(",", ":"), allow_nan=True).encode()


def resolve_media_path(value: str, media_from: str | os.PathLike[str] | None = None) -> str | None:
    """The readable file a media piece's path names, or None.

    Without ``media_from`` the path itself; with it, the longest tail of the path found under
    that folder (``/home/op/run/media/a.png`` -> ``DIR/home/op/run/media/a.png`` ... ``DIR/a.png``),
    so a run's media copied to another machine are found whatever prefix they lost.
    """
    if media_from is None:
        return value if os.path.isfile(value) else None
    root = Path(media_from)
    parts = [p for p in Path(value.replace("\\", "/")).parts if p not in ("/", "", "..", ".")]
    parts = [p for p in parts if not (len(p) == 2 and p.endswith(":"))]  # drive letters
    for start in range(len(parts)):
        candidate = root.joinpath(*parts[start:])
        if candidate.is_file():
            return str(candidate)
    return None


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# --- reading PyRIT SQLite memory files -------------------------------------------------------


class PyritMemoryFileError(ValueError):
    """The file is not a readable PyRIT memory database."""


RowConverter = Callable[["PyritMemoryFile", list[sqlite3.Row]], list[dict[str, Any]]]


@dataclasses.dataclass(frozen=True)
class MemoryTable:
    """How one PyRIT table becomes items of one ingest kind.

    ``order`` is the SQL order rows are read in; rows equal on ``group_by`` (a message's pieces)
    are never split across two chunks. Adding a table is adding one of these to MEMORY_TABLES.
    """

    kind: str
    table: str
    convert: RowConverter
    order: str = "rowid"
    group_by: tuple[str, ...] = ()
    # The column PyRIT identifies a row by (what the follower's state remembers).
    key: str = "id"
    # The columns PyRIT changes in rows it already wrote, which the follower re-reads (with the
    # key) to find changed rows: None, any column; (), none (only new rows are read).
    changeable: tuple[str, ...] | None = None


def json_column(value: Any, default: Any = None) -> Any:
    """A JSON column: SQLAlchemy writes Python None as the text 'null'; NaN tokens are kept."""
    if value is None:
        return default
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return value  # not JSON: let the server's validation name the field
    return default if parsed is None else parsed


def _timestamp(value: Any, line: str) -> Any:
    """PyRIT stores naive UTC text; give it the zone and the line's JSON spelling."""
    if not isinstance(value, str):
        return value
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        return value  # out of range in UTC: the server names it, as for a pushed item
    if line == "1.x":
        # isoformat, not strftime: strftime("%Y") drops the zero padding of years before 1000.
        return parsed.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    return parsed.isoformat()


def _with_version(item: dict[str, Any], row: sqlite3.Row) -> dict[str, Any]:
    # sqlite3.Row's `in` tests values, not column names.
    if "pyrit_version" in row.keys() and row["pyrit_version"]:  # noqa: SIM118
        item["pyrit_version"] = row["pyrit_version"]
    return item


def piece_from_row(row: sqlite3.Row, line: str) -> dict[str, Any]:
    """A PromptMemoryEntries row as MessagePiece.model_dump / to_dict would give it."""
    item: dict[str, Any] = {
        "id": row["id"],
        "role": row["role"],
        "conversation_id": row["conversation_id"],
        "sequence": row["sequence"],
        "timestamp": _timestamp(row["timestamp"], line),
        "original_value": row["original_value"],
        "original_value_data_type": row["original_value_data_type"],
        "original_value_sha256": row["original_value_sha256"],
        "converted_value_data_type": row["converted_value_data_type"],
        "converted_value_sha256": row["converted_value_sha256"],
        "response_error": row["response_error"] or "none",
        "original_prompt_id": row["original_prompt_id"],
        "prompt_metadata": json_column(row["prompt_metadata"], {}),
        "converter_identifiers": json_column(row["converter_identifiers"], []),
    }
    # A NULL converted value is mirrored from the original by PyRIT's constructor.
    if row["converted_value"] is not None:
        item["converted_value"] = row["converted_value"]
    if line == "0.13":
        item["labels"] = json_column(row["labels"], {})
        item["targeted_harm_categories"] = json_column(row["targeted_harm_categories"]) or None
        item["prompt_target_identifier"] = json_column(row["prompt_target_identifier"])
        item["attack_identifier"] = json_column(row["attack_identifier"])
    return _with_version(item, row)


def scorable_content_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A ScorableContentEntries row (1.1) as the dict a score carries under scorable_content."""
    return {
        "id": row["id"],
        "value": row["value"],
        "value_sha256": row["value_sha256"],
        "data_type": row["data_type"],
        "timestamp": _timestamp(row["timestamp"], "1.x"),
    }


def score_from_row(
    row: sqlite3.Row, line: str, contents: Mapping[str, sqlite3.Row] | None = None
) -> dict[str, Any]:
    """A ScoreEntries row: 1.x as the ScoreEntry view (with the loose content it names from
    ``contents``), 0.13 as Score.to_dict() plus task."""
    item: dict[str, Any] = {
        "id": row["id"],
        "score_value": row["score_value"],
        "score_value_description": row["score_value_description"],
        "score_type": row["score_type"],
        "score_category": json_column(row["score_category"]),
        "score_rationale": row["score_rationale"],
        "score_metadata": json_column(row["score_metadata"], {}),
        "scorer_class_identifier": json_column(row["scorer_class_identifier"]),
        "timestamp": _timestamp(row["timestamp"], "0.13"),
        "objective": row["objective"],
    }
    if line == "1.x":
        item["status"] = row["status"] or "complete"
        item["scorable"] = json_column(row["scorable"])
        item["scorable_content_id"] = row["scorable_content_id"]
        item["prompt_request_response_id"] = row["prompt_request_response_id"]
        content = (contents or {}).get(str(row["scorable_content_id"]))
        if content is not None:
            item["scorable_content"] = scorable_content_from_row(content)
    else:
        item["message_piece_id"] = row["prompt_request_response_id"]
        item["task"] = row["task"]
    return _with_version(item, row)


def _related(row: Mapping[str, Any] | sqlite3.Row) -> list[dict[str, Any]]:
    # PyRIT reloads only these two kinds, with these fixed descriptions.
    related = [
        {
            "conversation_id": cid,
            "conversation_type": "adversarial",
            "description": "adversarial chat conversation",
        }
        for cid in json_column(row["adversarial_chat_conversation_ids"], [])
    ]
    related += [
        {
            "conversation_id": cid,
            "conversation_type": "pruned",
            "description": "pruned conversation",
        }
        for cid in json_column(row["pruned_conversation_ids"], [])
    ]
    return related


def attack_result_from_row(
    row: sqlite3.Row,
    line: str,
    pieces: Mapping[str, sqlite3.Row],
    scores: Mapping[str, sqlite3.Row],
) -> dict[str, Any]:
    """An AttackResultEntries row with its last response and last score filled in."""
    last_response = pieces.get(str(row["last_response_id"])) if row["last_response_id"] else None
    last_score = scores.get(str(row["last_score_id"])) if row["last_score_id"] else None
    item: dict[str, Any] = {
        "conversation_id": row["conversation_id"],
        "objective": row["objective"],
        "attack_result_id": row["id"],
        "atomic_attack_identifier": json_column(row["atomic_attack_identifier"]),
        "last_response": piece_from_row(last_response, line) if last_response else None,
        "last_score": score_from_row(last_score, line) if last_score else None,
        "executed_turns": row["executed_turns"],
        "execution_time_ms": row["execution_time_ms"],
        "outcome": row["outcome"],
        "outcome_reason": row["outcome_reason"],
        "related_conversations": _related(row),
        "metadata": json_column(row["attack_metadata"], {}),
    }
    if line == "1.x":
        item.update(
            {
                "timestamp": _timestamp(row["timestamp"], line),
                "labels": json_column(row["labels"], {}),
                "targeted_harm_categories": json_column(row["targeted_harm_categories"], []),
                "error_message": row["error_message"],
                "error_type": row["error_type"],
                "error_traceback": row["error_traceback"],
                "retry_events": json_column(row["retry_events_json"], []),
                "total_retries": row["total_retries"] or 0,
                "attribution_parent_id": row["attribution_parent_id"],
                "attribution_data": json_column(row["attribution_data"]),
            }
        )
    else:
        # Not part of 0.13's to_dict(), but the row has it: keeps "latest result" ordering.
        item["timestamp"] = _timestamp(row["timestamp"], "0.13")
    return _with_version(item, row)


def scenario_result_from_row(
    row: sqlite3.Row, line: str, attack_results: Mapping[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """A ScenarioResultEntries row: 1.x as ScenarioResult.model_dump (its attack results
    re-attached by name, as get_scenario_results does), 0.13 as the table row itself."""
    if line == "0.13":
        return {
            "id": row["id"],
            "scenario_name": row["scenario_name"],
            "scenario_description": row["scenario_description"],
            "scenario_version": row["scenario_version"],
            "pyrit_version": row["pyrit_version"],
            "scenario_init_data": json_column(row["scenario_init_data"]),
            "objective_target_identifier": json_column(row["objective_target_identifier"]),
            "objective_scorer_identifier": json_column(row["objective_scorer_identifier"]),
            "scenario_run_state": row["scenario_run_state"],
            "attack_results_json": row["attack_results_json"],
            "labels": json_column(row["labels"], {}),
            "number_tries": row["number_tries"],
            "completion_time": _timestamp(row["completion_time"], line),
            "timestamp": _timestamp(row["timestamp"], line),
        }
    return {
        "id": row["id"],
        "scenario_identifier": json_column(row["scenario_identifier"]),
        "scenario_description": row["scenario_description"] or "",
        "attack_results": dict(attack_results),
        "scenario_run_state": row["scenario_run_state"],
        "labels": json_column(row["labels"], {}),
        "creation_time": _timestamp(row["timestamp"], line),
        "completion_time": _timestamp(row["completion_time"], line),
        "number_tries": row["number_tries"],
        "display_group_map": json_column(row["display_group_map_json"], {}),
        "error_message": row["error_message"],
        "error_type": row["error_type"],
        # Not a column: PyRIT's own reload gives [] too.
        "error_attack_result_ids": [],
        "metadata": json_column(row["scenario_metadata"], {}),
        "scenario_name": row["scenario_name"],
        "scenario_version": row["scenario_version"],
        "pyrit_version": row["pyrit_version"],
        "objective_target_identifier": json_column(row["objective_target_identifier"]),
        "objective_scorer_identifier": json_column(row["objective_scorer_identifier"]),
    }


def conversation_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A 1.x Conversations row as Conversation.model_dump gives it."""
    item = {
        "conversation_id": row["conversation_id"],
        "target_identifier": json_column(row["target_identifier"]),
        "retries": json_column(row["retries"], []),
    }
    return _with_version(item, row)


def seed_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A SeedPromptEntries row as the seed dict the seeds ingest accepts."""
    seed_type = row["seed_type"] or "prompt"
    metadata = json_column(row["prompt_metadata"], {})
    item: dict[str, Any] = {
        "id": row["id"],
        "value": row["value"],
        "value_sha256": row["value_sha256"],
        "data_type": row["data_type"],
        "name": row["name"],
        "dataset_name": row["dataset_name"],
        "harm_categories": json_column(row["harm_categories"]),
        "description": row["description"],
        "authors": json_column(row["authors"]),
        "groups": json_column(row["groups"]),
        "source": row["source"],
        "date_added": _timestamp(row["date_added"], "1.x"),
        "added_by": row["added_by"],
        "prompt_group_id": row["prompt_group_id"],
        "seed_type": seed_type,
    }
    if seed_type == "prompt":
        # 1.1 packs the response schema into the metadata (PYRIT-MODEL.md 4.6).
        schema = (
            metadata.pop("__response_json_schema__", None) if isinstance(metadata, dict) else None
        )
        if isinstance(schema, str):
            item["response_json_schema"] = json_column(schema)
        item["role"] = row["role"]
        item["sequence"] = row["sequence"]
        item["parameters"] = json_column(row["parameters"])
    item["metadata"] = metadata
    return item


def _attack_result_items(memory: PyritMemoryFile, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """AttackResultEntries rows with the last response and score rows they name."""
    pieces = memory.rows_by_id(
        "PromptMemoryEntries", [r["last_response_id"] for r in rows if r["last_response_id"]]
    )
    scores = memory.rows_by_id(
        "ScoreEntries", [r["last_score_id"] for r in rows if r["last_score_id"]]
    )
    return [attack_result_from_row(r, memory.line, pieces, scores) for r in rows]


def _scenario_attack_results(
    memory: PyritMemoryFile, scenario_ids: Sequence[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each scenario's attack results by atomic attack name (attribution_data's
    parent_collection), as PyRIT's get_scenario_results re-attaches them."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if memory.line != "1.x" or not scenario_ids:
        return out
    rows = sorted(
        memory.rows_where_in("AttackResultEntries", "attribution_parent_id", scenario_ids),
        key=lambda r: (r["timestamp"], r["id"]),
    )
    pieces = memory.rows_by_id(
        "PromptMemoryEntries", [r["last_response_id"] for r in rows if r["last_response_id"]]
    )
    scores = memory.rows_by_id(
        "ScoreEntries", [r["last_score_id"] for r in rows if r["last_score_id"]]
    )
    for row in rows:
        data = json_column(row["attribution_data"], {})
        name = data.get("parent_collection") if isinstance(data, dict) else None
        if not isinstance(name, str):
            continue  # PyRIT skips results without a collection name too
        out.setdefault(str(row["attribution_parent_id"]), {}).setdefault(name, []).append(
            attack_result_from_row(row, memory.line, pieces, scores)
        )
    return out


def _score_items(memory: PyritMemoryFile, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """ScoreEntries rows, each with the loose content (ScorableContentEntries) it names."""
    ids = [r["scorable_content_id"] for r in rows if "scorable_content_id" in r.keys()]  # noqa: SIM118
    contents = memory.rows_by_id("ScorableContentEntries", [i for i in ids if i])
    return [score_from_row(r, memory.line, contents) for r in rows]


def _scenario_items(memory: PyritMemoryFile, rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    """ScenarioResultEntries rows with their attack results re-attached (1.x)."""
    attached = _scenario_attack_results(memory, [str(r["id"]) for r in rows])
    return [scenario_result_from_row(r, memory.line, attached.get(str(r["id"]), {})) for r in rows]


MEMORY_TABLES: list[MemoryTable] = [
    MemoryTable(
        "conversations",
        "Conversations",
        lambda _, rows: [conversation_from_row(r) for r in rows],
        key="conversation_id",
    ),
    MemoryTable(
        "message_pieces",
        "PromptMemoryEntries",
        lambda m, rows: [piece_from_row(r, m.line) for r in rows],
        order="conversation_id, sequence, rowid",
        group_by=("conversation_id", "sequence"),
        # update_prompt_entries_by_conversation_id / update_labels_by_conversation_id.
        changeable=("labels", "prompt_metadata"),
    ),
    MemoryTable("scores", "ScoreEntries", _score_items, changeable=()),
    MemoryTable("attack_results", "AttackResultEntries", _attack_result_items),
    MemoryTable("scenario_results", "ScenarioResultEntries", _scenario_items),
    MemoryTable(
        "seeds",
        "SeedPromptEntries",
        lambda _, rows: [seed_from_row(r) for r in rows],
        changeable=(),
    ),
]


def _labels_match(stored: Any, wanted: Mapping[str, Any]) -> bool:
    """PyRIT's label filter: every key present; a string is equality, a list is any-of."""
    if not isinstance(stored, Mapping):
        return False
    for key, value in wanted.items():
        if key not in stored:
            return False
        options = value if isinstance(value, (list, tuple, set)) else [value]
        if str(stored[key]) not in {str(v) for v in options}:
            return False
    return True


class PyritMemoryFile:
    """A PyRIT SQLite memory file (0.13 or 1.x schema), opened read-only.

    ``items(kind)`` yields chunks of dicts in PyRIT's own shapes (1.x ``model_dump(mode="json")``
    for a 1.x file, 0.13 ``to_dict()`` for a legacy one); ``select(...)`` picks a closed set of
    rows (attack results, every conversation they reference, their pieces and scores).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        file = Path(path)
        if not file.is_file():
            raise PyritMemoryFileError(f"{file} does not exist or is not a file.")
        self.path = str(file)
        try:
            # Read-only: never takes a write lock, so PyRIT may keep writing while we read.
            self.conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
            self.conn.row_factory = sqlite3.Row
            names = [
                r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            self.tables: dict[str, set[str]] = {
                n: {r[1] for r in self.conn.execute(f'PRAGMA table_info("{n}")')} for n in names
            }
        except sqlite3.DatabaseError as exc:
            raise PyritMemoryFileError(f"{file} is not a SQLite database: {exc}") from exc
        pieces = self.tables.get("PromptMemoryEntries")
        if pieces is None:
            self.conn.close()
            raise PyritMemoryFileError(
                f"{file} has no PromptMemoryEntries table: it is not a PyRIT memory file."
            )
        self.line: str = "0.13" if "labels" in pieces else "1.x"

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> PyritMemoryFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def specs(self) -> list[MemoryTable]:
        """The registered tables this file has, in sending order."""
        present = [spec for spec in MEMORY_TABLES if spec.table in self.tables]
        return sorted(present, key=lambda s: KINDS.index(s.kind) if s.kind in KINDS else len(KINDS))

    def count(self, table: str) -> int:
        """Rows in a table."""
        return int(self.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])

    def rows(
        self,
        table: str,
        *,
        order: str = "rowid",
        rowids: Sequence[int] | None = None,
        chunk_size: int = 1000,
        group_by: Sequence[str] = (),
    ) -> Iterator[list[sqlite3.Row]]:
        """A table's rows (all, or these rowids in this order) in chunks that keep groups whole."""
        stream: Iterable[sqlite3.Row]
        if rowids is None:
            stream = self.conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}')
        else:
            stream = self._rows_by_rowid(table, rowids)
        chunk: list[sqlite3.Row] = []

        def key(row: sqlite3.Row) -> tuple[Any, ...]:
            """The group a row belongs to (a message: conversation and sequence)."""
            return tuple(row[c] for c in group_by)

        for row in stream:
            if len(chunk) >= chunk_size and (not group_by or key(row) != key(chunk[-1])):
                yield chunk
                chunk = []
            chunk.append(row)
        if chunk:
            yield chunk

    def _rows_by_rowid(self, table: str, rowids: Sequence[int]) -> Iterator[sqlite3.Row]:
        """Rows by rowid, in the order given (IN lists of at most 500: SQLite's bound limit)."""
        for start in range(0, len(rowids), 500):
            part = list(rowids[start : start + 500])
            marks = ",".join("?" * len(part))
            found = {
                r["_rowid"]: r
                for r in self.conn.execute(
                    f'SELECT rowid AS _rowid, * FROM "{table}" WHERE rowid IN ({marks})', part
                )
            }
            yield from (found[r] for r in part if r in found)

    def rows_where_in(self, table: str, column: str, values: Iterable[Any]) -> list[sqlite3.Row]:
        """Rows whose ``column`` is one of ``values`` (IN lists of at most 500: SQLite's bound
        limit); none when the file has no such table."""
        rows: list[sqlite3.Row] = []
        if table not in self.tables:
            return rows
        wanted = list(dict.fromkeys(str(v) for v in values))
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows += self.conn.execute(
                f'SELECT * FROM "{table}" WHERE "{column}" IN ({marks})', part
            ).fetchall()
        return rows

    def rows_by_id(
        self, table: str, ids: Iterable[Any], column: str = "id"
    ) -> dict[str, sqlite3.Row]:
        """Rows whose ``column`` is one of ``ids``, by that value."""
        return {str(row[column]): row for row in self.rows_where_in(table, column, ids)}

    def items(
        self, spec: MemoryTable, *, rowids: Sequence[int] | None = None, chunk_size: int = 1000
    ) -> Iterator[list[dict[str, Any]]]:
        """One table's rows as PyRIT dicts, chunk by chunk."""
        for rows in self.rows(
            spec.table,
            order=spec.order,
            rowids=rowids,
            chunk_size=chunk_size,
            group_by=spec.group_by,
        ):
            yield spec.convert(self, rows)

    def read(self, selection: Mapping[str, Sequence[int]] | None = None) -> dict[str, list[Any]]:
        """Every registered table's items (or the selected rows'), by kind."""
        out: dict[str, list[Any]] = {}
        for spec in self.specs():
            rowids = None if selection is None else selection.get(spec.table, [])
            for chunk in self.items(spec, rowids=rowids):
                out.setdefault(spec.kind, []).extend(chunk)
        return out

    # -- selection ---------------------------------------------------------------------------

    def _ordered_rowids(
        self, table: str, order: str, needs: Sequence[str], keep: Callable[[sqlite3.Row], bool]
    ) -> list[int]:
        """Rowids of the rows ``keep`` accepts, in reading order (reads only ``needs``)."""
        wanted = "".join(f', "{c}"' for c in needs if c in self.tables[table])
        return [
            int(r["_rowid"])
            for r in self.conn.execute(
                f'SELECT rowid AS _rowid{wanted} FROM "{table}" ORDER BY {order}'
            )
            if keep(r)
        ]

    def select(
        self,
        *,
        labels: Mapping[str, Any] | None = None,
        conversation_ids: Iterable[str] | None = None,
        attack_result_ids: Iterable[str] | None = None,
    ) -> dict[str, list[int]]:
        """The rowids, per table, of a closed set around the chosen attack results.

        Attack results are chosen by labels (1.x: the result's labels; 0.13: the labels of
        its conversation's pieces), conversation id or id. Then, until nothing new turns up:
        every conversation they reference (main, pruned, adversarial), the results of those
        conversations, and the conversations of the pieces their pieces were copied from.
        Scores: those of the chosen pieces (by ``original_prompt_id``, as PyRIT attaches them,
        and by ``scorable``), and every score of loose content (PyRIT ties it to no
        conversation). Every seed. Related conversations carry no labels of their own and are
        reached through the result that references them; their rows are not changed.
        """
        result_columns = [
            c
            for c in (
                "id",
                "conversation_id",
                "labels",
                "pruned_conversation_ids",
                "adversarial_chat_conversation_ids",
                "attribution_parent_id",
            )
            if c in self.tables.get("AttackResultEntries", ())
        ]
        results = (
            [
                dict(r)
                for r in self.conn.execute(
                    f'SELECT {", ".join(result_columns)} FROM "AttackResultEntries"'
                )
            ]
            if "AttackResultEntries" in self.tables
            else []
        )
        piece_index = [
            (str(r[0]), str(r[1]), str(r[2]) if r[2] is not None else None)
            for r in self.conn.execute(
                'SELECT id, conversation_id, original_prompt_id FROM "PromptMemoryEntries"'
            )
        ]
        conversations: set[str] = {str(c) for c in conversation_ids or ()}
        wanted_results = {str(i) for i in attack_result_ids or ()}
        chosen: set[str] = set()
        by_labels = bool(labels) and self.line == "1.x"
        for r in results:
            if (
                str(r["id"]) in wanted_results
                or str(r["conversation_id"]) in conversations
                or (by_labels and _labels_match(json_column(r["labels"]), labels or {}))
            ):
                chosen.add(str(r["id"]))
        if labels and self.line == "0.13":
            for cid, raw in self.conn.execute(
                'SELECT DISTINCT conversation_id, labels FROM "PromptMemoryEntries"'
            ):
                if _labels_match(json_column(raw), labels):
                    conversations.add(str(cid))
        conversation_of = {pid: cid for pid, cid, _ in piece_index}
        while True:
            before = (len(conversations), len(chosen))
            for r in results:
                if str(r["id"]) in chosen or str(r["conversation_id"]) in conversations:
                    chosen.add(str(r["id"]))
                    conversations.add(str(r["conversation_id"]))
                    conversations.update(str(d["conversation_id"]) for d in _related(r))
            for _pid, cid, original in piece_index:
                if cid in conversations and original and original in conversation_of:
                    conversations.add(conversation_of[original])
            if (len(conversations), len(chosen)) == before:
                break
        piece_ids = {pid for pid, cid, _ in piece_index if cid in conversations}
        piece_ids |= {o for _, cid, o in piece_index if cid in conversations and o}

        def score_wanted(row: sqlite3.Row) -> bool:
            """A score of a chosen piece, by its piece or its scorable, or of loose content."""
            if str(row["prompt_request_response_id"]) in piece_ids:
                return True
            keys = row.keys()
            if "scorable_content_id" in keys and row["scorable_content_id"]:
                return True
            scorable = json_column(row["scorable"]) if "scorable" in keys else None
            mentioned = scorable.get("message_piece_ids") if isinstance(scorable, dict) else None
            return isinstance(mentioned, list) and any(str(m) in piece_ids for m in mentioned)

        parents = {
            str(r["attribution_parent_id"])
            for r in results
            if str(r["id"]) in chosen and r.get("attribution_parent_id")
        }
        in_conversations = ("conversation_id",), lambda row: str(row[1]) in conversations
        keep: dict[str, tuple[tuple[str, ...], Callable[[sqlite3.Row], bool]]] = {
            "Conversations": in_conversations,
            "PromptMemoryEntries": in_conversations,
            "ScoreEntries": (
                ("prompt_request_response_id", "scorable", "scorable_content_id"),
                score_wanted,
            ),
            "AttackResultEntries": (("id",), lambda row: str(row["id"]) in chosen),
            "ScenarioResultEntries": (("id",), lambda row: str(row["id"]) in parents),
        }
        selection: dict[str, list[int]] = {}
        for spec in self.specs():
            needs, rule = keep.get(spec.table, ((), lambda _: True))
            selection[spec.table] = self._ordered_rowids(spec.table, spec.order, needs, rule)
        return selection


# --- the client ----------------------------------------------------------------------------


class RedteamClient:
    """A connection to one redteam server, authenticated with one API key."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        batch_size: int = 1000,
        max_batch_bytes: int = 16 * 1024 * 1024,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        upload_media: bool = True,
        operation: str | None = None,
        revise: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], got {base_url!r}")
        if not api_key or any(c.isspace() for c in api_key):
            raise ValueError("api_key must be a key from `manage.py create_api_key`.")
        self.base_url = base_url.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._api_key = api_key
        self.batch_size = max(1, batch_size)
        self.max_batch_bytes = max_batch_bytes
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.upload_media_files = upload_media
        # Where items whose labels name no operation go (the server's ?operation=); None:
        # the key's default operation.
        self.operation = operation
        # Items already stored with other content are newer versions of rows PyRIT updates in
        # place (the server's ?revise=STAMP), as when following a memory file; else conflicts.
        self.revise = revise
        self._last_stamp = 0
        self._sleep = sleep
        self._conn: http.client.HTTPConnection | None = None

    # -- HTTP plumbing ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the kept-alive connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> RedteamClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._scheme == "https"
                else http.client.HTTPConnection
            )
            self._conn = cls(self._host, self._port, timeout=self.timeout)
        return self._conn

    def _request_once(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, str, str]:
        """(status, body, Content-Type, Location) of one request on the kept connection."""
        conn = self._connection()
        try:
            conn.request(method, self._prefix + path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except BaseException:
            # The connection state is unknown after any failure: start afresh next time.
            self.close()
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return (
            response.status,
            data,
            response.getheader("Content-Type", ""),
            response.getheader("Location", ""),
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
        params: Mapping[str, Any] | None = None,
        ok: Sequence[int] = (200,),
    ) -> tuple[int, Any]:
        """Send one request, retrying network errors and 429/5xx with exponential backoff.

        Only safe because every endpoint is idempotent (ingest and media uploads included).
        Returns (status, parsed JSON or raw bytes); raises RedteamHTTPError otherwise.
        """
        if params:
            path = f"{path}?{urlencode(params, doseq=True)}"
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if content_type:
            headers["Content-Type"] = content_type
        attempt = 0
        while True:
            try:
                status, data, response_type, location = self._request_once(
                    method, path, body, headers
                )
            except (OSError, http.client.HTTPException) as exc:
                if attempt >= self.max_retries:
                    raise RedteamError(
                        f"{method} {path} failed after {attempt + 1} attempts: {exc}"
                    ) from exc
            else:
                parsed: Any = data
                if response_type.startswith("application/json"):
                    try:
                        parsed = json.loads(data)
                    except ValueError:
                        parsed = data
                if status in ok:
                    return status, parsed
                if 300 <= status < 400:
                    # Never followed: the key goes only to the URL it was given.
                    parsed = {
                        "detail": f"the server redirects to {location or '(no Location)'}; "
                        "give the client that URL"
                    }
                if status not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise RedteamHTTPError(status, parsed, method, path)
            attempt += 1
            delay = self.backoff * (2 ** (attempt - 1))
            self._sleep(delay * (0.5 + random.random()))  # jitter: retries do not stampede

    def get(self, path: str, **params: Any) -> Any:
        """GET a JSON endpoint under /api/v1/ (e.g. ``get("scores/", score_type="true_false")``)."""
        return self.request("GET", f"/api/v1/{path.lstrip('/')}", params=params or None)[1]

    def iter_list(self, resource: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every row of a list endpoint, following the cursor (e.g. ``iter_list("scores")``)."""
        page = self.get(f"{resource.strip('/')}/", **filters)
        while True:
            yield from page["results"]
            next_url = page.get("next")
            if not next_url:
                return
            parts = urlsplit(next_url)
            path = parts.path[len(self._prefix) :] if self._prefix else parts.path
            page = self.request("GET", f"{path}?{parts.query}")[1]

    def conversation(self, conversation_id: str, **params: Any) -> dict[str, Any]:
        """A conversation's messages with their pieces and scores."""
        result: dict[str, Any] = self.get(f"conversations/{path_id(conversation_id)}/", **params)
        return result

    # -- media ------------------------------------------------------------------------------

    def missing_media(self, digests: Iterable[str]) -> list[str]:
        """Which of these sha256 digests the server does not hold yet."""
        digests = list(dict.fromkeys(digests))
        missing: list[str] = []
        for start in range(0, len(digests), 1000):
            body = json.dumps({"sha256": digests[start : start + 1000]}).encode()
            _, answer = self.request(
                "POST", "/api/v1/media/missing/", body=body, content_type="application/json"
            )
            missing.extend(answer["missing"])
        return missing

    def upload_media(
        self,
        path: str | os.PathLike[str],
        *,
        sha256: str | None = None,
        original_piece_ids: Iterable[str] = (),
        converted_piece_ids: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Upload one file's bytes (multipart); returns the server's blob description.

        The server links the bytes to every piece whose sha256 is theirs, and to the pieces
        named here (by id, on their original or converted side) that PyRIT left without one.
        """
        data = Path(path).read_bytes()
        digest = sha256 or hashlib.sha256(data).hexdigest()
        boundary = f"redteam-{uuid.uuid4().hex}"
        filename = Path(path).name.replace('"', "_").replace("\r", "_").replace("\n", "_")
        mime = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        fields = [("sha256", digest)]
        fields += [("original_piece_id", str(p)) for p in original_piece_ids]
        fields += [("converted_piece_id", str(p)) for p in converted_piece_ids]
        parts = [
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
            f"{value}\r\n".encode()
            for name, value in fields
        ]
        body = b"".join(
            [
                *parts,
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{filename}"\r\nContent-Type: {mime}\r\n\r\n'.encode(),
                data,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        _, answer = self.request(
            "POST",
            "/api/v1/media/",
            body=body,
            content_type=f"multipart/form-data; boundary={boundary}",
            ok=(200, 201),
        )
        result: dict[str, Any] = answer
        return result

    def _media_plan(
        self,
        pieces: Sequence[Mapping[str, Any]],
        seeds: Sequence[Mapping[str, Any]],
        media_from: str | os.PathLike[str] | None,
        result: PushResult,
    ) -> tuple[dict[str, str], dict[str, dict[str, list[str]]]]:
        """Which local files to upload: by sha256 (pieces/seeds that name their content's
        sha256) and by path with the piece ids on each side (pieces PyRIT left without one)."""
        by_digest: dict[str, str] = {}
        unhashed: dict[str, dict[str, list[str]]] = {}  # path -> side -> piece ids
        resolved: dict[str, str | None] = {}
        sides = (
            ("original", "original_value", "original_value_data_type", "original_value_sha256"),
            ("converted", "converted_value", "converted_value_data_type", "converted_value_sha256"),
        )
        for kind, items in (("message_pieces", pieces), ("seeds", seeds)):
            for item in items:
                rules = (
                    sides
                    if kind == "message_pieces"
                    else (("value", "value", "data_type", "value_sha256"),)
                )
                for side, value_key, type_key, sha_key in rules:
                    value = item.get(value_key)
                    if item.get(type_key) not in MEDIA_PATH_DATA_TYPES or not isinstance(
                        value, str
                    ):
                        continue
                    if value not in resolved:
                        resolved[value] = resolve_media_path(value, media_from)
                        if resolved[value] is None:
                            result.media_unreadable.append(value)
                    path = resolved[value]
                    if path is None:
                        continue
                    if item.get(sha_key) or kind == "seeds":
                        by_digest.setdefault(_file_sha256(path), path)
                    elif isinstance(item.get("id"), str):
                        unhashed.setdefault(path, {}).setdefault(side, []).append(item["id"])
        return by_digest, unhashed

    def _upload(self, path: str, result: PushResult, **links: Any) -> None:
        """Upload one file; a refusal is reported with the push, never raised mid-way."""
        try:
            self.upload_media(path, **links)
        except (RedteamHTTPError, OSError) as exc:
            message = str(exc)
            if isinstance(exc, RedteamHTTPError) and isinstance(exc.body, dict):
                message = str(exc.body.get("detail", message))
            result.rejected.append(_rejection("media", None, path, None, message, "media"))
        else:
            result.media_uploaded += 1

    # -- push -------------------------------------------------------------------------------

    def push(
        self,
        *,
        pieces: Iterable[Any] = (),
        scores: Iterable[Any] = (),
        attack_results: Iterable[Any] = (),
        seeds: Iterable[Any] = (),
        conversations: Iterable[Any] = (),
        messages: Iterable[Any] = (),
        scenario_results: Iterable[Any] = (),
        atomic: bool = False,
        raise_on_rejected: bool = True,
        media_from: str | os.PathLike[str] | None = None,
    ) -> PushResult:
        """Send everything, in batches; then raise RedteamPushError if any item was rejected.

        `pieces` may hold MessagePieces or Messages (expanded); `messages` is an alias.
        With `atomic=True` everything must fit in one batch, stored all or nothing.
        `media_from`: a folder holding the run's media files (found by the tail of their path);
        default: the paths the pieces name, where readable.
        """
        result = PushResult()
        given: dict[str, list[Any]] = {
            "conversations": list(conversations),
            "message_pieces": list(_flatten_pieces([*list(pieces), *list(messages)])),
            "scores": list(scores),
            "attack_results": list(attack_results),
            "scenario_results": list(scenario_results),
            "seeds": list(seeds),
        }
        # An object that cannot be serialised is reported like any rejected item; the rest goes.
        lists: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for kind, objs in given.items():
            entries = lists.setdefault(kind, [])
            for index, obj in enumerate(objs):
                try:
                    entries.append((index, _as_item(obj)))
                except (TypeError, ValueError) as exc:
                    result.rejected.append(
                        _rejection(kind, index, None, None, str(exc), "not_serialisable")
                    )
        by_digest: dict[str, str] = {}
        unhashed: dict[str, dict[str, list[str]]] = {}
        if self.upload_media_files:
            by_digest, unhashed = self._media_plan(
                [i for _, i in lists["message_pieces"]],
                [i for _, i in lists["seeds"]],
                media_from,
                result,
            )
            # Bytes first, so pieces stored below link to them at once.
            for digest in self.missing_media(by_digest) if by_digest else []:
                self._upload(by_digest[digest], result, sha256=digest)
        batches = list(self._batches(lists))
        if atomic and len(batches) > 1:
            raise ValueError(
                f"atomic=True needs everything in one batch; this push needs {len(batches)} "
                f"(raise batch_size/max_batch_bytes or push without atomic)."
            )
        for batch in batches:
            self._send_batch(batch, atomic, result)
        # Pieces without a sha256 exist now: send their files with the ids to link.
        for path, sides in unhashed.items():
            for side, ids in sides.items():
                # The server takes a bounded number of ids per upload.
                for start in range(0, len(ids), MAX_LINKS_PER_UPLOAD):
                    part = ids[start : start + MAX_LINKS_PER_UPLOAD]
                    self._upload(path, result, **{f"{side}_piece_ids": part})
        result.errors = len(result.rejected)
        if result.rejected and raise_on_rejected:
            raise RedteamPushError(result.rejected, result)
        return result

    def push_memory(
        self,
        memory: Any,
        *,
        labels: Mapping[str, Any] | None = None,
        conversation_ids: Iterable[str] | None = None,
        attack_results: Iterable[Any] | None = None,
        media_from: str | os.PathLike[str] | None = None,
        raise_on_rejected: bool = True,
    ) -> PushResult:
        """Push a whole run: a PyRIT memory object, or the path of a PyRIT SQLite memory file.

        Sends a closed set: the selected attack results (by `labels`, `conversation_ids`, or
        the `attack_results` given; nothing selected = everything), every conversation they
        reference (recursively), every piece of those conversations, their conversation rows,
        every score of those pieces and of loose content, the scenario results the results
        belong to, and the seeds.
        """
        ids = None if conversation_ids is None else [str(c) for c in conversation_ids]
        if isinstance(memory, (str, os.PathLike)):
            with PyritMemoryFile(memory) as file:
                result_ids = None
                if attack_results is not None:
                    result_ids = [_result_id(r) for r in attack_results]
                selection = None
                if labels or ids is not None or result_ids is not None:
                    selection = file.select(
                        labels=labels, conversation_ids=ids, attack_result_ids=result_ids
                    )
                lists = file.read(selection)
        else:
            lists = _memory_object_items(memory, labels, ids, attack_results)
        return self.push(
            conversations=lists.get("conversations", ()),
            pieces=lists.get("message_pieces", ()),
            scores=lists.get("scores", ()),
            attack_results=lists.get("attack_results", ()),
            scenario_results=lists.get("scenario_results", ()),
            seeds=lists.get("seeds", ()),
            media_from=media_from,
            raise_on_rejected=raise_on_rejected,
        )

    def _batches(self, lists: Mapping[str, list[tuple[int, dict[str, Any]]]]) -> Iterator[Batch]:
        """Group (caller's index, item) pairs into batches, keeping each message together."""
        batch: Batch = {}
        count = 0
        size = 0
        for kind in KINDS:
            for group in _groups(kind, lists.get(kind, [])):
                group_size = sum(len(_encode(item)) + 1 for _, item in group)
                if count and (
                    count + len(group) > self.batch_size or size + group_size > self.max_batch_bytes
                ):
                    yield batch
                    batch, count, size = {}, 0, 0
                batch.setdefault(kind, []).extend(group)
                count += len(group)
                size += group_size
        if count:
            yield batch

    def _ingest_params(self, atomic: bool) -> dict[str, str] | None:
        params = {"atomic": "1"} if atomic else {}
        if self.revise:
            params["revise"] = str(self._stamp())
        if self.operation is not None:
            params["operation"] = self.operation
        return params or None

    def _stamp(self) -> int:
        """A revision stamp larger than every earlier one of this client: nanoseconds since the
        epoch. A request that reaches the server late (sent by a follower killed since) then
        carries a smaller stamp than what its successor stored, and the newer version stays."""
        self._last_stamp = max(time.time_ns(), self._last_stamp + 1)
        return self._last_stamp

    def _send_batch(self, batch: Batch, atomic: bool, result: PushResult) -> None:
        payload = {kind: [item for _, item in entries] for kind, entries in batch.items()}
        try:
            _, answer = self.request(
                "POST",
                "/api/v1/ingest/",
                body=_encode(payload),
                content_type="application/json",
                params=self._ingest_params(atomic),
                ok=(200, 207),
            )
        except RedteamHTTPError as exc:
            if exc.status not in SPLIT_STATUSES or atomic:
                raise
            units = _units(batch)
            if len(units) > 1:
                # Refused as a whole: halve it until the item the server refuses is alone.
                first, second = _split(batch)
                self._send_batch(first, atomic, result)
                self._send_batch(second, atomic, result)
                return
            self._reject_unit(units[0], exc, result)
            return
        result.batches += 1
        result.stored += int(answer.get("stored", 0))
        result.unchanged += int(answer.get("unchanged", 0))
        for item in answer.get("items", []):
            if item.get("status") not in ("stored", "unchanged"):
                # Map the batch index back to the caller's index in its own list.
                entries = batch.get(item["kind"], [])
                local = item.get("index")
                if isinstance(local, int) and 0 <= local < len(entries):
                    item = {**item, "index": entries[local][0], "batch_index": local}
                result.rejected.append(item)

    @staticmethod
    def _reject_unit(
        unit: tuple[str, list[tuple[int, dict[str, Any]]]],
        exc: RedteamHTTPError,
        result: PushResult,
    ) -> None:
        """Report every item of a unit (an item, or a message's pieces) the server refused."""
        kind, entries = unit
        body = exc.body if isinstance(exc.body, dict) else {}
        message = str(body.get("detail") or exc)
        field = body.get("path")
        if isinstance(field, str):
            # "message_pieces[0].original_value" -> "original_value": the batch index is ours.
            head, _, rest = field.partition("].")
            field = rest if head.startswith(f"{kind}[") and rest else field
        code = "too_large" if exc.status == 413 else "invalid"
        for index, item in entries:
            result.rejected.append(
                _rejection(kind, index, item.get(ID_KEYS.get(kind, "id")), field, message, code)
            )


def _result_id(result: Any) -> str:
    """An attack result's id, from a PyRIT object or a dict."""
    value = result.get("attack_result_id") if isinstance(result, Mapping) else None
    return str(value if value is not None else getattr(result, "attack_result_id", result))


def _groups(
    kind: str, items: list[tuple[int, dict[str, Any]]]
) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """Pieces of one message (conversation_id, sequence) form one group; others are alone."""
    if kind != "message_pieces":
        for entry in items:
            yield [entry]
        return
    groups: dict[tuple[Any, Any], list[tuple[int, dict[str, Any]]]] = {}
    for entry in items:
        key = (entry[1].get("conversation_id"), entry[1].get("sequence"))
        groups.setdefault(key, []).append(entry)
    yield from groups.values()


def _units(batch: Batch) -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
    """The batch's indivisible units, in order: single items, or all pieces of one message."""
    return [(kind, group) for kind in KINDS for group in _groups(kind, batch.get(kind, []))]


def _split(batch: Batch) -> tuple[Batch, Batch]:
    """Two halves of a batch (of at least two units), in order, without splitting a message."""
    flat = _units(batch)
    half = len(flat) // 2
    first: Batch = {}
    second: Batch = {}
    for position, (kind, group) in enumerate(flat):
        (first if position < half else second).setdefault(kind, []).extend(group)
    return first, second


# --- a PyRIT memory object (duck typed: 1.x MemoryInterface, 0.13 equivalents) --------------


def _field(obj: Any, name: str) -> Any:
    """An attribute of a PyRIT object, or a key of a dict."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def _related_ids(result: Any) -> list[str]:
    """The ids of every conversation an attack result references (main and related)."""
    ids = [str(_field(result, "conversation_id"))]
    for reference in _field(result, "related_conversations") or ():
        cid = _field(reference, "conversation_id")
        if cid:
            ids.append(str(cid))
    return ids


def _conversation_row(memory: Any, conversation_id: str) -> Any:
    """The 1.x Conversation (target identifier, retries) of an id, where memory has one."""
    for name in ("get_conversation_entity", "_get_conversation", "get_conversation"):
        getter = getattr(memory, name, None)
        if callable(getter):
            row = getter(conversation_id=conversation_id)
            # 0.13's get_conversation returns the messages: not a conversation row.
            if isinstance(row, (list, tuple)) or row is None:
                continue
            if _field(row, "conversation_id") is not None:
                return row
    return None


def _memory_object_items(
    memory: Any,
    labels: Mapping[str, Any] | None,
    conversation_ids: Sequence[str] | None,
    attack_results: Iterable[Any] | None,
) -> dict[str, list[Any]]:
    """The closed set of a PyRIT memory object's rows (see RedteamClient.push_memory)."""
    results: dict[str, Any] = {}

    def add_results(objs: Iterable[Any]) -> None:
        """Keep each result once, the first form seen (the caller's before memory's)."""
        for obj in objs:
            results.setdefault(_result_id(obj), obj)

    everything = labels is None and conversation_ids is None and attack_results is None
    conversations: set[str] = set(conversation_ids or ())
    if attack_results is not None:
        add_results(attack_results)
    if labels:
        add_results(memory.get_attack_results(labels=dict(labels)))
        # 0.13 labels live on the pieces: their conversations are chosen too.
        conversations |= {
            str(_field(p, "conversation_id"))
            for p in memory.get_message_pieces(labels=dict(labels))
        }
    if everything:
        add_results(memory.get_attack_results())
        conversations |= {str(_field(p, "conversation_id")) for p in memory.get_message_pieces()}
    pieces: dict[str, Any] = {}
    done: set[str] = set()
    while True:
        for result in list(results.values()):
            conversations.update(_related_ids(result))
        todo = sorted(conversations - done)
        if not todo:
            break
        for cid in todo:
            done.add(cid)
            # Results of a referenced conversation reference more (recursively).
            add_results(memory.get_attack_results(conversation_id=cid))
            for piece in memory.get_message_pieces(conversation_id=cid):
                pieces.setdefault(str(_field(piece, "id")), piece)
        # Pieces copied from another conversation need that conversation's pieces (scores).
        originals = {
            str(_field(p, "original_prompt_id"))
            for p in pieces.values()
            if _field(p, "original_prompt_id")
            and str(_field(p, "original_prompt_id")) not in pieces
        }
        if originals:
            for piece in memory.get_message_pieces(prompt_ids=sorted(originals)):
                conversations.add(str(_field(piece, "conversation_id")))
    rows = [r for r in (_conversation_row(memory, cid) for cid in sorted(done)) if r is not None]
    scores: dict[str, Any] = {}
    piece_ids = sorted(pieces)
    for start in range(0, len(piece_ids), 500):
        for score in memory.get_prompt_scores(prompt_ids=piece_ids[start : start + 500]):
            scores.setdefault(str(_field(score, "id")), score)
    get_scores = getattr(memory, "get_scores", None)
    if callable(get_scores):
        # get_scores() with no filter answers [] by design; "since the epoch" is every score.
        epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
        for score in get_scores(sent_after=epoch):
            if _is_loose_score(to_jsonable(score)):
                scores.setdefault(str(_field(score, "id")), score)
    scenario_results: list[Any] = []
    parents = sorted(
        {str(p) for r in results.values() if (p := _field(r, "attribution_parent_id"))}
    )
    get_scenarios = getattr(memory, "get_scenario_results", None)
    if parents and callable(get_scenarios):
        scenario_results = list(get_scenarios(scenario_result_ids=parents))
    get_seeds = getattr(memory, "get_seeds", None)
    return {
        "conversations": rows,
        "message_pieces": list(pieces.values()),
        "scores": list(scores.values()),
        "attack_results": list(results.values()),
        "scenario_results": scenario_results,
        "seeds": list(get_seeds()) if callable(get_seeds) else [],
    }


def _is_loose_score(score: Mapping[str, Any]) -> bool:
    """A score of content that is not a conversation turn (PyRIT 1.1's loose content)."""
    if score.get("scorable_content_id"):
        return True
    scorable = score.get("scorable")
    return (
        isinstance(scorable, Mapping)
        and "message_piece_ids" not in scorable
        and not (score.get("message_piece_id") or score.get("prompt_request_response_id"))
    )


# --- following a memory file while PyRIT writes it -------------------------------------------

FOLLOW_STATE_FORMAT = 1
# Rows read per statement while scanning: each statement is its own short read transaction, so
# PyRIT (rollback-journal mode) never waits long for its write lock.
SCAN_CHUNK = 2000
# Rows already read that one poll re-reads per table (round robin), for in-place changes: a
# change is found within ceil(rows / RESCAN_ROWS) polls, and a poll's work stays bounded.
RESCAN_ROWS = 5000
# The follower's own retry pace for an unreachable server (seconds): doubling, capped.
FOLLOW_BACKOFF_START = 0.5
FOLLOW_BACKOFF_MAX = 30.0


def item_digest(item: Mapping[str, Any]) -> str:
    """A row's content digest: sha256 of its item as sent, keys sorted (NaN as JSON's token)."""
    text = json.dumps(item, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class FollowStateError(RedteamError):
    """The state file cannot be used (another memory file's, or not a state file)."""


class FollowState:
    """What the follower has sent: per table, each row id's content digest as the server
    acknowledged it (stored, unchanged or rejected).

    The file is a journal of JSON lines: a header naming the memory file, then one line per
    acknowledged row (``{"t": table, "i": id, "d": digest}``, ``"r": 1`` when rejected), the
    last line of an id winning. Lines are appended and fsynced only after the server answered,
    so a crash loses at most the last acknowledgements (those rows are sent again and answered
    ``unchanged``), never marks a row sent that was not. A torn last line is ignored. On open,
    and when the journal grows to twice its live entries, it is rewritten to a temporary file
    and renamed over the old one (atomic).
    """

    def __init__(self, path: str | os.PathLike[str], memory_path: str) -> None:
        self.path = Path(path)
        self.memory_path = memory_path
        self.sent: dict[str, dict[str, str]] = {}
        self.rejected: dict[str, dict[str, str]] = {}
        # The largest revision stamp the server acknowledged: a restarted follower stamps
        # above it even if the clock went back, so its newer versions are never refused.
        self.stamp = 0
        self._lines = 0
        if self.path.exists():
            self._load()
        self.compact()
        self._handle = self.path.open("a", encoding="utf-8")

    def _load(self) -> None:
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            header_line = handle.readline()
            try:
                header = json.loads(header_line)
            except ValueError:
                header = None
            if not isinstance(header, dict) or header.get("redteam_follow") != FOLLOW_STATE_FORMAT:
                raise FollowStateError(f"{self.path} is not a follower state file.")
            if header.get("memory") != self.memory_path:
                raise FollowStateError(
                    f"{self.path} records what was sent from {header.get('memory')}, not from "
                    f"{self.memory_path}; give this file its own --state."
                )
            self.stamp = int(header.get("stamp") or 0)
            for line in handle:
                if not line.endswith("\n"):
                    break  # torn by a crash mid-write: that acknowledgement is re-earned
                try:
                    entry = json.loads(line)
                    if "s" in entry:
                        self.stamp = max(self.stamp, int(entry["s"]))
                        continue
                    table, row_id, digest = entry["t"], entry["i"], entry["d"]
                except (ValueError, KeyError, TypeError):
                    continue
                self._set(table, row_id, digest, bool(entry.get("r")))

    def _set(self, table: str, row_id: str, digest: str, rejected: bool) -> None:
        (self.rejected if rejected else self.sent).setdefault(table, {})[row_id] = digest
        (self.sent if rejected else self.rejected).get(table, {}).pop(row_id, None)

    def digest(self, table: str, row_id: str) -> str | None:
        """The digest last acknowledged for this row (sent or rejected), or None."""
        found = self.sent.get(table, {}).get(row_id)
        return found if found is not None else self.rejected.get(table, {}).get(row_id)

    @property
    def entries(self) -> int:
        """Rows acknowledged (sent or rejected)."""
        return sum(len(t) for t in self.sent.values()) + self.rejected_count

    @property
    def rejected_count(self) -> int:
        """Rows whose current version the server rejected."""
        return sum(len(t) for t in self.rejected.values())

    def record(self, acknowledged: Iterable[tuple[str, str, str, bool]], stamp: int = 0) -> None:
        """Append (table, id, digest, rejected) acknowledgements, and the largest stamp they
        were sent with; durable when this returns."""
        lines = []
        if stamp > self.stamp:
            self.stamp = stamp
            lines.append(json.dumps({"s": stamp}) + "\n")
        for table, row_id, digest, rejected in acknowledged:
            self._set(table, row_id, digest, rejected)
            entry: dict[str, Any] = {"t": table, "i": row_id, "d": digest}
            if rejected:
                entry["r"] = 1
            lines.append(json.dumps(entry, separators=(",", ":")) + "\n")
        if not lines:
            return
        self._handle.write("".join(lines))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._lines += len(lines)
        if self._lines > 2 * self.entries + 10000:
            self._handle.close()
            self.compact()
            self._handle = self.path.open("a", encoding="utf-8")

    def compact(self) -> None:
        """Rewrite the journal as one line per row, atomically (temporary file, rename)."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            header = {
                "redteam_follow": FOLLOW_STATE_FORMAT,
                "memory": self.memory_path,
                "stamp": self.stamp,
            }
            handle.write(json.dumps(header) + "\n")
            for rejected, tables in ((False, self.sent), (True, self.rejected)):
                for table, rows in tables.items():
                    for row_id, digest in rows.items():
                        entry: dict[str, Any] = {"t": table, "i": row_id, "d": digest}
                        if rejected:
                            entry["r"] = 1
                        handle.write(json.dumps(entry, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._lines = self.entries

    def close(self) -> None:
        """Close the journal."""
        self._handle.close()


@dataclasses.dataclass
class PendingRow:
    """A row's newest version not yet acknowledged by the server."""

    table: str
    kind: str
    row_id: str
    digest: str
    item: dict[str, Any]
    seen: float  # monotonic time the follower first saw this version (or an older unsent one)


@dataclasses.dataclass
class FollowStats:
    """The follower's counters, for the status line and --once's exit status."""

    sent: int = 0  # rows acknowledged stored or unchanged since start
    rejected: int = 0  # rows rejected since start
    pending: int = 0
    lag: float = 0.0  # seconds: the oldest pending row's wait, else the last batch's
    polls: int = 0
    waiting: str = ""  # why nothing is read or sent right now (no file, server down)
    media_unreadable: int = 0

    def line(self, name: str, rejected_total: int) -> str:
        """The one-line status."""
        text = (
            f"follow {name}: sent {self.sent}, pending {self.pending}, "
            f"rejected {rejected_total}, lag {self.lag:.1f}s"
        )
        if self.media_unreadable:
            text += f", media unreadable {self.media_unreadable}"
        return f"{text} ({self.waiting})" if self.waiting else text


class MemoryFollower:
    """Follows a PyRIT SQLite memory file while PyRIT writes it, and pushes every new or
    changed row (see ``python -m redteam.client follow --help`` and the README).

    Each poll: when the file changed (``PRAGMA data_version``), the tables are read in short
    read-only statements, later tables first (a score is read before the pieces it scores, so
    those pieces are read too): new rows, and the columns PyRIT changes in rows it wrote
    (``MemoryTable.changeable``); rows whose fingerprint changed are turned into PyRIT's dicts
    and digested; a digest the state does not hold is pending. Pending rows go
    in dependency order, whole messages per batch, with ``?revise=1`` (a changed row is the
    newer version); each acknowledged batch is recorded in the state before the next. An
    unreachable server is retried with exponential backoff, nothing skipped.
    """

    def __init__(
        self,
        client: RedteamClient,
        path: str | os.PathLike[str],
        state: FollowState,
        *,
        interval: float = 0.5,
        media_from: str | os.PathLike[str] | None = None,
        status: Callable[[str], None] | None = None,
        report: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.path = Path(path)
        self.state = state
        self.interval = interval
        self.media_from = media_from
        self.status = status or (lambda _: None)
        self.report = report or (lambda line: print(line, file=sys.stderr))
        self.clock = clock
        self.sleep = sleep
        self.stats = FollowStats()
        self.pending: dict[tuple[str, str], PendingRow] = {}
        self._memory: PyritMemoryFile | None = None
        self._inode: tuple[int, int] | None = None
        self._data_version: int | None = None
        self._fingerprints: dict[str, dict[int, int]] = {}
        # Per table: the last rowid read and its row's key; where the round robin re-reads.
        self._last: dict[str, tuple[int, str]] = {}
        self._rescan_from: dict[str, int] = {}
        self._unreadable: set[str] = set()
        client._last_stamp = max(client._last_stamp, state.stamp)

    # -- reading ------------------------------------------------------------------------------

    def _open(self) -> PyritMemoryFile | None:
        """The memory file, (re)opened when it appeared or was replaced; None while absent."""
        try:
            info = os.stat(self.path)
        except OSError:
            self._close()
            return None
        inode = (info.st_dev, info.st_ino)
        if self._memory is not None and inode == self._inode:
            return self._memory
        self._close()
        try:
            memory = PyritMemoryFile(self.path)
        except (PyritMemoryFileError, sqlite3.Error):
            return None  # being created: no tables yet
        self._memory, self._inode = memory, inode
        return memory

    def _close(self) -> None:
        if self._memory is not None:
            self._memory.close()
        self._memory = None
        self._inode = None
        self._data_version = None
        self._fingerprints = {}
        self._last = {}
        self._rescan_from = {}

    def close(self) -> None:
        """Close the memory file (the state file is the caller's)."""
        self._close()

    def _fingerprint_pass(
        self, memory: PyritMemoryFile, table: str, columns: str, after: int, limit: int | None
    ) -> list[tuple[int, int]]:
        """(rowid, fingerprint) of the rows after a rowid (at most `limit`), in short
        statements."""
        cursor = memory.conn.cursor()
        cursor.row_factory = None  # plain tuples: hashable, cheaper than sqlite3.Row
        out: list[tuple[int, int]] = []
        while limit is None or len(out) < limit:
            size = SCAN_CHUNK if limit is None else min(SCAN_CHUNK, limit - len(out))
            rows = cursor.execute(
                f'SELECT rowid, {columns} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT ?',
                (after, size),
            ).fetchall()
            out += [(row[0], hash(row)) for row in rows]
            if len(rows) < size:
                break
            after = rows[-1][0]
        return out

    def _changed_rowids(self, memory: PyritMemoryFile, spec: MemoryTable) -> list[int]:
        """Rowids of the table's new rows, and of rows changed where PyRIT changes rows
        (spec.changeable), re-read RESCAN_ROWS at a time, round robin: a poll's work is
        bounded however large the file."""
        table = spec.table
        present = memory.tables[table]
        columns = "*"
        if spec.changeable is not None:
            wanted = (spec.key, *spec.changeable)
            columns = ", ".join(f'"{c}"' for c in wanted if c in present)
        known = self._fingerprints.setdefault(table, {})
        last = self._last.get(table)
        if last is not None:
            # SQLite gives a new row the largest rowid + 1: a rowid is reused only once the
            # row holding the largest one was deleted. That row still there means no rowid
            # read so far holds another row now; else everything is read again.
            found = memory.conn.execute(
                f'SELECT "{spec.key}" FROM "{table}" WHERE rowid = ?', (last[0],)
            ).fetchone()
            if found is None or str(found[0]) != last[1]:
                known.clear()
                last = None
                self._last.pop(table, None)
                self._rescan_from.pop(table, None)
        high = last[0] if last is not None else -(2**63)
        fresh = self._fingerprint_pass(memory, table, columns, high, None)
        changed = [rowid for rowid, mark in fresh if known.get(rowid) != mark]
        known.update(fresh)
        if fresh:
            (key,) = memory.conn.execute(
                f'SELECT "{spec.key}" FROM "{table}" WHERE rowid = ?', (fresh[-1][0],)
            ).fetchone() or (None,)
            self._last[table] = (fresh[-1][0], str(key))
        if spec.changeable == () or last is None:
            return changed
        # Rows read before: the next slice of them, for what PyRIT changed in place.
        start = self._rescan_from.get(table, -(2**63))
        again = [
            (rowid, mark)
            for rowid, mark in self._fingerprint_pass(memory, table, columns, start, RESCAN_ROWS)
            if rowid <= high
        ]
        changed += [rowid for rowid, mark in again if known.get(rowid) != mark]
        known.update(again)
        if len(again) < RESCAN_ROWS:
            self._rescan_from.pop(table, None)  # the end: from the start next time
        else:
            self._rescan_from[table] = again[-1][0]
        return changed

    def scan(self) -> bool:
        """Read what changed into ``pending``. False while the file does not exist yet."""
        memory = self._open()
        if memory is None:
            return False
        version = memory.conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return True  # nobody committed since the last scan
        specs = memory.specs()
        changed: dict[str, list[int]] = {}
        for spec in reversed(specs):  # later kinds first: what they point at is read after
            changed[spec.table] = self._changed_rowids(memory, spec)
        scenarios = next((s for s in specs if s.table == "ScenarioResultEntries"), None)
        if changed.get("AttackResultEntries") and scenarios is not None:
            # 1.x scenarios carry their attack results: re-read them all (they are few).
            changed[scenarios.table] = [
                r[0] for r in memory.conn.execute(f'SELECT rowid FROM "{scenarios.table}"')
            ]
        now = self.clock()
        for spec in specs:
            rowids = changed.get(spec.table) or []
            for start in range(0, len(rowids), 500):
                rows = list(memory._rows_by_rowid(spec.table, rowids[start : start + 500]))
                for row, item in zip(rows, spec.convert(memory, rows), strict=True):
                    self._consider(spec, str(row[spec.key]), item, now)
        self._data_version = version
        return True

    def _consider(self, spec: MemoryTable, row_id: str, item: dict[str, Any], now: float) -> None:
        """Queue a row's version unless the server already acknowledged this very content."""
        digest = item_digest(item)
        key = (spec.table, row_id)
        if self.state.digest(spec.table, row_id) == digest:
            self.pending.pop(key, None)  # back to what was sent (or an older copy caught up)
            return
        older = self.pending.get(key)
        if older is not None and older.digest == digest:
            return
        seen = older.seen if older is not None else now
        self.pending[key] = PendingRow(spec.table, spec.kind, row_id, digest, item, seen)

    # -- sending ------------------------------------------------------------------------------

    def _chunks(self) -> Iterator[list[PendingRow]]:
        """Pending rows in dependency order, at most a batch each, whole messages together."""
        ordered = sorted(
            self.pending.values(),
            key=lambda p: (
                KINDS.index(p.kind),
                str(p.item.get("conversation_id")) if p.kind == "message_pieces" else "",
                p.item.get("sequence", 0) if p.kind == "message_pieces" else 0,
                p.seen,
            ),
        )
        chunk: list[PendingRow] = []
        for row in ordered:
            message = (row.kind, row.item.get("conversation_id"), row.item.get("sequence"))
            previous = chunk[-1] if chunk else None
            same_message = (
                previous is not None
                and row.kind == "message_pieces"
                and message
                == (
                    previous.kind,
                    previous.item.get("conversation_id"),
                    previous.item.get("sequence"),
                )
            )
            if len(chunk) >= self.client.batch_size and not same_message:
                yield chunk
                chunk = []
            chunk.append(row)
        if chunk:
            yield chunk

    def send(self) -> None:
        """Push every pending row; raises RedteamError when the server cannot be reached."""
        for chunk in list(self._chunks()):
            lists: dict[str, list[PendingRow]] = {}
            for row in chunk:
                lists.setdefault(row.kind, []).append(row)
            items = {kind: [r.item for r in rows] for kind, rows in lists.items()}
            result = self.client.push(
                conversations=items.get("conversations", ()),
                pieces=items.get("message_pieces", ()),
                scores=items.get("scores", ()),
                attack_results=items.get("attack_results", ()),
                scenario_results=items.get("scenario_results", ()),
                seeds=items.get("seeds", ()),
                raise_on_rejected=False,
                media_from=self.media_from,
            )
            rejected: set[tuple[str, str]] = set()
            for failure in result.rejected:
                kind, index = failure.get("kind"), failure.get("index")
                rows = lists.get(str(kind), [])
                if isinstance(index, int) and 0 <= index < len(rows):
                    rejected.add((rows[index].table, rows[index].row_id))
                    failure = {**failure, "id": rows[index].row_id}
                for line in _rejection_lines([failure]):
                    self.report(f"rejected: {line}")
            for path in result.media_unreadable:
                if path not in self._unreadable:
                    self._unreadable.add(path)
                    self.report(f"media not readable: {path}")
            self.stats.media_unreadable = len(self._unreadable)
            self.state.record(
                ((r.table, r.row_id, r.digest, (r.table, r.row_id) in rejected) for r in chunk),
                self.client._last_stamp,
            )
            now = self.clock()
            for row in chunk:
                if self.pending.get((row.table, row.row_id)) is row:
                    del self.pending[(row.table, row.row_id)]
            self.stats.rejected += len(rejected)
            self.stats.sent += len(chunk) - len(rejected)
            self.stats.lag = max(now - r.seen for r in chunk)
            self._show()

    # -- the loop -----------------------------------------------------------------------------

    def _show(self) -> None:
        self.stats.pending = len(self.pending)
        if self.pending:
            self.stats.lag = self.clock() - min(r.seen for r in self.pending.values())
        self.status(self.stats.line(self.path.name, self.state.rejected_count))

    def poll(self) -> bool:
        """One pass: read what changed, send what is pending. False while the file is absent;
        raises RedteamError when the server cannot be reached (pending rows stay pending)."""
        self.stats.polls += 1
        present = self.scan()
        self.stats.waiting = "" if present else "waiting for the file"
        self._show()
        if self.pending:
            self.send()
        return present

    def run(self, *, once: bool = False, retry_for: float | None = None) -> int:
        """Follow until interrupted (``once``: one pass). Exit status: 0 everything sent,
        1 rows were rejected, 2 the file is missing (once) or the server's answer cannot change
        (a refused key, a redirect, nothing at the URL), 3 the server stayed unreachable for
        ``retry_for`` seconds (what was acknowledged is kept)."""
        delay = FOLLOW_BACKOFF_START
        failing_since: float | None = None
        while True:
            started = self.clock()
            try:
                present = self.poll()
            except sqlite3.Error as exc:
                # Locked past the busy timeout, or replaced mid-read: read it all again (what
                # was read but not yet turned into items is read again too).
                self._close()
                failing_since = failing_since if failing_since is not None else started
                if retry_for is not None and self.clock() - failing_since >= retry_for:
                    self.report(f"error: {self.path} cannot be read: {exc}")
                    return 2
                self.stats.waiting = f"memory file not readable, retrying: {exc}"
                self._show()
                self.sleep(self.interval)
                continue
            except (RedteamHTTPError, RedteamError) as exc:
                if isinstance(exc, RedteamHTTPError) and exc.status not in RETRY_STATUSES:
                    # A refused key, a redirect, a URL with nothing there: asking again
                    # cannot change the answer (a batch refused as too large or invalid was
                    # already split down to the items, which were reported).
                    self.report(f"error: {exc}")
                    return 2
                failing_since = failing_since if failing_since is not None else started
                if retry_for is not None and self.clock() - failing_since >= retry_for:
                    self.report(f"error: server unreachable, giving up: {exc}")
                    return 3
                reason = str(exc).splitlines()[0][:120]
                self.stats.waiting = f"server unreachable, retrying in {delay:.1f}s: {reason}"
                self._show()
                self.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, FOLLOW_BACKOFF_MAX)
                continue
            delay, failing_since = FOLLOW_BACKOFF_START, None
            if once:
                if not present:
                    self.report(f"error: {self.path} does not exist (or is no PyRIT memory yet)")
                    return 2
                return 1 if self.stats.rejected else 0
            self.sleep(max(0.0, self.interval - (self.clock() - started)))


def _status_writer(stream: Any) -> Callable[[str], None]:
    """The live status: rewritten in place on a terminal; else a line when it changes, at
    most every 5 seconds (logs of cron or a service)."""
    if getattr(stream, "isatty", lambda: False)():

        def show(line: str) -> None:
            """Rewrite the terminal's last line."""
            stream.write(f"\r{line}\x1b[K")
            stream.flush()

        return show
    last: dict[str, Any] = {"line": "", "at": 0.0}

    def log(line: str) -> None:
        """Print the line when it changed and 5 s have passed since the last one."""
        now = time.monotonic()
        if line != last["line"] and now - last["at"] >= 5.0:
            print(line, file=stream, flush=True)
            last.update(line=line, at=now)

    return log


# --- command line --------------------------------------------------------------------------


def _label(text: str) -> tuple[str, str]:
    """A --label KEY=VALUE argument."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _follow(args: argparse.Namespace, key: str) -> int:
    """`follow`: run a MemoryFollower until interrupted (or once)."""
    memory_path = str(Path(args.path).resolve())
    state_path = args.state or f"{args.path}.redteam-follow"
    retry_for = args.retry_for if args.retry_for is not None else (60.0 if args.once else None)
    try:
        state = FollowState(state_path, memory_path)
    except (FollowStateError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    status = _status_writer(sys.stderr)
    try:
        with RedteamClient(
            args.url,
            key,
            batch_size=args.batch_size,
            operation=args.operation,
            revise=True,
            # A few quick retries per request; the follower's own backoff takes over after.
            max_retries=2,
            backoff=0.25,
        ) as client:
            follower = MemoryFollower(
                client,
                args.path,
                state,
                interval=max(0.05, args.interval),
                media_from=args.media_from,
                status=status,
                report=lambda line: print(
                    f"\n{line}" if sys.stderr.isatty() else line, file=sys.stderr, flush=True
                ),
            )
            try:
                code = follower.run(once=args.once, retry_for=retry_for)
            except KeyboardInterrupt:
                code = 130
            finally:
                follower.close()
                stats = follower.stats
                print(
                    ("\n" if sys.stderr.isatty() else "")
                    + stats.line(Path(args.path).name, state.rejected_count),
                    file=sys.stderr,
                    flush=True,
                )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    finally:
        state.close()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m redteam.client push PATH --url URL`: push a PyRIT SQLite memory file;
    `follow PATH --url URL`: follow one while PyRIT writes it."""
    parser = argparse.ArgumentParser(prog="python -m redteam.client")
    commands = parser.add_subparsers(dest="command", required=True)
    push = commands.add_parser("push", help="push a PyRIT SQLite memory file (0.13 or 1.x)")
    push.add_argument("path", help="the memory file, e.g. dbdata/pyrit.db")
    push.add_argument("--url", required=True, help="the server, e.g. https://redteam.example")
    push.add_argument(
        "--label",
        action="append",
        type=_label,
        default=[],
        metavar="KEY=VALUE",
        help="push only the attack results with these labels (and all they use)",
    )
    push.add_argument(
        "--conversation-id",
        action="append",
        default=None,
        metavar="ID",
        help="push only these conversations (and all they use)",
    )
    push.add_argument(
        "--media-from",
        default=None,
        metavar="DIR",
        help="folder holding the run's media (default: the paths in the file)",
    )
    push.add_argument(
        "--operation",
        default=None,
        metavar="NAME",
        help="operation for rows whose labels name none (default: the key's default)",
    )
    push.add_argument("--batch-size", type=int, default=1000)
    follow = commands.add_parser(
        "follow",
        help="follow a PyRIT SQLite memory file while PyRIT writes it, pushing new and "
        "changed rows",
    )
    follow.add_argument("path", help="the memory file (it may not exist yet)")
    follow.add_argument("--url", required=True, help="the server, e.g. https://redteam.example")
    follow.add_argument(
        "--state",
        default=None,
        metavar="FILE",
        help="what was sent, kept across restarts (default: PATH.redteam-follow)",
    )
    follow.add_argument(
        "--interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="how often to look for new rows (default 0.5)",
    )
    follow.add_argument(
        "--once",
        action="store_true",
        help="send what is new and exit (for cron): 0 all sent, 1 rows rejected, 2 no file, a "
        "bad key or a wrong URL, 3 server unreachable for --retry-for seconds",
    )
    follow.add_argument(
        "--retry-for",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give up after the server was unreachable this long (default: never; --once: 60)",
    )
    follow.add_argument("--media-from", default=None, metavar="DIR", help="as for push")
    follow.add_argument("--operation", default=None, metavar="NAME", help="as for push")
    follow.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args(argv)
    key = os.environ.get("REDTEAM_API_KEY", "")
    if not key:
        print("Set REDTEAM_API_KEY to an API key with the ingest scope.", file=sys.stderr)
        return 2
    if args.command == "follow":
        return _follow(args, key)
    try:
        with RedteamClient(
            args.url, key, batch_size=args.batch_size, operation=args.operation
        ) as client:
            result = client.push_memory(
                args.path,
                labels=dict(args.label) or None,
                conversation_ids=args.conversation_id,
                media_from=args.media_from,
                raise_on_rejected=False,
            )
    except (RedteamError, PyritMemoryFileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.path}: {result.summary()}")
    for line in _rejection_lines(result.rejected):
        print(f"rejected: {line}", file=sys.stderr)
    for path in result.media_unreadable:
        print(f"media not readable: {path}", file=sys.stderr)
    return 1 if result.rejected else 0


if __name__ == "__main__":
    sys.exit(main())
