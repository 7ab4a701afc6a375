"""`redteam.client follow`: a PyRIT memory file followed while it is written, against a live
server. The follower stores what a push of the same file stores; it sends every row once,
the newer version of a row PyRIT changed, and nothing again after a restart; it reads without
ever holding a lock PyRIT needs, in WAL and rollback-journal modes, and waits for a file that
does not exist yet. (Processes killed mid-way: tests/reliability/test_follow.py.)"""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import redteam.client as client_module
from memory.models import AttackResult, MessagePiece, Score
from redteam.client import (
    FollowState,
    FollowStateError,
    MemoryFollower,
    RedteamClient,
    main,
)
from redteam.common.models import MediaBlob
from tests.api.pyrit_fixtures import LINES
from tests.api.test_client_memory import (
    SCENARIO_RUN,
    api_snapshot,
    fresh_state,
    memory_path,
    new_client,
)

pytestmark = pytest.mark.django_db(transaction=True)

IMAGE = "/home/operator/pyrit-run/media/fixture_checkerboard.png"


@pytest.fixture
def made() -> Iterator[list[MemoryFollower]]:
    """Followers made by a test, closed after it."""
    followers: list[MemoryFollower] = []
    yield followers
    for follower in followers:
        follower.close()
        follower.state.close()


def copy_memory(fixtures_dir: Path, line: str, tmp_path: Path, mode: str = "delete") -> Path:
    """A writable copy of a fixture memory file, in the given journal mode."""
    path = tmp_path / f"{line}.db"
    shutil.copyfile(memory_path(fixtures_dir, line), path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode={mode}")
    conn.close()
    return path


def make_follower(
    made: list[MemoryFollower],
    client: RedteamClient,
    path: Path,
    report: list[str] | None = None,
    sleep: Callable[[float], None] = lambda _: None,
    **options: Any,
) -> MemoryFollower:
    """A follower of `path` with its state beside it; rejections go to `report`."""
    lines = report if report is not None else []
    state = FollowState(path.with_suffix(".state"), str(path.resolve()))
    follower = MemoryFollower(client, path, state, report=lines.append, sleep=sleep, **options)
    made.append(follower)
    return follower


def following_client(url: str) -> RedteamClient:
    client = new_client(url)
    client.revise = True
    return client


def _ids(path: Path, table: str, column: str = "id") -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [str(r[0]) for r in conn.execute(f'SELECT "{column}" FROM "{table}"')]
    finally:
        conn.close()


def change_the_run(path: Path, line: str) -> int:
    """What PyRIT does to rows already written: an attack result finishes, a piece's metadata
    (1.x) or labels (0.13) are updated, a conversation is retried (1.x), a score is added to a
    scored piece. Returns how many rows changed or appeared."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE AttackResultEntries SET outcome = 'failure', outcome_reason = 'finished "
            "later', executed_turns = executed_turns + 1"
        )
        changed = conn.execute("SELECT count(*) FROM AttackResultEntries").fetchone()[0]
        first_piece = conn.execute(
            "SELECT id FROM PromptMemoryEntries ORDER BY rowid LIMIT 1"
        ).fetchone()[0]
        if line == "pyrit-1.1":
            conn.execute(
                "UPDATE PromptMemoryEntries SET prompt_metadata = ? WHERE id = ?",
                (json.dumps({"reviewed": True}), first_piece),
            )
            conn.execute(
                "UPDATE Conversations SET retries = ? WHERE rowid = (SELECT min(rowid) FROM "
                "Conversations)",
                (json.dumps([{"sequence": 1, "reason": "json_parsing"}]),),
            )
            changed += 2
        else:
            conversation = conn.execute(
                "SELECT conversation_id FROM PromptMemoryEntries WHERE id = ?", (first_piece,)
            ).fetchone()[0]
            # update_labels_by_conversation_id: every piece of the conversation.
            changed += conn.execute(
                "UPDATE PromptMemoryEntries SET labels = json_set(labels, '$.reviewed', 'yes') "
                "WHERE conversation_id = ?",
                (conversation,),
            ).rowcount
        score = conn.execute("SELECT * FROM ScoreEntries ORDER BY rowid LIMIT 1").fetchone()
        columns = [d[1] for d in conn.execute("PRAGMA table_info(ScoreEntries)")]
        row = dict(zip(columns, score, strict=True))
        row["id"] = str(uuid.uuid4())
        marks = ", ".join("?" * len(columns))
        conn.execute(
            f"INSERT INTO ScoreEntries ({', '.join(columns)}) VALUES ({marks})",
            [row[c] for c in columns],
        )
        changed += 1
    conn.close()
    return int(changed)


@pytest.mark.parametrize("line", LINES)
def test_following_stores_what_a_push_stores_then_the_newer_versions(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower], line: str
) -> None:
    path = copy_memory(fixtures_dir, line, tmp_path)
    fresh_state()
    client = following_client(live_server.url)
    follower = make_follower(made, client, path)
    assert follower.run(once=True) == 0
    total = sum(len(_ids(path, t, k)) for t, k in _TABLES[line])
    assert follower.stats.sent == total
    followed = api_snapshot(client)
    fresh_state()
    pushed = new_client(live_server.url)
    pushed.push_memory(str(path))
    assert api_snapshot(pushed) == followed

    # PyRIT changes rows already sent: only those go again, stored as the newer version,
    # so the server ends as a push of the final file into an empty server would leave it.
    fresh_state()
    for follower in made:
        follower.state.close()
    path.with_suffix(".state").unlink()  # an empty server: nothing was sent to it
    client = following_client(live_server.url)
    assert make_follower(made, client, path).run(once=True) == 0
    changed = change_the_run(path, line)
    again = make_follower(made, client, path)  # a restart: the state file is read back
    assert again.run(once=True) == 0
    assert again.stats.sent == changed
    followed = api_snapshot(client)
    assert set(AttackResult.objects.values_list("outcome", flat=True)) == {"failure"}
    fresh_state()
    pushed = new_client(live_server.url)
    pushed.push_memory(str(path))
    assert api_snapshot(pushed) == followed


_TABLES = {
    "pyrit-1.1": [
        ("Conversations", "conversation_id"),
        ("PromptMemoryEntries", "id"),
        ("ScoreEntries", "id"),
        ("AttackResultEntries", "id"),
        ("ScenarioResultEntries", "id"),
        ("SeedPromptEntries", "id"),
    ],
    "pyrit-0.13": [
        ("PromptMemoryEntries", "id"),
        ("ScoreEntries", "id"),
        ("AttackResultEntries", "id"),
        ("ScenarioResultEntries", "id"),
        ("SeedPromptEntries", "id"),
    ],
}


def test_a_restarted_follower_sends_nothing_again(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-1.1", tmp_path)
    client = following_client(live_server.url)
    assert make_follower(made, client, path).run(once=True) == 0
    again = make_follower(made, client, path)
    assert again.run(once=True) == 0
    assert (again.stats.sent, again.stats.pending) == (0, 0)


@pytest.mark.parametrize("mode", ["wal", "delete"])
def test_reading_never_holds_a_lock_the_writer_needs(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower], mode: str
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-0.13", tmp_path, mode)
    client = following_client(live_server.url)
    follower = make_follower(made, client, path)
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    template = writer.execute("SELECT * FROM PromptMemoryEntries ORDER BY rowid LIMIT 1").fetchone()
    columns = [d[1] for d in writer.execute("PRAGMA table_info(PromptMemoryEntries)")]
    marks = ", ".join("?" * len(columns))

    def insert(conversation: str) -> str:
        row = dict(zip(columns, template, strict=True))
        row.update(id=str(uuid.uuid4()), conversation_id=conversation, sequence=0)
        writer.execute(
            f"INSERT INTO PromptMemoryEntries ({', '.join(columns)}) VALUES ({marks})",
            [row[c] for c in columns],
        )
        return str(row["id"])

    # PyRIT is mid-transaction (its write lock taken, nothing committed): the follower reads
    # what was committed and does not see the rest.
    writer.execute("BEGIN IMMEDIATE")
    uncommitted = insert(str(uuid.uuid4()))
    assert follower.poll()
    assert not MessagePiece.objects.filter(id=uncommitted).exists()
    assert MessagePiece.objects.count() == 5
    writer.execute("COMMIT")
    # Between polls the follower holds nothing: an exclusive lock is granted at once (timeout 0).
    writer.execute("BEGIN EXCLUSIVE")
    committed_later = insert(str(uuid.uuid4()))
    writer.execute("COMMIT")
    assert follower.poll()
    assert MessagePiece.objects.filter(id__in=[uncommitted, committed_later]).count() == 2
    # The follower's connection cannot write.
    assert follower._memory is not None
    with pytest.raises(sqlite3.OperationalError):
        follower._memory.conn.execute("DELETE FROM PromptMemoryEntries")
    writer.close()


def test_a_file_that_does_not_exist_yet_is_waited_for(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = tmp_path / "later.db"
    client = following_client(live_server.url)
    follower = make_follower(made, client, path)
    assert follower.poll() is False
    assert follower.stats.waiting == "waiting for the file"
    # PyRIT creates the file: first empty (no tables yet), then with its schema and rows.
    path.touch()
    assert follower.poll() is False
    shutil.copyfile(memory_path(fixtures_dir, "pyrit-0.13"), path)
    assert follower.poll() is True
    assert MessagePiece.objects.count() == 5


def test_a_rejected_row_is_reported_once_and_the_rest_is_stored(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-0.13", tmp_path)
    conn = sqlite3.connect(path)
    with conn:
        bad = conn.execute(
            "SELECT id FROM ScoreEntries WHERE id NOT IN "
            "(SELECT last_score_id FROM AttackResultEntries)"
        ).fetchone()[0]
        conn.execute("UPDATE ScoreEntries SET score_type = 'wizard' WHERE id = ?", (bad,))
    conn.close()
    client = following_client(live_server.url)
    report: list[str] = []
    follower = make_follower(made, client, path, report)
    assert follower.run(once=True) == 1
    rejected = [line for line in report if line.startswith("rejected: ")]
    assert len(rejected) == 1
    assert bad in rejected[0]
    assert "score_type" in rejected[0]
    assert MessagePiece.objects.count() == 5
    assert follower.state.rejected_count == 1
    # Not sent again until it changes; the status keeps counting it.
    again = make_follower(made, client, path, report)
    assert again.run(once=True) == 0
    assert again.stats.sent == 0
    assert "rejected 1" in again.stats.line("x", again.state.rejected_count)


def test_an_unreachable_server_loses_nothing(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-0.13", tmp_path)
    good = following_client(live_server.url)
    with socket_closed() as url:
        down = RedteamClient(url, "abcd.efgh", revise=True, max_retries=1, sleep=lambda _: None)
        follower = make_follower(made, down, path)
        assert follower.run(once=True, retry_for=0) == 3
    assert follower.state.entries == 0
    follower.close()
    follower.state.close()
    back = make_follower(made, good, path)
    assert back.run(once=True) == 0
    assert back.stats.sent == sum(len(_ids(path, t, k)) for t, k in _TABLES["pyrit-0.13"])


class socket_closed:
    """A URL nothing listens on."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        return None


def test_media_the_pieces_point_at_are_uploaded(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-1.1", tmp_path)
    client = following_client(live_server.url)
    follower = make_follower(made, client, path, media_from=fixtures_dir / "pyrit-1.1" / "media")
    assert follower.run(once=True) == 0
    piece = MessagePiece.objects.get(id="f457769d-f512-43c2-b151-208fd6554cff")
    assert piece.converted_media_id == piece.converted_value_sha256
    assert MediaBlob.objects.filter(sha256=piece.converted_value_sha256).exists()


def test_the_state_file_is_a_journal_that_survives_a_torn_line(tmp_path: Path) -> None:
    state_path = tmp_path / "state"
    state = FollowState(state_path, "/runs/pyrit.db")
    state.record([("ScoreEntries", "a", "d1", False), ("ScoreEntries", "b", "d2", True)])
    state.record([("ScoreEntries", "a", "d3", False)], stamp=7)
    state.close()
    with state_path.open("a") as handle:
        handle.write('{"t": "ScoreEntries", "i": "c", "d"')  # a crash mid-write
    again = FollowState(state_path, "/runs/pyrit.db")
    assert again.digest("ScoreEntries", "a") == "d3"
    assert again.digest("ScoreEntries", "b") == "d2"
    assert again.digest("ScoreEntries", "c") is None
    assert again.rejected_count == 1
    assert again.stamp == 7  # a restarted follower stamps above it, whatever the clock says
    client = RedteamClient("http://127.0.0.1:9", "abcd.efgh", revise=True)
    again.stamp = 2**62
    MemoryFollower(client, tmp_path / "none.db", again)
    assert client._stamp() > 2**62
    again.stamp = 7
    again.close()
    # Compacted on open: one line per row after the header.
    assert len(state_path.read_text().splitlines()) == 3
    with pytest.raises(FollowStateError, match="not from"):
        FollowState(state_path, "/runs/other.db")


def test_follow_command_once_prints_its_status_and_exit_status(
    live_server: Any,
    fixtures_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-1.1", tmp_path)
    client = new_client(live_server.url)
    monkeypatch.setenv("REDTEAM_API_KEY", client._api_key)
    state = tmp_path / "follow.state"
    argv = ["follow", str(path), "--url", live_server.url, "--once", "--state", str(state)]
    argv += ["--media-from", str(fixtures_dir / "pyrit-1.1" / "media")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    total = sum(len(_ids(path, t, k)) for t, k in _TABLES["pyrit-1.1"])
    assert f"follow {path.name}: sent {total}, pending 0, rejected 0" in err
    assert state.exists()
    assert main(argv) == 0
    assert "sent 0, pending 0, rejected 0" in capsys.readouterr().err
    # No file: 2 with --once.
    missing = ["follow", str(tmp_path / "none.db"), "--url", live_server.url, "--once"]
    assert main(missing) == 2
    monkeypatch.delenv("REDTEAM_API_KEY")
    assert main(argv) == 2


def test_a_follower_given_a_wrong_url_stops_at_once_with_2(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    """Nothing at the URL (404) or a redirect (301) cannot change by asking again: the
    follower, even without --once, reports it and exits 2 instead of retrying forever."""
    path = copy_memory(fixtures_dir, "pyrit-1.1", tmp_path)
    key = new_client(live_server.url)._api_key
    report: list[str] = []
    with RedteamClient(f"{live_server.url}/nothing", key, sleep=_never_sleeps) as client:
        follower = make_follower(made, client, path, report, sleep=_never_sleeps)
        assert follower.run() == 2
    assert len(report) == 1
    assert "HTTP 404" in report[0]
    assert MessagePiece.objects.count() == 0
    assert follower.pending  # nothing was acknowledged: a corrected follower sends it all


def _never_sleeps(seconds: float) -> None:
    raise AssertionError(f"retried an answer that cannot change (would sleep {seconds}s)")


def test_a_row_written_where_a_deleted_one_was_is_sent(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    """Scores are only read when new; a deleted row's rowid taken by a new one still is."""
    path = copy_memory(fixtures_dir, "pyrit-0.13", tmp_path)
    client = following_client(live_server.url)
    follower = make_follower(made, client, path)
    assert follower.poll()
    conn = sqlite3.connect(path)
    with conn:
        last = conn.execute("SELECT * FROM ScoreEntries ORDER BY rowid DESC LIMIT 1").fetchone()
        columns = [d[1] for d in conn.execute("PRAGMA table_info(ScoreEntries)")]
        conn.execute("DELETE FROM ScoreEntries WHERE rowid = (SELECT max(rowid) FROM ScoreEntries)")
        row = dict(zip(columns, last, strict=True))
        row["id"] = str(uuid.uuid4())
        conn.execute(
            f"INSERT INTO ScoreEntries ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))})",
            [row[c] for c in columns],
        )
    conn.close()
    assert follower.poll()
    assert Score.objects.filter(id=row["id"]).exists()


def test_a_scenario_run_is_followed_to_its_end(
    live_server: Any, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    """A 1.1 scenario run (scenario results, scored loose content) as it is written: the
    scenario in progress with one attack result undetermined, then finished."""
    path = tmp_path / "scenario.db"
    shutil.copyfile(SCENARIO_RUN / "pyrit_memory.sqlite", path)
    conn = sqlite3.connect(path)
    final = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT id, scenario_run_state, number_tries, completion_time "
            "FROM ScenarioResultEntries"
        )
    }
    with conn:
        conn.execute(
            "UPDATE ScenarioResultEntries SET scenario_run_state = 'IN_PROGRESS', "
            "number_tries = 1, completion_time = timestamp"
        )
        result = conn.execute("SELECT id, outcome FROM AttackResultEntries LIMIT 1").fetchone()
        conn.execute(
            "UPDATE AttackResultEntries SET outcome = 'undetermined' WHERE id = ?", (result[0],)
        )
    fresh_state()
    client = following_client(live_server.url)
    assert make_follower(made, client, path).run(once=True) == 0
    with conn:
        for scenario_id, (state, tries, completed) in final.items():
            conn.execute(
                "UPDATE ScenarioResultEntries SET scenario_run_state = ?, number_tries = ?, "
                "completion_time = ? WHERE id = ?",
                (state, tries, completed, scenario_id),
            )
        conn.execute("UPDATE AttackResultEntries SET outcome = ? WHERE id = ?", result[::-1])
    conn.close()
    assert make_follower(made, client, path).run(once=True) == 0
    followed = api_snapshot(client)
    fresh_state()
    pushed = new_client(live_server.url)
    pushed.push_memory(str(path))
    assert api_snapshot(pushed) == followed


def test_changes_to_rows_already_read_are_found_a_slice_per_poll(
    live_server: Any,
    fixtures_dir: Path,
    tmp_path: Path,
    made: list[MemoryFollower],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A poll re-reads at most RESCAN_ROWS old rows per table: a change is found within
    ceil(rows / RESCAN_ROWS) polls, while new rows are read at once."""
    monkeypatch.setattr(client_module, "RESCAN_ROWS", 2)
    path = copy_memory(fixtures_dir, "pyrit-1.1", tmp_path)
    follower = make_follower(made, following_client(live_server.url), path)
    assert follower.poll()
    pieces = _ids(path, "PromptMemoryEntries")
    first = pieces[0]
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE PromptMemoryEntries SET prompt_metadata = ? WHERE id = ?",
            (json.dumps({"reviewed": True}), first),
        )
    conn.close()
    polls = 0
    while MessagePiece.objects.get(id=first).prompt_metadata != {"reviewed": True}:
        change_the_file_version(path)
        assert follower.poll()
        polls += 1
        assert polls <= -(-len(pieces) // 2)
    assert polls >= 1


def change_the_file_version(path: Path) -> None:
    """A commit that changes no row the follower sends (so every poll reads again)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS poke (n)")
        conn.execute("INSERT INTO poke VALUES (1)")
    conn.close()


def test_a_file_locked_past_the_busy_timeout_is_read_again_later(
    live_server: Any, fixtures_dir: Path, tmp_path: Path, made: list[MemoryFollower]
) -> None:
    path = copy_memory(fixtures_dir, "pyrit-0.13", tmp_path)
    follower = make_follower(made, following_client(live_server.url), path)
    assert follower.poll()
    assert follower._memory is not None
    follower._memory.conn.execute("PRAGMA busy_timeout = 50")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")  # rollback journal: no reader gets in
    writer.execute("UPDATE AttackResultEntries SET outcome = 'failure'")
    assert follower.run(once=True, retry_for=0) == 2
    assert any("cannot be read" in line for line in follower_reports(follower))
    writer.execute("COMMIT")
    writer.close()
    assert follower.run(once=True) == 0
    assert set(AttackResult.objects.values_list("outcome", flat=True)) == {"failure"}


def follower_reports(follower: MemoryFollower) -> list[str]:
    """The lines a follower made by make_follower reported."""
    report = follower.report
    owner = getattr(report, "__self__", None)
    return list(owner) if isinstance(owner, list) else []
