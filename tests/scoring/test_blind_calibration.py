"""Blind double review reaches calibration and the human-label export: a verdict counts there
only once its review settles (scoring.blind.settled_q), and on an adjudicated result only the
final verdict counts."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, ReviewStatus
from redteam.common.access import Scope, user_scope
from redteam.common.models import Operation
from scoring.calibration import calibrations_for
from scoring.human_labels import export_human_labels, parse_request
from scoring.models import ReviewRequirement
from scoring.services import record_verdict
from tests.memory.row_factories import core_scorer, make_attack_result, make_conversation
from tests.scoring.row_factories import make_score, make_user

pytestmark = pytest.mark.django_db

OP = "op_blind_cal"
EVAL_HASH = "b" * 64


def _result(name: str) -> AttackResult:
    conversation = make_conversation(2, conversation_id=f"conv-{name}", labels={"operation": OP})
    result = make_attack_result(
        conversation, objective=f"objective {name}", labels={"operation": OP}
    )
    assert result.last_response is not None
    scorer = core_scorer("SubStringScorer", substring="key").with_eval_hash(EVAL_HASH)
    make_score(piece=result.last_response, value="true", scorer=scorer)
    return result


def _verdict(user: User, result: AttackResult, value: bool) -> None:
    record_verdict(
        attack_result=result,
        reviewer=user,
        scope=user_scope(user),
        value=value,
        score_type="true_false",
        rationale="checked",
    )


def _counted(scope: Scope) -> tuple[int, int]:
    """(responses, most human raters) calibration counts for the scorer."""
    [calibration] = [c for c in calibrations_for(scope, {}) if c.eval_hash == EVAL_HASH]
    return calibration.metrics.num_responses, calibration.metrics.num_human_raters


def _exported_rows(scope: Scope) -> int:
    return export_human_labels(parse_request(QueryDict(""), scope), scope).rows


def test_pending_and_disputed_verdicts_count_nowhere_and_the_final_one_counts_alone() -> None:
    alice, bob = make_user("alice", "reviewer"), make_user("bob", "reviewer")
    judy, lead = make_user("judy", "adjudicator"), make_user("lena", "lead")
    settled, pending = _result("settled"), _result("pending")
    # A plain single review on `settled`, before any requirement: it counts.
    _verdict(alice, settled, True)
    operation = Operation.objects.get(name=OP)
    ReviewRequirement.objects.create(
        operation=operation, label_key="operation", label_value=OP, required_verdicts=2
    )
    # The requirement seals what is not settled yet: `settled` now waits for a second verdict.
    _verdict(bob, settled, True)
    scope = user_scope(lead)
    assert _counted(scope) == (1, 2)
    assert _exported_rows(scope) == 1

    # One verdict of two: pending, counted nowhere.
    _verdict(alice, pending, False)
    pending.refresh_from_db()
    assert pending.review_status == ReviewStatus.PENDING
    assert _counted(scope) == (1, 2)
    assert _exported_rows(scope) == 1

    # Two disagreeing verdicts: disputed, still counted nowhere.
    _verdict(bob, pending, True)
    pending.refresh_from_db()
    assert pending.review_status == ReviewStatus.DISPUTED
    assert _counted(scope) == (1, 2)
    assert _exported_rows(scope) == 1

    # Adjudicated: the final verdict is the one rater of that result.
    client = Client()
    client.force_login(judy)
    url = reverse("scoring:adjudication_item", args=[pending.pk])
    post = {"verdict": "true", "rationale": "final", "submission": str(uuid.uuid4())}
    assert client.post(url, post).status_code == 302
    pending.refresh_from_db()
    assert pending.review_status == ReviewStatus.ADJUDICATED
    [calibration] = [c for c in calibrations_for(scope, {}) if c.eval_hash == EVAL_HASH]
    assert calibration.metrics.num_responses == 2
    assert sorted(len(pair.humans) for pair in calibration.pairs) == [1, 2]
    assert _exported_rows(scope) == 2
