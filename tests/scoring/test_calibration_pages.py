"""The scorer calibration pages (/scorers/, /scorers/<eval hash>/) and the metrics API.

Data: tests/scoring/calibration_world.py (op_cal, with its hand-worked numbers, and op_other).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from redteam.common.access import user_scope
from redteam.common.models import ApiKey, Operation
from redteam.core.calibration import objective_metrics
from scoring.calibration import calibrations_for
from scoring.services import record_verdict
from tests.access import grant
from tests.memory.row_factories import (
    core_scorer,
    make_attack_result,
    make_conversation,
)
from tests.scoring.calibration_world import (
    E_TF,
    OP,
    OTHER,
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


@pytest.fixture
def browser(member: User) -> Client:
    client = Client()
    client.force_login(member)
    return client


def _likert_hash(member: User) -> str:
    fs = [c for c in calibrations_for(user_scope(member), {}) if c.score_type == "float_scale"]
    return fs[0].eval_hash


# --- /scorers/ -------------------------------------------------------------------------------


def test_list_shows_each_configuration_with_n_and_metrics(
    world: CalibrationWorld, browser: Client
) -> None:
    response = browser.get("/scorers/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "SubStringScorer" in html
    assert "SelfAskLikertScorer" in html
    tf = response.context["true_false"][0]
    # n, accuracy, f1, precision, recall, kappa (tests/scoring/calibration_world.py)
    assert tf.values == ["6", "0.333", "0.333", "0.333", "0.333", "-0.333"]
    assert f"/scorers/{E_TF}/" in html
    assert 'aria-current="page"' in html
    assert ">Scorers</a>" in html


def _add_perfect_scorer(world: CalibrationWorld) -> None:
    """A second true/false configuration that agrees with the people on R1 (accuracy 1)."""
    perfect = core_scorer("PerfectScorer")
    make_score(piece=world.pieces["R1"], value="true", scorer=perfect)


def test_list_names_the_scorers_no_person_has_checked_yet(
    world: CalibrationWorld, browser: Client
) -> None:
    unchecked = core_scorer("NobodyCheckedScorer")
    make_score(piece=world.pieces["R5"], value="true", scorer=unchecked)
    response = browser.get("/scorers/")
    names = [i.class_name for i in response.context["uncalibrated"]]
    assert names == ["NobodyCheckedScorer"]
    assert "HumanInTheLoopScorer" not in names


def test_list_is_worst_first_and_sorts_by_a_column(
    world: CalibrationWorld, browser: Client
) -> None:
    _add_perfect_scorer(world)
    rows = browser.get("/scorers/").context["true_false"]
    assert [r.c.class_names[0] for r in rows] == ["SubStringScorer", "PerfectScorer"]
    rows = browser.get("/scorers/?tf_sort=-accuracy").context["true_false"]
    assert [r.c.class_names[0] for r in rows] == ["PerfectScorer", "SubStringScorer"]
    rows = browser.get("/scorers/?tf_sort=n").context["true_false"]
    assert [r.c.metrics.num_responses for r in rows] == [1, 6]
    # An unknown column falls back to worst first.
    rows = browser.get("/scorers/?tf_sort=bogus").context["true_false"]
    assert rows[0].c.class_names[0] == "SubStringScorer"


def test_list_with_bad_filters_is_a_400_naming_them(
    world: CalibrationWorld, browser: Client
) -> None:
    response = browser.get("/scorers/?eval_hash=nothex&after=someday")
    assert response.status_code == 400
    html = response.content.decode()
    assert "eval_hash" in html
    assert "after" in html


def test_list_never_shows_another_operations_scorers(
    world: CalibrationWorld, browser: Client
) -> None:
    only_theirs = core_scorer("TheirSecretScorer")
    other_piece = world.other_result.last_response
    make_score(piece=other_piece, value="true", scorer=only_theirs)
    html = browser.get("/scorers/").content.decode()
    assert "TheirSecretScorer" not in html
    assert "conv-X1" not in html


def test_jsonl_download_is_pyrit_metrics_lines(world: CalibrationWorld, browser: Client) -> None:
    response = browser.get("/scorers/?format=jsonl")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/jsonl")
    assert "attachment" in response["Content-Disposition"]
    lines = [json.loads(line) for line in response.content.decode().splitlines()]
    by_hash = {line["eval_hash"]: line for line in lines}
    tf = by_hash[E_TF]
    assert tf["class_name"] == "SubStringScorer"
    assert tf["hash"] == scorer_v1().hash
    assert list(tf)[-2:] == ["eval_hash", "metrics"]
    assert tf["metrics"]["num_responses"] == 6
    assert tf["metrics"]["accuracy"] == pytest.approx(1 / 3)
    assert tf["metrics"]["dataset_name"] == "redteam human verdicts"
    harm = by_hash[_likert_hash_from(lines)]
    assert harm["metrics"]["mean_absolute_error"] == pytest.approx(0.55 / 3)


def _likert_hash_from(lines: list[dict[str, Any]]) -> str:
    return str(
        next(line["eval_hash"] for line in lines if line["class_name"] == "SelfAskLikertScorer")
    )


def test_jsonl_download_with_bad_filters_is_a_400(browser: Client) -> None:
    response = browser.get("/scorers/?format=jsonl&label=nope")
    assert response.status_code == 400


# --- /scorers/<eval hash>/ ---------------------------------------------------------------------


def test_scorer_page_shows_confusion_chart_tree_identifiers_and_disagreements(
    world: CalibrationWorld, browser: Client
) -> None:
    response = browser.get(f"/scorers/{E_TF}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<svg class="confusion"' in html
    assert "2 false positive" in html
    assert "1 true positive" in html
    # The identifier tree partial and both identifiers under the eval hash.
    assert 'class="node"' in html
    assert scorer_v1().hash[:8] in html
    # Every disagreement links to its conversation (R3, R4, R7, P8); agreements do not.
    for name in ("R3", "R4", "R7", "P8"):
        assert f"/conversations/conv-{name}/" in html, name
    for name in ("R1", "R2", "R5", "R6"):
        assert f"/conversations/conv-{name}/" not in html, name
    assert f"/attack-results/{world.results['R3'].pk}/" in html
    assert "conv-X1" not in html


def test_harm_scorer_page_shows_the_error_histogram(
    world: CalibrationWorld, browser: Client, member: User
) -> None:
    html = browser.get(f"/scorers/{_likert_hash(member)}/").content.decode()
    assert '<svg class="histogram"' in html
    assert "mean_absolute_error" in html
    assert "0.183" in html


def test_scorer_page_of_an_unknown_or_foreign_eval_hash_is_a_404(
    world: CalibrationWorld, browser: Client
) -> None:
    assert browser.get("/scorers/" + "0" * 64 + "/").status_code == 404
    assert browser.get("/scorers/not-a-hash/").status_code == 404
    # A configuration used only in op_other.
    theirs = core_scorer("TheirSecretScorer").with_eval_hash("d" * 64)
    make_score(piece=world.other_result.last_response, value="true", scorer=theirs)
    staff = User.objects.create_superuser("root", "root@example.org", "pw-root-123")
    admin = Client()
    admin.force_login(staff)
    assert admin.get("/scorers/" + "d" * 64 + "/").status_code == 200
    assert browser.get("/scorers/" + "d" * 64 + "/").status_code == 404


def test_disagreements_are_paginated(world: CalibrationWorld, browser: Client) -> None:
    reviewer = User.objects.get(username="rita")
    for i in range(55):
        conversation = make_conversation(2, conversation_id=f"wrong-{i}", labels=OP)
        result = make_attack_result(conversation, labels=OP)
        make_score(piece=result.last_response, value="true", scorer=scorer_v1())
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=False,
            score_type="true_false",
            rationale="no",
        )
    first = browser.get(f"/scorers/{E_TF}/")
    section = first.context["sections"][0]
    assert section["disagreement_count"] == 59
    assert len(section["rows"]) == 50
    second = browser.get(f"/scorers/{E_TF}/?page=2")
    assert len(second.context["sections"][0]["rows"]) == 9
    assert 'rel="next"' in first.content.decode()


# --- access ------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/scorers/", f"/scorers/{E_TF}/"])
def test_pages_need_a_login_and_a_role(world: CalibrationWorld, url: str) -> None:
    anonymous = Client()
    assert anonymous.get(url).status_code == 302
    nobody = User.objects.create_user("nobody")
    client = Client()
    client.force_login(nobody)
    assert client.get(url).status_code == 403


# --- query counts ------------------------------------------------------------------------------


def _grow(count: int) -> None:
    reviewer = User.objects.get(username="tom")
    for i in range(count):
        conversation = make_conversation(2, conversation_id=f"grow-{count}-{i}", labels=OP)
        result = make_attack_result(conversation, labels=OP)
        make_score(piece=result.last_response, value=str(bool(i % 3)).lower(), scorer=scorer_v1())
        value = 0.1 * (i % 10)
        make_score(
            piece=result.last_response, value=str(value), score_type="float_scale", scorer=likert()
        )
        for answer in (bool(i % 2), value):
            record_verdict(
                attack_result=result,
                reviewer=reviewer,
                scope=user_scope(reviewer),
                value=answer,
                score_type="true_false" if isinstance(answer, bool) else "float_scale",
                rationale="grown",
            )


def _count(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(ctx.captured_queries)


def test_page_queries_are_constant_in_the_number_of_rows(
    world: CalibrationWorld, browser: Client, member: User
) -> None:
    urls = ["/scorers/", f"/scorers/{E_TF}/", f"/scorers/{_likert_hash(member)}/"]
    urls.append("/scorers/?format=jsonl&label=operation=op_cal")
    small = [_count(browser, url) for url in urls]
    _grow(30)
    large = [_count(browser, url) for url in urls]
    assert small == large
    # /scorers/: session, user, memberships; calibration (2 human, 3 automated, identifiers,
    # dumps); published metrics; scorers not calibrated yet.
    assert small[0] == 3 + 7 + 2


# --- API ---------------------------------------------------------------------------------------


@pytest.fixture
def api(member: User) -> APIClient:
    operations = Operation.objects.filter(name="op_cal")
    _, raw = ApiKey.objects.create_key(
        name="reader", user=member, scopes=["read"], operations=operations
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_api_answers_one_object_per_eval_hash(world: CalibrationWorld, api: APIClient) -> None:
    response = api.get("/api/v1/scorer-metrics/")
    assert response.status_code == 200
    results = {r["eval_hash"]: r for r in response.json()["results"]}
    tf = results[E_TF]
    assert set(tf) >= {
        "eval_hash",
        "scorer_type",
        "scorer_identifier",
        "num_responses",
        "num_human_raters",
        "metrics",
        "confusion",
    }
    assert tf["scorer_type"] == "true_false"
    assert tf["num_responses"] == 6
    assert tf["num_human_raters"] == 3
    assert tf["confusion"] == {"tp": 1, "fp": 2, "tn": 1, "fn": 2}
    assert tf["scorer_identifier"]["class_name"] == "SubStringScorer"
    expected = objective_metrics(
        [([1, 1, 0], [1]), ([1, 0], [0, 1, 0]), ([1], [0]), ([0], [1]), ([0], [1]), ([1], [0])]
    )
    for name, value in expected.pyrit_metrics().items():
        assert tf["metrics"][name] == pytest.approx(value), name
    assert tf["metrics"]["cohen_kappa"] == pytest.approx(-1 / 3)
    harm = next(r for r in results.values() if r["scorer_type"] == "float_scale")
    assert "confusion" not in harm
    assert harm["metrics"]["mean_absolute_error"] == pytest.approx(0.55 / 3)


def test_api_answers_nan_as_null(world: CalibrationWorld, api: APIClient) -> None:
    # One response whose error is a constant bias: PyRIT's t-test is NaN.
    response = api.get("/api/v1/scorer-metrics/", {"scorer": "SelfAskLikertScorer"})
    body = response.content.decode()
    assert "NaN" not in body
    harm = response.json()["results"][0]
    assert all(v is None or math.isfinite(v) for v in harm["metrics"].values())
    single = api.get(
        "/api/v1/scorer-metrics/", {"scorer": "SelfAskLikertScorer", "after": "2999-01-01"}
    )
    assert single.json()["results"] == []


def test_api_filters_and_bad_filters(world: CalibrationWorld, api: APIClient) -> None:
    only = api.get("/api/v1/scorer-metrics/", {"eval_hash": E_TF}).json()["results"]
    assert [r["eval_hash"] for r in only] == [E_TF]
    labelled = api.get("/api/v1/scorer-metrics/", {"label": "operation=op_cal"}).json()
    assert len(labelled["results"]) == 2
    bad = api.get("/api/v1/scorer-metrics/", {"eval_hash": "zz", "label": "x"})
    assert bad.status_code == 400
    assert set(bad.json()) >= {"eval_hash", "label"}


def test_api_never_counts_another_operation(world: CalibrationWorld, api: APIClient) -> None:
    results = api.get("/api/v1/scorer-metrics/").json()["results"]
    assert {r["num_responses"] for r in results} == {6, 3}
    theirs = api.get("/api/v1/scorer-metrics/", {"label": f"operation={OTHER['operation']}"})
    assert theirs.json()["results"] == []


def test_api_needs_a_read_key_or_session(world: CalibrationWorld) -> None:
    assert APIClient().get("/api/v1/scorer-metrics/").status_code in (401, 403)


def test_api_queries_are_constant(world: CalibrationWorld, api: APIClient) -> None:
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert api.get("/api/v1/scorer-metrics/").status_code == 200
        return len(ctx.captured_queries)

    count()  # the key's first use is recorded once
    small = count()
    _grow(20)
    assert count() == small


# --- hostile identifiers --------------------------------------------------------------------------


def test_a_hostile_scorer_identifier_renders_inert(
    world: CalibrationWorld, browser: Client, api: APIClient
) -> None:
    evil = core_scorer(
        "<script>alert(1)</script>\u202eScorer", prompt="<img src=x onerror=alert(2)>" * 200
    ).with_eval_hash("a" * 64)
    make_score(piece=world.pieces["R1"], value="false", scorer=evil)
    listing = browser.get("/scorers/").content.decode()
    assert "<script>alert(1)" not in listing
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listing
    assert "U+202E" in listing
    page = browser.get("/scorers/" + "a" * 64 + "/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<img src=x" not in html
    assert "<script>alert" not in html
    results = api.get("/api/v1/scorer-metrics/", {"eval_hash": "a" * 64}).json()["results"]
    assert results[0]["scorer_identifier"]["class_name"].startswith("<script>")
