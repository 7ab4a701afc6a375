"""Promote a reviewed conversation piece to a seed (prompt or objective) in a dataset.

Memory sits above seeds: it reads the piece and hands its value to the seeds app, which
keeps the dataset's rules (content-addressed groups, no duplicate standalone seed). The piece
(and the attack result it is linked to) must be in one of the promoter's operations.
"""

from __future__ import annotations

import uuid

from memory.models import AttackResult, MessagePiece
from redteam.common.access import Scope
from redteam.common.typing import User
from seeds.models import SeedDataset
from seeds.services import PromotedValue, PromoteResult, add_promoted_seed


class NotVisible(LookupError):
    """The piece or attack result does not exist, or is outside the caller's operations (the
    same answer for both: a 404)."""


def promote_piece_to_seed(
    *,
    piece_id: uuid.UUID | str,
    dataset: SeedDataset,
    seed_type: str,
    user: User,
    scope: Scope,
    attack_result_id: uuid.UUID | str | None = None,
) -> PromoteResult:
    """Make a seed of a visible conversation piece's converted value, linked back to its
    source. Raises NotVisible for a piece or attack result the scope does not see, and
    ValueError for what the seeds app refuses."""
    piece = MessagePiece.objects.visible_to(scope).filter(id=piece_id).first()
    if piece is None:
        raise NotVisible("No such conversation piece.")
    if (
        attack_result_id is not None
        and not AttackResult.objects.visible_to(scope)
        .filter(attack_result_id=attack_result_id)
        .exists()
    ):
        raise NotVisible("No such attack result.")
    source = PromotedValue(
        value=piece.converted_value,
        value_sha256=piece.converted_value_sha256,
        data_type=piece.converted_value_data_type,
        role=piece.role,
        harm_categories=list(piece.targeted_harm_categories or []),
        media_id=piece.converted_media_id,
        source_piece_id=piece.id,
        source_attack_result_id=attack_result_id,
    )
    return add_promoted_seed(source=source, dataset=dataset, seed_type=seed_type, user=user)
