"""Following a PyRIT memory file (`redteam.client follow`) against a plain push of the same rows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/follow.py

What it does, in one run on one machine:
1. (Re)creates the scratch database (its name must start with "bench"), migrates it, makes a
   user and an ingest API key, and starts gunicorn on 127.0.0.1 (DEBUG off).
2. Catch-up: builds two PyRIT 1.1 memory files, each the fixture's run (7 conversations, 25
   pieces, 11 scores, 6 attack results) `--runs` times under fresh ids; pushes the first with
   `push_memory` (the reference) and follows the second with `follow --once` (the follower's
   reading, digests, state journal and chunking included), alternating halves so that other
   load weighs on both alike; rows/s of each and the ratio.
3. Rescan: on the followed file, one row changed, then one poll: the time a poll takes to find
   it among every row (what bounds the lag on a large file).
4. Lag: a follower process (`python -m redteam.client follow --interval I`) runs on a live
   file while this script commits one run at a time and polls the API until the run's first
   conversation is visible: ms from commit to visible (median, 95th percentile). The
   reference: the same, with this script pushing each run itself right after the commit
   (`push_memory` of the run's conversations). Ratio: follow / push.
Budget: new rows visible within 2 s of PyRIT's commit (95th percentile of the follower's
lag); the exit status is 1 when it is missed (after printing everything).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _common import ROOT, recreate_database
from ingest import database_url, manage, server_env, start_server

from redteam.client import FollowState, MemoryFollower, PyritMemoryFile, RedteamClient

PYTHON = sys.executable
FIXTURE = ROOT.parent / "shared" / "fixtures" / "pyrit-1.1" / "pyrit_memory.sqlite"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
LAG_BUDGET_MS = 2000
TABLES = (
    "Conversations",
    "PromptMemoryEntries",
    "ScorableContentEntries",
    "ScoreEntries",
    "AttackResultEntries",
)


class RunCopier:
    """Appends the fixture's run to a memory file under fresh ids, one transaction a run."""

    def __init__(self) -> None:
        conn = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
        self.rows = {t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in TABLES}
        self.columns = {
            t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')] for t in TABLES
        }
        conn.close()
        first = self.columns["PromptMemoryEntries"].index("conversation_id")
        self.first_conversation = str(self.rows["PromptMemoryEntries"][0][first])

    def append(self, conn: sqlite3.Connection) -> list[str]:
        """One copy of the run, committed; returns its conversation ids (first one first)."""
        fresh: dict[str, str] = {}

        def rename(value: Any) -> Any:
            if not isinstance(value, str):
                return value
            return UUID_RE.sub(lambda m: fresh.setdefault(m.group(0), str(uuid.uuid4())), value)

        with conn:
            for table in TABLES:
                marks = ",".join("?" * len(self.columns[table]))
                conn.executemany(
                    f'INSERT INTO "{table}" VALUES ({marks})',
                    [[rename(v) for v in row] for row in self.rows[table]],
                )
        first = fresh[self.first_conversation]
        index = self.columns["PromptMemoryEntries"].index("conversation_id")
        others = {fresh[str(r[index])] for r in self.rows["PromptMemoryEntries"]} - {first}
        return [first, *sorted(others)]


def build(path: Path, runs: int, copier: RunCopier) -> int:
    """A memory file holding the fixture's schema and `runs` copies of its run; its rows."""
    shutil.copyfile(FIXTURE, path)
    conn = sqlite3.connect(path)
    with conn:
        for table in (*TABLES, "SeedPromptEntries"):
            conn.execute(f'DELETE FROM "{table}"')
    for _ in range(runs):
        copier.append(conn)
    conn.close()
    with PyritMemoryFile(path) as memory:
        return sum(memory.count(s.table) for s in memory.specs())


def visible_after(port: int, key: str, conversation_id: str, start: float) -> float:
    """Seconds from `start` until the conversation's pieces are listed (polled every 10 ms,
    30 s at most)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {key}"}
    path = f"/api/v1/message-pieces/?conversation_id={conversation_id}&page_size=1"
    deadline = start + 30
    try:
        while time.perf_counter() < deadline:
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            body = response.read()
            if response.status == 200 and json.loads(body)["results"]:
                return time.perf_counter() - start
            time.sleep(0.01)
    finally:
        conn.close()
    raise SystemExit(f"conversation {conversation_id} not visible within 30 s")


def catch_up(
    args: argparse.Namespace, url: str, key: str, tmp: Path, copier: RunCopier
) -> dict[str, float]:
    """Rows/s of push_memory vs follow --once on files of the same size; a poll's rescan."""
    pushed_rows = followed_rows = 0
    push_s = follow_s = 0.0
    halves = max(1, args.runs // 2)
    follower: MemoryFollower | None = None
    for half in range(2):
        push_file, follow_file = tmp / f"push{half}.db", tmp / f"follow{half}.db"
        pushed_rows += build(push_file, halves, copier)
        followed_rows += build(follow_file, halves, copier)
        with RedteamClient(url, key, upload_media=False) as client:
            start = time.perf_counter()
            client.push_memory(str(push_file), raise_on_rejected=False)
            push_s += time.perf_counter() - start
        client = RedteamClient(url, key, upload_media=False, revise=True)
        state = FollowState(tmp / f"follow{half}.state", str(follow_file.resolve()))
        follower = MemoryFollower(client, follow_file, state, report=lambda _: None)
        start = time.perf_counter()
        if follower.run(once=True) != 0:
            raise SystemExit("follow --once rejected rows")
        follow_s += time.perf_counter() - start
    assert follower is not None
    # One row changes in the last followed file: how long a poll takes to find and send it.
    conn = sqlite3.connect(follower.path)
    with conn:
        conn.execute(
            "UPDATE AttackResultEntries SET outcome_reason = 'changed' "
            "WHERE rowid = (SELECT max(rowid) FROM AttackResultEntries)"
        )
    conn.close()
    start = time.perf_counter()
    follower.poll()
    rescan_s = time.perf_counter() - start
    rows_in_file = followed_rows // 2
    follower.close()
    follower.state.close()
    follower.client.close()
    return {
        "push_rows": pushed_rows,
        "push_rate": pushed_rows / push_s,
        "follow_rows": followed_rows,
        "follow_rate": followed_rows / follow_s,
        "rescan_rows": rows_in_file,
        "rescan_ms": rescan_s * 1000,
    }


def _default_sigint() -> None:
    """In the follower's process before exec: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def lags(
    args: argparse.Namespace, url: str, key: str, tmp: Path, copier: RunCopier
) -> dict[str, Any]:
    """Commit-to-visible ms: a follower process, and this script pushing after each commit."""
    port = urlsplit(url).port or 80
    out: dict[str, Any] = {}
    for mode in ("push", "follow"):
        live = tmp / f"live-{mode}.db"
        build(live, args.base_runs, copier)
        follower: subprocess.Popen[bytes] | None = None
        client = RedteamClient(url, key, upload_media=False)
        if mode == "follow":
            # Catch up with the file's existing rows first; then measure new commits.
            command = [PYTHON, "-m", "redteam.client", "follow", str(live), "--url", url]
            command += ["--interval", str(args.interval), "--state", str(tmp / "live.state")]
            once = subprocess.run(
                [*command, "--once"],
                env={**os.environ, "REDTEAM_API_KEY": key},
                cwd=ROOT,
                capture_output=True,
                check=False,
            )
            if once.returncode != 0:
                raise SystemExit(f"follow --once failed: {once.stderr.decode()[-2000:]}")
            follower = subprocess.Popen(
                command,
                env={**os.environ, "REDTEAM_API_KEY": key},
                cwd=ROOT,
                stderr=subprocess.DEVNULL,
                # A benchmark started in the background (`make bench &`) inherits SIGINT
                # ignored, and Python then never raises KeyboardInterrupt: stop it as a
                # terminal's Ctrl-C would.
                preexec_fn=_default_sigint,
            )
        else:
            client.push_memory(str(live), raise_on_rejected=False)
        conn = sqlite3.connect(live, isolation_level="DEFERRED")
        measured: list[float] = []
        try:
            # One run first, not timed: the follower's first poll reads the whole file.
            for sample in range(args.samples + 1):
                conversations = copier.append(conn)
                committed = time.perf_counter()
                if mode == "push":
                    client.push_memory(
                        str(live), conversation_ids=conversations, raise_on_rejected=False
                    )
                lag = visible_after(port, key, conversations[0], committed)
                if sample:
                    measured.append(lag)
                time.sleep(args.gap)
        finally:
            conn.close()
            client.close()
            if follower is not None:
                follower.send_signal(signal.SIGINT)
                try:
                    follower.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    # The lags are measured; a follower slow to stop only delays the run.
                    print("  (the follower did not stop within 60 s of SIGINT; killed)")
                    follower.kill()
                    follower.wait()
        measured.sort()
        out[mode] = (
            statistics.median(measured) * 1000,
            measured[min(len(measured) - 1, int(0.95 * len(measured)))] * 1000,
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run both phases and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=400, help="fixture runs per catch-up file")
    parser.add_argument("--base-runs", type=int, default=200, help="runs in the live file")
    parser.add_argument("--samples", type=int, default=30, help="commits timed per mode")
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between commits")
    parser.add_argument("--interval", type=float, default=0.5, help="the follower's --interval")
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 2))
    parser.add_argument("--port", type=int, default=8196)
    args = parser.parse_args(argv)

    db = database_url()
    print(f"database: {urlsplit(db)._replace(netloc=urlsplit(db).hostname or '').geturl()}")
    recreate_database(db)
    env = server_env(db)
    manage(env, "migrate", "--noinput", "-v0")
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; User.objects.get_or_create(username='bench')",
    )
    # The fixture's results name fixture_op_1; the rest joins the key's default, `bench`.
    for operation in ("bench", "fixture_op_1"):
        manage(env, "create_operation", operation)
        manage(env, "grant", "--user", "bench", "--operation", operation, "--role", "reviewer")
    key = manage(
        env,
        "create_api_key",
        "--user",
        "bench",
        "--scopes",
        "ingest,read",
        "--operations",
        "bench,fixture_op_1",
    ).strip()
    copier = RunCopier()
    server = start_server(env, args.port, args.workers)
    url = f"http://127.0.0.1:{args.port}"
    try:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            rates = catch_up(args, url, key, tmp, copier)
            lag = lags(args, url, key, tmp, copier)
    finally:
        server.stop()

    print(f"catch-up, push_memory: {rates['push_rows']} rows, {rates['push_rate']:,.0f} rows/s")
    print(
        f"catch-up, follow --once: {rates['follow_rows']} rows, {rates['follow_rate']:,.0f} "
        f"rows/s = {rates['follow_rate'] / rates['push_rate']:.2f} x push"
    )
    print(
        f"one changed row found and sent in a file of {rates['rescan_rows']} rows: "
        f"{rates['rescan_ms']:.0f} ms"
    )
    push_median, push_p95 = lag["push"]
    follow_median, follow_p95 = lag["follow"]
    print(
        f"commit to visible, pushing after each commit: median {push_median:.0f} ms, "
        f"p95 {push_p95:.0f} ms"
    )
    print(
        f"commit to visible, follow --interval {args.interval}: median {follow_median:.0f} ms "
        f"({follow_median / push_median:.1f} x push), p95 {follow_p95:.0f} ms "
        f"({follow_p95 / push_p95:.1f} x push)"
    )
    met = follow_p95 <= LAG_BUDGET_MS
    print(f"budget: p95 commit to visible <= {LAG_BUDGET_MS} ms: {'ok' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
