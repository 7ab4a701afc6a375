"""Write a slice of stored memory back as a PyRIT SQLite memory file (1.x or 0.13 schema).

The way back into PyRIT: ``manage.py export_pyrit_memory -o slice.db`` and the "Export as
PyRIT memory" button of the list pages write a file that PyRIT of that line opens with
``SQLiteMemory(db_path=...)`` unchanged (the schema is PyRIT's own DDL, with the alembic head
stamped for 1.x, so nothing migrates), and whose ``get_message_pieces()``,
``get_prompt_scores()`` and ``get_attack_results()`` give back the rows that were ingested.

What is written, and how:

* The rows are the run of ``redteam.site.run_export`` (``select_conversations``: the chosen
  conversations, the conversations their attack results name, their pieces, the standing
  scores of those pieces including human verdicts (PyRIT scores of the ``HumanReviewScorer``),
  their attack results, the scenario results those belong to, the seeds their atomic attack
  identifiers name), within the caller's `Scope`. Every value comes from the project's one
  serialisation (``memory.export``, ``seeds.api.views.export_seed``); this module only turns
  PyRIT's dicts into PyRIT's table rows, as PyRIT's own ``*Entry`` constructors do (JSON
  columns as SQLAlchemy writes them, ``None`` as the text ``null``; datetimes as naive UTC text
  with microseconds; empty lists as PyRIT stores them).
* 1.x files also get the content-addressed identifier tables (``TargetIdentifiers``, ...,
  the edge tables, ``PromptConverterIdentifiers``), projected from the identifier dumps the
  rows carry, as ``MemoryInterface._persist_identifier`` does, and the ``Conversations`` rows
  of the conversations a client declared.
* 0.13 files carry labels, harm categories and the target and attack identifiers on every
  piece (from the conversation for a 1.x piece), the strategy identifier in the deprecated
  ``AttackResultEntries.attack_identifier`` column, and no undetermined scores (0.13's
  ``score_value`` is NOT NULL; they are counted in the report as skipped).
* Media: the bytes of media pieces and seeds are copied beside the file (``MediaFolder``),
  named by their sha256, and the values rewritten to point at them; a value whose bytes never
  reached the server keeps its original path (counted as missing).

Bounded work: conversations are read ``CONVERSATIONS_PER_CHUNK`` at a time with a constant
number of queries per chunk; the file is written to a temporary name in the target folder
and renamed when complete, so a failed export leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mimetypes
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from django.core.files.storage import default_storage

from memory.api.reads import export_scenarios_page
from memory.export import (
    export_attack_results,
    export_conversation,
    export_piece,
    export_score,
    last_scores_of,
)
from memory.models import AttackResult, Conversation, MessagePiece, Score
from memory.parsing import parse_identifier
from memory.querysets import (
    attack_results_for_export,
    conversations_for_export,
    pieces_for_export,
)
from redteam.common.models import MediaBlob
from redteam.site.pyrit_memory_schema import ALEMBIC_HEAD_1X, ALEMBIC_TABLE_1X, SCHEMA
from redteam.site.run_export import (
    SCENARIOS_PER_CHUNK,
    RunSelection,
    chunked,
    note_result,
    scenarios_of,
    seeds_of,
)
from seeds.api.views import export_seed
from seeds.models import Seed

__all__ = [
    "MEDIA_DATA_TYPES",
    "ExportTooLarge",
    "MediaFolder",
    "MemoryExportReport",
    "Shape",
    "write_memory_file",
]

Shape = Literal["1.x", "0.13"]
MEDIA_DATA_TYPES = frozenset({"image_path", "audio_path", "video_path", "binary_path"})
# 1.1 packs a prompt seed's response schema into its metadata under this key.
SEED_SCHEMA_KEY = "__response_json_schema__"
# PyRIT 0.13's AttackOutcome (1.1 added "error").
OUTCOMES_013 = frozenset({"success", "failure", "undetermined"})
# A media file keeps the extension of its original path when it is a plain one.
PLAIN_SUFFIX = re.compile(r"\.[A-Za-z0-9]{1,10}")


class ExportTooLarge(Exception):
    """The slice exceeds a cap (conversations or media bytes) of this export."""


# --- values as PyRIT's SQLAlchemy columns hold them -----------------------------------------


def json_text(value: Any) -> str:
    """A JSON column's text: SQLAlchemy's ``json.dumps`` (ASCII, ", " separators); None is
    the text ``null``, as SQLAlchemy stores it."""
    return json.dumps(value)


def sql_time(value: Any) -> str | None:
    """A DATETIME column's text from PyRIT's JSON timestamp: naive UTC with microseconds
    (SQLAlchemy's SQLite storage format)."""
    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}"
    )


def _list_or_none(value: Any) -> Any:
    """PyRIT stores an empty list column as null (``[...] or None``)."""
    return list(value) if value else None


# --- media ----------------------------------------------------------------------------------


@dataclass
class MediaFolder:
    """Where media bytes go and how the rewritten values name them.

    ``prefix`` starts every rewritten value: the folder's absolute path for a file used in
    place, or a relative name (``media``) for a download opened from its own folder.
    """

    directory: Path
    prefix: str
    max_bytes: int | None = None
    written: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    bytes_written: int = 0
    missing: int = 0

    def value_for(self, value: str, blob: MediaBlob | None) -> str:
        """The value to write for a media path: the copied file's path, or the original
        when the bytes are not stored here."""
        if blob is None:
            self.missing += 1
            return value
        if blob.sha256 in self.written:
            return self.written[blob.sha256]
        if self.max_bytes is not None and self.bytes_written + blob.size > self.max_bytes:
            raise ExportTooLarge(
                f"the media of this slice exceed {self.max_bytes} bytes; narrow the filters or "
                "use manage.py export_pyrit_memory"
            )
        name = blob.sha256 + _extension(value, blob.content_type)
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / name
        try:
            with default_storage.open(blob.storage_name, "rb") as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
        except OSError:
            target.unlink(missing_ok=True)
            self.missing += 1
            return value
        self.files.append(target)
        self.bytes_written += blob.size
        path = f"{self.prefix.rstrip('/')}/{name}" if self.prefix else name
        self.written[blob.sha256] = path
        return path

    def remove(self) -> None:
        """Delete the files this export wrote (after a failure)."""
        for path in self.files:
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.directory.rmdir()  # only when empty


def _extension(value: str, content_type: str) -> str:
    """The original path's plain extension, else one for the sniffed content type."""
    suffix = Path(value.replace("\\", "/")).suffix
    if PLAIN_SUFFIX.fullmatch(suffix):
        return suffix.lower()
    return mimetypes.guess_extension(content_type or "") or ".bin"


# --- identifier projection (1.x) ------------------------------------------------------------


@dataclass(frozen=True)
class _IdentifierTable:
    """One content-addressed identifier table: promoted params, single children (hash
    columns) and list children (edge tables), as PyRIT's ``*IdentifierEntry`` classes."""

    table: str
    scalars: tuple[str, ...] = ()
    json_scalars: frozenset[str] = frozenset()
    # child name -> (hash column, child kind)
    single: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # child name -> (edge table, parent column, child column, child kind)
    lists: Mapping[str, tuple[str, str, str, str]] = field(default_factory=dict)


IDENTIFIER_TABLES: dict[str, _IdentifierTable] = {
    "target": _IdentifierTable(
        "TargetIdentifiers",
        (
            "endpoint",
            "model_name",
            "underlying_model_name",
            "temperature",
            "top_p",
            "max_requests_per_minute",
            "supported_auth_modes",
        ),
        frozenset({"supported_auth_modes"}),
        lists={"targets": ("TargetIdentifierChildren", "parent_hash", "child_hash", "target")},
    ),
    "converter": _IdentifierTable(
        "ConverterIdentifiers",
        ("supported_input_types", "supported_output_types"),
        frozenset({"supported_input_types", "supported_output_types"}),
        single={
            "converter_target": ("converter_target_hash", "target"),
            "sub_converter": ("sub_converter_hash", "converter"),
        },
    ),
    "scorer": _IdentifierTable(
        "ScorerIdentifiers",
        ("scorer_type", "score_aggregator"),
        single={"prompt_target": ("prompt_target_hash", "target")},
        lists={"sub_scorers": ("ScorerIdentifierChildren", "parent_hash", "child_hash", "scorer")},
    ),
    "scenario": _IdentifierTable(
        "ScenarioIdentifiers",
        ("version", "techniques", "datasets"),
        frozenset({"techniques", "datasets"}),
        single={
            "objective_target": ("objective_target_hash", "target"),
            "objective_scorer": ("objective_scorer_hash", "scorer"),
        },
    ),
    "seed": _IdentifierTable(
        "SeedIdentifiers",
        ("value", "value_sha256", "data_type", "dataset_name", "is_general_technique"),
    ),
    "attack": _IdentifierTable(
        "AttackIdentifiers",
        ("adversarial_system_prompt", "adversarial_seed_prompt"),
        single={
            "objective_target": ("objective_target_hash", "target"),
            "adversarial_chat": ("adversarial_chat_hash", "target"),
            "objective_scorer": ("objective_scorer_hash", "scorer"),
        },
        lists={
            "request_converters": (
                "AttackRequestConverterIdentifiers",
                "attack_identifier_hash",
                "converter_identifier_hash",
                "converter",
            ),
            "response_converters": (
                "AttackResponseConverterIdentifiers",
                "attack_identifier_hash",
                "converter_identifier_hash",
                "converter",
            ),
        },
    ),
    "attack_technique": _IdentifierTable(
        "AttackTechniqueIdentifiers",
        single={"attack": ("attack_identifier_hash", "attack")},
        lists={
            "technique_seeds": (
                "AttackTechniqueSeedIdentifiers",
                "attack_technique_identifier_hash",
                "seed_identifier_hash",
                "seed",
            )
        },
    ),
    "atomic_attack": _IdentifierTable(
        "AtomicAttackIdentifiers",
        single={"attack_technique": ("attack_technique_identifier_hash", "attack_technique")},
        lists={
            "seed_identifiers": (
                "AtomicAttackSeedIdentifiers",
                "atomic_attack_identifier_hash",
                "seed_identifier_hash",
                "seed",
            )
        },
    ),
}


def _children(dump: Mapping[str, Any], name: str) -> Any:
    children = dump.get("children")
    return children.get(name) if isinstance(children, dict) else None


def _hash_of(dump: Any) -> str | None:
    value = dump.get("hash") if isinstance(dump, dict) else None
    return value if isinstance(value, str) else None


def _scalar(value: Any, as_json: bool) -> Any:
    if as_json:
        return json_text(list(value) if isinstance(value, tuple) else value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (dict, list)):
        return json_text(value)
    return value


def _hashes_to_itself(dump: Mapping[str, Any]) -> bool:
    """Whether the dump's content hashes to its ``hash`` (as the importer and PyRIT check)."""
    errors: list[Any] = []
    parsed = parse_identifier(dump, "identifier", legacy=False, errors=errors)
    return parsed is not None and not errors and parsed.hash == dump.get("hash")


def attack_strategy(atomic: Any) -> Any:
    """The attack strategy inside an atomic attack identifier (PyRIT's
    ``get_attack_strategy_identifier``): children.attack_technique.children.attack, else
    children.attack."""
    if not isinstance(atomic, dict):
        return None
    technique = _children(atomic, "attack_technique")
    if isinstance(technique, dict) and isinstance(_children(technique, "attack"), dict):
        return _children(technique, "attack")
    attack = _children(atomic, "attack")
    return attack if isinstance(attack, dict) else None


# --- the report -----------------------------------------------------------------------------


@dataclass
class MemoryExportReport:
    """Rows written per table, what had no place in the file, and the media copied."""

    path: str
    shape: str
    tables: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    media_files: int = 0
    media_bytes: int = 0
    media_missing: int = 0

    def summary(self) -> str:
        """One line: rows per table, then media."""
        rows = ", ".join(f"{n} {table}" for table, n in self.tables.items() if n)
        line = f"{self.path}: PyRIT {self.shape} memory, {rows or 'no rows'}"
        if self.media_files or self.media_missing:
            line += f"; {self.media_files} media file(s), {self.media_bytes} bytes"
            if self.media_missing:
                line += f", {self.media_missing} media value(s) without stored bytes"
        for what, n in self.skipped.items():
            line += f"; skipped {n} {what}"
        return line


# --- the writer -----------------------------------------------------------------------------


class _Writer:
    """Rows into an open SQLite connection (INSERT OR IGNORE: PyRIT's rows are unique by id,
    and a row reached twice, e.g. a score of two chunks' pieces, is written once)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        shape: Shape,
        media: MediaFolder | None,
        report: MemoryExportReport,
    ) -> None:
        self.conn = conn
        self.shape = shape
        self.media = media
        self.report = report
        self.identifiers: set[str] = set()
        self.unprojected: set[str] = set()
        self.unwritable: set[str] = set()

    def insert(self, table: str, row: Mapping[str, Any]) -> None:
        columns = ", ".join(f'"{c}"' for c in row)
        marks = ", ".join("?" for _ in row)
        cursor = self.conn.execute(
            f'INSERT OR IGNORE INTO "{table}" ({columns}) VALUES ({marks})', list(row.values())
        )
        self.report.tables[table] = self.report.tables.get(table, 0) + max(cursor.rowcount, 0)

    def skip(self, what: str) -> None:
        self.report.skipped[what] = self.report.skipped.get(what, 0) + 1

    def media_value(self, value: Any, data_type: Any, blob: MediaBlob | None) -> Any:
        if self.media is None or data_type not in MEDIA_DATA_TYPES or not isinstance(value, str):
            return value
        return self.media.value_for(value, blob)

    # -- identifiers (1.x)

    def identifier(self, dump: Any, kind: str) -> str | None:
        """Project an identifier dump (and its typed children) into its table; its hash."""
        digest = _hash_of(dump)
        if self.shape != "1.x" or digest is None:
            return digest
        key = f"{kind}:{digest}"
        if key in self.identifiers:
            return None if digest in self.unprojected else digest
        self.identifiers.add(key)
        if not _hashes_to_itself(dump):
            # A legacy dump with truncated values (0.13 memory) or a hash its content does not
            # give: PyRIT 1.1 refuses such a row in its identifier tables. The JSON copy on
            # the row that names it is kept; the projection is left out.
            self.unprojected.add(digest)
            self.skip("identifier(s) not projected: their content does not hash to their hash")
            return None
        spec = IDENTIFIER_TABLES[kind]
        row: dict[str, Any] = {
            "hash": digest,
            "class_name": dump.get("class_name"),
            "class_module": dump.get("class_module"),
            # PyRIT projects a scenario identifier before stamping its eval hash.
            "identifier_json": json_text(
                {k: v for k, v in dump.items() if k != "eval_hash"} if kind == "scenario" else dump
            ),
            "pyrit_version": dump.get("pyrit_version"),
        }
        for name in spec.scalars:
            row[name] = _scalar(dump.get(name), name in spec.json_scalars)
        for child, (column, child_kind) in spec.single.items():
            value = _children(dump, child)
            row[column] = self.identifier(value, child_kind) if isinstance(value, dict) else None
        for child, (table, parent_column, child_column, child_kind) in spec.lists.items():
            value = _children(dump, child)
            items = value if isinstance(value, list) else [value] if isinstance(value, dict) else []
            for position, item in enumerate(items):
                child_hash = self.identifier(item, child_kind)
                if child_hash is not None:
                    self.insert(
                        table,
                        {parent_column: digest, "position": position, child_column: child_hash},
                    )
        self.insert(spec.table, row)
        return digest

    # -- rows

    def conversation(self, conversation: Conversation, item: Mapping[str, Any]) -> None:
        target = item["target_identifier"]
        self.insert(
            "Conversations",
            {
                "conversation_id": item["conversation_id"],
                "target_identifier": json_text(target),
                "pyrit_version": conversation.pyrit_version,
                "target_identifier_hash": self.identifier(target, "target"),
                "retries": json_text(_list_or_none(item["retries"])),
            },
        )

    def piece(self, piece: MessagePiece) -> None:
        item = export_piece(piece, self.shape)
        row: dict[str, Any] = {
            "id": item["id"],
            "role": item["role"],
            "conversation_id": item["conversation_id"],
            "sequence": item["sequence"],
            "timestamp": sql_time(item["timestamp"]),
            "prompt_metadata": json_text(item["prompt_metadata"]),
            "converter_identifiers": json_text(item["converter_identifiers"]),
            "response_error": item["response_error"],
            "original_value_data_type": item["original_value_data_type"],
            "original_value": self.media_value(
                item["original_value"], item["original_value_data_type"], piece.original_media
            ),
            "original_value_sha256": item["original_value_sha256"],
            "converted_value_data_type": item["converted_value_data_type"],
            "converted_value": self.media_value(
                item["converted_value"], item["converted_value_data_type"], piece.converted_media
            ),
            "converted_value_sha256": item["converted_value_sha256"],
            "original_prompt_id": item["original_prompt_id"],
            "pyrit_version": piece.pyrit_version,
        }
        if self.shape == "0.13":
            row["labels"] = json_text(item["labels"] or {})
            row["targeted_harm_categories"] = json_text(item["targeted_harm_categories"] or [])
            row["prompt_target_identifier"] = json_text(item["prompt_target_identifier"] or {})
            row["attack_identifier"] = json_text(item["attack_identifier"] or {})
        self.insert("PromptMemoryEntries", row)
        if self.shape == "1.x":
            for position, dump in enumerate(item["converter_identifiers"]):
                digest = self.identifier(dump, "converter")
                if digest is not None:
                    self.insert(
                        "PromptConverterIdentifiers",
                        {
                            "prompt_memory_entry_id": item["id"],
                            "position": position,
                            "converter_identifier_hash": digest,
                        },
                    )

    def score(self, score: Score) -> None:
        item = export_score(score, "1.x")
        if self.shape == "0.13" and item["score_value"] is None:
            if item["id"] not in self.unwritable:  # a last score is met twice
                self.unwritable.add(item["id"])
                self.skip("undetermined score(s): PyRIT 0.13 requires a score value")
            return
        scorer = item["scorer_class_identifier"]
        row: dict[str, Any] = {
            "id": item["id"],
            "score_value": item["score_value"],
            "score_value_description": item["score_value_description"],
            "score_type": item["score_type"],
            "score_category": json_text(item["score_category"]),
            "score_rationale": item["score_rationale"],
            "score_metadata": json_text(item["score_metadata"]),
            "scorer_class_identifier": json_text(scorer or {}),
            "prompt_request_response_id": item["message_piece_id"],
            "timestamp": sql_time(item["timestamp"]),
            "objective": item["objective"],
            "pyrit_version": score.pyrit_version,
        }
        if self.shape == "0.13":
            row["task"] = score.task if score.task is not None else item["objective"]
        else:
            scorable = item["scorable"]
            row["scorer_identifier_hash"] = self.identifier(scorer, "scorer")
            row["status"] = item["status"]
            row["scorable"] = json_text(scorable)
            row["scorable_content_id"] = (
                str(score.scorable_content_id) if score.scorable_content_id else None
            )
            self._scorable_content(score, scorable)
        self.insert("ScoreEntries", row)

    def _scorable_content(self, score: Score, scorable: Any) -> None:
        """The ScorableContentEntries row a content_entry score names (1.1)."""
        content = score.loose_content
        if content is None or score.scorable_content_id is None:
            return
        if not isinstance(scorable, dict) or scorable.get("scorable_type") != "content_entry":
            return
        value_sha256 = content.value_sha256 or hashlib.sha256(content.value.encode()).hexdigest()
        self.insert(
            "ScorableContentEntries",
            {
                "id": str(score.scorable_content_id),
                "value": content.value,
                "value_sha256": value_sha256,
                "data_type": content.data_type,
                # The server keeps no time of its own for the entry: the score's.
                "timestamp": sql_time(score.timestamp),
            },
        )

    def attack_result(self, result: AttackResult, item: Mapping[str, Any]) -> None:
        related = item["related_conversations"]
        atomic = item["atomic_attack_identifier"]
        last_response = item["last_response"]
        last_score = item["last_score"]

        def of_type(kind: str) -> Any:
            return [r["conversation_id"] for r in related if r["conversation_type"] == kind]

        row: dict[str, Any] = {
            "id": item["attack_result_id"],
            "conversation_id": item["conversation_id"],
            "objective": item["objective"],
            "atomic_attack_identifier": json_text(atomic),
            "objective_sha256": result.objective_sha256
            or hashlib.sha256(result.objective.encode()).hexdigest(),
            "last_response_id": last_response["id"] if last_response else None,
            "last_score_id": last_score["id"] if last_score else None,
            "executed_turns": item["executed_turns"],
            "execution_time_ms": item["execution_time_ms"],
            "outcome": item["outcome"],
            "outcome_reason": item["outcome_reason"],
            "attack_metadata": json_text(item["metadata"]),
            "pruned_conversation_ids": json_text(_list_or_none(of_type("pruned"))),
            "adversarial_chat_conversation_ids": json_text(_list_or_none(of_type("adversarial"))),
            "timestamp": sql_time(item["timestamp"] or result.ingested_at),
            "pyrit_version": result.pyrit_version,
        }
        if self.shape == "0.13":
            row["attack_identifier"] = json_text(attack_strategy(atomic) or {})
            if row["outcome"] not in OUTCOMES_013:
                row["outcome"] = "undetermined"
                self.skip("'error' outcome(s) written as 'undetermined' (not a PyRIT 0.13 outcome)")
        else:
            retries = item["retry_events"]
            row.update(
                {
                    "labels": json_text(item["labels"] or {}),
                    "error_message": item["error_message"],
                    "error_type": item["error_type"],
                    "error_traceback": item["error_traceback"],
                    "retry_events_json": json.dumps(retries) if retries else None,
                    "total_retries": item["total_retries"],
                    "attribution_parent_id": item["attribution_parent_id"],
                    "attribution_data": json_text(item["attribution_data"]),
                    "targeted_harm_categories": json_text(
                        _list_or_none(item["targeted_harm_categories"])
                    ),
                    "atomic_attack_identifier_hash": self.identifier(atomic, "atomic_attack"),
                }
            )
        self.insert("AttackResultEntries", row)

    def scenario(self, item: Mapping[str, Any]) -> None:
        if self.shape == "0.13":
            self.insert(
                "ScenarioResultEntries",
                {
                    **{
                        key: item[key]
                        for key in (
                            "id",
                            "scenario_name",
                            "scenario_description",
                            "scenario_version",
                            "scenario_run_state",
                            "attack_results_json",
                            "number_tries",
                        )
                    },
                    "pyrit_version": item["pyrit_version"] or "",
                    "scenario_init_data": json_text(item["scenario_init_data"]),
                    "objective_target_identifier": json_text(item["objective_target_identifier"]),
                    "objective_scorer_identifier": json_text(item["objective_scorer_identifier"]),
                    "labels": json_text(item["labels"]),
                    "completion_time": sql_time(item["completion_time"] or item["timestamp"]),
                    "timestamp": sql_time(item["timestamp"] or item["completion_time"]),
                },
            )
            return
        identifier = item["scenario_identifier"]
        groups = item["display_group_map"]
        self.insert(
            "ScenarioResultEntries",
            {
                "id": item["id"],
                "scenario_name": item["scenario_name"],
                "scenario_description": item["scenario_description"],
                "scenario_version": item["scenario_version"],
                "pyrit_version": item["pyrit_version"] or "",
                "scenario_identifier": json_text(identifier),
                "objective_target_identifier": json_text(item["objective_target_identifier"]),
                "objective_scorer_identifier": json_text(item["objective_scorer_identifier"]),
                "scenario_run_state": item["scenario_run_state"],
                "labels": json_text(item["labels"]),
                "number_tries": item["number_tries"],
                "completion_time": sql_time(item["completion_time"] or item["creation_time"]),
                "timestamp": sql_time(item["creation_time"] or item["completion_time"]),
                "display_group_map_json": json.dumps(groups) if groups else None,
                "error_message": item["error_message"],
                "error_type": item["error_type"],
                "scenario_metadata": json_text(item["metadata"] or None),
                "scenario_identifier_hash": self.identifier(identifier, "scenario"),
            },
        )

    def seed(self, seed: Seed) -> None:
        item = export_seed(seed, "1.x")
        seed_type = item["seed_type"]
        prompt = seed_type == "prompt"
        self.insert(
            "SeedPromptEntries",
            {
                "id": item["id"],
                "value": self.media_value(item["value"], item["data_type"], seed.media),
                "value_sha256": item["value_sha256"],
                "data_type": item["data_type"],
                "name": item["name"],
                "dataset_name": item["dataset_name"],
                # 0.13 stored the list as given; 1.1 stores an empty one as null.
                "harm_categories": json_text(
                    item["harm_categories"]
                    if self.shape == "0.13"
                    else _list_or_none(item["harm_categories"])
                ),
                "description": item["description"],
                "authors": json_text(_list_or_none(item["authors"])),
                "groups": json_text(_list_or_none(item["groups"])),
                "source": item["source"],
                "date_added": sql_time(item["date_added"] or seed.created_at),
                "added_by": item["added_by"] or "",
                "prompt_metadata": json_text(
                    _packed_metadata(item["metadata"], item.get("response_json_schema"))
                ),
                "parameters": json_text(_list_or_none(item["parameters"]) if prompt else None),
                "prompt_group_id": item["prompt_group_id"],
                "sequence": item["sequence"] if prompt else None,
                "role": item["role"] if prompt else None,
                "seed_type": seed_type,
            },
        )


def _packed_metadata(metadata: Any, schema: Any) -> Any:
    """A seed's prompt_metadata as PyRIT 1.1 packs it (the response schema as JSON text under
    SEED_SCHEMA_KEY)."""
    if not metadata and schema is None:
        return None if metadata is None else {}
    packed = dict(metadata) if isinstance(metadata, dict) else {}
    packed.pop(SEED_SCHEMA_KEY, None)
    if schema is not None:
        packed[SEED_SCHEMA_KEY] = json.dumps(schema, sort_keys=True)
    return packed


# --- reading the run ------------------------------------------------------------------------


def _write_rows(writer: _Writer, selection: RunSelection) -> None:
    """Every section of the run, a chunk of conversations at a time."""
    scope = selection.scope
    scores = (
        Score.objects.visible_to(scope).standing().select_related("scorer_dump", "loose_content")
    )
    results = attack_results_for_export(scope)
    for chunk in selection.chunks():
        if writer.shape == "1.x":
            declared = conversations_for_export(scope).filter(pk__in=chunk, declared=True)
            for conversation in declared:
                writer.conversation(conversation, export_conversation(conversation))
        pieces = (
            pieces_for_export(scope)
            .select_related("original_media", "converted_media")
            .filter(conversation_id__in=chunk)
            .order_by("conversation_id", "sequence", "position")
        )
        for piece in pieces:
            writer.piece(piece)
        if not selection.whole:
            prompt_ids = MessagePiece.objects.filter(conversation_id__in=chunk).values(
                "original_prompt_id"
            )
            for score in scores.filter(message_piece_id__in=prompt_ids).order_by("timestamp", "id"):
                writer.score(score)
            _write_results(
                writer,
                list(results.filter(conversation_id__in=chunk).order_by("timestamp", "pk")),
                selection,
            )
    if selection.whole:
        for rows in chunked(scores):
            for score in rows:
                writer.score(score)
        for result_rows in chunked(results):
            _write_results(writer, result_rows, selection)
    scenarios = scenarios_of(selection)
    if scenarios is not None:
        for scenario_rows in chunked(scenarios, SCENARIOS_PER_CHUNK):
            for item in export_scenarios_page(
                scenario_rows, writer.shape, scope=scope, max_results=None
            ):
                writer.scenario(item)
    seeds = seeds_of(selection)
    if seeds is not None:
        for seed_rows in chunked(seeds.select_related("media")):
            for seed in seed_rows:
                writer.seed(seed)


def _write_results(writer: _Writer, rows: list[AttackResult], selection: RunSelection) -> None:
    """Attack results (1.x dicts, the project's one serialisation), and their last scores
    when no piece of the slice carried them."""
    if not rows:
        return
    items = export_attack_results(rows, "1.x", scope=selection.scope)
    for score in last_scores_of(rows, selection.scope).values():
        if score.withdrawn_at is None:
            writer.score(score)
    for result, item in zip(rows, items, strict=True):
        note_result(item, selection)
        writer.attack_result(result, item)


def write_memory_file(
    path: str | os.PathLike[str],
    selection: RunSelection,
    *,
    shape: Shape = "1.x",
    media: MediaFolder | None = None,
    max_conversations: int | None = None,
) -> MemoryExportReport:
    """Write the run as a PyRIT memory file at ``path`` (created, or replaced only once
    complete); ``media`` receives the media bytes (None: values are kept as they are)."""
    if shape not in SCHEMA:
        raise ValueError(f"unknown PyRIT memory shape {shape!r}")
    if max_conversations is not None and len(selection.conversation_ids) > max_conversations:
        raise ExportTooLarge(
            f"{len(selection.conversation_ids)} conversations are more than {max_conversations} "
            "in one download; narrow the filters or use manage.py export_pyrit_memory"
        )
    target = Path(path)
    report = MemoryExportReport(path=str(target), shape=shape)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    os.close(handle)
    conn = sqlite3.connect(temporary, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for statement in SCHEMA[shape]:
            conn.execute(statement)
        if shape == "1.x":
            conn.execute(
                f"INSERT INTO {ALEMBIC_TABLE_1X} (version_num) VALUES (?)", (ALEMBIC_HEAD_1X,)
            )
        _write_rows(_Writer(conn, shape, media, report), selection)
        conn.execute("COMMIT")
        conn.close()
        os.replace(temporary, target)
    except BaseException:
        conn.close()
        Path(temporary).unlink(missing_ok=True)
        if media is not None:
            media.remove()
        raise
    if media is not None:
        report.media_files = len(media.written)
        report.media_bytes = media.bytes_written
        report.media_missing = media.missing
    return report
