"""Every row PyRIT 1.1.0 and 0.13.0 produced goes in through the services and comes back out.

Rows are loaded from ../shared/fixtures (pieces, conversations, scores, score_entries,
attack_results, 0.13's exported_conversations.json, and both SQLite memory files), exported
again in the shape they arrived in, and compared field by field. The only differences allowed
are listed in NORMALIZATIONS, each with its reason; everything else must be identical, down to
PyRIT's top-level key order, identifier dumps (verbatim text) and 1 vs 1.0.

How ``score_entries.jsonl`` maps: it is PyRIT 1.1's ``ScoreEntry.to_dict()`` view of the same
scores as ``scores.jsonl`` (``prompt_request_response_id`` for ``message_piece_id``, plus
``scorable_content_id``, ``+00:00`` timestamps). It is stored on the same Score rows, so after
``scores.jsonl`` it is a replay ("unchanged"), and ``export_score(score, "entry")`` gives it back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from memory import services
from memory.export import (
    export_attack_results,
    export_conversation,
    export_pieces_with_scores,
    export_score,
)
from memory.models import AttackResult, Conversation, MessagePiece, Score
from memory.querysets import attack_results_for_export, conversations_for_export, pieces_for_export
from memory.store_scores import store_scores
from redteam.common.access import Scope
from redteam.core.outcomes import ItemOutcome
from redteam.site.pyrit_sqlite import import_pyrit_memory

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

pytestmark = pytest.mark.django_db

# Every difference the comparison tolerates, and why. Nothing else may differ.
NORMALIZATIONS: dict[str, str] = {
    "nested_json_key_order": (
        "Objects nested inside a field (prompt_metadata, labels, score_metadata, metadata, "
        "retry_events, retries, attribution_data, scorable) are compared as JSON with sorted "
        "keys: PostgreSQL's jsonb stores object keys in its own order. Values, types and "
        "1 vs 1.0 are still compared exactly; top-level key order is compared exactly; "
        "identifier dumps are compared as verbatim text (they are stored as text)."
    ),
}

# Fields holding identifier dumps: exported from IdentifierDump.dump_json, so verbatim.
IDENTIFIER_FIELDS = frozenset(
    {
        "converter_identifiers",
        "prompt_target_identifier",
        "attack_identifier",
        "scorer_identifier",
        "scorer_class_identifier",
        "atomic_attack_identifier",
        "target_identifier",
    }
)
# Fields holding nested PyRIT models, compared recursively with the same rules.
NESTED_MODEL_FIELDS = frozenset({"last_response", "last_score"})

Store = Callable[[Sequence[Mapping[str, Any]]], list[ItemOutcome]]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def canonical(value: Any) -> str:
    """NORMALIZATIONS["nested_json_key_order"]: sorted keys, everything else exact."""
    return json.dumps(value, sort_keys=True)


def assert_pyrit_equal(got: Mapping[str, Any], want: Mapping[str, Any], where: str) -> None:
    """Field-by-field equality, allowing only what NORMALIZATIONS lists."""
    assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
    for key, expected in want.items():
        actual = got[key]
        path = f"{where}.{key}"
        if key in NESTED_MODEL_FIELDS and expected is not None:
            assert actual is not None, path
            assert_pyrit_equal(actual, expected, path)
        elif key == "scores":
            assert len(actual) == len(expected), path
            for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
                assert_pyrit_equal(a, e, f"{path}[{i}]")
        elif key in IDENTIFIER_FIELDS:
            assert json.dumps(actual) == json.dumps(expected), path
        else:
            assert canonical(actual) == canonical(expected), f"{path}: {actual!r} != {expected!r}"


def store_all(store: Store, items: list[dict[str, Any]]) -> list[str]:
    outcomes = store(items)
    rejected = [(o.id, o.errors) for o in outcomes if o.status == "rejected"]
    assert not rejected, rejected
    return [o.status for o in outcomes]


def load_1_1(root: Path) -> dict[str, list[str]]:
    d = root / "pyrit-1.1"
    return {
        "conversations": store_all(
            services.store_conversations, read_jsonl(d / "conversations.jsonl")
        ),
        "pieces": store_all(services.store_message_pieces, read_jsonl(d / "pieces.jsonl")),
        "scores": store_all(store_scores, read_jsonl(d / "scores.jsonl")),
        "score_entries": store_all(store_scores, read_jsonl(d / "score_entries.jsonl")),
        "attack_results": store_all(
            services.store_attack_results, read_jsonl(d / "attack_results.jsonl")
        ),
    }


def load_0_13(root: Path) -> dict[str, list[str]]:
    d = root / "pyrit-0.13"
    return {
        "pieces": store_all(services.store_message_pieces, read_jsonl(d / "pieces.jsonl")),
        "scores": store_all(store_scores, read_jsonl(d / "scores.jsonl")),
        "attack_results": store_all(
            services.store_attack_results, read_jsonl(d / "attack_results.jsonl")
        ),
        "exported_conversations": store_all(
            services.store_message_pieces,
            json.loads((d / "exported_conversations.json").read_text()),
        ),
    }


def check_1_1_exports(root: Path) -> dict[str, int]:
    """Compare every 1.1 fixture row with its export; returns rows compared per file."""
    d = root / "pyrit-1.1"
    compared: dict[str, int] = {}
    pieces = {
        p["id"]: p
        for p in export_pieces_with_scores(pieces_for_export(EVERYTHING), "1.x", scope=EVERYTHING)
    }
    rows = read_jsonl(d / "pieces.jsonl")
    for row in rows:
        assert_pyrit_equal(pieces[row["id"]], row, f"piece {row['id']}")
    compared["pieces.jsonl"] = len(rows)
    conversations = {c.pk: export_conversation(c) for c in conversations_for_export(EVERYTHING)}
    rows = read_jsonl(d / "conversations.jsonl")
    for row in rows:
        assert_pyrit_equal(conversations[row["conversation_id"]], row, "conversation")
    compared["conversations.jsonl"] = len(rows)
    scores = {str(s.pk): s for s in Score.objects.select_related("scorer_dump")}
    score_files: tuple[tuple[str, Literal["1.x", "entry"]], ...] = (
        ("scores.jsonl", "1.x"),
        ("score_entries.jsonl", "entry"),
    )
    for name, shape in score_files:
        rows = read_jsonl(d / name)
        for row in rows:
            assert_pyrit_equal(export_score(scores[row["id"]], shape), row, f"{name} {row['id']}")
        compared[name] = len(rows)
    results = {
        r["attack_result_id"]: r
        for r in export_attack_results(
            attack_results_for_export(EVERYTHING).filter(source_shape="1.x"), scope=EVERYTHING
        )
    }
    rows = read_jsonl(d / "attack_results.jsonl")
    for row in rows:
        assert_pyrit_equal(results[row["attack_result_id"]], row, "attack result")
    compared["attack_results.jsonl"] = len(rows)
    return compared


def check_0_13_exports(root: Path) -> dict[str, int]:
    """Compare every 0.13 fixture row with its 0.13-shaped export."""
    d = root / "pyrit-0.13"
    compared: dict[str, int] = {}
    legacy = pieces_for_export(EVERYTHING).filter(source_shape="0.13")
    pieces = {p["id"]: p for p in export_pieces_with_scores(legacy, "0.13", scope=EVERYTHING)}
    rows = read_jsonl(d / "pieces.jsonl")
    for row in rows:
        assert_pyrit_equal(pieces[row["id"]], row, f"0.13 piece {row['id']}")
    compared["pieces.jsonl"] = len(rows)
    # export_conversations wrote the pieces in PyRIT's memory order: compare as a list.
    exported = json.loads((d / "exported_conversations.json").read_text())
    ordered = export_pieces_with_scores(legacy, "0.13", scope=EVERYTHING)
    assert [p["id"] for p in ordered] == [p["id"] for p in exported]
    for got, want in zip(ordered, exported, strict=True):
        assert_pyrit_equal(got, want, "exported_conversations")
    compared["exported_conversations.json"] = len(exported)
    scores = {str(s.pk): s for s in Score.objects.select_related("scorer_dump")}
    rows = read_jsonl(d / "scores.jsonl")
    for row in rows:
        assert_pyrit_equal(export_score(scores[row["id"]], "0.13"), row, "0.13 score")
    compared["scores.jsonl"] = len(rows)
    results = export_attack_results(
        attack_results_for_export(EVERYTHING).filter(source_shape="0.13"), "0.13", scope=EVERYTHING
    )
    rows = read_jsonl(d / "attack_results.jsonl")
    by_id = {r["attack_result_id"]: r for r in results}
    for row in rows:
        assert_pyrit_equal(by_id[row["attack_result_id"]], row, "0.13 attack result")
    compared["attack_results.jsonl"] = len(rows)
    return compared


# --- JSONL / JSON fixtures -----------------------------------------------------------------


def test_pyrit_1_1_rows_round_trip(fixtures_dir: Path) -> None:
    statuses = load_1_1(fixtures_dir)
    assert statuses["score_entries"] == ["unchanged"] * 11  # the same scores, row view
    compared = check_1_1_exports(fixtures_dir)
    assert compared == {
        "pieces.jsonl": 25,
        "conversations.jsonl": 7,
        "scores.jsonl": 11,
        "score_entries.jsonl": 11,
        "attack_results.jsonl": 6,
    }


def test_pyrit_0_13_rows_round_trip(fixtures_dir: Path) -> None:
    statuses = load_0_13(fixtures_dir)
    # The pieces' nested scores already stored scores.jsonl; the export is the same pieces.
    assert statuses["scores"] == ["unchanged", "unchanged"]
    assert set(statuses["exported_conversations"]) == {"unchanged"}
    compared = check_0_13_exports(fixtures_dir)
    assert compared == {
        "pieces.jsonl": 5,
        "exported_conversations.json": 5,
        "scores.jsonl": 2,
        "attack_results.jsonl": 1,
    }


def test_replaying_every_fixture_stores_nothing_new(fixtures_dir: Path) -> None:
    load_1_1(fixtures_dir)
    load_0_13(fixtures_dir)
    counts = (
        MessagePiece.objects.count(),
        Score.objects.count(),
        AttackResult.objects.count(),
        Conversation.objects.count(),
    )
    for statuses in (load_1_1(fixtures_dir), load_0_13(fixtures_dir)):
        for name, values in statuses.items():
            assert set(values) == {"unchanged"}, name
    assert counts == (
        MessagePiece.objects.count(),
        Score.objects.count(),
        AttackResult.objects.count(),
        Conversation.objects.count(),
    )
    assert counts == (30, 13, 7, 8)


def test_conversation_summaries_from_the_fixtures(fixtures_dir: Path) -> None:
    load_1_1(fixtures_dir)
    load_0_13(fixtures_dir)
    image = Conversation.objects.get(pk="1f62f162-ad68-4382-ba17-e394db9c67e2")
    assert (image.message_count, image.piece_count) == (2, 3)
    assert image.data_types == ["image_path", "text"]
    assert image.labels["modality"] == "image"
    blocked = Conversation.objects.get(pk="153a7459-7b7d-4700-8366-6bf336425696")
    assert blocked.has_error
    assert blocked.outcome == "failure"
    red_teaming = Conversation.objects.get(pk="8a03ed75-c712-4a63-9a83-1c16efdefbd6")
    assert (red_teaming.attack_class, red_teaming.outcome) == ("RedTeamingAttack", "success")
    legacy = Conversation.objects.get(pk="ef32fe45-71db-4201-88cf-dee172026dd7")
    assert legacy.labels == {"operation": "fixture_op_1", "operator": "roakey"}
    assert legacy.converter_classes == ["ROT13Converter"]
    assert legacy.target_identifier_id == (
        "0f08d4be85cdafc5334406cf55f871a17c764309fc3fc168953d39028880d432"
    )


# --- SQLite memory files -------------------------------------------------------------------

MAPPED_TABLES = {
    "pyrit-1.1": {
        "Conversations": 7,
        "PromptMemoryEntries": 25,
        "ScoreEntries": 11,
        "AttackResultEntries": 6,
        "SeedPromptEntries": 17,
    },
    "pyrit-0.13": {
        "PromptMemoryEntries": 5,
        "ScoreEntries": 2,
        "AttackResultEntries": 1,
        "SeedPromptEntries": 11,
    },
}


def sqlite_counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        conn.close()


@pytest.mark.parametrize("line", ["pyrit-1.1", "pyrit-0.13"])
def test_sqlite_import_brings_every_table_and_reruns_store_nothing(
    fixtures_dir: Path, line: str
) -> None:
    path = fixtures_dir / line / "pyrit_memory.sqlite"
    expected = sqlite_counts(path)
    steps: list[str] = []
    report = import_pyrit_memory(path, chunk_size=4, progress=lambda s: steps.append(s.table))
    assert report.line == ("1.x" if line == "pyrit-1.1" else "0.13")
    assert report.errors == []
    assert "PromptMemoryEntries" in steps
    assert steps[-1] == "done"
    for table, count in expected.items():
        if table in ("pyrit_memory_alembic_version",):
            continue
        counter = report.tables[table]
        assert counter.read == count, table
        assert counter.rejected == 0, (table, counter)
        assert counter.stored + counter.unchanged + counter.skipped == count, (table, counter)
    for table, count in MAPPED_TABLES[line].items():
        assert report.tables[table].stored == count, table
    again = import_pyrit_memory(path)
    for table, counter in again.tables.items():
        assert counter.stored == 0, (table, counter)
        assert counter.rejected == 0, (table, counter)


def test_sqlite_import_exports_like_the_jsonl_fixtures(fixtures_dir: Path) -> None:
    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    import_pyrit_memory(fixtures_dir / "pyrit-0.13" / "pyrit_memory.sqlite")
    check_1_1_exports(fixtures_dir)
    check_0_13_exports(fixtures_dir)


def test_jsonl_and_sqlite_of_one_run_are_the_same_data(fixtures_dir: Path) -> None:
    load_1_1(fixtures_dir)
    load_0_13(fixtures_dir)
    for line in ("pyrit-1.1", "pyrit-0.13"):
        report = import_pyrit_memory(fixtures_dir / line / "pyrit_memory.sqlite")
        for table in MAPPED_TABLES[line]:
            if table == "SeedPromptEntries":
                continue  # seeds were not part of the JSONL load
            counter = report.tables[table]
            assert (counter.stored, counter.rejected) == (0, 0), (line, table, counter)


def test_normalizations_are_documented() -> None:
    assert all(reason.strip() for reason in NORMALIZATIONS.values())
