"""Ingestion services for PyRIT memory: conversations, message pieces, attack results.

Every service validates each item (memory/parsing.py), then stores the valid ones with a
constant number of queries whatever the batch size, and returns one ItemOutcome per input
item, in order. Same id + same content is "unchanged"; same id + different content is
rejected with code "conflict". Contents are compared in canonical form (memory.parsing
.canonical), so 1 and 1.0 differ while key order and timestamp spelling do not, and in PyRIT's
memory round-trip form (redteam/roundtrip.py), so an object sent as an attack returned it and
again as PyRIT's memory reloads it is the same object.

Conversation summary columns are maintained here, under a row lock (SELECT ... FOR UPDATE
on PostgreSQL, ordered by primary key so concurrent batches cannot deadlock). Conversations
are created as empty stubs with INSERT ... ON CONFLICT DO NOTHING first, so two batches that
create the same conversation at once serialise on its row instead of failing.
"""

from __future__ import annotations

from memory.models import MessagePiece
from memory.store_common import register_score_store
from memory.store_pieces import store_conversations, store_message_pieces
from memory.store_results import store_attack_results
from memory.store_scenarios import store_scenario_results
from redteam.models import MediaBlob
from redteam.pyrit_enums import MEDIA_PATH_DATA_TYPES

__all__ = [
    "link_media",
    "register_score_store",
    "store_attack_results",
    "store_conversations",
    "store_message_pieces",
    "store_scenario_results",
]


# --- media ---------------------------------------------------------------------------------


def link_media(blob: MediaBlob) -> int:
    """Link every media piece whose original/converted sha256 is the blob's; two UPDATEs."""
    media = list(MEDIA_PATH_DATA_TYPES)
    originals = MessagePiece.objects.filter(
        original_value_sha256=blob.sha256, original_value_data_type__in=media
    ).update(original_media=blob)
    converted = MessagePiece.objects.filter(
        converted_value_sha256=blob.sha256, converted_value_data_type__in=media
    ).update(converted_media=blob)
    return int(originals) + int(converted)
