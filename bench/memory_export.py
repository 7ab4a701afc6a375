"""Exporting a PyRIT memory file (`manage.py export_pyrit_memory`): rows/s and queries.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_export .venv/bin/python \\
        bench/memory_export.py [--runs 400]

Recreates the scratch database (its name must start with "bench"), imports a PyRIT 1.1 memory
file holding the fixture's run `--runs` times under new ids (bench/memory_file.py's builder),
then exports everything as a 1.x and a 0.13 file, and one run's slice by its label, and prints
rows written per second and the queries each export made (constant per chunk of 200
conversations; redteam/site/memory_export.py). No budget: figures to compare with the import.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import django_on_scratch_database
from memory_file import build


def main() -> None:
    """Import the built file, then time the exports."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    django_on_scratch_database("bench/memory_export.py")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from redteam.common.access import Scope
    from redteam.site.memory_export import write_memory_file
    from redteam.site.memory_slice import select_slice
    from redteam.site.pyrit_sqlite import import_pyrit_memory
    from redteam.site.run_export import select_conversations

    scope = Scope.everything_scope()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "pyrit.db"
        build(source, args.runs)
        start = time.perf_counter()
        report = import_pyrit_memory(source, media=False)
        imported_s = time.perf_counter() - start
        rows = sum(t.stored for t in report.tables.values())
        print(f"import: {rows} rows in {imported_s:.1f} s, {rows / imported_s:,.0f} rows/s")
        from django.http import QueryDict

        cases = (
            ("everything, 1.x", select_conversations(None, scope=scope), "1.x"),
            ("everything, 0.13", select_conversations(None, scope=scope), "0.13"),
            (
                "one run by label",
                select_slice(
                    "conversations",
                    QueryDict(f"label=operation:op_{args.runs // 2}"),
                    scope=scope,
                ),
                "1.x",
            ),
        )
        for name, selection, shape in cases:
            out = Path(tmp) / f"out-{shape}.db"
            out.unlink(missing_ok=True)
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                written = write_memory_file(out, selection, shape=shape)  # type: ignore[arg-type]
                seconds = time.perf_counter() - start
            total = sum(written.tables.values())
            print(
                f"export {name}: {len(selection.conversation_ids)} conversations, {total} rows, "
                f"{seconds:.2f} s, {total / seconds:,.0f} rows/s, {len(queries)} queries, "
                f"{out.stat().st_size / 1e6:.1f} MB"
            )


if __name__ == "__main__":
    main()
