"""Data migrations of the memory app, run forward over rows stored by the previous schema."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("memory", "0003_piece_unindexed_dump_and_media_fks")
AFTER = ("memory", "0004_message_piece_position")


@pytest.fixture
def executor(transactional_db: Any) -> Iterator[MigrationExecutor]:
    """The memory app rolled back to BEFORE; every app is migrated to the latest afterwards."""
    runner = MigrationExecutor(connection)
    runner.migrate([BEFORE])
    yield runner
    runner = MigrationExecutor(connection)
    runner.loader.build_graph()
    runner.migrate(runner.loader.graph.leaf_nodes())


def test_message_piece_position_numbers_existing_pieces_in_insertion_order(
    executor: MigrationExecutor,
) -> None:
    apps = executor.loader.project_state([BEFORE]).apps
    conversation_model = apps.get_model("memory", "Conversation")
    piece_model = apps.get_model("memory", "MessagePiece")
    conversation = conversation_model.objects.create(conversation_id="old")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    batch_one, batch_two = t0 + timedelta(hours=1), t0 + timedelta(hours=2)

    def piece(sequence: int, value: str, *, ingested: datetime, offset_us: int = 0) -> Any:
        pid = uuid.uuid4()
        row = piece_model.objects.create(
            id=pid,
            conversation=conversation,
            sequence=sequence,
            role="user",
            timestamp=t0 + timedelta(microseconds=offset_us),
            original_value=value,
            original_value_data_type="text",
            converted_value=value,
            converted_value_data_type="text",
            original_prompt_id=pid,
        )
        # ingested_at is auto_now_add: set the batch time afterwards.
        piece_model.objects.filter(pk=pid).update(ingested_at=ingested)
        return row

    # Two pieces of one batch sharing a timestamp (inserted text first), a third added by a
    # later batch, and a single-piece message.
    text = piece(0, "text", ingested=batch_one)
    image = piece(0, "image", ingested=batch_one)
    late = piece(0, "late", ingested=batch_two, offset_us=-5)
    alone = piece(1, "alone", ingested=batch_one)

    executor.loader.build_graph()
    executor.migrate([AFTER])
    apps = executor.loader.project_state([AFTER]).apps
    positions = dict(apps.get_model("memory", "MessagePiece").objects.values_list("id", "position"))
    assert positions == {text.id: 0, image.id: 1, late.id: 2, alone.id: 0}
