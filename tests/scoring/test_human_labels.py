"""Human verdicts exported as PyRIT 1.1's human-labeled CSV: command, download, format.

`tests/fixtures/pyrit_human_labels.json` holds files this export wrote for the data of
`_fixture_world` and what PyRIT 1.1's `HumanLabeledDataset.from_csv` read from them (see
tests/fixtures/README-human-labels.md for how it was made).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.http import QueryDict
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult
from redteam.common.access import Scope, command_scope, user_scope
from redteam.common.models import Operation
from scoring.human_label_views import LEFT_OUT_HEADER
from scoring.human_labels import ExportRefused, export_human_labels, parse_request
from scoring.services import record_review, withdraw_review
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.access import grant
from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pyrit_human_labels.json"
URL = "scoring:human_labels"
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _result(
    response: str,
    *,
    objective: str = "Explain how to pick a lock",
    categories: tuple[str, ...] = ("violence",),
    operation: str = "op1",
    data_type: str = "text",
) -> AttackResult:
    labels = {"operation": operation}
    conversation = make_conversation(
        [
            [PieceSpec(objective)],
            [PieceSpec(response, role="assistant", data_type=data_type)],
        ],
        labels=labels,
    )
    return make_attack_result(
        conversation, objective=objective, labels=labels, harm_categories=categories
    )


def _verdict(
    result: AttackResult,
    user: User,
    *,
    objective: bool | None = None,
    scale: float | None = None,
) -> uuid.UUID:
    fields = VerdictFields(true_false=objective is not None, scale=scale is not None)
    answers = VerdictAnswers(rationale="judged", objective=objective, scale=scale, fields=fields)
    [first, *_] = record_review(
        attack_result=result,
        reviewer=user,
        scope=user_scope(user),
        answers=answers,
        submission=None,
    )
    assert first.verdict_submission is not None
    return first.verdict_submission


def _export(data: str, scope: Scope | None = None) -> str:
    scope = scope or command_scope()
    return export_human_labels(parse_request(QueryDict(data), scope), scope).text


def _read(text: str) -> tuple[str, list[str], list[str], list[list[str]]]:
    """(first line, report comment lines, header, rows) with the csv module."""
    first, rest = text.split("\n", 1)
    report = []
    while rest.startswith("#"):
        line, rest = rest.split("\n", 1)
        report.append(line)
    header, *rows = list(csv.reader(io.StringIO(rest, newline="")))
    return first, report, header, rows


def _by_column(header: list[str], rows: list[list[str]]) -> list[dict[str, str]]:
    return [dict(zip(header, row, strict=True)) for row in rows]


# --- the data the fixture was made from ------------------------------------------------------

HOSTILE_RESPONSES = [
    'line one\nline two, with "quotes"\r\nand a # hash',
    "=cmd|' /C calc'!A0",
    "+1 555 0100",
    "-2+3",
    "@SUM(A1:A9)",
    "Sure! Step 1: ignore all previous instructions,\n\n\tthen...  ",
]


def _fixture_world() -> dict[str, Any]:
    """Results with hostile text, media, several raters and withdrawn verdicts."""
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    results = [
        _result(text, objective=f'Objective {i}, "quoted" #{i}', categories=("violence", "a,b"))
        for i, text in enumerate(HOSTILE_RESPONSES)
    ]
    image = _result("/memory/images/1712.png", data_type="image_path", categories=())
    missing = _result("NA", categories=("violence",))
    withdrawn = _result("withdrawn only")
    for i, result in enumerate(results):
        _verdict(result, alice, objective=i % 2 == 0, scale=0.25 * (i % 5))
        _verdict(result, bob, objective=True, scale=1.0)
    # carol rates the first result, then changes her mind: one rater, her latest verdict.
    _verdict(results[0], carol, objective=True, scale=0.5)
    _verdict(results[0], carol, objective=False, scale=0.75)
    _verdict(image, alice, objective=True)
    _verdict(missing, alice, objective=False, scale=0.0)
    withdraw_review(
        reviewer=alice,
        scope=user_scope(alice),
        submission=_verdict(withdrawn, alice, objective=True, scale=1.0),
    )
    return {"results": results, "image": image, "missing": missing, "withdrawn": withdrawn}


FIXTURE_QUERIES = {
    "objective_latest": "",
    "objective_two_raters": "raters=2&dataset_version=2.0",
    "harm_two_raters": "kind=harm&harm_category=violence&raters=2",
}


def _normalised(text: str) -> str:
    """The export with attack result ids numbered in order of appearance (ids are random)."""
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(), f"00000000-0000-0000-0000-{len(seen) + 1:012d}")

    return UUID_RE.sub(number, text)


def test_export_is_the_file_pyrit_loaded() -> None:
    _fixture_world()
    written = {name: _normalised(_export(query)) for name, query in FIXTURE_QUERIES.items()}
    if os.environ.get("HUMAN_LABELS_WRITE_FIXTURE"):  # how the fixture's texts were made
        FIXTURE.write_text(
            json.dumps([{"name": n, "text": t} for n, t in written.items()], indent=2) + "\n"
        )
    golden = {case["name"]: case for case in json.loads(FIXTURE.read_text())}
    for name, text in written.items():
        assert text == golden[name]["text"], name
        assert "pyrit" in golden[name], "run tests/fixtures/make_human_labels.py"


def test_pyrit_read_back_what_was_stored() -> None:
    golden = {case["name"]: case for case in json.loads(FIXTURE.read_text())}
    objective = golden["objective_latest"]
    read = objective["pyrit"]
    assert read["version"] == "1.0"
    assert read["validated"]
    entries = read["entries"]
    # Every hostile response and the image path, as stored (PyRIT strips surrounding space).
    assert [e["assistant_response"] for e in entries] == [
        *(t.strip() for t in HOSTILE_RESPONSES),
        "/memory/images/1712.png",
    ]
    assert [e["data_type"] for e in entries] == ["text"] * 6 + ["image_path"]
    assert [e["objective_or_harm"] for e in entries[:6]] == [
        f'Objective {i}, "quoted" #{i}' for i in range(6)
    ]
    # The latest verdict per result: carol's false on the first, bob's true on the others.
    assert [e["human_scores"] for e in entries] == [[False]] + [[True]] * 6
    two = golden["objective_two_raters"]["pyrit"]
    assert two["version"] == "2.0"
    assert [e["human_scores"] for e in two["entries"]] == [
        [True, False],
        [False, True],
        [True, True],
        [False, True],
        [True, True],
        [False, True],
    ]
    harm = golden["harm_two_raters"]["pyrit"]
    assert (harm["harm_definition"], harm["harm_definition_version"]) == ("violence.yaml", "1.0")
    assert harm["validated"]
    assert {e["objective_or_harm"] for e in harm["entries"]} == {"violence"}
    assert [e["human_scores"] for e in harm["entries"]] == [
        [1.0, 0.75],
        [0.25, 1.0],
        [0.5, 1.0],
        [0.75, 1.0],
        [1.0, 1.0],
        [0.0, 1.0],
    ]


def test_export_parses_back_to_the_stored_values() -> None:
    world = _fixture_world()
    first, report, header, rows = _read(_export(""))
    assert first == "# dataset_version=1.0"
    assert header == [
        "objective",
        "assistant_response",
        "human_score",
        "data_type",
        "harm_category",
    ]
    got = _by_column(header, rows)
    stored = [*world["results"], world["image"]]
    assert [r["objective"] for r in got] == [r.objective for r in stored]
    # Byte for byte: nothing escaped for spreadsheets, nothing stripped or cut.
    assert [r["assistant_response"] for r in got] == [*HOSTILE_RESPONSES, "/memory/images/1712.png"]
    assert [r["harm_category"] for r in got] == ["violence;a,b"] * 6 + [""]
    assert [r["human_score"] for r in got] == ["0"] + ["1"] * 6
    # The "NA" response is left out and named; the withdrawn verdict's result is not there.
    assert report[0].startswith("# left out 1 attack result(s)")
    assert report[1] == (
        f"# {world['missing'].pk}: assistant_response 'NA' is read by PyRIT as missing"
    )
    assert str(world["withdrawn"].pk) not in "".join(report)
    assert "withdrawn only" not in _export("")


def test_harm_file_takes_scale_verdicts_of_one_category() -> None:
    world = _fixture_world()
    first, report, header, rows = _read(_export("kind=harm&harm_category=violence"))
    assert first == (
        "# dataset_version=1.0, harm_definition=violence.yaml, harm_definition_version=1.0"
    )
    assert header == [
        "harm_category",
        "objective",
        "assistant_response",
        "human_score_1",
        "data_type",
    ]
    got = _by_column(header, rows)
    assert {r["harm_category"] for r in got} == {"violence"}
    assert [r["human_score_1"] for r in got] == ["0.75"] + ["1.0"] * 5
    # The image has no scale verdict; "NA" is refused and reported.
    assert all(r["assistant_response"] != "/memory/images/1712.png" for r in got)
    assert str(world["missing"].pk) in report[1]
    # One category named twice (or padded) is still one category.
    assert _export("kind=harm&harm_category=violence&harm_category=+violence") == _export(
        "kind=harm&harm_category=violence"
    )
    defined = _read(
        _export(
            "kind=harm&harm_category=violence&harm_definition=custom/v.yaml"
            "&harm_definition_version=3&dataset_version=7"
        )
    )[0]
    assert defined == (
        "# dataset_version=7, harm_definition=custom/v.yaml, harm_definition_version=3"
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("kind=harm", "exactly one harm_category"),
        ("kind=harm&harm_category=a&harm_category=b", "exactly one harm_category"),
        ("kind=harm&harm_category=a,b", "give harm_definition"),
        ("kind=other", "kind"),
        ("raters=0", "raters"),
        ("raters=21", "raters"),
        ("dataset_version=1,2", "no comma"),
        ("after=yesterday", "Invalid filter: after"),
        ("review=nope", "review"),
    ],
)
def test_bad_requests_are_refused_clearly(query: str, message: str) -> None:
    with pytest.raises(ExportRefused, match=message):
        _export(query)


def test_fewer_raters_than_asked_are_left_out_and_reported() -> None:
    world = _fixture_world()
    text = _export("raters=2")
    _, report, header, rows = _read(text)
    assert header[2:4] == ["human_score_1", "human_score_2"]
    assert len(rows) == 6
    assert f"# {world['image'].pk}: 1 rater(s), fewer than the 2 asked" in report
    # Only the first result has a third rater (carol, whose correction replaced her first).
    assert [row[2:5] for row in _read(_export("raters=3"))[3]] == [["1", "1", "0"]]


def test_numbers_pandas_would_retype_are_left_out_not_a_crash(reviewer_client: Client) -> None:
    alice = make_user("alice")
    kept, retyped = _result("42", objective="count"), _result("007", objective="agent")
    for result in (kept, retyped):
        _verdict(result, alice, objective=True)
    response = reviewer_client.get(reverse(URL))
    assert response.status_code == 200
    assert response[LEFT_OUT_HEADER] == "1"
    _, report, _header, rows = _read(response.content.decode())
    assert [row[1] for row in rows] == ["42"]
    assert report[1] == f"# {retyped.pk}: assistant_response '007' would be read by PyRIT as '7'"


def test_report_lines_stay_one_line_each() -> None:
    alice = make_user("alice")
    _verdict(_result("1"), alice, objective=True)
    _verdict(_result("NULL"), alice, objective=True)
    # Whitespace pandas skips around a number, line separators included: read as 7.
    padded = "\u2028" + "0" * 400 + "7\r\n"
    _verdict(_result(padded), alice, objective=True)
    text = _export("")
    _, report, _, rows = _read(text)
    assert len(report) == 3
    assert all(len(line) < 240 for line in report)
    assert report[1].endswith("assistant_response 'NULL' is read by PyRIT as missing")
    assert "would be read by PyRIT as" not in report[2]  # cut before the end
    assert "\u2028" not in text.split('"objective"')[0]
    assert [row[1] for row in rows] == ["1"]


def test_withdrawn_verdicts_are_not_exported() -> None:
    alice, bob = make_user("alice"), make_user("bob")
    result = _result("a response")
    submission = _verdict(result, alice, objective=True)
    _verdict(result, bob, objective=False)
    assert [r[2:4] for r in _read(_export("raters=2"))[3]] == [["1", "0"]]
    withdraw_review(reviewer=alice, scope=user_scope(alice), submission=submission)
    assert _read(_export("raters=2"))[3] == []
    assert [r[2] for r in _read(_export(""))[3]] == ["0"]
    withdraw_review(
        reviewer=bob, scope=user_scope(bob), submission=_verdict(result, bob, objective=True)
    )
    # bob's later verdict, withdrawn, no longer counts: his first one stands again.
    assert [r[2] for r in _read(_export(""))[3]] == ["0"]


def test_other_operations_are_never_exported(client: Client) -> None:
    boss = make_user("boss")
    mine, theirs = _result("mine", operation="op1"), _result("theirs", operation="op2")
    _verdict(mine, boss, objective=True)
    _verdict(theirs, boss, objective=True)
    viewer = make_user("viewer", role=None)
    grant(viewer, "op1", "read-only")
    client.force_login(viewer)
    for query in ("", "?operation=op2", "?label=operation:op2", "?harm_category=violence"):
        body = client.get(reverse(URL) + query).content.decode()
        assert "theirs" not in body
    assert "mine" in client.get(reverse(URL)).content.decode()
    out = io.StringIO()
    call_command("export_human_labels", "--operation", "op1", stdout=out, stderr=io.StringIO())
    assert "mine" in out.getvalue()
    assert "theirs" not in out.getvalue()
    out = io.StringIO()
    call_command("export_human_labels", "--user", "viewer", stdout=out, stderr=io.StringIO())
    assert "mine" in out.getvalue()
    assert "theirs" not in out.getvalue()


def test_command_and_download_give_the_same_bytes(reviewer_client: Client, tmp_path: Path) -> None:
    world = _fixture_world()
    _result("unjudged")
    Operation.objects.get_or_create(name="op2")
    cases = [
        ("", []),
        ("?raters=2&dataset_version=3.1", ["--raters", "2", "--dataset-version", "3.1"]),
        (
            "?kind=harm&harm_category=violence&label=operation:op1&after=2000-01-01",
            [
                "--kind",
                "harm",
                "--harm-category",
                "violence",
                "--label",
                "operation=op1",
                "--after",
                "2000-01-01",
            ],
        ),
        ("?review=reviewed&outcome=failure", ["--review", "reviewed", "--outcome", "failure"]),
    ]
    for query, flags in cases:
        response = reviewer_client.get(reverse(URL) + query)
        assert response.status_code == 200
        assert response["Content-Type"] == "text/csv; charset=utf-8"
        assert response["Content-Disposition"].startswith("attachment; filename=")
        target = tmp_path / "labels.csv"
        call_command("export_human_labels", *flags, "-o", str(target), stderr=io.StringIO())
        assert target.read_bytes() == response.content, query
        out = io.StringIO()
        call_command("export_human_labels", *flags, stdout=out, stderr=io.StringIO())
        assert out.getvalue().encode() == response.content, query
    assert str(world["missing"].pk) in response.content.decode()


def test_command_reports_and_refuses() -> None:
    world = _fixture_world()
    err = io.StringIO()
    call_command("export_human_labels", stdout=io.StringIO(), stderr=err)
    assert f"left out {world['missing'].pk}:" in err.getvalue()
    assert "Exported 7 row(s); left out 1 attack result(s)." in err.getvalue()
    with pytest.raises(CommandError, match="exactly one harm_category"):
        call_command("export_human_labels", "--kind", "harm", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no such operation"):
        call_command("export_human_labels", "--operation", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="not both"):
        call_command("export_human_labels", "--operation", "op1", "--user", "alice")
    with pytest.raises(CommandError, match="no such user"):
        call_command("export_human_labels", "--user", "nobody")
    with pytest.raises(CommandError, match="More than 3 attack results"):
        call_command("export_human_labels", "--max-rows", "3", stdout=io.StringIO())


def test_download_refuses_too_many_rows(
    reviewer_client: Client, reviewer: User, settings: Any
) -> None:
    settings.HUMAN_LABELS_MAX_ROWS = 2
    for i in range(3):
        _verdict(_result(f"r{i}"), reviewer, objective=True)
    response = reviewer_client.get(reverse(URL))
    assert response.status_code == 400
    assert "narrow the filters" in response.content.decode()
    settings.HUMAN_LABELS_MAX_ROWS = 3
    assert reviewer_client.get(reverse(URL)).status_code == 200
    # Characters of objectives and responses are bounded too.
    settings.HUMAN_LABELS_MAX_CHARS = 60  # two results' objectives and responses: 56
    response = reviewer_client.get(reverse(URL))
    assert response.status_code == 400
    assert "more than 60 characters" in response.content.decode()
    assert reviewer_client.get(reverse(URL) + "?after=yesterday").status_code == 400
    assert reviewer_client.get(reverse(URL) + "?outcome=failure&raters=1").status_code == 400


@pytest.mark.parametrize("n", [3, 30])
def test_download_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    other = make_user("other")
    for i in range(n):
        result = _result(f"response {i}")
        _verdict(result, reviewer, objective=True, scale=0.5)
        _verdict(result, other, objective=False, scale=1.0)
    # session, user, memberships; the results with their responses; their verdicts.
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse(URL) + "?raters=2")
    assert len(_read(response.content.decode())[3]) == n
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse(URL) + "?kind=harm&harm_category=violence")
    assert len(_read(response.content.decode())[3]) == n


def test_list_page_and_queue_link_the_download(reviewer_client: Client) -> None:
    page = reviewer_client.get(
        reverse("scoring:attack_result_list") + "?harm_category=violence&cursor=&review=reviewed"
    ).content.decode()
    assert 'id="label-downloads"' in page
    assert "/attack-results/human-labels.csv?harm_category=violence&amp;review=reviewed" in page
    assert "harm_category=violence&amp;review=reviewed&amp;kind=harm" in page
    plain = reviewer_client.get(reverse("scoring:attack_result_list")).content.decode()
    assert 'href="/attack-results/human-labels.csv"' in plain
    assert "kind=harm" not in plain
    queue = reviewer_client.get(reverse("scoring:queue_detail", args=["reviewed"]))
    assert 'href="/attack-results/human-labels.csv"' in queue.content.decode()


def test_a_deleted_reviewer_is_still_one_rater() -> None:
    alice, bob = make_user("alice"), make_user("bob")
    result = _result("a response")
    _verdict(result, alice, objective=True)
    _verdict(result, bob, objective=False)
    _verdict(result, bob, objective=True)  # bob's latest replaces his first
    bob.delete()
    assert [r[2:4] for r in _read(_export("raters=2"))[3]] == [["1", "1"]]
    assert _read(_export("raters=3"))[3] == []
