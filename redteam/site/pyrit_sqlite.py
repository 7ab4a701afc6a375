"""Import a PyRIT SQLite memory file (1.x or 0.13 schema) through the ingestion path.

The rows are read by ``redteam.client.PyritMemoryFile`` (standard library, read-only), the
same reader ``python -m redteam.client push PATH`` uses, which turns them into the dict shapes
PyRIT itself serializes (1.x ``model_dump`` for a 1.x file, 0.13 ``to_dict`` for a legacy one).
Each chunk goes through ``redteam.site.ingest.ingest_batch``, as an API request does, and the
tables go in its dependency order (``INGEST_KINDS``), so pushing a file and importing it store
the same rows under the same rules, and a re-run stores nothing new.

How each table maps (PYRIT-MODEL.md section 8): the reader's ``MEMORY_TABLES`` (Conversations,
PromptMemoryEntries, ScoreEntries with the ``ScorableContentEntries`` row a loose-content score
names (``scorable_content``), AttackResultEntries with its last response and score, and
pruned/adversarial ids turned into related conversations with PyRIT's reload descriptions,
ScenarioResultEntries (1.x as ``model_dump`` with its attack results re-attached by
``attribution_data["parent_collection"]``, as ``get_scenario_results`` does; 0.13 as the table
row, keeping ``scenario_init_data`` and ``attack_results_json``), SeedPromptEntries). Besides
those:

* The content-addressed identifier tables (1.x) are projections of the JSON copies: their
  ``identifier_json`` rows are stored as identifiers too, and the edge tables
  (``PromptConverterIdentifiers``, ``*IdentifierChildren``, ...) are checked against what
  arrived.
* Media: the files media pieces and seeds name are read (from ``media_from`` when given, else
  the paths themselves), stored content-addressed and linked as an upload links them; the
  pieces PyRIT left without a sha256 are linked by id. Unreadable files are reported.
* Not mapped, reported with their row counts: tables no reader is registered for (e.g.
  ``EmbeddingData``), and 0.13's deprecated ``AttackResultEntries.attack_identifier`` column
  (the strategy inside ``atomic_attack_identifier``).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from memory.bulk import store_identifier_uses
from memory.models import ComponentIdentifier, PieceConverter
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.client import (
    MEDIA_PATH_DATA_TYPES,
    MemoryTable,
    PyritMemoryFile,
    PyritMemoryFileError,
    json_column,
    resolve_media_path,
)
from redteam.common.access import Writer
from redteam.common.models import MediaBlob
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.site.ingest import INGEST_KINDS, guard_error, ingest_batch

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
# Read with the rows of another table, not on their own.
CARRIED_TABLES = {
    "ScorableContentEntries": "stored with the scores that name them (content-addressed)",
}
MEDIA_SIDES = (
    ("original", "original_value", "original_value_data_type", "original_value_sha256"),
    ("converted", "converted_value", "converted_value_data_type", "converted_value_sha256"),
)
METADATA_TABLES = {"pyrit_memory_alembic_version", "alembic_version", "sqlite_sequence"}


# The reader's error is the importer's: one definition of "not a PyRIT memory file".
PyritSqliteError = PyritMemoryFileError


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
    # Media paths no file could be read for: their pieces are stored, without bytes.
    media_unreadable: list[str] = field(default_factory=list)

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


# --- the import ----------------------------------------------------------------------------


def _store_identifier_rows(rows: Sequence[sqlite3.Row]) -> list[ItemOutcome]:
    """Store identifier-table rows from their identifier_json (idempotent by hash)."""
    outcomes: list[ItemOutcome] = []
    uses: list[ParsedIdentifier] = []
    hashes = [str(r["hash"]) for r in rows]
    present = set(
        ComponentIdentifier.objects.filter(hash__in=hashes).values_list("hash", flat=True)
    )
    for i, row in enumerate(rows):
        value = json_column(row["identifier_json"])
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
        store_identifier_uses((use, None) for use in uses)
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


def _link_file_media(
    items: Sequence[Mapping[str, Any]],
    kind: str,
    media_from: str | Path | None,
    report: ImportReport,
    seen: dict[str, str | None],
) -> None:
    """Store the bytes of the files these pieces/seeds name and link them (store_media, as an
    upload does); pieces PyRIT left without a sha256 are named by id."""
    from memory.services import store_media
    from redteam.common.media import MediaTooLarge

    counter = report.table("media")
    files: dict[str, dict[str, list[str]]] = {}  # path -> side -> ids of pieces without sha256
    for item in items:
        sides = MEDIA_SIDES if kind == "message_pieces" else (("value", "value", "data_type", ""),)
        for side, value_key, type_key, sha_key in sides:
            value = item.get(value_key)
            if item.get(type_key) not in MEDIA_PATH_DATA_TYPES or not isinstance(value, str):
                continue
            if value not in seen:
                seen[value] = resolve_media_path(value, media_from)
                counter.read += 1
                if seen[value] is None:
                    counter.skipped += 1
                    report.media_unreadable.append(value)
            path = seen[value]
            if path is None:
                continue
            ids = files.setdefault(path, {})
            if kind == "message_pieces" and not item.get(sha_key):
                ids.setdefault(side, []).append(str(item.get("id")))
    for path, ids in files.items():
        try:
            data = Path(path).read_bytes()
            existed = MediaBlob.objects.filter(sha256=hashlib.sha256(data).hexdigest()).exists()
            store_media(
                data,
                filename=Path(path).name,
                original_piece_ids=ids.get("original", ()),
                converted_piece_ids=ids.get("converted", ()),
            )
        except (OSError, MediaTooLarge) as exc:
            counter.rejected += 1
            if len(report.errors) < MAX_REPORTED_ERRORS:
                report.errors.append(f"media {path}: {exc}")
            continue
        if existed:
            counter.unchanged += 1
        else:
            counter.stored += 1


def iter_import(
    path: str | Path,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    media_from: str | Path | None = None,
    media: bool = True,
    operation: str | None = None,
) -> Iterator[ImportProgress]:
    """Import the file chunk by chunk, yielding progress after each chunk (for progress bars).

    Rows go to the operations their labels name (created when missing: the command is
    trusted); rows naming none to `operation` (default `unassigned`).
    """
    writer = Writer.trusted(default=operation)
    with PyritMemoryFile(path) as memory:
        report = ImportReport(path=str(path), line=memory.line)
        yield from _import_tables(memory, report, chunk_size, media, media_from, writer)


def _run_kind(
    memory: PyritMemoryFile,
    spec: MemoryTable,
    report: ImportReport,
    chunk_size: int,
    media: bool,
    media_from: str | Path | None,
    writer: Writer,
) -> Iterator[ImportProgress]:
    """One registered table through ingest_batch, chunk by chunk, then its media."""
    total = memory.count(spec.table)
    report.table(spec.table).read = total
    done = 0
    seen: dict[str, str | None] = {}
    for items in memory.items(spec, chunk_size=chunk_size):
        # The API's path: one ingest batch (one transaction) per chunk.
        outcomes = ingest_batch({spec.kind: items}, writer=writer).outcomes
        report.record(spec.table, outcomes)
        if media and spec.kind in ("message_pieces", "seeds"):
            stored = [i for i, o in zip(items, outcomes, strict=True) if o.ok]
            _link_file_media(stored, spec.kind, media_from, report, seen)
        done += len(items)
        yield ImportProgress(spec.table, done, total, report)
    if total == 0:
        yield ImportProgress(spec.table, 0, 0, report)


def _run_identifiers(
    memory: PyritMemoryFile, table: str, report: ImportReport, chunk_size: int
) -> Iterator[ImportProgress]:
    """One content-addressed identifier table, stored from its identifier_json."""
    total = memory.count(table)
    report.table(table).read = total
    done = 0
    for rows in memory.rows(table, chunk_size=chunk_size):
        report.record(table, _store_identifier_rows(rows))
        done += len(rows)
        yield ImportProgress(table, done, total, report)
    report.table(table).note = "projection of the JSON identifier copies"
    if total == 0:
        yield ImportProgress(table, 0, 0, report)


def _import_tables(
    memory: PyritMemoryFile,
    report: ImportReport,
    chunk_size: int,
    media: bool,
    media_from: str | Path | None,
    writer: Writer,
) -> Iterator[ImportProgress]:
    """Every table: registered kinds, identifiers, edge checks, then what is not mapped."""
    tables = memory.tables
    # The server's dependency order (the reader's is the client's copy of it).
    specs = sorted(memory.specs(), key=lambda spec: INGEST_KINDS.index(spec.kind))
    for spec in specs:
        yield from _run_kind(memory, spec, report, chunk_size, media, media_from, writer)
    if memory.line == "0.13" and "AttackResultEntries" in tables:
        report.table("AttackResultEntries").note = (
            "deprecated attack_identifier column not kept: it is the strategy inside "
            "atomic_attack_identifier"
        )
    for table in IDENTIFIER_TABLES:
        if table in tables:
            yield from _run_identifiers(memory, table, report, chunk_size)
    if "PromptConverterIdentifiers" in tables:
        _check_piece_converters(memory.conn, report)
    for table, parent, child in EDGE_TABLES:
        if table in tables:
            _check_edges(memory.conn, table, parent, child, report)
    mapped = {spec.table for spec in specs}
    for table, note in CARRIED_TABLES.items():
        if table in tables:
            counter = report.table(table)
            counter.read = memory.count(table)
            counter.note = note
    for table, reason in UNMAPPED_TABLES.items():
        if table in tables and table not in mapped:
            counter = report.table(table)
            counter.read = counter.skipped = memory.count(table)
            counter.note = f"not imported: {reason}"
    known = {
        *mapped,
        "PromptConverterIdentifiers",
        *IDENTIFIER_TABLES,
        *(t for t, _, _ in EDGE_TABLES),
        *UNMAPPED_TABLES,
        *CARRIED_TABLES,
        *METADATA_TABLES,
    }
    for table in sorted(set(tables) - known):
        counter = report.table(table)
        counter.read = counter.skipped = memory.count(table)
        counter.note = "unknown table: not imported"
    yield ImportProgress("done", 0, 0, report)


def import_pyrit_memory(
    path: str | Path,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    progress: Callable[[ImportProgress], None] | None = None,
    media_from: str | Path | None = None,
    media: bool = True,
    operation: str | None = None,
) -> ImportReport:
    """Import the whole file; ``progress`` is called after each chunk. Returns the report.

    Media bytes are read from ``media_from`` (found by the tail of each path) or, without it,
    from the paths in the file where readable; ``media=False`` reads none.
    """
    report: ImportReport | None = None
    steps = iter_import(
        path, chunk_size=chunk_size, media_from=media_from, media=media, operation=operation
    )
    for step in steps:
        report = step.report
        if progress is not None:
            progress(step)
    assert report is not None  # iter_import always yields at least the final step
    return report
