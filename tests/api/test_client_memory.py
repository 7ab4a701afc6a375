"""push_memory and `python -m redteam.client push`: a whole PyRIT run, exactly as the importer
stores it (the same reader, the same ingest path), against a live server."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from memory.models import MessagePiece
from redteam.client import PyritMemoryFile, RedteamClient, main
from redteam.common.models import ApiKey
from redteam.site.pyrit_sqlite import import_pyrit_memory
from tests.access import bind_everywhere
from tests.api.pyrit_fixtures import LINES

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCES = (
    "message-pieces",
    "conversations",
    "scores",
    "attack-results",
    "scenario-results",
    "seeds",
    "identifiers",
)
SCENARIO_RUN = Path(__file__).resolve().parent.parent / "fixtures" / "pyrit_1_1_scenario"
# The 1.1 run: the result labelled review=manual (conversation 5d0d...) pruned 8a03... (whose
# own result talked to adversarial chat a581...) and used 1f62... as its adversarial chat.
MANUAL_CONVERSATIONS = {
    "5d0d85c5-3efa-4f64-b261-64864804d9d8",
    "8a03ed75-c712-4a63-9a83-1c16efdefbd6",
    "a5810299-e1e5-44df-bd60-6214d2336f36",
    "1f62f162-ad68-4382-ba17-e394db9c67e2",
}


def new_client(url: str) -> RedteamClient:
    """A client with a fresh ingest+read key (users do not survive `fresh_state`)."""
    user, _ = User.objects.get_or_create(username=f"pusher-{uuid.uuid4().hex[:8]}")
    row, key = ApiKey.objects.create_key(name="t", user=user, scopes=["ingest", "read"])
    bind_everywhere(row)
    return RedteamClient(url, key, batch_size=7, sleep=lambda _: None)


def fresh_state() -> None:
    """An empty database, as a second server would start."""
    call_command("flush", interactive=False, verbosity=0)


def api_snapshot(client: RedteamClient) -> dict[str, str]:
    """Every list endpoint and every conversation, as JSON text (NaN compares as text)."""
    snapshot: dict[str, str] = {}
    conversations: list[str] = []
    for resource in RESOURCES:
        rows = list(client.iter_list(resource, page_size=100))
        texts = sorted(json.dumps(row, sort_keys=True) for row in rows)
        snapshot[resource] = "\n".join(texts)
        if resource == "conversations":
            conversations = sorted(row["conversation_id"] for row in rows)
    for cid in conversations:
        snapshot[f"conversation {cid}"] = json.dumps(client.conversation(cid), sort_keys=True)
    return snapshot


def memory_path(fixtures_dir: Path, line: str) -> Path:
    """The fixture run's PyRIT memory file."""
    return fixtures_dir / line / "pyrit_memory.sqlite"


def assert_push_equals_import(url: str, path: Path, **import_options: Any) -> dict[str, str]:
    """push_memory(path) into an empty server, then import_pyrit_memory(path) into another."""
    fresh_state()
    pushed = new_client(url)
    result = pushed.push_memory(str(path), raise_on_rejected=False)
    after_push = api_snapshot(pushed)
    fresh_state()
    import_pyrit_memory(path, **import_options)
    after_import = api_snapshot(new_client(url))
    assert after_push.keys() == after_import.keys()
    for key in after_push:
        assert after_push[key] == after_import[key], key
    assert result.rejected == []
    return after_push


@pytest.mark.parametrize("line", LINES)
def test_push_memory_of_a_file_answers_like_import_pyrit_memory(
    live_server: Any, fixtures_dir: Path, line: str
) -> None:
    path = memory_path(fixtures_dir, line)
    snapshot = assert_push_equals_import(live_server.url, path)
    with PyritMemoryFile(path) as memory:
        pieces = memory.count("PromptMemoryEntries")
        scores = memory.count("ScoreEntries")
    assert len(snapshot["message-pieces"].splitlines()) == pieces
    assert len(snapshot["scores"].splitlines()) == scores


def test_push_memory_of_a_scenario_run_answers_like_the_import(live_server: Any) -> None:
    snapshot = assert_push_equals_import(live_server.url, SCENARIO_RUN / "pyrit_memory.sqlite")
    assert len(snapshot["scenario-results"].splitlines()) == 2
    with PyritMemoryFile(SCENARIO_RUN / "pyrit_memory.sqlite") as memory:
        # Loose-content scores included (their content travels with them).
        assert len(snapshot["scores"].splitlines()) == memory.count("ScoreEntries")


def test_push_memory_by_conversation_brings_the_scenario_its_result_belongs_to(
    live_server: Any,
) -> None:
    path = SCENARIO_RUN / "pyrit_memory.sqlite"
    with sqlite3.connect(path) as conn:
        cid, parent = conn.execute(
            "SELECT conversation_id, attribution_parent_id FROM AttackResultEntries "
            "WHERE attribution_parent_id IS NOT NULL LIMIT 1"
        ).fetchone()
    client = new_client(live_server.url)
    client.push_memory(str(path), conversation_ids=[cid])
    assert [s["id"] for s in client.iter_list("scenario-results")] == [parent]


def test_push_memory_by_labels_brings_every_conversation_the_results_reference(
    live_server: Any, fixtures_dir: Path
) -> None:
    client = new_client(live_server.url)
    result = client.push_memory(
        str(memory_path(fixtures_dir, "pyrit-1.1")), labels={"review": "manual"}
    )
    assert result.rejected == []
    stored = {row["conversation_id"] for row in client.iter_list("conversations")}
    assert stored == MANUAL_CONVERSATIONS
    results = {row["conversation_id"] for row in client.iter_list("attack-results")}
    # The labelled result, and the results of the conversations it references.
    assert results == MANUAL_CONVERSATIONS - {"a5810299-e1e5-44df-bd60-6214d2336f36"}
    pieces = list(client.iter_list("message-pieces"))
    assert len(pieces) == 2 + 6 + 7 + 3
    # Every score of those pieces (by original_prompt_id), and nothing of other runs.
    piece_ids = {p["id"] for p in pieces}
    scores = list(client.iter_list("scores"))
    assert scores
    assert all(s["message_piece_id"] in piece_ids for s in scores)
    # The conversation rows came too: target identifiers.
    assert client.conversation("8a03ed75-c712-4a63-9a83-1c16efdefbd6")["target_identifier"]


class FakeMemory:
    """Stands in for a PyRIT 1.x MemoryInterface, answering from a memory file's rows."""

    def __init__(self, path: Path) -> None:
        with PyritMemoryFile(path) as memory:
            self.rows = memory.read()
        self.calls: list[str] = []

    def get_attack_results(
        self, *, labels: dict[str, str] | None = None, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        self.calls.append("get_attack_results")
        return [
            r
            for r in self.rows["attack_results"]
            if (conversation_id is None or r["conversation_id"] == conversation_id)
            and all(r["labels"].get(k) == v for k, v in (labels or {}).items())
        ]

    def get_message_pieces(
        self,
        *,
        conversation_id: str | None = None,
        labels: dict[str, str] | None = None,
        prompt_ids: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        conversations = (
            {r["conversation_id"] for r in self.get_attack_results(labels=labels)}
            if labels
            else None
        )
        return [
            p
            for p in self.rows["message_pieces"]
            if (conversation_id is None or p["conversation_id"] == conversation_id)
            and (conversations is None or p["conversation_id"] in conversations)
            and (prompt_ids is None or p["id"] in prompt_ids)
        ]

    def get_prompt_scores(self, *, prompt_ids: list[str]) -> list[dict[str, Any]]:
        pieces = self.get_message_pieces(prompt_ids=prompt_ids)
        originals = {p["original_prompt_id"] for p in pieces}
        return [s for s in self.rows["scores"] if s["prompt_request_response_id"] in originals]

    def get_scores(self, *, sent_after: Any = None) -> list[dict[str, Any]]:
        # PyRIT answers no score without a filter; every fixture score is after the epoch.
        return list(self.rows["scores"]) if sent_after is not None else []

    def _get_conversation(self, *, conversation_id: str) -> dict[str, Any] | None:
        rows = [c for c in self.rows["conversations"] if c["conversation_id"] == conversation_id]
        return rows[0] if rows else None

    def get_seeds(self) -> list[dict[str, Any]]:
        return list(self.rows["seeds"])


class FakeLegacyMemory(FakeMemory):
    """Stands in for a PyRIT 0.13 MemoryInterface: labels on pieces, no conversation rows,
    get_conversation answering with the messages."""

    def get_attack_results(
        self, *, labels: dict[str, str] | None = None, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        self.calls.append("get_attack_results")
        chosen = {p["conversation_id"] for p in self.get_message_pieces(labels=labels)}
        return [
            r
            for r in self.rows["attack_results"]
            if (conversation_id is None or r["conversation_id"] == conversation_id)
            and r["conversation_id"] in chosen
        ]

    def get_message_pieces(
        self,
        *,
        conversation_id: str | None = None,
        labels: dict[str, str] | None = None,
        prompt_ids: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        return [
            p
            for p in self.rows["message_pieces"]
            if (conversation_id is None or p["conversation_id"] == conversation_id)
            and all(p["labels"].get(k) == v for k, v in (labels or {}).items())
            and (prompt_ids is None or p["id"] in prompt_ids)
        ]

    def get_prompt_scores(self, *, prompt_ids: list[str]) -> list[dict[str, Any]]:
        return [s for s in self.rows["scores"] if s["message_piece_id"] in prompt_ids]

    def get_conversation(self, *, conversation_id: str) -> list[dict[str, Any]]:
        return self.get_message_pieces(conversation_id=conversation_id)

    _get_conversation = None  # type: ignore[assignment]


@pytest.mark.parametrize(
    ("line", "fake", "labels"),
    [
        ("pyrit-1.1", FakeMemory, {"review": "manual"}),
        ("pyrit-0.13", FakeLegacyMemory, {"operator": "roakey"}),
    ],
)
def test_push_memory_of_a_memory_object_sends_what_the_file_selection_sends(
    live_server: Any,
    fixtures_dir: Path,
    line: str,
    fake: type[FakeMemory],
    labels: dict[str, str],
) -> None:
    path = memory_path(fixtures_dir, line)
    fresh_state()
    by_file = new_client(live_server.url)
    by_file.push_memory(str(path), labels=labels)
    from_file = api_snapshot(by_file)
    assert from_file["message-pieces"]
    fresh_state()
    by_object = new_client(live_server.url)
    memory = fake(path)
    result = by_object.push_memory(memory, labels=labels)
    assert result.rejected == []
    assert "get_attack_results" in memory.calls
    assert api_snapshot(by_object) == from_file


def test_push_memory_with_everything_selected_sends_the_whole_object(
    live_server: Any, fixtures_dir: Path
) -> None:
    path = memory_path(fixtures_dir, "pyrit-1.1")
    client = new_client(live_server.url)
    client.push_memory(FakeMemory(path))
    with PyritMemoryFile(path) as memory:
        assert MessagePiece.objects.count() == memory.count("PromptMemoryEntries")


def edge_case_file(tmp_path: Path, fixtures_dir: Path) -> tuple[Path, str, str]:
    """The 1.1 run plus what PyRIT stores and servers used to refuse: NUL in a response, NaN
    in score metadata, and a prepended image piece without a sha256 (its file is readable)."""
    path = tmp_path / "pyrit.db"
    shutil.copyfile(memory_path(fixtures_dir, "pyrit-1.1"), path)
    image = tmp_path / "history.png"
    image.write_bytes(
        (fixtures_dir / "pyrit-1.1" / "media" / "fixture_checkerboard.png").read_bytes()
    )
    conn = sqlite3.connect(path)
    with conn:
        nul_id = conn.execute(
            "SELECT id FROM PromptMemoryEntries WHERE role='assistant' "
            "AND converted_value_data_type='text' ORDER BY id LIMIT 1"
        ).fetchone()[0]
        conn.execute(
            "UPDATE PromptMemoryEntries SET converted_value = ? WHERE id = ?",
            ("safe\x00hidden", nul_id),
        )
        conn.execute(
            'UPDATE ScoreEntries SET score_metadata = \'{"ratio": NaN, "cap": Infinity}\' '
            "WHERE id = (SELECT id FROM ScoreEntries ORDER BY id LIMIT 1)"
        )
        image_id = str(uuid.uuid4())
        cid = str(uuid.uuid4())
        columns = (
            "id, role, conversation_id, sequence, timestamp, prompt_metadata, "
            "converter_identifiers, response_error, original_value_data_type, original_value, "
            "original_value_sha256, converted_value_data_type, converted_value, "
            "converted_value_sha256, original_prompt_id, pyrit_version"
        )
        for piece_id, role, sequence, kind, value in (
            (image_id, "user", 0, "image_path", str(image)),
            (str(uuid.uuid4()), "assistant", 1, "text", "a checkerboard"),
        ):
            conn.execute(
                f"INSERT INTO PromptMemoryEntries ({columns}) VALUES "
                "(?, ?, ?, ?, '2026-11-22 02:54:25.658637', '{}', '[]', 'none', ?, ?, NULL, ?, ?, "
                "NULL, ?, '1.1.0')",
                (piece_id, role, cid, sequence, kind, value, kind, value, piece_id),
            )
    conn.close()
    return path, nul_id, image_id


def test_push_memory_of_hostile_content_answers_like_the_import(
    live_server: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path, _, image_id = edge_case_file(tmp_path, fixtures_dir)
    snapshot = assert_push_equals_import(live_server.url, path)
    assert "safe\\u0000hidden" in snapshot["message-pieces"]
    assert "NaN" in snapshot["scores"]
    digest = hashlib.sha256((tmp_path / "history.png").read_bytes()).hexdigest()
    # Attached by the import (the last state); the push attached it the same way (equal answers).
    assert MessagePiece.objects.get(id=image_id).converted_media_id == digest


def test_prepended_image_without_sha256_is_attached_by_push_memory(
    live_server: Any, fixtures_dir: Path, tmp_path: Path
) -> None:
    path, _, image_id = edge_case_file(tmp_path, fixtures_dir)
    client = new_client(live_server.url)
    client.push_memory(str(path), conversation_ids=[], raise_on_rejected=False)
    assert not MessagePiece.objects.filter(id=image_id).exists()  # nothing selected
    result = client.push_memory(str(path), raise_on_rejected=False)
    piece = MessagePiece.objects.get(id=image_id)
    assert piece.original_media_id
    assert piece.original_media_id == piece.converted_media_id
    # The run's own image path is not readable on this machine: reported, not fatal.
    assert "/home/operator/pyrit-run/media/fixture_checkerboard.png" in result.media_unreadable


@pytest.mark.usefixtures("live_server")
def test_import_pyrit_memory_media_from_finds_the_runs_files(fixtures_dir: Path) -> None:
    path = memory_path(fixtures_dir, "pyrit-1.1")
    report = import_pyrit_memory(path, media_from=fixtures_dir / "pyrit-1.1" / "media")
    image = "/home/operator/pyrit-run/media/fixture_checkerboard.png"
    assert image not in report.media_unreadable
    assert report.tables["media"].stored == 1
    piece = MessagePiece.objects.get(id="f457769d-f512-43c2-b151-208fd6554cff")
    assert piece.converted_media_id == piece.converted_value_sha256
    without = import_pyrit_memory(path)  # default: the paths in the file, not readable here
    assert image in without.media_unreadable


def test_push_command_prints_a_summary_and_each_rejection(
    live_server: Any,
    fixtures_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "pyrit.db"
    shutil.copyfile(memory_path(fixtures_dir, "pyrit-0.13"), path)
    conn = sqlite3.connect(path)
    with conn:
        # The score no attack result names as its last score.
        bad = conn.execute(
            "SELECT id FROM ScoreEntries WHERE id NOT IN "
            "(SELECT last_score_id FROM AttackResultEntries)"
        ).fetchone()[0]
        conn.execute("UPDATE ScoreEntries SET score_type = 'wizard' WHERE id = ?", (bad,))
    conn.close()
    user = User.objects.create_user("cli")
    row, key = ApiKey.objects.create_key(name="cli", user=user, scopes=["ingest"])
    bind_everywhere(row)
    monkeypatch.setenv("REDTEAM_API_KEY", key)
    status = main(["push", str(path), "--url", live_server.url])
    out, err = capsys.readouterr()
    assert status == 1
    assert out.startswith(f"{path}: stored 18, unchanged 0, rejected 1")
    assert "rejected: scores[" in err
    assert bad in err
    assert "score_type" in err
    assert MessagePiece.objects.count() == 5
    # Re-running stores nothing new.
    assert main(["push", str(path), "--url", live_server.url]) == 1
    assert "stored 0, unchanged 18, rejected 1" in capsys.readouterr().out


def test_push_command_needs_a_key(monkeypatch: pytest.MonkeyPatch, fixtures_dir: Path) -> None:
    monkeypatch.delenv("REDTEAM_API_KEY", raising=False)
    path = str(memory_path(fixtures_dir, "pyrit-0.13"))
    assert main(["push", path, "--url", "http://127.0.0.1:9"]) == 2


def test_push_memory_reports_a_file_that_is_not_pyrit_memory(
    live_server: Any, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.db"
    sqlite3.connect(junk).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ValueError, match="not a PyRIT memory file"):
        new_client(live_server.url).push_memory(str(junk))
