"""The piece and conversation tables carry exactly the indexes memory/indexplans.py gives
evidence for, and every catalogued read can use the index it is kept for (PostgreSQL only:
SQLite has other indexes and another planner; bench/explain.py shows the plans on a loaded
database).

Sequential scans are turned off for the plans, as on a table this small a scan beats any
index: the question is whether the read *can* use its index (same columns, same expression,
a partial index's condition implied by the query), which does not depend on the table's size.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memory.indexplans import (
    DROPPED,
    READS,
    TABLES,
    explain,
    plan_indexes,
    reader_scope,
    sample_values,
)
from memory.models import Conversation
from memory.services import store_message_pieces
from redteam.common.access import Scope
from redteam.common.models import Operation
from tests.memory.factories import identifier, legacy_piece

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the index set and the plans are PostgreSQL's (SQLite plans differently)",
    ),
]


def _indexes(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s", [table])
        return {row[0] for row in cursor.fetchall()}


def test_tables_carry_exactly_the_indexes_with_evidence() -> None:
    for table, listed in TABLES.items():
        present = _indexes(table)
        assert present - set(listed) == set(), (
            f"{table} has indexes without evidence: add the reads that need them to "
            "memory/indexplans.py and re-run bench/explain.py"
        )
        assert set(listed) - present == set(), f"{table} lacks listed indexes"
        assert present.isdisjoint(DROPPED), f"a dropped index is back on {table}"


def _store_sample_rows() -> None:
    Operation.objects.get_or_create(name="plans")
    outcomes = store_message_pieces(
        [
            legacy_piece(
                labels={"operation": "plans"},
                prompt_target_identifier=identifier("OpenAIChatTarget"),
                converter_identifiers=[identifier("Base64Converter")],
            )
        ]
    )
    assert [o.status for o in outcomes] == ["stored"]
    assert Conversation.objects.filter(operation__isnull=False).exists()


@pytest.mark.parametrize("read", READS, ids=[r.name for r in READS])
def test_each_read_can_use_its_index(read: Any) -> None:
    _store_sample_rows()
    # Every operation: on a table this small, one operation's few conversations would drive
    # the plan (bench/explain.py plans each read on a reviewer's scope over a loaded table).
    scope = reader_scope() if read.restricted else Scope.everything_scope()
    qs = read.build(scope, sample_values())
    used = plan_indexes(explain(qs, force_index=True, force_order=read.ordered))
    assert read.uses_its_index(used), f"{read.name} ({read.where}) plans with {sorted(used)}"
