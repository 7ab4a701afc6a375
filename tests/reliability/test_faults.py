"""Faults: a database error mid-batch, a client killed mid-request, and hostile bodies.

All against the real gunicorn (production settings). After every fault the database holds
nothing partial and the server still answers a good batch with 200.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from memory.models import Conversation, MessagePiece, Score
from tests.reliability.conftest import STRING_LIMIT, ServedApp
from tests.reliability.payloads import Message, batch_body, make_corpus, make_piece, scorer_template

pytestmark = [pytest.mark.reliability, pytest.mark.django_db(transaction=True)]

INGEST = "/api/v1/ingest/"
FAULT_MARKER = "FAULT-INJECT"
TRIGGER = "redteam_test_fault"


@pytest.fixture
def key(served: ServedApp) -> str:
    return served.make_key("ingest", "read")[1]


@pytest.fixture
def template(fixtures_dir: Path) -> dict[str, Any]:
    return scorer_template(fixtures_dir)


def _post(
    served: ServedApp, key: str, body: bytes, content_type: str | None = "application/json"
) -> tuple[int, Any]:
    """POST to the ingest endpoint; content_type None sends no Content-Type at all."""
    headers = {"Authorization": f"Bearer {key}", "X-Forwarded-Proto": "https"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    conn = http.client.HTTPConnection(served.host, served.port, timeout=60)
    try:
        conn.request("POST", INGEST, body=body, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw[:200]


def _piece_ids(messages: list[Message]) -> set[str]:
    return {p["id"] for m in messages for p in m.pieces}


def _stored(served: ServedApp, messages: list[Message]) -> tuple[int, int, int]:
    """(pieces, scores, conversations) of these messages now in the database."""
    pieces = MessagePiece.objects.using(served.alias).filter(id__in=_piece_ids(messages)).count()
    scores = (
        Score.objects.using(served.alias)
        .filter(id__in=[s["id"] for m in messages for s in m.scores])
        .count()
    )
    conversations = (
        Conversation.objects.using(served.alias)
        .filter(conversation_id__in={m.conversation_id for m in messages})
        .count()
    )
    return pieces, scores, conversations


def _expect_good_batch_stored(served: ServedApp, key: str, template: dict[str, Any]) -> None:
    """The server still serves: a fresh batch is answered 200 and fully stored."""
    fresh = make_corpus(template, conversations=2, turns=2, seed=uuid.uuid4().int % 2**32)
    status, answer = _post(served, key, batch_body(fresh))
    assert status == 200, answer
    assert answer["errors"] == 0
    pieces, scores, _ = _stored(served, fresh)
    assert (pieces, scores) == (len(_piece_ids(fresh)), sum(len(m.scores) for m in fresh))
    assert served.alive()


# --- a database error in the middle of a batch ------------------------------------------


@pytest.fixture
def fault_trigger(served: ServedApp) -> Iterator[Any]:
    """Install a trigger that fails INSERTs on a table (optionally only marked rows)."""
    installed: list[str] = []
    connection = connections[served.alias]

    def install(table: str, only_marked_column: str | None = None) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql "
                    "AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$"
                )
                when = (
                    f"WHEN (NEW.{only_marked_column} LIKE '%%{FAULT_MARKER}%%')"
                    if only_marked_column
                    else ""
                )
                cursor.execute(
                    f"CREATE TRIGGER {TRIGGER} BEFORE INSERT ON {table} FOR EACH ROW {when} "
                    f"EXECUTE FUNCTION {TRIGGER}()"
                )
            else:
                when = (
                    f"WHEN NEW.{only_marked_column} LIKE '%{FAULT_MARKER}%'"
                    if only_marked_column
                    else ""
                )
                cursor.execute(
                    f"CREATE TRIGGER {TRIGGER} BEFORE INSERT ON {table} {when} "
                    "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
                )
        installed.append(table)

    yield install
    with connection.cursor() as cursor:
        for table in installed:
            if connection.vendor == "postgresql":
                cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {table}")
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")


def _marked_corpus(template: dict[str, Any]) -> list[Message]:
    """Messages whose last piece carries the fault marker, so the failure hits mid-batch."""
    messages = make_corpus(template, conversations=3, turns=4, seed=uuid.uuid4().int % 2**32)
    last = messages[-1].pieces[-1]
    last["original_value"] = last["converted_value"] = f"{FAULT_MARKER} {last['original_value']}"
    return messages


@pytest.mark.parametrize("failing", ["pieces", "scores"])
def test_database_error_mid_batch_leaves_nothing_and_a_retry_stores_everything(
    served: ServedApp, key: str, template: dict[str, Any], fault_trigger: Any, failing: str
) -> None:
    messages = _marked_corpus(template)
    if failing == "pieces":
        # The last row of the piece INSERT fails: earlier rows of the same batch were written.
        fault_trigger(MessagePiece._meta.db_table, "original_value")
    else:
        # Every piece is written, then the scores fail.
        fault_trigger(Score._meta.db_table)
    status, _ = _post(served, key, batch_body(messages))
    assert status == 500  # the database failed; the client may retry (ingestion is idempotent)
    assert _stored(served, messages) == (0, 0, 0)

    connection = connections[served.alias]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            table = MessagePiece if failing == "pieces" else Score
            cursor.execute(f"DROP TRIGGER {TRIGGER} ON {table._meta.db_table}")
        else:
            cursor.execute(f"DROP TRIGGER {TRIGGER}")
    status, answer = _post(served, key, batch_body(messages))
    assert status == 200, answer
    # Everything is new: the failed attempt left nothing behind to be "unchanged".
    assert (answer["stored"], answer["unchanged"]) == (
        len(_piece_ids(messages)) + sum(len(m.scores) for m in messages),
        0,
    )
    assert _stored(served, messages) == (
        len(_piece_ids(messages)),
        sum(len(m.scores) for m in messages),
        len({m.conversation_id for m in messages}),
    )
    _expect_good_batch_stored(served, key, template)


# --- a client killed mid-request ----------------------------------------------------------

KILLED_CLIENT = r"""
import socket, sys
host, port, key, path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = open(path, "rb").read()
cut = len(body) // 2 if sys.argv[5] == "half" else len(body)
sock = socket.create_connection((host, port))
head = (
    f"POST /api/v1/ingest/ HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    "X-Forwarded-Proto: https\r\n\r\n"
).encode()
sock.sendall(head + body[:cut])
print("sent", flush=True)
sys.stdin.read()  # wait here until killed
"""


@pytest.mark.parametrize("when", ["half", "full"])
def test_client_killed_mid_request_leaves_nothing_partial(
    served: ServedApp, key: str, template: dict[str, Any], tmp_path: Path, when: str
) -> None:
    messages = make_corpus(template, conversations=4, turns=4, seed=uuid.uuid4().int % 2**32)
    body_file = tmp_path / "batch.json"
    body_file.write_bytes(batch_body(messages))
    client = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILLED_CLIENT,
            served.host,
            str(served.port),
            key,
            str(body_file),
            when,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdout is not None
    assert client.stdout.readline().strip() == "sent"
    client.kill()
    client.wait(timeout=30)

    # The server goes on serving other clients.
    _expect_good_batch_stored(served, key, template)
    if when == "half":
        # Half a body can never be stored: not a piece of it is there.
        assert _stored(served, messages)[0] == 0
    # Whatever the killed request did, a retry ends with every item stored exactly once.
    status, answer = _post(served, key, batch_body(messages))
    assert status == 200, answer
    expected = len(_piece_ids(messages)) + sum(len(m.scores) for m in messages)
    assert answer["stored"] + answer["unchanged"] == expected
    assert _stored(served, messages)[:2] == (
        len(_piece_ids(messages)),
        sum(len(m.scores) for m in messages),
    )


# --- hostile bodies -----------------------------------------------------------------------


def _piece_body(**overrides: Any) -> bytes:
    piece = make_piece(str(uuid.uuid4()), 0, "user", "hello", datetime.now(UTC))
    piece.update(overrides)
    return json.dumps({"message_pieces": [piece]}).encode()


def _nested_body(depth: int) -> bytes:
    piece = _piece_body().decode()
    deep = '{"a":' * depth + "1" + "}" * depth
    return piece.replace('"prompt_metadata": {}', f'"prompt_metadata": {deep}').encode()


def _with_good_piece(body: bytes) -> bytes:
    """The one-piece body with a good piece of another conversation after it."""
    payload = json.loads(body)
    payload["message_pieces"].append(json.loads(_piece_body())["message_pieces"][0])
    return json.dumps(payload).encode()


JSON = "application/json"
# case -> (body, content type or None for none, expected status): refused whole, nothing read.
HOSTILE: dict[str, tuple[Callable[[], bytes], str | None, int]] = {
    "json_nested_past_the_parser": (lambda: b"[" * 100_000 + b"]" * 100_000, JSON, 400),
    "invalid_utf8": (lambda: b'{"message_pieces": [{"id": "\xff\xfe\xfd"}]}', JSON, 400),
    "raw_nul_byte": (lambda: b'{"message_pieces": [{"id": "a\x00b"}]}', JSON, 400),
    "truncated_json": (lambda: _piece_body()[:-7], JSON, 400),
    "not_an_object": (lambda: b'"just a string"', JSON, 400),
    "xml_content_type": (lambda: b"<batch/>", "application/xml", 415),
    "form_content_type": (lambda: b"message_pieces=1", "application/x-www-form-urlencoded", 415),
    "multipart_content_type": (lambda: b"--x--", "multipart/form-data; boundary=x", 415),
    "no_content_type": (lambda: _piece_body(), None, 415),
}
# case -> (body of a hostile piece then a good one, expected status, pieces stored): a
# problem with one item's content costs that item alone, never its batch.
PER_ITEM: dict[str, tuple[Callable[[], bytes], int, int]] = {
    "deeply_nested_json": (lambda: _with_good_piece(_nested_body(500)), 207, 1),
    "lone_surrogate": (lambda: _with_good_piece(_piece_body(original_value="\ud800")), 207, 1),
    "string_over_the_limit": (
        lambda: _with_good_piece(_piece_body(original_value="x" * (STRING_LIMIT + 1))),
        207,
        1,
    ),
    "timestamp_out_of_range": (
        lambda: _with_good_piece(_piece_body(timestamp="0001-01-01T00:00:00+05:00")),
        207,
        1,
    ),
    "nul_escape_in_value": (
        lambda: _with_good_piece(_piece_body(original_value="a\u0000b")),
        200,
        2,
    ),
    "non_finite_metadata": (
        lambda: _with_good_piece(
            _piece_body(prompt_metadata={"n": math.nan, "i": math.inf, "big": 1e308 * 10})
        ),
        200,
        2,
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_body_gets_a_clear_4xx_and_the_server_keeps_serving(
    served: ServedApp, key: str, template: dict[str, Any], case: str
) -> None:
    make_body, content_type, expected = HOSTILE[case]
    status, answer = _post(served, key, make_body(), content_type)
    assert status == expected, answer
    assert isinstance(answer, dict), answer
    assert answer.get("detail"), answer  # a readable reason
    assert MessagePiece.objects.using(served.alias).count() == 0
    _expect_good_batch_stored(served, key, template)


@pytest.mark.parametrize("case", sorted(PER_ITEM))
def test_hostile_item_costs_only_itself_and_the_server_keeps_serving(
    served: ServedApp, key: str, template: dict[str, Any], case: str
) -> None:
    make_body, expected, stored = PER_ITEM[case]
    before = MessagePiece.objects.using(served.alias).count()
    status, answer = _post(served, key, make_body())
    assert status == expected, answer
    assert answer["stored"] == stored, answer
    if expected == 207:
        rejected = [i for i in answer["items"] if i["status"] == "rejected"]
        assert [i["index"] for i in rejected] == [0]
        assert rejected[0]["errors"][0]["field"]
    assert MessagePiece.objects.using(served.alias).count() == before + stored
    _expect_good_batch_stored(served, key, template)


def test_oversize_body_is_refused_before_it_is_read(served: ServedApp, key: str) -> None:
    """A declared length over the limit gets 413 at once, without the server reading it."""
    limit = 16 * 1024 * 1024
    conn = http.client.HTTPConnection(served.host, served.port, timeout=60)
    try:
        conn.putrequest("POST", INGEST)
        conn.putheader("Authorization", f"Bearer {key}")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(limit + 1))
        conn.putheader("X-Forwarded-Proto", "https")
        # Headers only: the body never comes, and the answer must not wait for it.
        conn.endheaders()
        response = conn.getresponse()
        answer = json.loads(response.read())
    finally:
        conn.close()
    assert response.status == 413
    assert answer["limit_bytes"] == limit
    assert "split the batch" in answer["detail"]


# --- a server worker killed in the middle of a transaction --------------------------------

LOCK_KEY = 4242_0606


def _worker_pids(served: ServedApp) -> list[int]:
    """Live gunicorn workers of this server (children of its master), from its log."""
    pids = []
    for line in served.log:
        if "Booting worker with pid:" in line:
            pid = int(line.rsplit(":", 1)[1])
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            ppid = next(int(x.split()[1]) for x in status.splitlines() if x.startswith("PPid:"))
            if ppid == served.process.pid:
                pids.append(pid)
    return pids


def _poll(cursor: Any, sql: str, params: list[Any], want: bool) -> Any:
    """Run `sql` until it returns a row (want=True) or none; bounded, waiting inside the
    database (pg_sleep) rather than in the test."""
    for _ in range(600):
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if (row is not None) == want:
            return row
        cursor.execute("SELECT pg_sleep(0.05)")
    raise AssertionError(f"condition not reached: {sql}")


def test_worker_killed_mid_transaction_leaves_nothing_and_is_replaced(
    served: ServedApp, key: str, template: dict[str, Any]
) -> None:
    """A worker is SIGKILLed while its batch transaction is open (half the pieces inserted,
    the INSERT waiting on a lock the test holds): PostgreSQL rolls the batch back."""
    if served.vendor != "postgresql":
        pytest.skip("needs a database-side wait point (a PostgreSQL advisory lock)")
    import signal
    import threading

    messages = _marked_corpus(template)
    connection = connections[served.alias]
    table = MessagePiece._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        cursor.execute(
            f"CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN PERFORM pg_advisory_xact_lock({LOCK_KEY}); RETURN NEW; END $$"
        )
        cursor.execute(
            f"CREATE TRIGGER {TRIGGER} BEFORE INSERT ON {table} FOR EACH ROW "
            f"WHEN (NEW.original_value LIKE '%%{FAULT_MARKER}%%') EXECUTE FUNCTION {TRIGGER}()"
        )
    outcome: list[Any] = []

    def send() -> None:
        try:
            outcome.append(_post(served, key, batch_body(messages)))
        except OSError as exc:  # the worker dies under this request
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    try:
        with connection.cursor() as cursor:
            (backend,) = _poll(
                cursor,
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = %s "
                "AND NOT granted",
                [LOCK_KEY % 2**32],
                want=True,
            )
            workers = _worker_pids(served)
            assert workers
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
            # The orphaned backend finishes its statement, finds its client gone, rolls back.
            _poll(cursor, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", [backend], want=False)
            cursor.execute(f"DROP TRIGGER {TRIGGER} ON {table}")
    finally:
        sender.join(timeout=60)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock_all()")
            cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {table}")
    assert outcome
    assert not (isinstance(outcome[0], tuple) and outcome[0][0] == 200)
    assert _stored(served, messages) == (0, 0, 0)
    # The master replaces the killed workers; the server goes on serving.
    _expect_good_batch_stored(served, key, template)
