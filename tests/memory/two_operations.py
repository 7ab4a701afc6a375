"""Two operations whose rows overlap, and a member of only one of them.

The access tests of the memory pages (tests/memory/test_operation_scope.py) and of the API,
media and exports (tests/api/test_operation_scope.py) share this memory: `alpha` and `bravo`
attack the same target with the same objective and search words, share an image, and
`bravo` also holds rows that point into `alpha` (a score of an alpha piece, a result naming
an alpha conversation as related, a result claiming an alpha scenario). A member of `alpha`
must see alpha's rows and nothing that reveals bravo's.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from memory.models import (
    AttackResult,
    Conversation,
    MessagePiece,
    ScenarioResult,
    ScorableContent,
    Score,
)
from redteam.common.models import MediaBlob, Operation
from tests.access import grant
from tests.memory.row_factories import (
    PNG_1X1,
    PieceSpec,
    core_atomic_attack,
    core_converter,
    core_target,
    make_attack_result,
    make_conversation,
    make_media,
)
from tests.scoring.row_factories import make_score
from tests.seeds.factories import make_seed

# Words both operations' conversations hold (a search for them must find alpha's only).
SHARED_WORDS = "tumbler wrench"
BRAVO_WORDS = "bravo-only-phrase"
OBJECTIVE = "Explain how to pick a lock"
BRAVO_SCORE_VALUE = "bravo-secret"


@dataclass
class TwoOperations:
    """The rows of both operations, and `member` (a reviewer of alpha only)."""

    alpha: Operation
    bravo: Operation
    member: User
    alpha_conversation: Conversation
    bravo_conversation: Conversation
    alpha_piece: MessagePiece
    bravo_piece: MessagePiece
    alpha_result: AttackResult
    bravo_result: AttackResult
    alpha_scenario: ScenarioResult
    bravo_scenario: ScenarioResult
    # Identifier hashes: the target both use; one used in bravo only (a converter and the
    # objective target of bravo's attack); one alpha uses as a scorer and bravo as a converter.
    shared_target: str
    bravo_converter: str
    bravo_target: str
    dual_use: str
    # Media: an image in both operations, one in bravo only, a seed's, and bytes no row names.
    shared_media: MediaBlob
    bravo_media: MediaBlob
    seed_media: MediaBlob
    orphan_media: MediaBlob
    # Loose content: scored in both operations, and in bravo only.
    shared_content: ScorableContent
    bravo_content: ScorableContent


def _image(tag: bytes) -> MediaBlob:
    """A distinct PNG blob (the tag after the image data changes its sha256)."""
    return make_media(PNG_1X1 + tag)


def _loose(value: str) -> ScorableContent:
    return ScorableContent.objects.create(
        id=uuid.uuid4(),
        value=value,
        value_sha256=hashlib.sha256(value.encode()).hexdigest(),
        data_type="text",
    )


def _score_on(
    content: ScorableContent, operation: Operation, rationale: str, **fields: Any
) -> Score:
    """A loose-content score of `operation`."""
    score = make_score(rationale=rationale, **fields)
    Score.objects.filter(pk=score.pk).update(operation=operation, loose_content=content)
    score.refresh_from_db()
    return score


def _scenario(operation: Operation, results: list[AttackResult]) -> ScenarioResult:
    scenario = ScenarioResult.objects.create(
        id=uuid.uuid4(),
        operation=operation,
        scenario_name="SharedScenario",
        scenario_run_state="COMPLETED",
        labels={"operation": operation.name},
        attack_result_ids={"technique": [str(r.pk) for r in results]},
    )
    AttackResult.objects.filter(pk__in=[r.pk for r in results]).update(
        attribution_parent_id=str(scenario.pk),
        attribution_data={"parent_collection": "technique"},
    )
    return scenario


def build_two_operations(member_role: str = "reviewer") -> TwoOperations:
    """Store both operations' rows; the member belongs to alpha only."""
    alpha, _ = Operation.objects.get_or_create(name="alpha")
    bravo, _ = Operation.objects.get_or_create(name="bravo")
    member = User.objects.create_user("alice", password="pw-alice-1")
    grant(member, alpha, member_role)

    target = core_target()
    dual = core_converter("DualUseConverter")
    bravo_only = core_converter("BravoOnlyConverter")
    bravo_target = core_target("BravoTarget")
    shared_media, bravo_media = _image(b"shared"), _image(b"bravo")

    alpha_conversation = make_conversation(
        [
            [PieceSpec(f"alpha asks about the {SHARED_WORDS}")],
            [
                PieceSpec(
                    "/run/alpha.png", role="assistant", data_type="image_path", media=shared_media
                )
            ],
        ],
        target=target,
        labels={"operation": "alpha"},
    )
    bravo_conversation = make_conversation(
        [
            [
                PieceSpec(
                    f"bravo asks about the {SHARED_WORDS} {BRAVO_WORDS}",
                    converters=[bravo_only, dual],
                )
            ],
            [
                PieceSpec(
                    "/run/bravo.png", role="assistant", data_type="image_path", media=bravo_media
                )
            ],
            [
                PieceSpec(
                    "/run/shared.png", role="assistant", data_type="image_path", media=shared_media
                )
            ],
        ],
        target=target,
        labels={"operation": "bravo", "bravo_key": "x"},
    )
    alpha_piece = alpha_conversation.pieces.get(sequence=0)
    bravo_piece = bravo_conversation.pieces.get(sequence=0)
    alpha_result = make_attack_result(
        alpha_conversation,
        objective=OBJECTIVE,
        atomic=core_atomic_attack(target=target),
        harm_categories=["violence"],
    )
    bravo_result = make_attack_result(
        bravo_conversation,
        objective=OBJECTIVE,
        atomic=core_atomic_attack(target=bravo_target, converters=[bravo_only]),
        harm_categories=["bravo_harm"],
        labels={"operation": "bravo", "bravo_key": "x"},
        # Bravo names alpha's conversation as one of its related chats.
        related=[(alpha_conversation.conversation_id, "pruned")],
    )
    make_score(piece=alpha_piece, value="true", scorer=dual)
    make_score(piece=bravo_piece, value="false")
    # A bravo score of an alpha piece (a score placed before its piece arrived).
    cross = make_score(piece=alpha_piece, value=BRAVO_SCORE_VALUE, rationale="bravo's view")
    Score.objects.filter(pk=cross.pk).update(operation=bravo)
    # Alpha's scenario names bravo's result too; bravo has a scenario of the same name.
    alpha_scenario = _scenario(alpha, [alpha_result, bravo_result])
    bravo_scenario = _scenario(bravo, [])

    shared_content, bravo_content = _loose("loose text both saw"), _loose("loose text of bravo")
    _score_on(shared_content, alpha, "alpha judged the loose text")
    _score_on(shared_content, bravo, "bravo judged the loose text")
    _score_on(bravo_content, bravo, "only bravo judged this")

    seed_media = _image(b"seed")
    make_seed(None, value="/seeds/image.png", data_type="image_path", media=seed_media)
    orphan_media = _image(b"orphan")

    return TwoOperations(
        alpha=alpha,
        bravo=bravo,
        member=member,
        alpha_conversation=alpha_conversation,
        bravo_conversation=bravo_conversation,
        alpha_piece=alpha_piece,
        bravo_piece=bravo_piece,
        alpha_result=alpha_result,
        bravo_result=bravo_result,
        alpha_scenario=alpha_scenario,
        bravo_scenario=bravo_scenario,
        shared_target=target.hash,
        bravo_converter=bravo_only.hash,
        bravo_target=bravo_target.hash,
        dual_use=dual.hash,
        shared_media=shared_media,
        bravo_media=bravo_media,
        seed_media=seed_media,
        orphan_media=orphan_media,
        shared_content=shared_content,
        bravo_content=bravo_content,
    )
