"""import_pyrit_memory and export_conversations: PyRIT's own files in and out."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from rest_framework.test import APIClient

from memory.models import AttackResult, Conversation, MessagePiece, Score
from seeds.models import Seed
from tests.api.pyrit_fixtures import LINES, fixture_payload
from tests.api.test_roundtrip import assert_api_serves_payload

pytestmark = pytest.mark.django_db
MODELS = (MessagePiece, Conversation, Score, AttackResult, Seed)


def run(*args: Any) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("line", LINES)
def test_import_pyrit_memory_matches_the_fixture_rows(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    out, err = run("import_pyrit_memory", str(fixtures_dir / line / "pyrit_memory.sqlite"))
    assert "rejected 0" in out
    assert "PromptMemoryEntries" in err  # the progress bar
    payload = fixture_payload(fixtures_dir, line)
    assert_api_serves_payload(api, payload, line)


@pytest.mark.parametrize("line", LINES)
def test_import_pyrit_memory_twice_stores_nothing_new(fixtures_dir: Path, line: str) -> None:
    path = str(fixtures_dir / line / "pyrit_memory.sqlite")
    run("import_pyrit_memory", path, "--no-progress")
    counts = [m.objects.count() for m in MODELS]
    out, _ = run("import_pyrit_memory", path, "--no-progress", "--strict")
    assert "stored 0," in out
    assert [m.objects.count() for m in MODELS] == counts


@pytest.mark.parametrize("line", LINES)
def test_import_then_http_ingest_of_the_same_run_is_a_replay(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    run("import_pyrit_memory", str(fixtures_dir / line / "pyrit_memory.sqlite"), "--no-progress")
    response = api.post("/api/v1/ingest/", fixture_payload(fixtures_dir, line), format="json")
    assert response.status_code == 200
    assert response.json()["stored"] == 0


def test_import_pyrit_memory_rejects_a_missing_or_foreign_file(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="No such file"):
        run("import_pyrit_memory", str(tmp_path / "nope.sqlite"))
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(CommandError):
        run("import_pyrit_memory", str(junk), "--no-progress")


def test_export_conversations_reproduces_pyrit_013_export(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    run("import_pyrit_memory", str(fixtures_dir / "pyrit-0.13" / "pyrit_memory.sqlite"))
    target = tmp_path / "exported.json"
    _, err = run("export_conversations", "-o", str(target))
    assert "Exported 5" in err
    expected = (fixtures_dir / "pyrit-0.13" / "exported_conversations.json").read_text()
    text = target.read_text()
    assert json.loads(text) == json.loads(expected)
    assert text == json.dumps(json.loads(text), indent=4)  # PyRIT's json.dump(..., indent=4)
    if connection.vendor == "sqlite":
        # PostgreSQL's jsonb reorders keys inside JSON columns (labels, metadata), so the
        # bytes can only match where the database keeps key order.
        assert text == expected


def test_export_conversations_1x_shape_and_filters(api: APIClient, fixtures_dir: Path) -> None:
    payload = fixture_payload(fixtures_dir, "pyrit-1.1")
    assert api.post("/api/v1/ingest/", payload, format="json").status_code == 200
    out, _ = run("export_conversations", "--shape", "1.x")
    rows = json.loads(out)
    assert sorted(r["id"] for r in rows) == sorted(p["id"] for p in payload["message_pieces"])
    by_id = {p["id"]: p for p in payload["message_pieces"]}
    assert all(r == by_id[r["id"]] for r in rows)

    out, _ = run("export_conversations", "--shape", "1.x", "--role", "assistant")
    assert {r["role"] for r in json.loads(out)} == {"assistant"}
    conversation_id = payload["message_pieces"][0]["conversation_id"]
    out, _ = run(
        "export_conversations", "--conversation-id", conversation_id, "--data-type", "text"
    )
    assert {r["conversation_id"] for r in json.loads(out)} == {conversation_id}
    out, _ = run("export_conversations", "--label", "operation=no-such-operation")
    assert json.loads(out) == []


def test_export_conversations_rejects_bad_filters() -> None:
    with pytest.raises(CommandError, match="role"):
        run("export_conversations", "--role", "wizard")
    with pytest.raises(CommandError, match="label"):
        run("export_conversations", "--label", "no separator")
