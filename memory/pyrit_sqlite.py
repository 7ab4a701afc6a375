"""Import a PyRIT SQLite memory file (1.x or 0.13 schema) through the ingestion services.

Rows are read with the standard library's sqlite3 (read-only), turned into the dict shapes
PyRIT itself serializes (1.x ``model_dump`` for a 1.x file, 0.13 ``to_dict`` for a legacy
one), and stored in chunks through memory.services, scoring.services and seeds.services, so
the import obeys exactly the rules the API does and a re-run stores nothing new.

How each table maps (PYRIT-MODEL.md section 8):

* ``Conversations`` -> Conversation; ``PromptMemoryEntries`` -> MessagePiece (the JSON
  ``converter_identifiers`` copy is the source of truth); ``ScoreEntries`` -> Score (1.x rows
  in the ScoreEntry view, 0.13 rows in to_dict form plus their ``task`` column);
  ``AttackResultEntries`` -> AttackResult with its last response and score read from their
  tables, and ``pruned_conversation_ids`` / ``adversarial_chat_conversation_ids`` turned into
  related conversations with PyRIT's reload descriptions; ``SeedPromptEntries`` -> Seed.
* The content-addressed identifier tables (1.x) are projections of those JSON copies: their
  ``identifier_json`` rows are stored as identifiers too, and the edge tables
  (``PromptConverterIdentifiers``, ``*IdentifierChildren``, ...) are checked against what
  arrived.
* ``ScenarioResultEntries`` -> ScenarioResult (1.x as ``model_dump`` with its attack results
  re-attached by ``attribution_data["parent_collection"]``, as ``get_scenario_results``
  does; 0.13 as the table row, keeping ``scenario_init_data`` and ``attack_results_json``).
  ``ScorableContentEntries`` rows travel with the scores that name them
  (``scorable_content``), so the scored loose text is stored as a push would store it.
* Not mapped, reported with their row counts: ``EmbeddingData``, and 0.13's deprecated
  ``AttackResultEntries.attack_identifier`` column (the strategy inside
  ``atomic_attack_identifier``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import transaction

from memory.bulk import store_identifier_uses
from memory.models import ComponentIdentifier, PieceConverter
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.ingest import guard_error, store_items
from redteam.outcomes import FieldError, ItemOutcome

__all__ = [
    "ImportProgress",
    "ImportReport",
    "PyritSqliteError",
    "TableCount",
    "import_pyrit_memory",
    "iter_import",
]

DEFAULT_CHUNK_SIZE = 1000
MAX_REPORTED_ERRORS = 50

IDENTIFIER_TABLES = (
    "TargetIdentifiers",
    "ConverterIdentifiers",
    "ScorerIdentifiers",
    "SeedIdentifiers",
    "AttackIdentifiers",
    "AttackTechniqueIdentifiers",
    "AtomicAttackIdentifiers",
    "ScenarioIdentifiers",
)
# Edge tables: (table, parent column, child column); projections of identifier children.
EDGE_TABLES = (
    ("TargetIdentifierChildren", "parent_hash", "child_hash"),
    ("ScorerIdentifierChildren", "parent_hash", "child_hash"),
    ("AttackRequestConverterIdentifiers", "attack_identifier_hash", "converter_identifier_hash"),
    ("AttackResponseConverterIdentifiers", "attack_identifier_hash", "converter_identifier_hash"),
    ("AttackTechniqueSeedIdentifiers", "attack_technique_identifier_hash", "seed_identifier_hash"),
    ("AtomicAttackSeedIdentifiers", "atomic_attack_identifier_hash", "seed_identifier_hash"),
)
UNMAPPED_TABLES = {
    "EmbeddingData": "embeddings are not stored",
}
METADATA_TABLES = {"pyrit_memory_alembic_version", "alembic_version", "sqlite_sequence"}


class PyritSqliteError(ValueError):
    """The file is not a readable PyRIT memory database."""


@dataclass
class TableCount:
    """What happened to one table's rows."""

    read: int = 0
    stored: int = 0
    unchanged: int = 0
    rejected: int = 0
    skipped: int = 0
    note: str = ""

    def add(self, outcomes: Sequence[ItemOutcome]) -> None:
        """Count service outcomes."""
        for outcome in outcomes:
            if outcome.status == "stored":
                self.stored += 1
            elif outcome.status == "unchanged":
                self.unchanged += 1
            else:
                self.rejected += 1


@dataclass
class ImportReport:
    """Counts per table, the first errors, and the schema line detected."""

    path: str
    line: str
    tables: dict[str, TableCount] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def table(self, name: str) -> TableCount:
        """The counter of a table (created on first use)."""
        return self.tables.setdefault(name, TableCount())

    def record(self, table: str, outcomes: Sequence[ItemOutcome]) -> None:
        """Count outcomes and keep the first rejections' messages."""
        self.table(table).add(outcomes)
        for outcome in outcomes:
            if outcome.status == "rejected" and len(self.errors) < MAX_REPORTED_ERRORS:
                detail = "; ".join(f"{e.field or '-'}: {e.message}" for e in outcome.errors)
                self.errors.append(f"{table} {outcome.id}: {detail}")

    @property
    def rejected(self) -> int:
        """Rows rejected across all tables."""
        return sum(t.rejected for t in self.tables.values())


@dataclass
class ImportProgress:
    """Yielded after each chunk: which table, how far, and the running report."""

    table: str
    done: int
    total: int
    report: ImportReport


# --- reading helpers -----------------------------------------------------------------------


def _connect(path: str | Path) -> sqlite3.Connection:
    file = Path(path)
    if not file.is_file():
        raise PyritSqliteError(f"{file} does not exist or is not a file.")
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as exc:
        raise PyritSqliteError(f"{file} is not a SQLite database: {exc}") from exc
    return conn


def _tables(conn: sqlite3.Connection) -> dict[str, set[str]]:
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {n: {r[1] for r in conn.execute(f'PRAGMA table_info("{n}")')} for n in names}


def _json(value: Any, default: Any = None) -> Any:
    """A JSON column: SQLAlchemy writes Python None as the text 'null'."""
    if value is None:
        return default
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return value  # not JSON: let validation name the field
    return default if parsed is None else parsed


def _timestamp(value: Any, line: str) -> Any:
    """PyRIT stores naive UTC text; give it the zone and the line's JSON spelling."""
    if not isinstance(value, str):
        return value
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        parsed = parsed.astimezone(UTC)
    except OverflowError:
        return value  # out of range in UTC: the parser names it, as for a pushed item
    if line == "1.x":
        return parsed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return parsed.isoformat()


def _count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


def _chunks(
    conn: sqlite3.Connection, table: str, chunk_size: int, order: str = "rowid"
) -> Iterator[list[sqlite3.Row]]:
    cursor = conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}')
    while rows := cursor.fetchmany(chunk_size):
        yield rows


def _by_ids(conn: sqlite3.Connection, table: str, ids: Sequence[str]) -> dict[str, sqlite3.Row]:
    if not ids:
        return {}
    out: dict[str, sqlite3.Row] = {}
    for start in range(0, len(ids), 500):
        part = list(ids[start : start + 500])
        marks = ",".join("?" * len(part))
        for row in conn.execute(f'SELECT * FROM "{table}" WHERE id IN ({marks})', part):
            out[str(row["id"])] = row
    return out


# --- row -> PyRIT dict ---------------------------------------------------------------------


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
        "prompt_metadata": _json(row["prompt_metadata"], {}),
        "converter_identifiers": _json(row["converter_identifiers"], []),
    }
    # A NULL converted value is mirrored from the original by PyRIT's constructor.
    if row["converted_value"] is not None:
        item["converted_value"] = row["converted_value"]
    if line == "0.13":
        item["labels"] = _json(row["labels"], {})
        item["targeted_harm_categories"] = _json(row["targeted_harm_categories"]) or None
        item["prompt_target_identifier"] = _json(row["prompt_target_identifier"])
        item["attack_identifier"] = _json(row["attack_identifier"])
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
        "score_category": _json(row["score_category"]),
        "score_rationale": row["score_rationale"],
        "score_metadata": _json(row["score_metadata"], {}),
        "scorer_class_identifier": _json(row["scorer_class_identifier"]),
        "timestamp": _timestamp(row["timestamp"], "0.13"),
        "objective": row["objective"],
    }
    if line == "1.x":
        item["status"] = row["status"] or "complete"
        item["scorable"] = _json(row["scorable"])
        item["scorable_content_id"] = row["scorable_content_id"]
        item["prompt_request_response_id"] = row["prompt_request_response_id"]
        content = (contents or {}).get(str(row["scorable_content_id"]))
        if content is not None:
            item["scorable_content"] = scorable_content_from_row(content)
    else:
        item["message_piece_id"] = row["prompt_request_response_id"]
        item["task"] = row["task"]
    return _with_version(item, row)


def _related(row: sqlite3.Row) -> list[dict[str, Any]]:
    # PyRIT reloads only these two kinds, with these fixed descriptions.
    related = [
        {
            "conversation_id": cid,
            "conversation_type": "adversarial",
            "description": "adversarial chat conversation",
        }
        for cid in _json(row["adversarial_chat_conversation_ids"], [])
    ]
    related += [
        {
            "conversation_id": cid,
            "conversation_type": "pruned",
            "description": "pruned conversation",
        }
        for cid in _json(row["pruned_conversation_ids"], [])
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
        "atomic_attack_identifier": _json(row["atomic_attack_identifier"]),
        "last_response": piece_from_row(last_response, line) if last_response else None,
        "last_score": score_from_row(last_score, line) if last_score else None,
        "executed_turns": row["executed_turns"],
        "execution_time_ms": row["execution_time_ms"],
        "outcome": row["outcome"],
        "outcome_reason": row["outcome_reason"],
        "related_conversations": _related(row),
        "metadata": _json(row["attack_metadata"], {}),
    }
    if line == "1.x":
        item.update(
            {
                "timestamp": _timestamp(row["timestamp"], line),
                "labels": _json(row["labels"], {}),
                "targeted_harm_categories": _json(row["targeted_harm_categories"], []),
                "error_message": row["error_message"],
                "error_type": row["error_type"],
                "error_traceback": row["error_traceback"],
                "retry_events": _json(row["retry_events_json"], []),
                "total_retries": row["total_retries"] or 0,
                "attribution_parent_id": row["attribution_parent_id"],
                "attribution_data": _json(row["attribution_data"]),
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
            "scenario_init_data": _json(row["scenario_init_data"]),
            "objective_target_identifier": _json(row["objective_target_identifier"]),
            "objective_scorer_identifier": _json(row["objective_scorer_identifier"]),
            "scenario_run_state": row["scenario_run_state"],
            "attack_results_json": row["attack_results_json"],
            "labels": _json(row["labels"], {}),
            "number_tries": row["number_tries"],
            "completion_time": _timestamp(row["completion_time"], line),
            "timestamp": _timestamp(row["timestamp"], line),
        }
    return {
        "id": row["id"],
        "scenario_identifier": _json(row["scenario_identifier"]),
        "scenario_description": row["scenario_description"] or "",
        "attack_results": dict(attack_results),
        "scenario_run_state": row["scenario_run_state"],
        "labels": _json(row["labels"], {}),
        "creation_time": _timestamp(row["timestamp"], line),
        "completion_time": _timestamp(row["completion_time"], line),
        "number_tries": row["number_tries"],
        "display_group_map": _json(row["display_group_map_json"], {}),
        "error_message": row["error_message"],
        "error_type": row["error_type"],
        # Not a column: PyRIT's own reload gives [] too.
        "error_attack_result_ids": [],
        "metadata": _json(row["scenario_metadata"], {}),
        "scenario_name": row["scenario_name"],
        "scenario_version": row["scenario_version"],
        "pyrit_version": row["pyrit_version"],
        "objective_target_identifier": _json(row["objective_target_identifier"]),
        "objective_scorer_identifier": _json(row["objective_scorer_identifier"]),
    }


def conversation_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A 1.x Conversations row as Conversation.model_dump gives it."""
    item = {
        "conversation_id": row["conversation_id"],
        "target_identifier": _json(row["target_identifier"]),
        "retries": _json(row["retries"], []),
    }
    return _with_version(item, row)


def seed_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """A SeedPromptEntries row as the seed dict seeds.services.store_seeds accepts."""
    seed_type = row["seed_type"] or "prompt"
    metadata = _json(row["prompt_metadata"], {})
    item: dict[str, Any] = {
        "id": row["id"],
        "value": row["value"],
        "value_sha256": row["value_sha256"],
        "data_type": row["data_type"],
        "name": row["name"],
        "dataset_name": row["dataset_name"],
        "harm_categories": _json(row["harm_categories"]),
        "description": row["description"],
        "authors": _json(row["authors"]),
        "groups": _json(row["groups"]),
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
            item["response_json_schema"] = _json(schema)
        item["role"] = row["role"]
        item["sequence"] = row["sequence"]
        item["parameters"] = _json(row["parameters"])
    item["metadata"] = metadata
    return item


# --- the import ----------------------------------------------------------------------------


def _detect_line(tables: Mapping[str, set[str]]) -> str:
    pieces = tables.get("PromptMemoryEntries")
    if pieces is None:
        raise PyritSqliteError("No PromptMemoryEntries table: this is not a PyRIT memory file.")
    return "0.13" if "labels" in pieces else "1.x"


def _store_identifier_rows(rows: Sequence[sqlite3.Row]) -> list[ItemOutcome]:
    """Store identifier-table rows from their identifier_json (idempotent by hash)."""
    outcomes: list[ItemOutcome] = []
    uses: list[ParsedIdentifier] = []
    hashes = [str(r["hash"]) for r in rows]
    present = set(
        ComponentIdentifier.objects.filter(hash__in=hashes).values_list("hash", flat=True)
    )
    for i, row in enumerate(rows):
        value = _json(row["identifier_json"])
        guard = guard_error(value, "identifier_json")
        errors: list[FieldError] = [guard] if guard else []
        use = (
            None
            if guard
            else parse_identifier(value, "identifier_json", legacy=False, errors=errors)
        )
        if use is not None and use.hash != row["hash"]:
            errors.append(
                FieldError("hash", f"identifier_json hashes to {use.hash}, not {row['hash']}.")
            )
        if errors or use is None:
            outcomes.append(ItemOutcome("identifiers", i, row["hash"], "rejected", errors))
            continue
        uses.append(use)
        status = "unchanged" if use.hash in present else "stored"
        outcomes.append(ItemOutcome("identifiers", i, row["hash"], status))  # type: ignore[arg-type]
    with transaction.atomic():
        store_identifier_uses(uses)
    return outcomes


def _check_edges(
    conn: sqlite3.Connection, table: str, parent: str, child: str, report: ImportReport
) -> None:
    rows = conn.execute(f'SELECT "{parent}", "{child}" FROM "{table}"').fetchall()
    counter = report.table(table)
    counter.read = len(rows)
    hashes = {h for row in rows for h in row}
    present = set(
        ComponentIdentifier.objects.filter(hash__in=list(hashes)).values_list("hash", flat=True)
    )
    found = sum(1 for p, c in rows if p in present and c in present)
    counter.unchanged = found
    counter.rejected = len(rows) - found
    counter.note = "projection of identifier children; verified against stored identifiers"


def _check_piece_converters(conn: sqlite3.Connection, report: ImportReport) -> None:
    rows = conn.execute(
        "SELECT prompt_memory_entry_id, position, converter_identifier_hash "
        'FROM "PromptConverterIdentifiers"'
    ).fetchall()
    counter = report.table("PromptConverterIdentifiers")
    counter.read = len(rows)
    stored = {
        (str(piece_id), position, identifier)
        for piece_id, position, identifier in PieceConverter.objects.filter(
            piece_id__in=[r[0] for r in rows]
        ).values_list("piece_id", "position", "identifier_id")
    }
    found = sum(1 for row in rows if tuple(row) in stored)
    counter.unchanged = found
    counter.rejected = len(rows) - found
    counter.note = "projection of converter_identifiers; verified against stored piece converters"


def _scenario_attack_results(
    conn: sqlite3.Connection, line: str, scenario_ids: Sequence[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each scenario's attack results by atomic attack name (attribution_data's
    parent_collection), as PyRIT's get_scenario_results re-attaches them."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if line != "1.x" or not scenario_ids:
        return out
    rows: list[sqlite3.Row] = []
    for start in range(0, len(scenario_ids), 500):  # SQLite's bound-parameter limit
        part = list(scenario_ids[start : start + 500])
        marks = ",".join("?" * len(part))
        rows += conn.execute(
            f'SELECT * FROM "AttackResultEntries" WHERE attribution_parent_id IN ({marks}) '
            "ORDER BY timestamp, id",
            part,
        ).fetchall()
    pieces = _by_ids(
        conn, "PromptMemoryEntries", [r["last_response_id"] for r in rows if r["last_response_id"]]
    )
    scores = _by_ids(conn, "ScoreEntries", [r["last_score_id"] for r in rows if r["last_score_id"]])
    for row in rows:
        data = _json(row["attribution_data"], {})
        name = data.get("parent_collection") if isinstance(data, dict) else None
        if not isinstance(name, str):
            continue  # PyRIT skips results without a collection name too
        out.setdefault(str(row["attribution_parent_id"]), {}).setdefault(name, []).append(
            attack_result_from_row(row, line, pieces, scores)
        )
    return out


def _store_seed_rows(rows: Sequence[sqlite3.Row]) -> list[ItemOutcome]:
    return store_items("seeds", [seed_from_row(r) for r in rows])


def iter_import(
    path: str | Path, *, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> Iterator[ImportProgress]:
    """Import the file chunk by chunk, yielding progress after each chunk (for progress bars)."""
    conn = _connect(path)
    try:
        tables = _tables(conn)
        line = _detect_line(tables)
        report = ImportReport(path=str(path), line=line)
        yield from _import_tables(conn, tables, line, report, chunk_size)
    finally:
        conn.close()


def _run_table(
    conn: sqlite3.Connection,
    table: str,
    report: ImportReport,
    chunk_size: int,
    store: Callable[[list[sqlite3.Row]], list[ItemOutcome]],
    order: str = "rowid",
) -> Iterator[ImportProgress]:
    total = _count(conn, table)
    counter = report.table(table)
    counter.read = total
    done = 0
    for rows in _chunks(conn, table, chunk_size, order):
        report.record(table, store(rows))
        done += len(rows)
        yield ImportProgress(table, done, total, report)
    if total == 0:
        yield ImportProgress(table, 0, 0, report)


def _import_tables(
    conn: sqlite3.Connection,
    tables: Mapping[str, set[str]],
    line: str,
    report: ImportReport,
    chunk_size: int,
) -> Iterator[ImportProgress]:
    if "Conversations" in tables:
        yield from _run_table(
            conn,
            "Conversations",
            report,
            chunk_size,
            lambda rows: store_items("conversations", [conversation_from_row(r) for r in rows]),
        )
    # Ordered so a message's pieces usually share a chunk (they may also span two).
    yield from _run_table(
        conn,
        "PromptMemoryEntries",
        report,
        chunk_size,
        lambda rows: store_items("message_pieces", [piece_from_row(r, line) for r in rows]),
        order="conversation_id, sequence, rowid",
    )

    def loose(rows: list[sqlite3.Row]) -> dict[str, sqlite3.Row]:
        if "ScorableContentEntries" not in tables:
            return {}
        ids = [str(r["scorable_content_id"]) for r in rows if r["scorable_content_id"]]
        return _by_ids(conn, "ScorableContentEntries", ids)

    yield from _run_table(
        conn,
        "ScoreEntries",
        report,
        chunk_size,
        lambda rows: store_items("scores", [score_from_row(r, line, loose(rows)) for r in rows]),
    )

    if "ScorableContentEntries" in tables:
        counter = report.table("ScorableContentEntries")
        counter.read = _count(conn, "ScorableContentEntries")
        counter.note = "stored with the scores that name them (content-addressed)"

    def results(rows: list[sqlite3.Row]) -> list[ItemOutcome]:
        pieces = _by_ids(
            conn,
            "PromptMemoryEntries",
            [r["last_response_id"] for r in rows if r["last_response_id"]],
        )
        scores = _by_ids(
            conn, "ScoreEntries", [r["last_score_id"] for r in rows if r["last_score_id"]]
        )
        return store_items(
            "attack_results", [attack_result_from_row(r, line, pieces, scores) for r in rows]
        )

    yield from _run_table(conn, "AttackResultEntries", report, chunk_size, results)
    if "ScenarioResultEntries" in tables:

        def scenarios(rows: list[sqlite3.Row]) -> list[ItemOutcome]:
            attached = _scenario_attack_results(conn, line, [str(r["id"]) for r in rows])
            return store_items(
                "scenario_results",
                [scenario_result_from_row(r, line, attached.get(str(r["id"]), {})) for r in rows],
            )

        yield from _run_table(conn, "ScenarioResultEntries", report, chunk_size, scenarios)
    if line == "0.13":
        report.table("AttackResultEntries").note = (
            "deprecated attack_identifier column not kept: it is the strategy inside "
            "atomic_attack_identifier"
        )
    if "SeedPromptEntries" in tables:
        yield from _run_table(conn, "SeedPromptEntries", report, chunk_size, _store_seed_rows)
    for table in IDENTIFIER_TABLES:
        if table in tables:
            yield from _run_table(conn, table, report, chunk_size, _store_identifier_rows)
            report.table(table).note = "projection of the JSON identifier copies"
    if "PromptConverterIdentifiers" in tables:
        _check_piece_converters(conn, report)
    for table, parent, child in EDGE_TABLES:
        if table in tables:
            _check_edges(conn, table, parent, child, report)
    for table, reason in UNMAPPED_TABLES.items():
        if table in tables:
            counter = report.table(table)
            counter.read = counter.skipped = _count(conn, table)
            counter.note = f"not imported: {reason}"
    known = {
        "Conversations",
        "PromptMemoryEntries",
        "ScoreEntries",
        "AttackResultEntries",
        "SeedPromptEntries",
        "ScenarioResultEntries",
        "ScorableContentEntries",
        "PromptConverterIdentifiers",
        *IDENTIFIER_TABLES,
        *(t for t, _, _ in EDGE_TABLES),
        *UNMAPPED_TABLES,
        *METADATA_TABLES,
    }
    for table in sorted(set(tables) - known):
        counter = report.table(table)
        counter.read = counter.skipped = _count(conn, table)
        counter.note = "unknown table: not imported"
    yield ImportProgress("done", 0, 0, report)


def import_pyrit_memory(
    path: str | Path,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Callable[[ImportProgress], None] | None = None,
) -> ImportReport:
    """Import the whole file; ``progress`` is called after each chunk. Returns the report."""
    report: ImportReport | None = None
    for step in iter_import(path, chunk_size=chunk_size):
        report = step.report
        if progress is not None:
            progress(step)
    assert report is not None  # iter_import always yields at least the final step
    return report
