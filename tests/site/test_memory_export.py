"""`manage.py export_pyrit_memory`: a filtered slice as a PyRIT SQLite memory file.

The suite needs no PyRIT: an exported file is compared with the PyRIT file it was imported
from, row by row and column by column, and read back with the project's own PyRIT memory
importer into a fresh database, where the run it holds must equal the one exported. How it was
checked with PyRIT itself: tests/fixtures/README-memory-export.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    IdentifierDump,
    IdentifierOperation,
    MessagePiece,
    PieceConverter,
    ScenarioResult,
    ScorableContent,
    Score,
)
from redteam.client import PyritMemoryFile
from redteam.common.access import Scope, Writer
from redteam.common.models import AuditEvent, MediaBlob
from redteam.site import export_views, memory_export
from redteam.site.ingest import ingest_batch
from redteam.site.memory_export import MediaFolder, write_memory_file
from redteam.site.pyrit_memory_schema import SCHEMA
from redteam.site.pyrit_sqlite import import_pyrit_memory
from redteam.site.run_export import select_conversations, write_run
from seeds.models import Seed, SeedDataset, SeedGroup
from tests.memory import factories as f
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

EVERYTHING = Scope.everything_scope()
SCENARIO_FIXTURE = Path(__file__).parents[1] / "fixtures" / "pyrit_1_1_scenario"
# (the PyRIT file, its schema line)
SOURCES = {
    "pyrit-1.1": ("pyrit-1.1/pyrit_memory.sqlite", "1.x"),
    "pyrit-0.13": ("pyrit-0.13/pyrit_memory.sqlite", "0.13"),
    "scenario-1.1": (str(SCENARIO_FIXTURE / "pyrit_memory.sqlite"), "1.x"),
}
MEDIA_TYPES = {"image_path", "audio_path", "video_path", "binary_path"}


def source(fixtures_dir: Path, name: str) -> tuple[Path, str]:
    path, line = SOURCES[name]
    return fixtures_dir / path, line


UNREADABLE: set[str] = set()


def imported(fixtures_dir: Path, name: str) -> tuple[Path, str]:
    """Import a PyRIT file (its media from the fixture folder); its path and line. The media
    the fixture does not hold are remembered in UNREADABLE."""
    path, line = source(fixtures_dir, name)
    report = import_pyrit_memory(path, media_from=fixtures_dir / "pyrit-1.1" / "media")
    assert report.rejected == 0, report.errors
    UNREADABLE.update(report.media_unreadable)
    return path, line


def export(out: Path, *args: str) -> str:
    """Run the command; its summary line."""
    stdout = io.StringIO()
    call_command("export_pyrit_memory", "-o", str(out), *args, stdout=stdout)
    return stdout.getvalue()


def table_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every table's rows, in rowid order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: [dict(r) for r in conn.execute(f'SELECT * FROM "{n}"')] for n in names}
    finally:
        conn.close()


def json_columns(path: Path, table: str) -> set[str]:
    """The columns that hold JSON text in a table (declared JSON, or named *_json)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        return {r[1] for r in columns if r[2] == "JSON" or str(r[1]).endswith("_json")}
    finally:
        conn.close()


def keyed(rows: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    """Rows by primary key: the first column, or (first, second) for edge tables."""
    if rows and "position" in rows[0]:
        return {(r[next(iter(r))], r["position"]): r for r in rows}
    return {next(iter(r.values())): r for r in rows}


def run_payload() -> dict[str, Any]:
    """The stored run, as `export_conversations --run` writes it."""
    out = io.StringIO()
    write_run(out.write, select_conversations(None, scope=EVERYTHING))
    payload: dict[str, Any] = json.loads(out.getvalue())
    return payload


def row_id(item: dict[str, Any]) -> str:
    """A read item's own id, whatever its kind."""
    return str(item.get("id") or item.get("attack_result_id") or item.get("conversation_id"))


def masked(value: Any) -> Any:
    """Media values replaced by a marker (the export rewrites their paths), at any depth."""
    if isinstance(value, dict):
        out = {k: masked(v) for k, v in value.items()}
        for key in ("original_value", "converted_value", "value"):
            kind = value.get(f"{key}_data_type", value.get("data_type"))
            if key in out and kind in MEDIA_TYPES:
                out[key] = "<media>"
        return out
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def forget_everything() -> None:
    """A fresh database state: every memory, scoring and seed row deleted."""
    Score.objects.all().delete()
    AttackResult.objects.all().delete()
    ScenarioResult.objects.all().delete()
    PieceConverter.objects.all().delete()
    MessagePiece.objects.all().delete()
    Conversation.objects.all().delete()
    ScorableContent.objects.all().delete()
    Seed.objects.all().delete()
    SeedGroup.objects.all().delete()
    SeedDataset.objects.all().delete()
    IdentifierOperation.objects.all().delete()
    IdentifierDump.objects.all().delete()
    ComponentIdentifier.objects.all().delete()
    MediaBlob.objects.all().delete()


# --- the file is PyRIT's ----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SOURCES))
def test_an_exported_file_has_pyrits_schema_and_every_row_of_the_file_imported(
    tmp_path: Path, fixtures_dir: Path, name: str
) -> None:
    """Same DDL as PyRIT's own file; every row of every table equal, column by column.

    Known differences, each asserted: media values point at the copied bytes; identifier
    table JSON may list keys in another order (PyRIT keeps whichever use it met first);
    PyRIT stores pruned/adversarial ids in set order; the server keeps no time of its own
    for a ScorableContentEntries row (the score's is written).
    """
    original, line = imported(fixtures_dir, name)
    out = tmp_path / "slice.db"
    summary = export(out, "--shape", line)
    assert "PyRIT" in summary

    def ddl(path: Path) -> list[str]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return sorted(
                r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
            )
        finally:
            conn.close()

    assert ddl(out) == sorted(SCHEMA[line])
    if name != "scenario-1.1":  # made by a migrated PyRIT: same columns, in another order
        assert ddl(out) == ddl(original)
    before, after = table_rows(original), table_rows(out)
    assert set(before) == set(after)
    media = tmp_path / "slice.db_media"
    for table, rows in before.items():
        want, got = keyed(rows), keyed(after[table])
        assert set(got) == set(want), table
        for key, row in want.items():
            exported = got[key]
            for column, value in row.items():
                mine = exported[column]
                if column == "identifier_json":
                    assert json.loads(mine) == json.loads(value), (table, key)
                elif column in ("pruned_conversation_ids", "adversarial_chat_conversation_ids"):
                    assert sorted(json.loads(mine) or []) == sorted(json.loads(value) or [])
                elif table == "ScorableContentEntries" and column == "timestamp":
                    assert mine
                elif column in ("original_value", "converted_value", "value") and (
                    row.get(f"{column}_data_type", row.get("data_type")) in MEDIA_TYPES
                    and mine != value
                ):
                    copied = Path(mine)
                    assert copied.parent == media.resolve()
                    digest = hashlib.sha256(copied.read_bytes()).hexdigest()
                    assert copied.name.startswith(digest)
                elif column in json_columns(original, table) and mine != value:
                    # Same JSON: a database that stores JSON as jsonb (PostgreSQL) keeps no
                    # key order, which PyRIT's dicts do not compare.
                    assert json.loads(mine) == json.loads(value), (table, key, column)
                else:
                    assert mine == value, (table, key, column)


@pytest.mark.parametrize("name", list(SOURCES))
@pytest.mark.parametrize("shape", ["1.x", "0.13"])
def test_an_exported_file_reads_back_into_a_fresh_database_equal(
    tmp_path: Path, fixtures_dir: Path, name: str, shape: str
) -> None:
    """Export, forget everything, import the export with the project's PyRIT memory importer:
    the stored run is the one exported (every conversation, piece, score, result, scenario,
    seed and identifier), apart from what the other line cannot hold."""
    original, line = imported(fixtures_dir, name)
    before = run_payload()
    out = tmp_path / "slice.db"
    export(out, "--shape", shape, "--relative-media-paths")
    forget_everything()
    assert not MessagePiece.objects.exists()
    report = import_pyrit_memory(out, media_from=tmp_path / "slice.db_media")
    assert report.rejected == 0, report.errors
    # Media never uploaded keep their original path; every other one was copied.
    assert set(report.media_unreadable) <= UNREADABLE
    after = run_payload()
    if shape == line:
        assert masked(after) == masked(before)
        with PyritMemoryFile(original) as a, PyritMemoryFile(out) as b:
            assert a.line == b.line == line
            read_a, read_b = a.read(), b.read()
        for kind, items in read_a.items():
            mine = read_b[kind]
            assert len(mine) == len(items), kind
            for x, y in zip(sorted(items, key=row_id), sorted(mine, key=row_id), strict=True):
                for key in ("original_value", "converted_value", "value"):
                    if x.get(key) != y.get(key):
                        assert str(y.get(f"{key}_data_type", y.get("data_type"))) in MEDIA_TYPES
                        x, y = {**x, key: None}, {**y, key: None}
                if isinstance(x.get("scorable_content"), dict):
                    # The server keeps no time of its own for loose content (see above).
                    x["scorable_content"].pop("timestamp")
                    y["scorable_content"].pop("timestamp")
                if kind == "attack_results":
                    x["related_conversations"].sort(key=lambda r: r["conversation_id"])
                    y["related_conversations"].sort(key=lambda r: r["conversation_id"])
                assert x == y, kind
        return
    # Across lines: the same rows come back, as the other line holds them.
    for kind in ("message_pieces", "attack_results", "seeds"):
        assert len(after[kind]) == len(before[kind]), kind
    ids = {s["id"] for s in after["scores"]}
    assert ids <= {s["id"] for s in before["scores"]}
    dropped = [s for s in before["scores"] if s["id"] not in ids]
    assert all(s["score_value"] is None for s in dropped)  # 0.13 has no undetermined score


def test_the_exported_piece_values_are_byte_exact(tmp_path: Path) -> None:
    hostile = [
        "nul\x00inside",
        "\u202eevil rtl\u202c and \u200bzero width",
        "emoji \U0001f600 and cjk \u4e2d\u6587",
        'quotes \' " `; DROP TABLE "PromptMemoryEntries"; --',
        "<script>alert(1)</script>{{ 7*7 }}",
        "line\r\nbreaks\ttabs",
        "x" * 100_000,
    ]
    pieces = [
        f.piece(conversation_id="hostile", sequence=i, original_value=v, converted_value=v)
        for i, v in enumerate(hostile)
    ]
    labels = {"operation": "op\u202e", "k\x00": "v'\""}
    result = f.attack_result(conversation_id="hostile", labels=labels, objective=hostile[0])
    metadata = {"note\u202e": hostile[3], "n": 1.0}
    score = f.score(
        message_piece_id=pieces[0]["id"],
        score_rationale=hostile[0] + hostile[1],
        score_metadata=metadata,
        objective=hostile[4],
    )
    report = ingest_batch(
        {"message_pieces": pieces, "scores": [score], "attack_results": [result]},
        writer=Writer.trusted(),
    )
    assert all(o.ok for o in report.outcomes), [o.errors for o in report.outcomes]
    out = tmp_path / "hostile.db"
    export(out, "--no-media")
    rows = table_rows(out)
    values = {r["id"]: r for r in rows["PromptMemoryEntries"]}
    for piece in pieces:
        assert values[piece["id"]]["original_value"] == piece["original_value"]
        assert values[piece["id"]]["converted_value"] == piece["converted_value"]
    (stored,) = rows["AttackResultEntries"]
    assert stored["objective"] == hostile[0]
    assert json.loads(stored["labels"]) == labels
    (scored,) = rows["ScoreEntries"]
    assert scored["score_rationale"] == hostile[0] + hostile[1]
    assert scored["objective"] == hostile[4]
    stored_metadata = json.loads(scored["score_metadata"])
    assert stored_metadata == metadata
    assert isinstance(stored_metadata["n"], float)  # 1.0 stays a float


# --- what the slice holds ---------------------------------------------------------------------


def test_a_filtered_slice_holds_the_run_of_the_chosen_conversations(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    result = (
        AttackResult.objects.filter(related_conversations__isnull=False)
        .order_by("attack_result_id")
        .first()
    )
    assert result is not None
    out = tmp_path / "one.db"
    export(out, "--conversation-id", result.conversation_id)
    rows = table_rows(out)
    wanted = select_conversations([result.conversation_id], scope=EVERYTHING)
    assert len(wanted.conversation_ids) > 1  # related conversations come along
    assert {r["conversation_id"] for r in rows["PromptMemoryEntries"]} == set(
        wanted.conversation_ids
    )
    pieces = MessagePiece.objects.filter(conversation_id__in=wanted.conversation_ids)
    assert len(rows["PromptMemoryEntries"]) == pieces.count()
    prompt_ids = set(pieces.values_list("original_prompt_id", flat=True))
    scored = {
        str(i)
        for i in Score.objects.filter(message_piece_id__in=prompt_ids).values_list("id", flat=True)
    }
    assert {r["id"] for r in rows["ScoreEntries"]} == scored
    assert {r["conversation_id"] for r in rows["AttackResultEntries"]} <= set(
        wanted.conversation_ids
    )
    assert rows["SeedPromptEntries"] == []  # the fixture's atomic attacks name no seeds


def test_filters_are_the_conversation_lists_and_the_results_lists(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    success = set(
        Conversation.objects.filter(outcome="success").values_list("conversation_id", flat=True)
    )
    assert success
    out = tmp_path / "success.db"
    export(out, "--outcome", "success")
    results = table_rows(out)["AttackResultEntries"]
    assert success <= {r["conversation_id"] for r in results}
    same = tmp_path / "same.db"
    export(same, "--query", "outcome=success")
    assert table_rows(same) == table_rows(out)
    by_results = tmp_path / "results.db"
    export(by_results, "--from", "attack-results", "--query", "outcome=success")
    chosen = {r["conversation_id"] for r in table_rows(by_results)["AttackResultEntries"]}
    assert {
        str(c)
        for c in AttackResult.objects.filter(outcome="success").values_list(
            "conversation_id", flat=True
        )
    } <= chosen


def test_human_verdicts_are_pyrit_scores_of_the_human_scorer(
    tmp_path: Path, fixtures_dir: Path
) -> None:
    from django.contrib.auth import get_user_model

    from scoring.services import HUMAN_SCORER_CLASS, record_review
    from scoring.verdict_fields import VerdictAnswers, VerdictFields

    imported(fixtures_dir, "pyrit-1.1")
    result = AttackResult.objects.filter(last_response__isnull=False).order_by("pk").first()
    assert result is not None
    reviewer = get_user_model().objects.create_superuser("rita", "rita@example.invalid", "pw")
    answers = VerdictAnswers(
        fields=VerdictFields(true_false=True), objective=True, rationale="it complied"
    )
    (verdict,) = record_review(
        attack_result=result,
        reviewer=reviewer,
        scope=EVERYTHING,
        answers=answers,
        submission=None,
    )
    out = tmp_path / "verdicts.db"
    export(out, "--conversation-id", result.conversation_id)
    rows = table_rows(out)
    (row,) = [r for r in rows["ScoreEntries"] if r["id"] == str(verdict.id)]
    identifier = json.loads(row["scorer_class_identifier"])
    assert identifier["class_name"] == HUMAN_SCORER_CLASS
    assert (row["score_type"], row["score_value"], row["status"]) == (
        "true_false",
        "true",
        "complete",
    )
    assert row["score_rationale"] == "it complied"
    assert row["scorer_identifier_hash"] in {r["hash"] for r in rows["ScorerIdentifiers"]}
    verdict.withdrawn_at = verdict.timestamp
    verdict.save(update_fields=["withdrawn_at"])
    again = tmp_path / "withdrawn.db"
    export(again, "--conversation-id", result.conversation_id)
    assert str(verdict.id) not in {r["id"] for r in table_rows(again)["ScoreEntries"]}


def test_an_operation_scope_leaves_other_operations_out(tmp_path: Path) -> None:
    mine = f.piece(conversation_id="mine")
    theirs = f.piece(conversation_id="theirs")
    ingest_batch(
        {
            "message_pieces": [mine, theirs],
            "attack_results": [
                f.attack_result(conversation_id="mine", labels={"operation": "alpha"}),
                f.attack_result(conversation_id="theirs", labels={"operation": "beta"}),
            ],
        },
        writer=Writer.trusted(),
    )
    out = tmp_path / "alpha.db"
    export(out, "--operation", "alpha")
    rows = table_rows(out)
    assert {r["conversation_id"] for r in rows["PromptMemoryEntries"]} == {"mine"}
    assert {r["conversation_id"] for r in rows["AttackResultEntries"]} == {"mine"}


# --- bounded work -----------------------------------------------------------------------------


def _conversations(count: int, prefix: str) -> None:
    pieces, scores, results = [], [], []
    for n in range(count):
        conversation = f"{prefix}-{n}"
        ask = f.piece(conversation_id=conversation, converter_identifiers=[f.identifier()])
        answer = f.piece(conversation_id=conversation, sequence=1, role="assistant")
        pieces += [ask, answer]
        scores.append(f.score(message_piece_id=answer["id"]))
        results.append(f.attack_result(conversation_id=conversation))
    report = ingest_batch(
        {"message_pieces": pieces, "scores": scores, "attack_results": results},
        writer=Writer.trusted(),
    )
    assert all(o.ok for o in report.outcomes), [o.errors for o in report.outcomes if not o.ok]


@pytest.mark.parametrize("filtered", [False, True])
def test_queries_per_chunk_do_not_grow_with_the_rows(tmp_path: Path, filtered: bool) -> None:
    def queries(prefix: str) -> int:
        ids = list(
            Conversation.objects.filter(conversation_id__startswith=prefix).values_list(
                "conversation_id", flat=True
            )
        )
        selection = select_conversations(ids if filtered else None, scope=EVERYTHING)
        with CaptureQueriesContext(connection) as captured:
            write_memory_file(tmp_path / f"{prefix}.db", selection, shape="1.x")
        return len(captured)

    _conversations(3, "small")
    small = queries("small")
    _conversations(30, "large")
    # A filtered export reads only its own conversations; an unfiltered one reads both sets
    # (33 rows, one chunk): the same number of queries either way.
    assert queries("large") == small
    assert small <= 12


def test_a_failed_export_leaves_no_file_and_no_media(
    tmp_path: Path, fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    out = tmp_path / "slice.db"
    out.write_bytes(b"the previous export")

    def broken(self: Any, seed: Seed) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(memory_export._Writer, "seed", broken)
    media = MediaFolder(tmp_path / "exported", str(tmp_path / "exported"))
    with pytest.raises(RuntimeError, match="disk full"):
        write_memory_file(out, select_conversations(None, scope=EVERYTHING), media=media)
    assert out.read_bytes() == b"the previous export"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "media") == ["slice.db"]


def test_media_caps_stop_an_export(tmp_path: Path, fixtures_dir: Path) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    selection = select_conversations(None, scope=EVERYTHING)
    with pytest.raises(memory_export.ExportTooLarge, match="bytes"):
        write_memory_file(
            tmp_path / "big.db",
            selection,
            media=MediaFolder(tmp_path / "m", "m", max_bytes=10),
        )
    with pytest.raises(memory_export.ExportTooLarge, match="conversations"):
        write_memory_file(tmp_path / "many.db", selection, max_conversations=1)
    assert [p.name for p in tmp_path.iterdir()] == ["media"]  # the server's own storage


# --- the command ------------------------------------------------------------------------------


def test_the_command_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    out = tmp_path / "x.db"
    out.write_bytes(b"keep")
    with pytest.raises(CommandError, match="--force"):
        export(out)
    with pytest.raises(CommandError, match="no filter"):
        export(tmp_path / "y.db", "--query", "colour=red")
    with pytest.raises(CommandError, match="outcome"):
        export(tmp_path / "y.db", "--outcome", "maybe")
    with pytest.raises(CommandError, match="stdout"):
        call_command("export_pyrit_memory", "-o", "-")
    with pytest.raises(CommandError, match="no such operation"):
        export(tmp_path / "y.db", "--operation", "nope")
    assert out.read_bytes() == b"keep"
    assert not (tmp_path / "y.db").exists()


# --- the list pages' button -------------------------------------------------------------------

PAGES = {
    "conversations": ("memory:conversation_list", "export_memory_conversations"),
    "attack-results": ("scoring:attack_result_list", "export_memory_attack_results"),
}


def download(client: Client, url: str) -> tuple[zipfile.ZipFile, bytes]:
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith("attachment")
    body = response.getvalue()
    return zipfile.ZipFile(io.BytesIO(body)), body


def unpacked(archive: zipfile.ZipFile, folder: Path) -> dict[str, list[dict[str, Any]]]:
    archive.extractall(folder)
    return table_rows(folder / "pyrit_memory.db")


@pytest.mark.parametrize("page", list(PAGES))
def test_the_button_downloads_the_pages_slice_as_the_command_writes_it(
    client: Client, tmp_path: Path, fixtures_dir: Path, page: str
) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    client.force_login(make_user("rita", "read-only"))
    list_name, export_name = PAGES[page]
    query = "outcome=success&cursor=abc&size=5"
    html = client.get(reverse(list_name) + "?outcome=success").content.decode()
    assert f'href="{reverse(export_name)}?outcome=success"' in html
    assert f'href="{reverse(export_name)}?outcome=success&amp;shape=0.13"' in html
    archive, body = download(client, f"{reverse(export_name)}?{query}")
    names = archive.namelist()
    assert names[:2] == ["README.txt", "pyrit_memory.db"]
    assert "SQLiteMemory" in archive.read("README.txt").decode()
    rows = unpacked(archive, tmp_path / "zip")
    event = AuditEvent.objects.filter(action="memory.exported").latest("pk")
    assert (event.actor_name, event.object_id) == ("rita", page)
    assert event.detail["filters"]["outcome"] == ["success"]
    assert event.detail["rows"]["PromptMemoryEntries"] == len(rows["PromptMemoryEntries"])
    out = tmp_path / "command.db"
    export(out, "--from", page, "--query", "outcome=success", "--no-media")
    assert masked_rows(rows) == masked_rows(table_rows(out))
    # Media are in the zip, under the relative path the pieces name.
    everything, _ = download(client, reverse(export_name))
    pieces = unpacked(everything, tmp_path / "all")["PromptMemoryEntries"]
    media = [r["original_value"] for r in pieces if r["original_value_data_type"] == "image_path"]
    assert media
    assert all(value.startswith("media/") for value in media)
    assert set(media) <= set(everything.namelist())
    # The same rows give the same bytes.
    assert download(client, f"{reverse(export_name)}?{query}")[1] == body
    legacy = unpacked(
        download(client, f"{reverse(export_name)}?{query}&shape=0.13")[0], tmp_path / "013"
    )
    assert "labels" in legacy["PromptMemoryEntries"][0]


def masked_rows(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Rows by table, media values masked (the command keeps paths with --no-media)."""
    return {name: sorted((masked(r) for r in rows), key=str) for name, rows in tables.items()}


def test_the_button_answers_bad_requests_clearly(
    client: Client, fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    imported(fixtures_dir, "pyrit-1.1")
    url = reverse("export_memory_conversations")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(make_user("norole", role=None))
    assert client.get(url).status_code == 403
    client.force_login(make_user("rita", "read-only"))
    assert client.get(url + "?shape=2.0").status_code == 400
    bad = client.get(url + "?outcome=maybe")
    assert bad.status_code == 400
    assert b"outcome" in bad.content
    review = client.get(reverse("export_memory_attack_results") + "?review=nope")
    assert review.status_code == 400
    monkeypatch.setattr(export_views, "MAX_DOWNLOAD_CONVERSATIONS", 1)
    too_many = client.get(url)
    assert too_many.status_code == 413
    assert b"export_pyrit_memory" in too_many.content
    assert client.post(url).status_code == 405


@pytest.mark.parametrize("page", list(PAGES))
def test_a_download_costs_the_same_queries_for_more_rows(client: Client, page: str) -> None:
    _conversations(3, "small")
    client.force_login(make_user("rita", "read-only"))
    url = reverse(PAGES[page][1])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
            assert response.status_code == 200
            response.getvalue()
        return len(captured)

    small = queries()
    _conversations(30, "large")
    assert queries() == small


def test_a_013_file_counts_what_it_cannot_hold(tmp_path: Path, fixtures_dir: Path) -> None:
    imported(fixtures_dir, "scenario-1.1")  # an `error` outcome
    imported(fixtures_dir, "pyrit-1.1")  # undetermined scores
    undetermined = Score.objects.filter(score_value__isnull=True).count()
    errors = AttackResult.objects.filter(outcome="error").count()
    assert undetermined
    assert errors
    summary = export(tmp_path / "old.db", "--shape", "0.13")
    assert f"skipped {undetermined} undetermined score(s)" in summary
    assert f"skipped {errors} 'error' outcome(s)" in summary
    rows = table_rows(tmp_path / "old.db")
    assert {r["outcome"] for r in rows["AttackResultEntries"]} <= {
        "success",
        "failure",
        "undetermined",
    }
    assert all(r["score_value"] is not None for r in rows["ScoreEntries"])
