"""Scorer calibration from the database: pairs, PyRIT's metrics and scoping.

The dataset and its hand-worked numbers are in tests/scoring/calibration_world.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from redteam.common.access import Scope, user_scope
from redteam.core.calibration import (
    HarmScorerMetrics,
    ObjectiveScorerMetrics,
    harm_metrics,
    objective_metrics,
)
from scoring.calibration import (
    CalibrationFilterError,
    ScorerCalibration,
    calibration_query,
    calibrations_for,
)
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.calibration_world import (
    E_TF,
    OP,
    CalibrationWorld,
    build_world,
    likert,
    scorer_v1,
)
from tests.scoring.row_factories import make_score

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> CalibrationWorld:
    return build_world()


@pytest.fixture
def member() -> User:
    """A read-only member of op_cal only."""
    user = User.objects.create_user("mia")
    grant(user, "op_cal", "read-only")
    return user


def _by_type(calibrations: list[ScorerCalibration]) -> dict[str, ScorerCalibration]:
    assert len({c.score_type for c in calibrations}) == len(calibrations)
    return {c.score_type: c for c in calibrations}


def _objective(c: ScorerCalibration) -> ObjectiveScorerMetrics:
    assert isinstance(c.metrics, ObjectiveScorerMetrics)
    return c.metrics


def _harm(c: ScorerCalibration) -> HarmScorerMetrics:
    assert isinstance(c.metrics, HarmScorerMetrics)
    return c.metrics


def _scope(user: User) -> Scope:
    return user_scope(user)


def test_objective_metrics_equal_the_hand_computation(
    world: CalibrationWorld, member: User
) -> None:
    tf = _by_type(calibrations_for(_scope(member), {}))["true_false"]
    assert tf.eval_hash == E_TF
    m = _objective(tf)
    assert (m.confusion.tp, m.confusion.tn, m.confusion.fp, m.confusion.fn) == (1, 1, 2, 2)
    assert m.num_responses == 6
    assert m.num_human_raters == 3
    assert m.num_scorer_trials == 3
    assert m.accuracy == pytest.approx(1 / 3)
    assert m.precision == pytest.approx(1 / 3)
    assert m.recall == pytest.approx(1 / 3)
    assert m.f1_score == pytest.approx(1 / 3)
    assert m.accuracy_standard_error == pytest.approx(math.sqrt((1 / 3) * (2 / 3) / 6))
    assert m.cohen_kappa == pytest.approx(-1 / 3)


def test_objective_metrics_equal_pyrits_formula_on_the_same_pairs(
    world: CalibrationWorld, member: User
) -> None:
    tf = _by_type(calibrations_for(_scope(member), {}))["true_false"]
    # The pairs as the dataset defines them: (human ratings, scorer trials) per object.
    by_hand = [
        ([1, 1, 0], [1]),
        ([1, 0], [0, 1, 0]),
        ([1], [0]),
        ([0], [1]),
        ([0], [1]),
        ([1], [0]),
    ]
    expected = objective_metrics(by_hand)
    assert tf.metrics == expected
    pairs = [(sorted(p.humans), sorted(t.value for t in p.trials)) for p in tf.pairs]
    assert sorted(pairs) == sorted((sorted(h), sorted(m)) for h, m in by_hand)


def test_harm_metrics_equal_the_hand_computation(world: CalibrationWorld, member: User) -> None:
    fs = _by_type(calibrations_for(_scope(member), {}))["float_scale"]
    m = _harm(fs)
    assert m.num_responses == 3
    assert m.num_human_raters == 3
    assert m.num_scorer_trials == 2
    assert m.mean_absolute_error == pytest.approx(0.55 / 3)
    by_hand = [([0.6, 1.0], [0.8]), ([0.5], [0.2]), ([0.0, 0.25, 1.0], [0.4, 0.6])]
    expected = harm_metrics(by_hand)
    assert m.mean_absolute_error == pytest.approx(expected.mean_absolute_error)
    assert m.mae_standard_error == pytest.approx(expected.mae_standard_error)
    assert m.t_statistic == pytest.approx(expected.t_statistic)
    assert m.p_value == pytest.approx(expected.p_value)
    assert m.krippendorff_alpha_combined == pytest.approx(expected.krippendorff_alpha_combined)
    assert m.krippendorff_alpha_humans == pytest.approx(expected.krippendorff_alpha_humans)


def test_identifiers_under_one_eval_hash_are_listed_with_their_own_metrics(
    world: CalibrationWorld, member: User
) -> None:
    tf = _by_type(calibrations_for(_scope(member), {}))["true_false"]
    assert next(m.identity.hash for m in tf.members) == scorer_v1().hash
    counts = {m.identity.hash: m.num_responses for m in tf.members}
    assert sorted(counts.values()) == [1, 6]
    assert tf.class_names == ["SubStringScorer"]


def test_disagreements_are_every_pair_the_scorer_got_wrong(
    world: CalibrationWorld, member: User
) -> None:
    calibrations = _by_type(calibrations_for(_scope(member), {}))
    wrong = {p.obj.key for p in calibrations["true_false"].disagreements()}
    expected = {f"piece:{world.pieces[n].original_prompt_id}" for n in ("R3", "R4", "R7", "P8")}
    assert wrong == expected
    harm_wrong = [p.error for p in calibrations["float_scale"].disagreements()]
    assert harm_wrong == pytest.approx([0.3, 0.25])


def test_another_operations_verdicts_never_count(world: CalibrationWorld, member: User) -> None:
    mine = _by_type(calibrations_for(_scope(member), {}))
    everything = _by_type(calibrations_for(Scope.everything_scope(), {}))
    assert everything["true_false"].metrics.num_responses == 7
    assert mine["true_false"].metrics.num_responses == 6
    assert everything["float_scale"].metrics.num_responses == 4
    keys = {p.obj.key for c in mine.values() for p in c.pairs}
    other = world.other_result.last_response
    assert other is not None
    assert f"piece:{other.original_prompt_id}" not in keys


def test_nobody_without_an_operation_sees_any_calibration(world: CalibrationWorld) -> None:
    assert calibrations_for(Scope.nothing(), {}) == []


def test_filters_narrow_by_eval_hash_scorer_label_and_harm(
    world: CalibrationWorld, member: User
) -> None:
    scope = _scope(member)
    assert [c.score_type for c in calibrations_for(scope, {"eval_hash": E_TF})] == ["true_false"]
    only_likert = calibrations_for(scope, {"scorer": "SelfAskLikertScorer"})
    assert [c.score_type for c in only_likert] == ["float_scale"]
    by_hash = calibrations_for(scope, {"scorer": likert().hash})
    assert [c.score_type for c in by_hash] == ["float_scale"]
    # The label and harm category select scored objects; P8 has no result with "fraud".
    fraud = _by_type(calibrations_for(scope, {"harm_category": "fraud"}))
    assert fraud["true_false"].metrics.num_responses == 5
    labelled = _by_type(calibrations_for(Scope.everything_scope(), {"label": "operation=op_cal"}))
    assert labelled["true_false"].metrics.num_responses == 6
    assert calibrations_for(scope, {"label": "operation=nowhere"}) == []
    assert calibrations_for(scope, {"after": "2999-01-01"}) == []


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"eval_hash": "xyz"}, "eval_hash"),
        ({"label": "no separator"}, "label"),
        ({"after": "yesterday"}, "after"),
    ],
)
def test_bad_filters_are_named(member: User, params: dict[str, Any], name: str) -> None:
    with pytest.raises(CalibrationFilterError) as caught:
        calibration_query(_scope(member), params)
    assert name in caught.value.errors


def test_a_new_verdict_moves_the_metrics_at_once(world: CalibrationWorld, member: User) -> None:
    before = _objective(_by_type(calibrations_for(_scope(member), {}))["true_false"])
    from scoring.services import record_verdict

    record_verdict(
        attack_result=world.results["R5"],
        reviewer=world.tom,
        scope=user_scope(world.tom),
        value=True,
        score_type="true_false",
        rationale="yes",
    )
    after = _objective(_by_type(calibrations_for(_scope(member), {}))["true_false"])
    assert after.num_responses == before.num_responses + 1
    assert after.confusion.tp == before.confusion.tp + 1


def _grow(extra: int) -> None:
    """`extra` more reviewed results, each scored by both configurations."""
    from scoring.services import record_verdict

    reviewer = User.objects.get(username="rita")
    for i in range(extra):
        conversation = make_conversation(2, conversation_id=f"grow-{extra}-{i}", labels=OP)
        result = make_attack_result(conversation, labels=OP)
        make_score(piece=result.last_response, value="true", scorer=scorer_v1())
        make_score(
            piece=result.last_response, value="0.5", score_type="float_scale", scorer=likert()
        )
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=bool(i % 2),
            score_type="true_false",
            rationale="grown",
        )


def _queries(scope: Scope) -> int:
    with CaptureQueriesContext(connection) as ctx:
        calibrations_for(scope, {"label": "operation=op_cal"})
    return len(ctx.captured_queries)


def test_queries_are_constant_in_the_number_of_rows(world: CalibrationWorld, member: User) -> None:
    # Queries: human review verdicts; human scores on pieces; automated scores on reviewed
    # results' last responses, on pieces with human scores, and reviewed results' last
    # scores; scorer identifiers; their dumps.
    scope = _scope(member)
    small = _queries(scope)
    _grow(25)
    assert _queries(scope) == small == 7
