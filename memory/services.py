"""Ingestion services for PyRIT memory: conversations, message pieces, attack results.

Every service has the signature of redteam.site.ingest's StoreService (``store(items, *,
user=None)``), validates each item (memory/parsing.py), then stores the valid ones with a
constant number of queries whatever the batch size, and returns one ItemOutcome per input
item, in order. Replays are told from conflicts by redteam.core.batch, as for every kind:
same id + same content is "unchanged"; same id + different content is rejected with code
"conflict". Contents are compared in canonical form (redteam.core.batch.canonical), so 1 and
1.0 differ while key order and timestamp spelling do not, and in PyRIT's memory round-trip
form (redteam/core/roundtrip.py), so an object sent as an attack returned it and again as
PyRIT's memory reloads it is the same object.

Conversation summary columns are maintained here, under a row lock (SELECT ... FOR UPDATE
on PostgreSQL, ordered by primary key so concurrent batches cannot deadlock). Conversations
are created as empty stubs with INSERT ... ON CONFLICT DO NOTHING first, so two batches that
create the same conversation at once serialise on its row instead of failing.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Q

from memory.models import MessagePiece
from memory.store_pieces import store_conversations, store_message_pieces
from memory.store_results import store_attack_results
from memory.store_scenarios import store_scenario_results
from redteam.common.access import Writer
from redteam.common.media import store_media_bytes
from redteam.common.models import MediaBlob
from redteam.common.typing import User
from redteam.core.enums import MEDIA_PATH_DATA_TYPES
from seeds.services import link_media as link_seeds

__all__ = [
    "link_media",
    "store_attack_results",
    "store_conversations",
    "store_media",
    "store_message_pieces",
    "store_scenario_results",
]


# --- media ---------------------------------------------------------------------------------


def link_media(
    blob: MediaBlob,
    *,
    original_piece_ids: Iterable[str] = (),
    converted_piece_ids: Iterable[str] = (),
    writer: Writer | None = None,
) -> int:
    """Link media pieces to the blob: those whose sha256 is its sha256, and the pieces named
    by id (on that side) that PyRIT left without a sha256 and that are not linked yet.

    The one place pieces get their bytes (uploads and the memory-file import call it). A piece
    without a sha256 cannot be matched by content, so its sender names it; an existing link
    is never replaced. A `writer` (an API sender) links named pieces only in operations it
    may write; others are skipped as unknown ids are, so the answer tells nothing about them.
    Pieces whose sha256 is the blob's are linked wherever they are: the bytes are what their
    sha256 names. Two UPDATEs.
    """
    media = list(MEDIA_PATH_DATA_TYPES)
    by_id = {"original": list(original_piece_ids), "converted": list(converted_piece_ids)}
    writable = writer.writable if writer is not None else None
    linked = 0
    for side in ("original", "converted"):
        match = Q(**{f"{side}_value_sha256": blob.sha256})
        if by_id[side]:
            named = Q(id__in=by_id[side], **{f"{side}_media__isnull": True})
            if writable is not None:
                named &= Q(conversation__operation_id__in=sorted(writable))
            match |= named & (
                Q(**{f"{side}_value_sha256__isnull": True}) | Q(**{f"{side}_value_sha256": ""})
            )
        linked += MessagePiece.objects.filter(
            match, **{f"{side}_value_data_type__in": media}
        ).update(**{f"{side}_media": blob})
    return linked


def store_media(
    data: bytes,
    *,
    filename: str,
    user: User | None = None,
    original_piece_ids: Iterable[str] = (),
    converted_piece_ids: Iterable[str] = (),
    writer: Writer | None = None,
) -> MediaBlob:
    """Store media bytes (content-addressed) and link every piece and seed they belong to
    (named pieces only where `writer` may write, see link_media).

    What an upload and the memory-file import both do with a file's bytes.
    """
    blob = store_media_bytes(data, filename=filename, user=user)
    link_media(
        blob,
        original_piece_ids=original_piece_ids,
        converted_piece_ids=converted_piece_ids,
        writer=writer,
    )
    link_seeds(blob)
    return blob
