"""A stand-in for PyRIT writing its SQLite memory during a campaign (run as a process).

    python -m tests.reliability.follow_writer TEMPLATE TARGET --rounds N --pause S --mode wal

TARGET (a copy of a PyRIT fixture memory file, either line) grows by N rounds. Each round is
the TEMPLATE run again under fresh ids (every UUID, also inside JSON columns, replaced the same
way, so every reference stays inside the round), written the way PyRIT writes: each message's
pieces in one commit, then the scored content and scores, then the attack results as running
(undetermined, no last response or score) and the scenario results as in progress; then, as
PyRIT updates rows in place, the pieces of one conversation get new labels (0.13) or prompt
metadata (1.x), a conversation a retry (1.x), and the results and scenarios their final
values. One short transaction per step, `--pause` seconds apart, with SQLite's own locking (a
busy timeout, as SQLAlchemy's default). Seeds are not copied (the library de-duplicates them
by value). Prints "done" when finished.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
COPIED = (
    "Conversations",
    "PromptMemoryEntries",
    "ScorableContentEntries",
    "ScoreEntries",
    "AttackResultEntries",
    "ScenarioResultEntries",
)


def renumber(value: Any, round_number: int) -> Any:
    """Every UUID in a text value replaced by one derived from (round, uuid)."""
    if not isinstance(value, str):
        return value
    return UUID_RE.sub(
        lambda m: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{round_number}:{m.group(0)}")), value
    )


class Writer:
    """One connection to TARGET, a step per transaction."""

    def __init__(self, target: str, pause: float) -> None:
        self.conn = sqlite3.connect(target, timeout=30, isolation_level=None)
        self.pause = pause
        self.columns: dict[str, list[str]] = {}

    def step(self, work: Callable[[sqlite3.Connection], object]) -> None:
        """One PyRIT write: BEGIN IMMEDIATE, the statements, COMMIT, then the pause."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            work(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        time.sleep(self.pause)

    def execute(self, sql: str, params: Sequence[Any]) -> None:
        """One statement in a step of its own."""
        self.step(lambda conn: conn.execute(sql, params))

    def insert(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows of a table in one step."""
        if not rows:
            return
        columns = list(rows[0])
        sql = (
            f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})'
        )
        self.step(lambda conn: conn.executemany(sql, [[r[c] for c in columns] for r in rows]))


def template_rows(path: str) -> dict[str, list[dict[str, Any]]]:
    """The template's rows of every copied table it has, in rowid order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    rows = {
        table: [dict(r) for r in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')]
        for table in COPIED
        if table in names
    }
    conn.close()
    return rows


def write_round(writer: Writer, template: dict[str, list[dict[str, Any]]], number: int) -> None:
    """One round: the template run under fresh ids, then PyRIT's in-place updates."""
    rows = {
        t: [{k: renumber(v, number) for k, v in r.items()} for r in rs]
        for t, rs in template.items()
    }
    line = (
        "0.13"
        if rows["PromptMemoryEntries"] and "labels" in rows["PromptMemoryEntries"][0]
        else "1.x"
    )
    writer.insert("Conversations", rows.get("Conversations", []))
    messages: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for piece in rows["PromptMemoryEntries"]:
        messages.setdefault((piece["conversation_id"], piece["sequence"]), []).append(piece)
    for pieces in messages.values():
        writer.insert("PromptMemoryEntries", pieces)
    writer.insert("ScorableContentEntries", rows.get("ScorableContentEntries", []))
    for score in rows.get("ScoreEntries", []):
        writer.insert("ScoreEntries", [score])
    results = rows.get("AttackResultEntries", [])
    running = [
        dict(
            r,
            outcome="undetermined",
            outcome_reason=None,
            executed_turns=0,
            last_response_id=None,
            last_score_id=None,
        )
        for r in results
    ]
    writer.insert("AttackResultEntries", running)
    scenarios = rows.get("ScenarioResultEntries", [])
    writer.insert(
        "ScenarioResultEntries",
        [
            dict(s, scenario_run_state="IN_PROGRESS", completion_time=s["timestamp"])
            for s in scenarios
        ],
    )
    first = rows["PromptMemoryEntries"][0]
    if line == "0.13":
        writer.execute(
            "UPDATE PromptMemoryEntries SET labels = json_set(labels, '$.reviewed', ?) "
            "WHERE conversation_id = ?",
            (f"round {number}", first["conversation_id"]),
        )
    else:
        writer.execute(
            "UPDATE PromptMemoryEntries SET prompt_metadata = ? WHERE id = ?",
            (json.dumps({"reviewed": f"round {number}"}), first["id"]),
        )
        conversations = rows.get("Conversations", [])
        if conversations:
            writer.execute(
                "UPDATE Conversations SET retries = ? WHERE conversation_id = ?",
                (
                    json.dumps([{"sequence": 1, "reason": "json_parsing"}]),
                    conversations[0]["conversation_id"],
                ),
            )
    for result in results:
        writer.execute(
            "UPDATE AttackResultEntries SET outcome = ?, outcome_reason = ?, "
            "executed_turns = ?, last_response_id = ?, last_score_id = ? WHERE id = ?",
            (
                result["outcome"],
                result["outcome_reason"],
                result["executed_turns"],
                result["last_response_id"],
                result["last_score_id"],
                result["id"],
            ),
        )
    for scenario in scenarios:
        writer.execute(
            "UPDATE ScenarioResultEntries SET scenario_run_state = ?, completion_time = ? "
            "WHERE id = ?",
            (scenario["scenario_run_state"], scenario["completion_time"], scenario["id"]),
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("template")
    parser.add_argument("target")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--pause", type=float, default=0.02)
    parser.add_argument("--mode", choices=("wal", "delete"), default="delete")
    args = parser.parse_args(argv)
    template = template_rows(args.template)
    writer = Writer(args.target, args.pause)
    writer.conn.execute(f"PRAGMA journal_mode={args.mode}")
    for number in range(1, args.rounds + 1):
        write_round(writer, template, number)
        print(f"round {number}", flush=True)
    writer.conn.close()
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
