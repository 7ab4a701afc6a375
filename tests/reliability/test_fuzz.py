"""Fuzzing: schemathesis drives every operation of the generated OpenAPI schema, through WSGI,
authenticated with a key holding both scopes, with valid and invalid inputs. No answer may be a
5xx, and every answer must match the schema (status codes, content types, bodies, headers).

Bounded: FUZZ_EXAMPLES examples per operation (default 15), no example database, derandomized
so a CI failure replays locally.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core import signals
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import positive_data_acceptance

from redteam.common.models import ApiKey
from redteam.wsgi import application
from tests.access import bind_everywhere
from tests.api.pyrit_fixtures import LINES, fixture_payload, scenario_rows
from tests.api.test_scenario_results import LEGACY_ROW
from tests.reliability.payloads import batch_body, make_corpus, scorer_template

pytestmark = [pytest.mark.reliability, pytest.mark.django_db]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
# positive_data_acceptance expects every schema-valid request to succeed. Filters validate
# meaning that parameter types cannot express (label syntax, hash shapes, ranges) and answer
# such requests with a documented 400 naming the field, which is right, not a failure.
EXCLUDED_CHECKS = [positive_data_acceptance]


@pytest.fixture
def fuzz_key(db: None) -> str:
    user = get_user_model().objects.create_user("fuzzer")
    row, key = ApiKey.objects.create_key(name="fuzz", user=user, scopes=["ingest", "read"])
    bind_everywhere(row)
    return key


@pytest.fixture
def seeded(fuzz_key: str, fixtures_dir: Path) -> None:
    """Stored memory of every kind, in both PyRIT shapes, so list/detail reads have rows to
    serialize and paginate and every answer's whole contract is checked."""
    from django.test import Client

    corpus = make_corpus(scorer_template(fixtures_dir), conversations=3, turns=4, seed=7)
    bodies = [batch_body(corpus)]
    bodies += [json.dumps(fixture_payload(fixtures_dir, line)).encode() for line in LINES]
    bodies.append(json.dumps({"scenario_results": [*scenario_rows(), LEGACY_ROW]}).encode())
    for body in bodies:
        response = Client().post(
            "/api/v1/ingest/",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {fuzz_key}",
        )
        assert response.status_code == 200, response.content


@pytest.fixture
def keep_test_connection() -> Any:
    """Call the real WSGI app as Django's test client does: without closing the connection
    at request boundaries, which would end the test's transaction on PostgreSQL."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.long
@pytest.mark.usefixtures("seeded", "quiet_request_log", "keep_test_connection")
def test_api_survives_schema_driven_fuzzing(fuzz_key: str) -> None:
    auth = {"Authorization": f"Bearer {fuzz_key}"}
    # The real schema endpoint, read with the key (it needs the read scope).
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application, headers=auth)
    operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
    errors = [r for r in schema.get_all_operations() if not isinstance(r, Ok)]
    assert not errors, errors
    assert len(operations) >= 10  # every endpoint is in the schema

    cases: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    failures: dict[str, str] = {}

    def fuzz_operation(operation: Any, label: str) -> None:
        @given(case=operation.as_strategy())
        @hypothesis.settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
            phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        )
        def fuzz(case: Any) -> None:
            cases[label] += 1
            # Each call in its own savepoint, undone afterwards: a request that broke the
            # transaction (which must not happen) cannot poison the ones after it.
            savepoint = transaction.savepoint()
            try:
                response = case.call_and_validate(headers=auth, excluded_checks=EXCLUDED_CHECKS)
            finally:
                transaction.savepoint_rollback(savepoint)
            statuses[response.status_code] += 1

        fuzz()

    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        try:
            fuzz_operation(operation, label)
        except BaseException as exc:  # every failing operation is reported
            failures[label] = str(exc)[:3000]

    total = sum(cases.values())
    print(f"\nfuzz cases run: {total} over {len(cases)} operations; statuses {dict(statuses)}")
    assert not failures, "\n\n".join(f"{k}:\n{v}" for k, v in failures.items())
    assert set(cases) == {f"{o.method.upper()} {o.path}" for o in operations}
    assert all(code < 500 for code in statuses)


@pytest.mark.parametrize(
    "url",
    [
        # Found by this fuzz test on PostgreSQL: offsets beyond +-15:59 and dates that leave
        # the datetime range once converted to UTC used to reach the database (500).
        "/api/v1/seeds/?after=0028-06-27T18:39:54%2B21:22",
        "/api/v1/seeds/?before=0001-01-01T00:00:00%2B05:00",
        "/api/v1/scores/?after=0001-01-01T00:00:00%2B05:00",
        "/api/v1/message-pieces/?after=9999-12-31T23:59:59-05:00",
        "/api/v1/conversations/?before=0028-06-27T18:39:54%2B21:22",
        "/api/v1/attack-results/?after=2026-01-01T00:00:00-23:59",
    ],
)
def test_extreme_datetime_filters_are_answered_without_a_server_error(
    fuzz_key: str, url: str
) -> None:
    from django.test import Client

    response = Client(raise_request_exception=False).get(
        url, HTTP_AUTHORIZATION=f"Bearer {fuzz_key}"
    )
    assert response.status_code in (200, 400), response.content[:300]
