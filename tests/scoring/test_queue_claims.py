"""Claims under concurrency: reviewers racing for one item, on PostgreSQL, get one winner.

Each thread has its own database connection (its own transactions), as the app servers'
workers do; a barrier starts their claims together.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from redteam.common.access import user_scope
from scoring.models import ReviewClaim, ReviewQueue
from scoring.queues import QueueWalk
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db(transaction=True)
RACERS = 6


def _race(result_id: Any, queue: ReviewQueue) -> list[bool]:
    users = [make_user(f"racer{i}") for i in range(RACERS)]
    walks = [QueueWalk(queue, user_scope(u), u) for u in users]
    barrier = threading.Barrier(RACERS)
    won: list[bool] = []
    errors: list[BaseException] = []

    def run(walk: QueueWalk) -> None:
        try:
            barrier.wait()
            won.append(walk.claim(result_id).mine)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(w,)) for w in walks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    return won


@pytest.fixture
def postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("concurrent claims are exercised on PostgreSQL (SQLite has one writer)")


@pytest.mark.usefixtures("postgres_only")
def test_racing_reviewers_get_one_claim_on_a_free_item() -> None:
    result = make_attack_result(make_conversation(2))
    queue, _ = ReviewQueue.objects.get_or_create(slug="race", defaults={"name": "Race"})
    won = _race(result.pk, queue)
    assert sorted(won) == [False] * (RACERS - 1) + [True]
    assert ReviewClaim.objects.count() == 1


@pytest.mark.usefixtures("postgres_only")
def test_racing_reviewers_get_one_claim_on_an_expired_item() -> None:
    result = make_attack_result(make_conversation(2))
    queue, _ = ReviewQueue.objects.get_or_create(slug="race", defaults={"name": "Race"})
    gone = make_user("gone")
    ReviewClaim.objects.create(
        attack_result=result,
        user=gone,
        claimed_at=timezone.now() - timedelta(hours=1),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    won = _race(result.pk, queue)
    assert sorted(won) == [False] * (RACERS - 1) + [True]
    assert ReviewClaim.objects.get().user.username.startswith("racer")
