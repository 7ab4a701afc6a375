"""Reading PyRIT SQLite memory files: the reader `push` and `import_pyrit_memory` share.

    .venv/bin/python bench/memory_file.py [--runs 5000]

Builds a scratch PyRIT 1.1 memory file by copying the fixture's run (7 conversations, 25
pieces, 11 scores, 6 attack results) `--runs` times under new ids, then measures, in one
process, without a server:
1. `PyritMemoryFile.read()` of every table (rows -> PyRIT dicts), in rows/s;
2. `select(labels=...)` of one run's closed set (its results, the conversations they reference,
   pieces, scores), in ms, on the whole file.
No budget: the figures are for comparing with ingest rates (bench/ingest.py), since a push or
an import of a file is at most as fast as its reading.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

from _common import ROOT

from redteam.client import PyritMemoryFile

FIXTURE = ROOT.parent / "shared" / "fixtures" / "pyrit-1.1" / "pyrit_memory.sqlite"
# Columns holding ids that must be renamed in each copy (table -> columns).
ID_COLUMNS = {
    "PromptMemoryEntries": ("id", "conversation_id", "original_prompt_id"),
    "Conversations": ("conversation_id",),
    "ScoreEntries": ("id", "prompt_request_response_id"),
    "AttackResultEntries": (
        "id",
        "conversation_id",
        "last_response_id",
        "last_score_id",
        "pruned_conversation_ids",
        "adversarial_chat_conversation_ids",
    ),
}


def build(path: Path, runs: int) -> None:
    """The fixture's run `runs` times, each copy under fresh ids and its own operation label."""
    shutil.copyfile(FIXTURE, path)
    conn = sqlite3.connect(path)
    originals = {t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in ID_COLUMNS}
    columns = {t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')] for t in ID_COLUMNS}
    ids = {
        str(v)
        for t, rows in originals.items()
        for row in rows
        for c in ID_COLUMNS[t]
        if c in ("id", "conversation_id") and (v := row[columns[t].index(c)])
    }
    with conn:
        for run in range(runs):
            renamed = {i: str(uuid.uuid4()) for i in ids}
            for table, rows in originals.items():
                cols = columns[table]
                out = []
                for row in rows:
                    values = list(row)
                    for c in ID_COLUMNS[table]:
                        k = cols.index(c)
                        if isinstance(values[k], str):
                            for old, new in renamed.items():
                                values[k] = values[k].replace(old, new)
                    if table == "AttackResultEntries":
                        k = cols.index("labels")
                        values[k] = values[k].replace("fixture_op_1", f"op_{run}")
                    out.append(values)
                marks = ",".join("?" * len(cols))
                conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', out)
    conn.close()


def main() -> None:
    """Build the file, then time a full read and a label selection."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pyrit.db"
        build(path, args.runs)
        with PyritMemoryFile(path) as memory:
            rows = sum(memory.count(s.table) for s in memory.specs())
            start = time.perf_counter()
            items = memory.read()
            read_s = time.perf_counter() - start
            start = time.perf_counter()
            selection = memory.select(labels={"operation": f"op_{args.runs // 2}"})
            select_s = time.perf_counter() - start
        assert sum(len(v) for v in items.values()) == rows
        print(f"memory file: {rows} rows ({path.stat().st_size / 1e6:.1f} MB)")
        print(f"read every table: {read_s:.2f} s, {rows / read_s:,.0f} rows/s")
        picked = {t: len(v) for t, v in selection.items() if t != "SeedPromptEntries"}
        print(f"select one run by labels: {select_s * 1000:.0f} ms, {picked}")


if __name__ == "__main__":
    main()
