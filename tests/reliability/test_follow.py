"""`redteam.client follow` against a real gunicorn while a writer process grows a PyRIT memory
file (tests/reliability/follow_writer.py), with the follower and the server killed mid-way.

Per PyRIT line (1.1 in WAL mode, 0.13 in rollback-journal mode): the follower runs as
`python -m redteam.client follow`; a third of the way through the writer's rounds it is killed
(SIGKILL) and started again as a copied single file outside the project; two thirds of the way
the server (master and workers) is killed and started again on the same port. When the writer
is done, the live follower is interrupted and `follow --once` sends what it had not sent yet
(exit status 0). The server then holds exactly the writer's rows, no more and no fewer, each in
the version the file ends with (results finished, scenarios completed, pieces relabelled or
re-annotated, conversations retried).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.models import AttackResult, Conversation, MessagePiece, ScenarioResult, Score
from seeds.models import Seed
from tests.reliability.conftest import (
    REPO_ROOT,
    ServedApp,
    free_port,
    gunicorn_env,
    launch_gunicorn,
    served_database_url,
)

pytestmark = [pytest.mark.reliability, pytest.mark.django_db(transaction=True)]

# line -> (journal mode, rounds, pause between the writer's commits in seconds): about five
# seconds of writing each.
RUNS = {"pyrit-1.1": ("wal", 6, 0.02), "pyrit-0.13": ("delete", 15, 0.03)}


class Server:
    """A gunicorn of its own on the served database, in its own process group."""

    def __init__(self, served: ServedApp, media: Path) -> None:
        self.port = free_port()
        self.env = gunicorn_env(served_database_url(served.settings), media, self.port, 2)
        # The follower talks plain HTTP to 127.0.0.1 and sends no proxy header.
        self.env["SECURE_SSL_REDIRECT"] = "0"
        self.app: ServedApp | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.app = launch_gunicorn(self.env, self.port, 2, new_session=True)

    def kill(self) -> None:
        """SIGKILL the master and its workers at once."""
        if self.app is not None and self.app.alive():
            os.killpg(self.app.process.pid, signal.SIGKILL)
            self.app.process.wait()


@pytest.fixture
def server(served: ServedApp, tmp_path: Path) -> Iterator[Server]:
    own = Server(served, tmp_path / "media")
    own.start()
    yield own
    own.kill()


def _interruptible() -> None:
    """In the child before exec: SIGINT back to its default. A suite started in the
    background by a non-interactive shell inherits SIGINT ignored, and Python then installs
    no KeyboardInterrupt handler, so the follower would never see the interruption."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _follower(command: list[str], key: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env["REDTEAM_API_KEY"] = key
    env.pop("PYTHONPATH", None)
    with log.open("ab") as handle:
        return subprocess.Popen(
            command, cwd=cwd, env=env, stderr=handle, stdout=handle, preexec_fn=_interruptible
        )


def _rows(path: Path, table: str, columns: str) -> dict[str, tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        if table not in names:
            return {}
        return {str(r[0]): tuple(r[1:]) for r in conn.execute(f'SELECT {columns} FROM "{table}"')}
    finally:
        conn.close()


def _json(text: Any) -> Any:
    value = json.loads(text) if isinstance(text, str) else text
    return value or {}


@pytest.mark.parametrize("line", list(RUNS))
def test_the_server_ends_with_exactly_the_writers_rows(
    served: ServedApp, server: Server, fixtures_dir: Path, tmp_path: Path, line: str
) -> None:
    mode, rounds, pause = RUNS[line]
    key = served.make_key("ingest", "read")[1]
    template = fixtures_dir / line / "pyrit_memory.sqlite"
    target = tmp_path / "pyrit.db"
    shutil.copyfile(template, target)
    state = tmp_path / "follow.state"
    log = tmp_path / "follow.log"
    follow = ["follow", str(target), "--url", server.url, "--state", str(state)]
    follow += ["--interval", "0.2"]
    writing = ["--rounds", str(rounds), "--pause", str(pause), "--mode", mode]
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability.follow_writer",
            str(template),
            str(target),
            *writing,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    follower = _follower([sys.executable, "-m", "redteam.client", *follow], key, REPO_ROOT, log)
    # The client as users copy it: one file, run outside the project.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(REPO_ROOT / "redteam" / "client.py", alone / "redteam_client.py")
    copied = [sys.executable, str(alone / "redteam_client.py"), *follow]
    assert writer.stdout is not None
    try:
        for output in writer.stdout:
            if output.strip() == f"round {rounds // 3}":
                follower.kill()  # SIGKILL, mid-way through whatever it was doing
                follower.wait()
                follower = _follower(copied, key, alone, log)
            if output.strip() == f"round {2 * rounds // 3}":
                server.kill()
                server.start()
        assert writer.wait() == 0
        assert MessagePiece.objects.using(served.alias).exists()  # the live follower sent
        follower.send_signal(signal.SIGINT)
        assert follower.wait(timeout=60) == 130
        done = subprocess.run(
            [*copied, "--once"],
            cwd=alone,
            env={**os.environ, "REDTEAM_API_KEY": key},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for process in (writer, follower):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert done.returncode == 0, done.stderr + log.read_text()
    assert "pending 0, rejected 0" in done.stderr
    assert "rejected:" not in log.read_text()

    db = served.alias
    pieces = _rows(
        target,
        "PromptMemoryEntries",
        "id, labels" if line == "pyrit-0.13" else "id, prompt_metadata",
    )
    stored_pieces = dict(
        MessagePiece.objects.using(db).values_list(
            "id", "labels" if line == "pyrit-0.13" else "prompt_metadata"
        )
    )
    assert {str(k) for k in stored_pieces} == set(pieces)
    assert {str(k): _json(v) for k, v in stored_pieces.items()} == {
        k: _json(v[0]) for k, v in pieces.items()
    }
    scores = _rows(target, "ScoreEntries", "id")
    assert {str(s) for s in Score.objects.using(db).values_list("id", flat=True)} == set(scores)
    results = _rows(
        target,
        "AttackResultEntries",
        "id, outcome, executed_turns, last_response_id, last_score_id",
    )
    stored_results = {
        str(r[0]): (r[1], r[2], str(r[3]) if r[3] else None, str(r[4]) if r[4] else None)
        for r in AttackResult.objects.using(db).values_list(
            "attack_result_id", "outcome", "executed_turns", "last_response_id", "last_score_id"
        )
    }
    assert stored_results == results
    scenarios = _rows(target, "ScenarioResultEntries", "id, scenario_run_state")
    stored_scenarios = dict(
        ScenarioResult.objects.using(db).values_list("id", "scenario_run_state")
    )
    assert {str(k): (v,) for k, v in stored_scenarios.items()} == scenarios
    conversations = _rows(target, "Conversations", "conversation_id, retries")
    if conversations:
        stored_conversations = dict(
            Conversation.objects.using(db)
            .filter(declared=True)
            .values_list("conversation_id", "retries")
        )
        assert {k: v or [] for k, v in stored_conversations.items()} == {
            k: (json.loads(v[0]) if v[0] else None) or [] for k, v in conversations.items()
        }
    assert Seed.objects.using(db).count() == len(_rows(target, "SeedPromptEntries", "id"))
