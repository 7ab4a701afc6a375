"""The piece and conversation tables carry exactly the indexes memory/indexplans.py gives
evidence for, and every catalogued read can use the index it is kept for (PostgreSQL only:
SQLite has other indexes and another planner; bench/explain.py shows the plans on a loaded
database).

Sequential scans are turned off for the plans, as on a table this small a scan beats any
index: the question is whether the read *can* use its index (same columns, same expression,
a partial index's condition implied by the query), which does not depend on the table's size.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memory.indexplans import (
    CONVERSATION_READS,
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


def _common_conversations(count: int = 2000) -> None:
    """Conversations sharing the common values, then ANALYZE: the conversation filters look
    for a value few conversations have, and whether walking the list order beats the value's
    own index depends on the statistics (bench/explain.py plans them on an ANALYZEd database;
    without this, on whatever earlier tests left autovacuum to count)."""
    # In several operations, as bench/explain.py spreads them: a reviewer's scope is a share.
    operations = [Operation.objects.get_or_create(name=f"plans-{k}")[0] for k in range(4)]
    start = timezone.now() - timedelta(days=30)
    Conversation.objects.bulk_create(
        Conversation(
            conversation_id=f"common-{i:05d}",
            operation=operations[i % len(operations)],
            first_timestamp=start + timedelta(minutes=i),
            last_timestamp=start + timedelta(minutes=i),
            attack_class="PromptSendingAttack",
            outcome="failure",
            labels={"operator": "someone"},
            harm_categories=["violence"],
            data_types=["text"],
            converter_classes=["Base64Converter"],
        )
        for i in range(count)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_conversation")


@pytest.mark.parametrize("read", READS, ids=[r.name for r in READS])
def test_each_read_can_use_its_index(read: Any) -> None:
    _store_sample_rows()
    if read in CONVERSATION_READS:
        _common_conversations()
    # Every operation: on a table this small, one operation's few conversations would drive
    # the plan (bench/explain.py plans each read on a reviewer's scope over a loaded table).
    scope = reader_scope() if read.restricted else Scope.everything_scope()
    qs = read.build(scope, sample_values())
    used = plan_indexes(explain(qs, force_index=True, force_order=read.ordered))
    assert read.uses_its_index(used), f"{read.name} ({read.where}) plans with {sorted(used)}"
