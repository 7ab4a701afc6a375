"""Every value PyRIT stores is stored and read back exactly; one item never costs another.

Generated edge cases over the real fixture rows of both PyRIT lines: NUL (and the storage
escape character) in every free-text string of every kind, NaN/Infinity in every JSON column,
huge strings, timestamps and floats out of range, mixed good and bad items in one batch.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.test import override_settings
from rest_framework.test import APIClient

from memory.models import MessagePiece
from redteam.common.fields import (
    ExactCharField,
    ExactJSONField,
    ExactTextField,
    stored_text_head,
    stored_text_length,
)
from redteam.common.models import Operation
from redteam.core.digests import is_sha256
from redteam.core.storedtext import ESCAPE, NUL_MARK, encode_text
from tests.api.factories import attack_result, conversation, piece, score
from tests.api.pyrit_fixtures import LINES, fixture_payload
from tests.api.test_roundtrip import assert_api_serves_payload, read_all

pytestmark = pytest.mark.django_db
INGEST = "/api/v1/ingest/"

# What NUL becomes in a free-text string: NUL itself, the storage escape character and the
# mark that follows it, and text that looks like an escaped non-finite float.
HOSTILE = "\x00" + ESCAPE + NUL_MARK + "\x00" + ESCAPE + "NaN"

# Strings that are typed rather than free text: PyRIT itself validates them (ids, enums,
# hashes, timestamps), or they name a Python class. Everything else gets HOSTILE appended.
_TYPED_KEYS = frozenset(
    {
        "class_name",
        "class_module",
        "__type__",
        "__module__",
        "hash",
        "eval_hash",
        "pyrit_version",
        "role",
        "original_value_data_type",
        "converted_value_data_type",
        "data_type",
        "response_error",
        "originator",
        "score_type",
        "status",
        "outcome",
        "conversation_type",
        "seed_type",
        "scorable_type",
        "reason",
        "score_value",  # "true"/"false" or a number
        "original_value",  # media paths are checked against their data type; see below
        "converted_value",
        "value",
    }
)
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d")


def _is_typed(key: object, value: str) -> bool:
    if key in _TYPED_KEYS or is_sha256(value) or _TIMESTAMP.match(value):
        return True
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# Mappings whose keys are free text too (the others' keys are field names).
_FREE_MAPPINGS = frozenset({"labels", "prompt_metadata", "score_metadata", "metadata"})


def _hostile(value: Any, key: object = None) -> Any:
    """The value with HOSTILE appended to every free-text string (and free key) inside it."""
    if isinstance(value, str):
        return value if _is_typed(key, value) else value + HOSTILE
    if isinstance(value, list):
        return [_hostile(item, key) for item in value]
    if isinstance(value, dict):
        free = key in _FREE_MAPPINGS
        return {(k + HOSTILE if free else k): _hostile(v, k) for k, v in value.items()}
    return value


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hostile_piece_values(piece_row: dict[str, Any]) -> None:
    """NUL in a piece's text values (a media value is a path checked against its type)."""
    for field in ("original_value", "converted_value"):
        if field in piece_row and piece_row.get(f"{field}_data_type", "text") == "text":
            piece_row[field] += HOSTILE
            if piece_row.get(f"{field}_sha256"):
                piece_row[f"{field}_sha256"] = _sha(piece_row[field])


def hostile_payload(fixtures_dir: Path, line: str) -> dict[str, list[dict[str, Any]]]:
    """The fixture payload with NUL in every free-text string and key of every item."""
    payload = fixture_payload(fixtures_dir, line)
    out: dict[str, list[dict[str, Any]]] = {}
    for kind, items in payload.items():
        out[kind] = []
        for item in items:
            item = {k: v for k, v in item.items() if not k.startswith("_")}
            new = {k: _hostile(v, k) for k, v in item.items()}
            _hostile_piece_values(new)
            if isinstance(new.get("last_response"), dict):
                _hostile_piece_values(new["last_response"])
            if kind == "seeds" and new.get("data_type", "text") == "text" and "value" in new:
                new["value"] = item["value"] + HOSTILE
                if new.get("value_sha256"):
                    new["value_sha256"] = _sha(new["value"])
            out[kind].append(new)
    return out


def ingest(api: APIClient, payload: Any, query: str = "") -> Any:
    return api.post(INGEST + query, payload, format="json")


def raw_ingest(api: APIClient, body: str) -> Any:
    return api.post(INGEST, body, content_type="application/json")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# --- every field, every kind, both lines ----------------------------------------------------


@pytest.mark.parametrize("line", LINES)
def test_nul_in_every_string_field_of_every_kind_is_stored_and_read_back_exactly(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    payload = hostile_payload(fixtures_dir, line)
    hostile = sum(HOSTILE in s for items in payload.values() for s in _strings(items))
    assert hostile > 100  # the generator reached the fields (every kind has free text)
    for kind, items in payload.items():
        assert any(HOSTILE in s for s in _strings(items)), kind
    response = ingest(api, payload)
    body = response.json()
    assert response.status_code == 200, [i for i in body["items"] if i["status"] == "rejected"]
    assert_api_serves_payload(api, payload, line)
    # Replays of the same values are no-ops.
    again = ingest(api, payload).json()
    assert again["stored"] == 0
    assert again["errors"] == 0


def test_a_different_value_after_a_nul_value_is_a_conflict(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    row = piece(cid, 0, text="before\x00after")
    assert ingest(api, {"message_pieces": [row]}).json()["stored"] == 1
    assert ingest(api, {"message_pieces": [row]}).json()["unchanged"] == 1
    changed = dict(row, original_value="before\x00other", converted_value="before\x00other")
    item = ingest(api, {"message_pieces": [changed]}).json()["items"][0]
    assert item["status"] == "rejected"
    assert item["errors"][0]["code"] == "conflict"


def test_every_text_and_json_field_of_the_stored_models_is_exact() -> None:
    plain: list[str] = []
    for app in ("memory", "scoring", "seeds"):
        for model in apps.get_app_config(app).get_models():
            for field in model._meta.concrete_fields:
                exact = isinstance(field, ExactCharField | ExactTextField | ExactJSONField)
                # simple_history's own bookkeeping columns hold nothing ingested.
                ours = not field.name.startswith("history_")
                typed = isinstance(field, models.CharField | models.TextField | models.JSONField)
                if typed and ours and not exact:
                    plain.append(f"{model.__name__}.{field.name}")
    assert not plain, f"fields that would refuse NUL or NaN: {plain}"


# --- NaN and Infinity ------------------------------------------------------------------------


def _non_finite_batch() -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    cid = str(uuid.uuid4())
    floats = {"nan": math.nan, "inf": math.inf, "minus_inf": -math.inf, "one": 1, "onef": 1.0}
    target = dict(conversation(cid)["target_identifier"], temperature=math.nan)
    row = piece(cid, 0, prompt_metadata=dict(floats))
    payload = {
        "conversations": [dict(conversation(cid), target_identifier=target)],
        "message_pieces": [row],
        "scores": [score(row, score_metadata=dict(floats))],
        "attack_results": [attack_result(cid, metadata=dict(floats))],
    }
    return payload, floats


def _same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN and 1 differs from 1.0 (the JSON spelling)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_nan_and_infinity_in_json_columns_are_stored_and_returned_as_pyrit_writes_them(
    api: APIClient,
) -> None:
    payload, floats = _non_finite_batch()
    # The body spells them as PyRIT's json.dumps does: NaN, Infinity, -Infinity.
    text = json.dumps(payload)
    assert "NaN" in text
    assert "-Infinity" in text
    response = raw_ingest(api, text)
    assert response.status_code == 200, response.content
    pieces = api.get("/api/v1/message-pieces/")
    assert b"NaN" in pieces.content
    assert b"-Infinity" in pieces.content
    got = json.loads(pieces.content)["results"][0]["prompt_metadata"]
    assert _same(got, floats)
    score_row = json.loads(api.get("/api/v1/scores/").content)["results"][0]
    assert _same(score_row["score_metadata"], floats)
    result = json.loads(api.get("/api/v1/attack-results/").content)["results"][0]
    assert _same(result["metadata"], floats)
    conv = json.loads(api.get("/api/v1/conversations/").content)["results"][0]
    assert math.isnan(conv["target_identifier"]["temperature"])
    # A replay with the same non-finite values is unchanged, not a conflict.
    again = raw_ingest(api, text).json()
    assert again["errors"] == 0
    assert again["stored"] == 0


def test_float_literal_overflow_is_infinity_in_json_and_an_item_error_elsewhere(
    api: APIClient,
) -> None:
    cid = str(uuid.uuid4())
    good = piece(cid, 0, prompt_metadata={"big": "__BIG__"})
    bad = piece(str(uuid.uuid4()), 1, role="assistant")  # a message of its own
    bad_score = score(good, value="0.5", score_type="float_scale")
    bad_score["score_value"] = "1e400"
    body = json.dumps(
        {"message_pieces": [good, dict(bad, sequence="__BIG__")], "scores": [bad_score]}
    )
    response = raw_ingest(api, body.replace('"__BIG__"', "1e400"))
    assert response.status_code == 207
    items = response.json()["items"]
    assert [(i["kind"], i["index"], i["status"]) for i in items] == [
        ("message_pieces", 0, "stored"),
        ("message_pieces", 1, "rejected"),
        ("scores", 0, "rejected"),
    ]
    assert items[1]["errors"][0]["field"] == "sequence"
    assert items[2]["errors"][0]["field"] == "score_value"
    stored = json.loads(api.get("/api/v1/message-pieces/").content)["results"][0]
    assert stored["prompt_metadata"] == {"big": math.inf}


# --- one item never costs another ------------------------------------------------------------


@pytest.mark.parametrize("timestamp", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
def test_timestamp_out_of_range_in_utc_rejects_only_its_item(
    api: APIClient, timestamp: str
) -> None:
    cid = str(uuid.uuid4())
    rows = [piece(cid, 0), piece(cid, 1, role="assistant"), piece(cid, 2)]
    rows[1]["timestamp"] = timestamp
    result = attack_result(cid, timestamp=timestamp)
    seed_row = _seed(timestamp)
    response = ingest(
        api, {"message_pieces": rows, "attack_results": [result], "seeds": [seed_row]}
    )
    assert response.status_code == 207
    statuses = [(i["kind"], i["index"], i["status"]) for i in response.json()["items"]]
    assert ("message_pieces", 1, "rejected") in statuses
    assert ("message_pieces", 0, "stored") in statuses
    assert ("attack_results", 0, "rejected") in statuses
    assert ("seeds", 0, "rejected") in statuses
    rejected = [i for i in response.json()["items"] if i["status"] == "rejected"]
    assert {e["field"] for i in rejected for e in i["errors"]} >= {"timestamp", "date_added"}


def _seed(date_added: str) -> dict[str, Any]:
    from tests.api.factories import seed

    return dict(seed(0), date_added=date_added)


def test_mixed_good_and_bad_items_store_the_good_ones_exactly(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    deep: Any = "bottom"
    for _ in range(80):
        deep = [deep]
    rows: list[Any] = [
        piece(cid, 0, text="fine\x00one"),
        piece(cid, 1, role="assistant", text="x" * 101),  # over the per-item limit below
        piece(cid, 2, text="fine two", prompt_metadata={"deep": deep}),
        piece(cid, 3, role="assistant", text="lone \ud800 surrogate"),
        piece(cid, 4, text="fine\ufdd0three", prompt_metadata={"k\x00": "v\x00"}),
        "not an object",
        dict(piece(cid, 5, role="assistant", text="bad reference"), original_prompt_id="x"),
    ]
    with override_settings(REDTEAM_MAX_STRING_CHARS=100):
        # json.dumps spells the lone surrogate as a \ud800 escape, as a client's body would.
        response = raw_ingest(api, json.dumps({"message_pieces": rows}))
    assert response.status_code == 207
    items = response.json()["items"]
    assert [(i["index"], i["status"]) for i in items] == [
        (0, "stored"),
        (1, "rejected"),
        (2, "rejected"),
        (3, "rejected"),
        (4, "stored"),
        (5, "rejected"),
        (6, "rejected"),
    ]
    assert items[1]["errors"][0]["field"] == "original_value"
    assert "the limit is 100" in items[1]["errors"][0]["message"]
    assert items[2]["errors"][0]["field"].startswith("prompt_metadata.deep[0]")
    assert items[3]["errors"][0]["field"] == "original_value"
    assert "surrogate" in items[3]["errors"][0]["message"]
    served = {row["id"]: row for row in read_all(api, "message-pieces")}
    assert set(served) == {rows[0]["id"], rows[4]["id"]}
    for row in (rows[0], rows[4]):
        assert json.dumps(served[row["id"]], sort_keys=True) == json.dumps(
            _as_served(row), sort_keys=True
        )


def _as_served(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def test_a_response_of_2_2_million_characters_is_stored_by_default(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    big = "A" * 2_200_000
    rows = [piece(cid, 0), piece(cid, 1, role="assistant", text=big)]
    response = ingest(api, {"message_pieces": rows})
    assert response.status_code == 200, response.content[:500]
    served = api.get(f"/api/v1/message-pieces/{rows[1]['id']}/").json()
    assert served["original_value"] == big


def test_an_over_limit_string_is_named_with_the_callers_index(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    rows = [piece(cid, i, role="user" if i % 2 == 0 else "assistant") for i in range(4)]
    rows[2]["original_value"] = rows[2]["converted_value"] = "B" * 2_200_000
    with override_settings(REDTEAM_MAX_STRING_CHARS=2 * 1024 * 1024):
        response = ingest(api, {"message_pieces": rows})
    assert response.status_code == 207
    rejected = [i for i in response.json()["items"] if i["status"] == "rejected"]
    assert [(i["kind"], i["index"], i["id"]) for i in rejected] == [
        ("message_pieces", 2, rows[2]["id"])
    ]
    assert response.json()["stored"] == 3


# --- the importer accepts and refuses the same -----------------------------------------------


def _sqlite_with_hostile_rows(source: Path, target: Path) -> None:
    """A copy of a PyRIT memory file whose rows hold NUL and NaN, as PyRIT can store them."""
    import shutil
    import sqlite3

    shutil.copy(source, target)
    conn = sqlite3.connect(target)
    with conn:
        conn.execute(
            "UPDATE PromptMemoryEntries SET original_value = original_value || ?, "
            "converted_value = converted_value || ? "
            "WHERE original_value_data_type = 'text' AND converted_value_data_type = 'text'",
            (HOSTILE, HOSTILE),
        )
        conn.execute(
            "UPDATE PromptMemoryEntries SET original_value_sha256 = NULL, "
            "converted_value_sha256 = NULL WHERE original_value_data_type = 'text'"
        )
        conn.execute(
            "UPDATE ScoreEntries SET score_rationale = score_rationale || ?, score_metadata = ?",
            (HOSTILE, '{"nan": NaN, "inf": Infinity, "k\\u0000": "v\\u0000"}'),
        )
        conn.execute("UPDATE AttackResultEntries SET objective = objective || ?", (HOSTILE,))
    conn.close()


@pytest.mark.parametrize("line", LINES)
def test_import_stores_nul_and_nan_rows_like_the_api(
    api: APIClient, fixtures_dir: Path, line: str, tmp_path: Path
) -> None:
    from redteam.site.pyrit_sqlite import import_pyrit_memory

    path = tmp_path / "pyrit_memory.sqlite"
    _sqlite_with_hostile_rows(fixtures_dir / line / "pyrit_memory.sqlite", path)
    report = import_pyrit_memory(path)
    rejected = {
        name: t.rejected
        for name, t in report.tables.items()
        if name in {"PromptMemoryEntries", "ScoreEntries", "AttackResultEntries"}
    }
    assert not any(rejected.values()), (rejected, report.errors[:5])
    imported = {
        kind: read_all(api, kind) for kind in ("message-pieces", "scores", "attack-results")
    }
    texts = [r for r in imported["message-pieces"] if r.get("original_value_data_type") == "text"]
    assert texts
    assert all(r["original_value"].endswith(HOSTILE) for r in texts)
    assert all(s["score_rationale"].endswith(HOSTILE) for s in imported["scores"])
    for row in imported["scores"]:
        assert math.isnan(row["score_metadata"]["nan"])
        assert row["score_metadata"]["k\x00"]
    assert all(r["objective"].endswith(HOSTILE) for r in imported["attack-results"])
    # Pushing what the API served back is a replay: push and import agree row for row.
    body = {
        "message_pieces": copy.deepcopy(imported["message-pieces"]),
        "scores": imported["scores"],
        "attack_results": imported["attack-results"],
    }
    for row in body["message_pieces"]:
        row.pop("scores", None)
    answer = json.loads(raw_ingest(api, json.dumps(body)).content)
    refused = [i for i in answer["items"] if i["status"] == "rejected"][:3]
    assert answer["errors"] == 0, refused
    assert answer["stored"] == 0, refused


def test_import_rejects_the_rows_the_api_rejects(fixtures_dir: Path, tmp_path: Path) -> None:
    import shutil
    import sqlite3

    from redteam.site.pyrit_sqlite import import_pyrit_memory

    path = tmp_path / "pyrit_memory.sqlite"
    shutil.copy(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite", path)
    conn = sqlite3.connect(path)
    with conn:
        first = conn.execute("SELECT id FROM ScoreEntries ORDER BY rowid LIMIT 1").fetchone()[0]
        conn.execute(
            "UPDATE ScoreEntries SET score_metadata = ? WHERE id = ?",
            ('{"lone": "\\ud800"}', first),
        )
        conn.execute(
            "UPDATE AttackResultEntries SET timestamp = '9999-12-31 23:59:59.999999-05:00'"
        )
        target = conn.execute("SELECT hash FROM TargetIdentifiers LIMIT 1").fetchone()[0]
        conn.execute(
            "UPDATE TargetIdentifiers SET identifier_json = ? WHERE hash = ?",
            ('{"class_name": "T\\udfff", "class_module": "m"}', target),
        )
    conn.close()
    report = import_pyrit_memory(path)
    assert report.tables["ScoreEntries"].rejected == 1
    assert report.tables["ScoreEntries"].stored >= 1
    assert (
        report.tables["AttackResultEntries"].rejected == report.tables["AttackResultEntries"].read
    )
    assert report.tables["TargetIdentifiers"].rejected == 1
    assert any("score_metadata.lone" in e and "surrogate" in e for e in report.errors)
    assert any("identifier_json.class_name" in e for e in report.errors)
    assert any("out of range once converted to UTC" in e for e in report.errors)


# --- search, filters and pages see the real text --------------------------------------------


def test_search_filters_and_pages_work_on_text_holding_nul(
    api: APIClient, reviewer_client: Any
) -> None:
    from django.http import QueryDict

    from memory.filters import ConversationFilterSet
    from memory.querysets import conversations_for_list
    from redteam.common.access import Scope

    EVERYTHING = Scope.everything_scope()

    cid = str(uuid.uuid4())
    rows = [
        piece(cid, 0, text="lockpick\x00tutorial " + ESCAPE + "escape"),
        piece(cid, 1, role="assistant", text="plain answer"),
    ]
    result = attack_result(cid, labels={"operation": "op\x00one", "k\x00": "v"})
    # An operation named with a NUL, created by its lead first: keys write only into
    # operations that exist (the test key is bound to every operation of the test).
    Operation.objects.create(name="op\x00one")
    response = ingest(api, {"message_pieces": rows, "attack_results": [result]})
    assert response.status_code == 200, response.content

    def ids(params: dict[str, str]) -> set[str]:
        query = QueryDict(mutable=True)
        query.update(params)
        filterset = ConversationFilterSet(
            query, queryset=conversations_for_list(EVERYTHING), scope=EVERYTHING
        )
        assert filterset.is_valid(), filterset.errors
        return {c.conversation_id for c in filterset.qs}

    # The words either side of the NUL stay searchable, on PostgreSQL's parser and SQLite's scan.
    assert ids({"q": "tutorial"}) == {cid}
    assert ids({"q": "lockpick"}) == {cid}
    assert ids({"q": "escape"}) == {cid}
    assert ids({"label": "operation=op\x00one"}) == {cid}
    assert ids({"label": "operation=op"}) == set()

    page = reviewer_client.get(f"/conversations/{cid}/")
    assert page.status_code == 200
    html = page.content.decode()
    # The piece text shows NUL as a visible stand-in (labels are chips, shown as sent).
    assert ">⟨U+0000⟩</span>tutorial" in html
    assert ">⟨U+FDD0⟩</span>escape" in html
    assert ESCAPE + NUL_MARK not in html  # the stored form never leaks onto a page
    listing = reviewer_client.get("/conversations/")
    assert listing.status_code == 200
    assert ESCAPE + NUL_MARK not in listing.content.decode()


def test_a_conversation_id_holding_nul_is_one_id_everywhere(api: APIClient) -> None:
    cid = "conv\x00" + ESCAPE + "-" + str(uuid.uuid4())
    rows = [piece(cid, 0), piece(cid, 1, role="assistant")]
    payload = {
        "conversations": [conversation(cid)],
        "message_pieces": rows,
        "scores": [score(rows[1])],
        "attack_results": [attack_result(cid)],
    }
    response = raw_ingest(api, json.dumps(payload))
    assert response.status_code == 200, response.content
    for resource in ("message-pieces", "attack-results", "conversations"):
        served = read_all(api, resource)
        assert served, resource
        assert {row["conversation_id"] for row in served} == {cid}, resource
    pieces = MessagePiece.objects.filter(conversation_id=cid)
    assert {p.conversation_id for p in pieces} == {cid}
    assert pieces.count() == 2
    again = raw_ingest(api, json.dumps(payload)).json()
    assert again["errors"] == 0
    assert again["stored"] == 0


@pytest.mark.parametrize("stamp", ["0028-06-27T01:02:03Z", "0999-01-01T00:00:00.000005Z"])
def test_a_year_before_1000_reads_back_zero_padded_in_both_shapes(
    api: APIClient, stamp: str
) -> None:
    row = piece("early-years", 0, timestamp=stamp)
    assert ingest(api, {"message_pieces": [row]}).status_code == 200
    one = api.get("/api/v1/message-pieces/", {"conversation_id": "early-years"}).json()
    assert one["results"][0]["timestamp"] == stamp
    legacy = api.get(
        "/api/v1/message-pieces/", {"conversation_id": "early-years", "shape": "0.13"}
    ).json()
    assert legacy["results"][0]["timestamp"] == stamp.replace("Z", "+00:00")


def test_value_heads_and_lengths_computed_in_the_database_match_the_values(
    api: APIClient,
) -> None:
    # Values holding NUL, the escape character and the mark, at and around every cut below.
    parts = ["\x00", ESCAPE, NUL_MARK, "ab", "é", ESCAPE + ESCAPE, ESCAPE + NUL_MARK]
    values = ["", "plain"] + [
        "".join(parts[(i * 7 + j * 3) % len(parts)] for j in range(i % 9 + 1)) for i in range(40)
    ]
    cid = str(uuid.uuid4())
    rows = [piece(cid, n, text=value) for n, value in enumerate(values)]
    assert raw_ingest(api, json.dumps({"message_pieces": rows})).json()["errors"] == 0
    for chars in (1, 2, 3, 5, 8, 1000):
        stored = MessagePiece.objects.filter(conversation_id=cid).annotate(
            head=stored_text_head("original_value", chars),
            length=stored_text_length("original_value"),
        )
        read = {p.sequence: (p.head, p.length) for p in stored.defer("original_value")}
        for n, value in enumerate(values):
            head, length = read[n]
            assert length == len(value), (value, chars)
            assert value.startswith(head), (value, chars)
            encoded = min(chars, len(encode_text(value)))
            assert len(encode_text(head)) in (encoded, encoded - 1), (value, chars)
