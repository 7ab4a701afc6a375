"""redteam.site.pyrit_sqlite: bad files are refused clearly; bad rows are reported, not fatal."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memory.models import MessagePiece
from redteam.site.pyrit_sqlite import PyritSqliteError, import_pyrit_memory, iter_import

pytestmark = pytest.mark.django_db


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PyritSqliteError, match="does not exist"):
        import_pyrit_memory(tmp_path / "nope.sqlite")


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(PyritSqliteError, match="not a SQLite database"):
        import_pyrit_memory(path)


def test_a_sqlite_file_without_pyrit_tables_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(PyritSqliteError, match="not a PyRIT memory file"):
        import_pyrit_memory(path)


def test_bad_rows_are_reported_and_the_rest_is_imported(tmp_path: Path, fixtures_dir: Path) -> None:
    path = tmp_path / "memory.sqlite"
    shutil.copy(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite", path)
    path.chmod(0o644)
    conn = sqlite3.connect(path)
    # A lone system piece (its own message) with an unknown role.
    conn.execute(
        "UPDATE PromptMemoryEntries SET role = 'wizard' "
        "WHERE id = 'f82b9c68-ed8c-483a-9bf9-5cd4fb6fa256'"
    )
    conn.commit()
    conn.close()
    report = import_pyrit_memory(path)
    pieces = report.tables["PromptMemoryEntries"]
    assert (pieces.read, pieces.stored, pieces.rejected) == (25, 24, 1)
    assert report.rejected == 1
    assert "f82b9c68-ed8c-483a-9bf9-5cd4fb6fa256" in report.errors[0]
    assert "role" in report.errors[0]
    assert MessagePiece.objects.count() == 24
    assert report.tables["AttackResultEntries"].stored == 6


def test_iter_import_yields_progress_per_chunk_keeping_messages_whole(fixtures_dir: Path) -> None:
    path = fixtures_dir / "pyrit-0.13" / "pyrit_memory.sqlite"
    steps = [(s.table, s.done, s.total) for s in iter_import(path, chunk_size=2)]
    # Chunks of 2 rows, but the second message (2 pieces) would straddle the first cut.
    assert [s for s in steps if s[0] == "PromptMemoryEntries"] == [
        ("PromptMemoryEntries", 3, 5),
        ("PromptMemoryEntries", 5, 5),
    ]
    assert ("SeedPromptEntries", 2, 11) in steps
    assert steps[-1][0] == "done"
    assert not any(table == "Conversations" for table, _, _ in steps)  # no such 0.13 table
