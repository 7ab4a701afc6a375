"""Dashboard tallies kept with every ingest and verdict: exact after each request, re-sends
counted once, relabelled conversations moving their results, verdicts winning and withdrawn,
a random mix equal to a recount, ASR over time against an independent count, and on
PostgreSQL concurrent writers on separate shards without a lost or doubled count."""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections, transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from memory.models import AttackResult, Score
from redteam.common.access import Scope, user_scope
from redteam.common.models import ApiKey
from redteam.site.ingest import ingest_batch
from scoring.models import OutcomeTally, TalliedResult
from scoring.services import edit_review, record_review, record_verdict, withdraw_review
from scoring.signals import build_missing_tallies
from scoring.tallies import (
    SHARDS,
    TREND_PERIODS,
    build_dashboard,
    build_trend,
    period_start,
    rebuild_tallies,
    recounted_totals,
    result_day,
    tally_totals,
)
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.access import bind_everywhere
from tests.memory import factories as f
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db
EVERYTHING = Scope.everything_scope()
INGEST = "/api/v1/ingest/"
OUTCOMES = ("success", "failure", "undetermined", "error")


def _api() -> APIClient:
    owner = User.objects.create_user("pusher")
    row, key = ApiKey.objects.create_key(name="t", user=owner, scopes=["ingest", "read"])
    bind_everywhere(row)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def _result(conv: str, outcome: str = "success", **kw: Any) -> dict[str, Any]:
    return f.attack_result(conversation_id=conv, outcome=outcome, **kw)


def _bars(dimension: str, scope: Scope = EVERYTHING, **kw: Any) -> dict[str, dict[str, int]]:
    label = dimension.removeprefix("label:") if dimension.startswith("label:") else None
    data = build_dashboard(label, scope, **kw)
    chart = next(c for c in data.charts if c.dimension == dimension)
    return {b.key: {o: n for o, n in b.counts.items() if n} for b in chart.bars}


def _exact() -> None:
    """The kept tallies equal a recount from the results and verdicts."""
    assert tally_totals() == recounted_totals()


def _headline() -> tuple[int, int, int]:
    h = build_dashboard(None, EVERYTHING).headline
    return h.results, h.rate.successes, h.reviewed


# --- exact at every request ------------------------------------------------------------------


def test_a_result_counts_in_the_request_that_stored_it() -> None:
    api = _api()
    first = [
        _result(f"c{i}", OUTCOMES[i % 4], targeted_harm_categories=["fraud"]) for i in range(3)
    ]
    response = api.post(INGEST, {"attack_results": first}, format="json")
    assert response.status_code == 200, response.content
    # The next read sees them: nothing waits for a snapshot or a refresh.
    assert _headline() == (3, 1, 0)
    assert _bars("harm_category") == {"fraud": {"success": 1, "failure": 1, "undetermined": 1}}
    _exact()
    second = [_result(f"d{i}", "success", targeted_harm_categories=["hate"]) for i in range(2)]
    assert api.post(INGEST, {"attack_results": second}, format="json").status_code == 200
    assert _headline() == (5, 3, 0)
    assert _bars("harm_category")["hate"] == {"success": 2}
    _exact()


def test_a_rejected_result_counts_nothing() -> None:
    api = _api()
    bad = _result("c-bad", outcome="not-an-outcome")
    response = api.post(INGEST, {"attack_results": [bad]}, format="json")
    assert response.status_code in (207, 400, 422), response.status_code
    assert AttackResult.objects.count() == 0
    assert _headline() == (0, 0, 0)
    assert not OutcomeTally.objects.exists()


def test_resending_counts_once_and_a_changed_outcome_is_refused() -> None:
    items = [_result(f"c{i}", "failure", targeted_harm_categories=["fraud"]) for i in range(3)]
    ingest_batch({"attack_results": items})
    before = tally_totals()
    again = ingest_batch({"attack_results": items})
    assert {o.status for o in again.outcomes} == {"unchanged"}
    assert tally_totals() == before
    # The same result with another outcome is a conflict: the stored one keeps its cell.
    changed = ingest_batch({"attack_results": [{**items[0], "outcome": "success"}]})
    assert changed.outcomes[0].status == "rejected"
    assert tally_totals() == before
    assert _bars("harm_category") == {"fraud": {"failure": 3}}
    _exact()


def test_pieces_arriving_after_their_result_move_it_to_their_harm_and_labels() -> None:
    # A result without harm categories counts under "(none)" until its conversation's pieces
    # name some (PyRIT 0.13 keeps labels and harms on the pieces).
    ingest_batch({"attack_results": [_result("late", "success", labels={"operation": "op"})]})
    assert _bars("harm_category") == {"(none)": {"success": 1}}
    piece = f.legacy_piece(
        conversation_id="late",
        labels={"operation": "op", "team": "blue"},
        targeted_harm_categories=["fraud"],
    )
    ingest_batch({"message_pieces": [piece]})
    assert _bars("harm_category") == {"fraud": {"success": 1}}
    assert _bars("label:team") == {"blue": {"success": 1}}
    assert _headline() == (1, 1, 0)
    _exact()
    # A later result in the conversation adds a label: both results now count under it.
    ingest_batch(
        {"attack_results": [_result("late", "failure", labels={"operation": "op", "wave": "2"})]}
    )
    assert _bars("label:wave") == {"2": {"success": 1, "failure": 1}}
    _exact()


# --- verdicts --------------------------------------------------------------------------------


def _stored(n: int, outcome: str = "success") -> list[AttackResult]:
    items = [_result(f"v{i}", outcome, targeted_harm_categories=["fraud"]) for i in range(n)]
    ingest_batch({"attack_results": items})
    ids = [uuid.UUID(i["attack_result_id"]) for i in items]
    return sorted(AttackResult.objects.filter(pk__in=ids), key=lambda r: ids.index(r.pk))


def test_verdicts_win_are_corrected_and_withdrawn() -> None:
    reviewer = make_user("judge")
    result, other = _stored(2)
    scope = user_scope(reviewer)
    assert _headline() == (2, 2, 0)
    score = record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=scope,
        value=False,
        score_type="true_false",
        rationale="refused in fact",
    )
    # The human verdict wins: one success became a failure, and it is reviewed.
    assert _headline() == (2, 1, 1)
    assert _bars("harm_category") == {"fraud": {"success": 1, "failure": 1}}
    _exact()
    submission = score.verdict_submission
    assert submission is not None
    [corrected] = edit_review(
        reviewer=reviewer,
        scope=scope,
        submission=submission,
        answers=VerdictAnswers(rationale="on second reading", scale=0.8, fields=_scale()),
        correction=uuid.uuid4(),
    )
    assert _headline() == (2, 2, 1)  # 0.8 >= 0.5: a success again, still reviewed
    _exact()
    assert corrected.verdict_submission is not None
    withdraw_review(reviewer=reviewer, scope=scope, submission=corrected.verdict_submission)
    assert _headline() == (2, 2, 0)  # back to the automated outcome, no longer reviewed
    _exact()
    # A category answer marks the result reviewed and decides nothing.
    record_review(
        attack_result=other,
        reviewer=reviewer,
        scope=scope,
        answers=VerdictAnswers(
            rationale="just a category",
            category="jailbreak",
            fields=VerdictFields(true_false=False, categories=("jailbreak",)),
        ),
        submission=None,
    )
    assert _headline() == (2, 2, 1)
    _exact()


def _scale() -> VerdictFields:
    return VerdictFields(true_false=False, scale=True)


def test_the_same_review_posted_twice_counts_once() -> None:
    reviewer = make_user("judge")
    [result] = _stored(1)
    token = uuid.uuid4()
    for _ in range(2):
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=False,
            score_type="true_false",
            rationale="no",
            submission=token,
        )
    assert _headline() == (1, 0, 1)
    _exact()


# --- random mix == recount -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_mix_of_writes_equals_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    reviewer = make_user("judge")
    sent: list[dict[str, Any]] = []
    standing: list[uuid.UUID] = []
    for step in range(40):
        action = rng.choice(["new", "new", "resend", "change", "relabel", "verdict", "undo"])
        scope = user_scope(reviewer)  # operations appear as labels name them
        if action == "new" or not sent:
            batch = [
                _result(
                    f"mix-{rng.randrange(12)}",
                    rng.choice(OUTCOMES),
                    labels={"operation": rng.choice(["op", "op1"]), "t": rng.choice("ab")},
                    targeted_harm_categories=rng.sample(
                        ["fraud", "hate", "cyber"], rng.randint(0, 2)
                    ),
                    timestamp=f.ts(rng.randrange(0, 40 * 86400)),
                )
                for _ in range(rng.randint(1, 4))
            ]
            ingest_batch({"attack_results": batch})
            sent.extend(batch)
        elif action == "resend":
            ingest_batch({"attack_results": rng.sample(sent, min(3, len(sent)))})
        elif action == "change":
            item = rng.choice(sent)
            ingest_batch({"attack_results": [{**item, "outcome": rng.choice(OUTCOMES)}]})
        elif action == "relabel":
            piece = f.legacy_piece(
                conversation_id=f"mix-{rng.randrange(12)}",
                sequence=step,
                labels={"operation": "op", f"k{rng.randrange(3)}": str(step)},
                targeted_harm_categories=[rng.choice(["fraud", "violence"])],
            )
            ingest_batch({"message_pieces": [piece]})
        elif action == "verdict":
            # A sent result may have been refused (its label naming another operation than
            # its conversation's): pick among the stored ones.
            stored = sorted(
                AttackResult.objects.filter(
                    pk__in=[i["attack_result_id"] for i in sent]
                ).values_list("pk", flat=True)
            )
            result = AttackResult.objects.get(pk=rng.choice(stored))
            answers = rng.choice(
                [
                    VerdictAnswers(rationale="r", objective=rng.random() < 0.5),
                    VerdictAnswers(rationale="r", scale=rng.random(), fields=_scale()),
                ]
            )
            scores = record_review(
                attack_result=result,
                reviewer=reviewer,
                scope=scope,
                answers=answers,
                submission=None,
            )
            assert scores[0].verdict_submission is not None
            standing.append(scores[0].verdict_submission)
        elif action == "undo" and standing:
            submission = standing.pop(rng.randrange(len(standing)))
            if rng.random() < 0.5:
                withdraw_review(reviewer=reviewer, scope=scope, submission=submission)
            else:
                [new] = edit_review(
                    reviewer=reviewer,
                    scope=scope,
                    submission=submission,
                    answers=VerdictAnswers(rationale="c", objective=rng.random() < 0.5),
                    correction=uuid.uuid4(),
                )
                assert new.verdict_submission is not None
                standing.append(new.verdict_submission)
        if step % 10 == 9:
            _exact()
    _exact()
    kept = tally_totals()
    rebuild = rebuild_tallies()
    assert rebuild.results == AttackResult.objects.count()
    assert tally_totals() == kept
    assert sum(n for k, n in kept.items() if k[0] == "all" and k[2] == "all") == rebuild.results


def test_a_result_deleted_leaves_the_counts() -> None:
    reviewer = make_user("judge")
    result, other = _stored(2)
    record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=False,
        score_type="true_false",
        rationale="no",
    )
    assert _headline() == (2, 1, 1)
    # Not a service (the admin is read-only), but the shell may: the counts follow.
    AttackResult.objects.filter(pk=result.pk).delete()
    assert _headline() == (1, 1, 0)
    assert not TalliedResult.objects.filter(pk=result.pk).exists()
    _exact()
    assert other.pk


# --- ASR over time ---------------------------------------------------------------------------


def _independent_trend(
    rows: list[tuple[str, str, datetime]], period: str, latest: date
) -> list[tuple[date, Counter[str], dict[str, Counter[str]]]]:
    """(period start, all results by outcome, {attack: by outcome}) per period, from the
    inputs alone."""
    step = 7 if period == "week" else 1
    last = latest - timedelta(days=latest.weekday()) if period == "week" else latest
    starts = [last - timedelta(days=step * i) for i in reversed(range(TREND_PERIODS[period]))]
    out = []
    for start in starts:
        inside = [r for r in rows if start <= r[2].date() < start + timedelta(days=step)]
        by_attack: dict[str, Counter[str]] = {}
        for attack, outcome, _ in inside:
            by_attack.setdefault(attack, Counter())[outcome] += 1
        out.append((start, Counter(o for _, o, _ in inside), by_attack))
    return out


@pytest.mark.parametrize("period", ["day", "week"])
def test_asr_over_time_matches_an_independent_count(period: str) -> None:
    rng = random.Random(7)
    t0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
    rows: list[tuple[str, str, datetime]] = []
    items = []
    for i in range(120):
        attack = rng.choice(["PromptSendingAttack", "CrescendoAttack"])
        outcome = rng.choice(OUTCOMES)
        when = t0 + timedelta(hours=rng.randrange(0, 24 * 100))
        rows.append((attack, outcome, when))
        items.append(
            _result(
                f"trend-{i}",
                outcome,
                atomic_attack_identifier=f.attack_identifier(attack),
                timestamp=when.isoformat().replace("+00:00", "Z"),
            )
        )
    ingest_batch({"attack_results": items})
    latest = max(r[2] for r in rows).date()
    data = build_dashboard(None, EVERYTHING, trend_by="attack", period=period)
    trend = data.trend
    totals = Counter(r[0] for r in rows)
    assert [s.key for s in trend.series] == [
        "all",
        *sorted(totals, key=lambda a: (-totals[a], a)),
    ]
    expected = _independent_trend(rows, period, latest)
    assert [r.start for r in trend.rows] == [e[0] for e in expected]
    for row, (_, overall, by_attack) in zip(trend.rows, expected, strict=True):
        assert {o: n for o, n in row.counts[0].counts.items() if n} == dict(overall)
        for series, counts in zip(trend.series[1:], row.counts[1:], strict=True):
            want = by_attack.get(series.key, Counter())
            assert {o: n for o, n in counts.counts.items() if n} == dict(want)
        rate = row.rates[0]
        assert (rate.successes, rate.n) == (overall["success"], sum(overall.values()))


def test_a_result_dated_after_its_ingest_counts_on_its_ingest_day() -> None:
    future = datetime(2099, 1, 1, tzinfo=UTC)
    ingest_batch({"attack_results": [_result("fut", timestamp="2099-01-01T00:00:00Z")]})
    result = AttackResult.objects.get()
    assert result.timestamp == future
    day = result_day(result.timestamp, result.ingested_at)
    assert day == result.ingested_at.astimezone(UTC).date()
    trend = build_trend(EVERYTHING, "all", [], "day")
    assert trend.rows[-1].start == day
    assert trend.rows[-1].counts[0].total == 1
    assert period_start(date(2026, 3, 5), "week") == date(2026, 3, 2)  # a Thursday: Monday


def test_dashboard_page_shows_the_trend_as_table_and_svg(reviewer_client: Client) -> None:
    items = [
        _result(f"p{i}", OUTCOMES[i % 2], timestamp=f.ts(86400 * i), targeted_harm_categories=["x"])
        for i in range(10)
    ]
    ingest_batch({"attack_results": items})
    url = reverse("scoring:dashboard")
    html = reviewer_client.get(url + "?trend_by=harm_category&period=day").content.decode()
    assert "Attack success over time" in html
    assert "<svg" in html
    assert "<polyline" in html
    assert "<script>" not in html
    assert 'class="trend-table"' in html
    assert '<strong>100%</strong> <span class="muted small">1/1</span>' in html
    # Unknown choices fall back to the defaults rather than failing.
    assert reviewer_client.get(url + "?trend_by=<x>&period=year").status_code == 200


@pytest.mark.parametrize("n", [3, 30])
def test_dashboard_with_trend_costs_constant_queries(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    ingest_batch(
        {
            "attack_results": [
                _result(
                    f"q{i}",
                    OUTCOMES[i % 4],
                    timestamp=f.ts(3600 * 7 * i),
                    labels={"operation": "op", "t": str(i % 5)},
                )
                for i in range(n)
            ]
        }
    )
    # session, user, memberships; tallies; label keys; target names; latest day; trend cells;
    # the newest visible result (the live banner's marker).
    with django_assert_num_queries(9):
        response = reviewer_client.get(
            reverse("scoring:dashboard") + "?label_key=t&trend_by=label&period=day"
        )
    assert response.context["headline"].results == n
    assert len(response.context["trend"].series) == 1 + min(5, n)


# --- concurrency (PostgreSQL) ----------------------------------------------------------------


def _postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers; shards and row locks need PostgreSQL")


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_take_separate_shards_and_lose_nothing() -> None:
    _postgres()
    # Committed first, so the writers below share no uncommitted row (operation, identifiers).
    ingest_batch({"attack_results": [_result("s0", "success")]})
    hold = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                ingest_batch({"attack_results": [_result("s1", "success")]})
                hold.set()
                release.wait(20)
        except BaseException as exc:
            errors.append(exc)
            hold.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=first)
    thread.start()
    assert hold.wait(20)
    # The first writer holds shard 0 (its transaction is open): this one adds to shard 1
    # instead of waiting on the first one's rows.
    ingest_batch({"attack_results": [_result("s2", "success")]})
    release.set()
    thread.join(20)
    assert errors == []
    shards = set(OutcomeTally.objects.values_list("shard", flat=True))
    assert shards == {0, 1}
    assert max(shards) < SHARDS
    assert _headline() == (3, 3, 0)
    _exact()


@pytest.mark.django_db(transaction=True)
def test_concurrent_verdicts_on_one_result_count_it_once() -> None:
    _postgres()
    [result] = _stored(1)
    reviewers = [make_user(f"r{i}") for i in range(4)]
    barrier = threading.Barrier(len(reviewers))
    errors: list[BaseException] = []

    def judge(user: User, value: bool) -> None:
        try:
            barrier.wait(10)
            record_verdict(
                attack_result=result,
                reviewer=user,
                scope=user_scope(user),
                value=value,
                score_type="true_false",
                rationale="concurrent",
            )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=judge, args=(u, i % 2 == 0)) for i, u in enumerate(reviewers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert Score.objects.filter(attack_result=result).count() == 4
    results, _, reviewed = _headline()
    assert (results, reviewed) == (1, 1)
    _exact()


def test_trend_chart_breaks_lines_at_empty_periods_and_keeps_labels_inside() -> None:
    from redteam.core.outcomes import OutcomeCounts
    from scoring.tallies import Series, Trend, TrendRow
    from scoring.trend_chart import trend_chart

    def counts(success: int, failure: int) -> OutcomeCounts:
        c = OutcomeCounts()
        c.add("success", success)
        c.add("failure", failure)
        return c

    start = date(2026, 3, 2)
    rows = [
        TrendRow(start=start + timedelta(days=7 * i), end=start, counts=[counts(*pair)])
        for i, pair in enumerate([(1, 1), (2, 0), (0, 0), (0, 3), (1, 3)])
    ]
    chart = trend_chart(Trend("week", "all", [Series("all", "all results")], rows))
    [series] = chart["series"]
    assert len(series["points"]) == 4  # the empty week has no point...
    assert len(series["lines"]) == 2  # ...and breaks the line in two
    ys = [p.y for p in series["points"]]
    assert ys[1] == chart["grid"][-1]["y"]  # 100% on the top gridline
    assert ys[2] == chart["grid"][0]["y"]  # 0% on the bottom one
    anchors = [label["anchor"] for label in chart["x_labels"]]
    assert anchors[0] == "start"
    assert anchors[-1] == "end"
    assert chart["x_labels"][-1]["text"] == "03-30"


def test_migrating_back_past_the_tallies_skips_counting_them() -> None:
    """post_migrate after `migrate memory 0016` (bench/explain.py does it): the tally tables
    are gone, so there is nothing to count into, and the migration must not fail on them."""
    ingest_batch({"attack_results": [_result("gone")]})
    TalliedResult.objects.all().delete()  # results, none tallied: a rebuild would run
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {TalliedResult._meta.db_table}")  # rolled back after
    build_missing_tallies(using=connection.alias)
