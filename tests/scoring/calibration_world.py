"""A small calibration dataset built row by row, with its metrics worked out by hand.

Operation `op_cal`: three reviewers (rita, sam, tom), a true/false configuration (eval hash
E_TF, two identifiers under it) and a 0..1 configuration (SelfAskLikertScorer), over these
scored objects (an attack result's last response unless said otherwise):

| object | true/false scorer trials | objective verdicts              | cell |
| R1     | true                     | rita T, sam T, tom F -> T       | TP   |
| R2     | false, true, false (v2)  | rita T, sam F (split) -> F      | TN   |
| R3     | false                    | rita F then T (newest), sam T withdrawn -> T | FN |
| R4     | true                     | tom F                           | FP   |
| R5     | true                     | none                            | out  |
| R6     | none                     | rita T                          | out  |
| R7     | true (last_score_id only, not on the piece) | sam F        | FP   |
| P8     | false                    | HumanInTheLoopScorer "true" on the piece | FN |

TP=1 TN=1 FP=2 FN=2, n=6: accuracy 1/3, precision 1/3, recall 1/3, F1 1/3, kappa -1/3,
3 raters at most (R1), 3 trials at most (R2).

Scale verdicts against the Likert scorer: R1 0.8 vs rita 0.6, sam 1.0 (median 0.8, error 0);
R2 0.2 vs tom 0.5 (error 0.3); R4 0.4 and 0.6 (median 0.5) vs rita 0.0, sam 0.25, tom 1.0
(median 0.25, error 0.25). MAE 0.55/3.

Operation `op_other` holds a result with a verdict and scores by the same scorers: it must
never count for a member of `op_cal` only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User

from memory.models import AttackResult, MessagePiece, Score
from redteam.common.access import Scope, user_scope
from redteam.core.identity import ComponentIdentifier as CoreIdentifier
from scoring.services import record_verdict, withdraw_review
from tests.memory.row_factories import core_scorer, make_attack_result, make_conversation
from tests.scoring.row_factories import make_score, make_user

E_TF = "e" * 64
OP = {"operation": "op_cal"}
OTHER = {"operation": "op_other"}


def scorer_v1() -> CoreIdentifier:
    """The true/false configuration's main identifier (eval hash stamped E_TF)."""
    return core_scorer("SubStringScorer", substring="key").with_eval_hash(E_TF)


def scorer_v2() -> CoreIdentifier:
    """A second identifier under the same eval hash (a parameter PyRIT's eval hash ignores)."""
    return core_scorer("SubStringScorer", substring="key", note="v2").with_eval_hash(E_TF)


def likert() -> CoreIdentifier:
    """The 0..1 configuration (its eval hash is computed from the dump)."""
    return core_scorer("SelfAskLikertScorer", scorer_type="float_scale", scale="1-5")


def human_scorer() -> CoreIdentifier:
    """A PyRIT human scorer (its scores are stored as human ones)."""
    return core_scorer("HumanInTheLoopScorer")


@dataclass
class CalibrationWorld:
    """The rows of the dataset above."""

    rita: User
    sam: User
    tom: User
    results: dict[str, AttackResult]
    pieces: dict[str, MessagePiece]
    other_result: AttackResult


def _result(name: str, labels: dict[str, str]) -> tuple[AttackResult, MessagePiece]:
    conversation = make_conversation(2, conversation_id=f"conv-{name}", labels=labels)
    result = make_attack_result(
        conversation, objective=f"objective {name}", labels=labels, harm_categories=["fraud"]
    )
    assert result.last_response is not None
    return result, result.last_response


def _verdict(user: User, result: AttackResult, value: bool | float) -> Score:
    return record_verdict(
        attack_result=result,
        reviewer=user,
        scope=user_scope(user),
        value=value,
        score_type="float_scale" if not isinstance(value, bool) else "true_false",
        rationale="checked",
    )


def build_world() -> CalibrationWorld:
    """Store the dataset (see the module docstring)."""
    rita, sam, tom = make_user("rita"), make_user("sam"), make_user("tom")
    results: dict[str, AttackResult] = {}
    pieces: dict[str, MessagePiece] = {}
    for name in ("R1", "R2", "R3", "R4", "R5", "R6", "R7"):
        results[name], pieces[name] = _result(name, OP)
    v1, v2, lk = scorer_v1(), scorer_v2(), likert()
    make_score(piece=pieces["R1"], value="true", scorer=v1)
    make_score(piece=pieces["R2"], value="false", scorer=v1)
    make_score(piece=pieces["R2"], value="True", scorer=v1)
    make_score(piece=pieces["R2"], value="false", scorer=v2)
    make_score(piece=pieces["R3"], value="false", scorer=v1)
    make_score(piece=pieces["R4"], value="true", scorer=v1)
    make_score(piece=pieces["R5"], value="true", scorer=v1)
    last = make_score(attack_result=None, piece=None, value="true", scorer=v1)
    Score.objects.filter(pk=last.pk).update(operation=results["R7"].operation)
    AttackResult.objects.filter(pk=results["R7"].pk).update(last_score_id=last.pk)
    results["R7"].refresh_from_db()
    make_score(piece=pieces["R1"], value="0.8", score_type="float_scale", scorer=lk)
    make_score(piece=pieces["R2"], value="0.2", score_type="float_scale", scorer=lk)
    make_score(piece=pieces["R4"], value="0.4", score_type="float_scale", scorer=lk)
    make_score(piece=pieces["R4"], value="0.6", score_type="float_scale", scorer=lk)
    # An undetermined score never counts.
    make_score(piece=pieces["R1"], value=None, scorer=v1)

    _verdict(rita, results["R1"], True)
    _verdict(sam, results["R1"], True)
    _verdict(tom, results["R1"], False)
    _verdict(rita, results["R2"], True)
    _verdict(sam, results["R2"], False)
    _verdict(rita, results["R3"], False)
    _verdict(rita, results["R3"], True)
    withdrawn = _verdict(sam, results["R3"], False)
    assert withdrawn.verdict_submission is not None
    withdraw_review(reviewer=sam, scope=user_scope(sam), submission=withdrawn.verdict_submission)
    _verdict(tom, results["R4"], False)
    _verdict(rita, results["R6"], True)
    _verdict(sam, results["R7"], False)
    _verdict(rita, results["R1"], 0.6)
    _verdict(sam, results["R1"], 1.0)
    _verdict(tom, results["R2"], 0.5)
    _verdict(rita, results["R4"], 0.0)
    _verdict(sam, results["R4"], 0.25)
    _verdict(tom, results["R4"], 1.0)

    # P8: a conversation piece judged by an ingested human score, no attack result.
    conversation = make_conversation(2, conversation_id="conv-P8", labels=OP)
    p8 = conversation.pieces.order_by("-sequence").first()
    assert p8 is not None
    pieces["P8"] = p8
    make_score(piece=p8, value="false", scorer=v1)
    make_score(piece=p8, value="true", scorer=human_scorer(), source="human")

    # Another operation: a disagreement that must not count for op_cal's members.
    other, other_piece = _result("X1", OTHER)
    make_score(piece=other_piece, value="true", scorer=v1)
    make_score(piece=other_piece, value="0.9", score_type="float_scale", scorer=lk)
    judge = User.objects.create_superuser("judge", "judge@example.org", "pw-judge-123")
    for value in (False, 0.1):
        record_verdict(
            attack_result=other,
            reviewer=judge,
            scope=Scope.everything_scope(),
            value=value,
            score_type="true_false" if isinstance(value, bool) else "float_scale",
            rationale="their verdict",
        )
    return CalibrationWorld(rita, sam, tom, results, pieces, other)
