"""Promote a reviewed conversation piece to a seed (prompt or objective) in a dataset.

Memory sits above seeds: it reads the piece and hands its value to the seeds app, which
keeps the dataset's rules (content-addressed groups, no duplicate standalone seed). The piece
(and the attack result it is linked to) must be in one of the promoter's operations.

Promoting takes two steps: `preview_promotion` shows the seed exactly as it would be stored
(value, data type, role, hash, dataset, and whether the dataset already holds it) and writes
nothing; `promote_piece_to_seed` stores it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from memory.models import AttackResult, MessagePiece
from redteam.common.access import Scope
from redteam.common.typing import User
from seeds.models import Seed, SeedDataset
from seeds.services import (
    PromotedValue,
    PromoteResult,
    add_promoted_seed,
    promoted_seed,
    promoted_twin,
)

# The preview shows this much of a value; the whole value is stored (its length and hash are
# shown, so a curator knows what is beyond the cut).
PREVIEW_CHARS = 20_000


class NotVisible(LookupError):
    """The piece or attack result does not exist, or is outside the caller's operations (the
    same answer for both: a 404)."""


def promoted_value(
    *,
    piece_id: uuid.UUID | str,
    scope: Scope,
    attack_result_id: uuid.UUID | str | None = None,
) -> PromotedValue:
    """What a promotion of a visible piece is made of: its converted value, linked back to
    the piece and result. Raises NotVisible for a piece or result the scope does not see."""
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
    return PromotedValue(
        value=piece.converted_value,
        value_sha256=piece.converted_value_sha256,
        data_type=piece.converted_value_data_type,
        role=piece.role,
        harm_categories=list(piece.targeted_harm_categories or []),
        media_id=piece.converted_media_id,
        source_piece_id=piece.id,
        source_attack_result_id=attack_result_id,
    )


@dataclass
class PromotionPreview:
    """The seed a promotion would store, and where."""

    seed: Seed
    dataset: SeedDataset | None
    dataset_name: str
    twin: Seed | None

    @property
    def creates_dataset(self) -> bool:
        """True when confirming creates the dataset."""
        return self.dataset is None

    @property
    def shown_value(self) -> str:
        """The value as far as the preview shows it."""
        return str(self.seed.value)[:PREVIEW_CHARS]

    @property
    def hidden_chars(self) -> int:
        """How many characters of the value the preview leaves out."""
        return max(0, len(self.seed.value) - PREVIEW_CHARS)


def preview_promotion(
    *,
    piece_id: uuid.UUID | str,
    dataset: SeedDataset | None,
    dataset_name: str,
    seed_type: str,
    user: User,
    scope: Scope,
    attack_result_id: uuid.UUID | str | None = None,
) -> PromotionPreview:
    """The seed a promotion would store (nothing is written). Raises NotVisible, and
    ValueError for what the seeds app refuses."""
    source = promoted_value(piece_id=piece_id, scope=scope, attack_result_id=attack_result_id)
    seed = promoted_seed(
        source=source, dataset=dataset, dataset_name=dataset_name, seed_type=seed_type, user=user
    )
    return PromotionPreview(seed, dataset, dataset_name, promoted_twin(seed, dataset))


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
    source = promoted_value(piece_id=piece_id, scope=scope, attack_result_id=attack_result_id)
    return add_promoted_seed(source=source, dataset=dataset, seed_type=seed_type, user=user)
