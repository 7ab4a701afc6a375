"""PyRIT's published scorer metrics: import_scorer_metrics, export_scorer_metrics, display.

The registry fixtures are lines of the files PyRIT 1.1.0 bundles
(tests/fixtures/pyrit_metrics_registry/README.md).
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client

from redteam.common.models import AuditEvent
from scoring.models import PublishedScorerMetrics
from scoring.published import MAX_LINES, RegistryError, import_registry, parse_registry
from tests.access import grant
from tests.scoring.calibration_world import E_TF, build_world

pytestmark = pytest.mark.django_db

REGISTRY = Path(__file__).resolve().parent.parent / "fixtures" / "pyrit_metrics_registry"
OBJECTIVE = REGISTRY / "objective_achieved_metrics.jsonl"
HARM = REGISTRY / "violence_metrics.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _import(*paths: Path) -> str:
    out = io.StringIO()
    call_command(
        "import_scorer_metrics", *[str(p) for p in paths], stdout=out, stderr=io.StringIO()
    )
    return out.getvalue()


def test_pyrits_bundled_registries_import_as_they_are() -> None:
    out = _import(OBJECTIVE, HARM)
    assert "objective_achieved_metrics.jsonl: 2 created" in out
    rows = {r.eval_hash: r for r in PublishedScorerMetrics.objects.all()}
    assert len(rows) == 4
    for path, kind in ((OBJECTIVE, "objective"), (HARM, "harm")):
        for number, line in enumerate(_lines(path), 1):
            row = rows[line["eval_hash"]]
            assert row.kind == kind
            assert row.metrics == line["metrics"]
            assert row.scorer_class == line["class_name"]
            assert row.scorer_hash == line["hash"]
            assert row.scorer_identifier == {
                k: v for k, v in line.items() if k not in ("eval_hash", "metrics")
            }
            assert row.file_name == path.name
            assert row.line_number == number
    harm = next(r for r in rows.values() if r.scorer_class == "SelfAskLikertScorer")
    assert harm.harm_category == "violence"
    assert harm.dataset_name == "violence.csv"
    assert dict(harm.headline())["mean_absolute_error"] == pytest.approx(0.16145833333333334)


def test_reimporting_a_file_changes_nothing_then_applies_its_changes(tmp_path: Path) -> None:
    _import(OBJECTIVE)
    stamps = sorted(PublishedScorerMetrics.objects.values_list("imported_at", flat=True))
    assert "0 created, 0 updated, 2 unchanged, 0 removed" in _import(OBJECTIVE)
    assert sorted(PublishedScorerMetrics.objects.values_list("imported_at", flat=True)) == stamps
    # The registry moved on: one entry re-measured, the other replaced by a new one.
    first, second = _lines(OBJECTIVE)
    first["metrics"]["accuracy"] = 0.75
    second["eval_hash"] = "f" * 64
    changed = tmp_path / OBJECTIVE.name
    changed.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    assert "1 created, 1 updated, 0 unchanged, 1 removed" in _import(changed)
    assert PublishedScorerMetrics.objects.count() == 2
    assert (
        PublishedScorerMetrics.objects.get(eval_hash=first["eval_hash"]).metrics["accuracy"] == 0.75
    )


def test_a_repeated_eval_hash_keeps_its_first_line_as_pyrit_finds_it() -> None:
    line = OBJECTIVE.read_text(encoding="utf-8").splitlines()[0]
    second = json.loads(line)
    second["metrics"]["accuracy"] = 0.1
    rows, repeated = parse_registry((line + "\n" + json.dumps(second) + "\n").encode())
    assert len(rows) == 1
    assert rows[0]["metrics"]["accuracy"] != 0.1
    assert repeated == [second["eval_hash"]]


def test_nan_metrics_are_kept() -> None:
    line = _lines(HARM)[0]
    line["metrics"]["t_statistic"] = float("nan")
    import_registry(data=(json.dumps(line) + "\n").encode(), file_name="nan_metrics.jsonl")
    row = PublishedScorerMetrics.objects.get()
    assert math.isnan(row.metrics["t_statistic"])
    # NaN equals NaN when the same file comes again.
    again = import_registry(data=(json.dumps(line) + "\n").encode(), file_name="nan_metrics.jsonl")
    assert again.unchanged == 1


def _bad(entry: Any) -> bytes:
    good = OBJECTIVE.read_text(encoding="utf-8").splitlines()[0]
    text = entry if isinstance(entry, str) else json.dumps(entry)
    return (good + "\n" + text + "\n").encode()


def _objective_line(**changes: Any) -> dict[str, Any]:
    line = _lines(OBJECTIVE)[1]
    line.update(changes)
    return line


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_bad("{not json"), "line 2"),
        (_bad("[1, 2]"), "a line must be a JSON object"),
        (_bad(_objective_line(eval_hash="ABC")), "eval_hash must be 64 lowercase hex digits"),
        (_bad(_objective_line(metrics="high")), "metrics must be an object"),
        (_bad(_objective_line(metrics={"num_responses": 1})), "neither objective"),
        (
            _bad(_objective_line(metrics={**_lines(OBJECTIVE)[1]["metrics"], "accuracy": "0.9"})),
            "metrics.accuracy must be a number",
        ),
        (
            _bad(
                _objective_line(metrics={**_lines(OBJECTIVE)[1]["metrics"], "num_responses": 1.5})
            ),
            "num_responses must be an integer",
        ),
        (_bad(_objective_line(class_name="x" * 300)), "class_name is longer"),
        (_bad('{"a":' * 200 + "1" + "}" * 200), "line 2"),
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (b"\n\n", "no metrics line"),
        (b"{}\n" * (MAX_LINES + 1), f"over {MAX_LINES} lines"),
    ],
)
def test_hostile_files_are_refused_whole_with_the_line_named(data: bytes, message: str) -> None:
    with pytest.raises(RegistryError) as caught:
        import_registry(data=data, file_name="hostile_metrics.jsonl")
    assert message in " ".join(caught.value.problems)
    assert not PublishedScorerMetrics.objects.exists()


def test_a_string_over_the_ingest_limit_is_refused(settings: Any) -> None:
    settings.REDTEAM_MAX_STRING_CHARS = 100
    with pytest.raises(RegistryError) as caught:
        import_registry(data=OBJECTIVE.read_bytes(), file_name="long_metrics.jsonl")
    assert "REDTEAM_MAX_STRING_CHARS" in " ".join(caught.value.problems)


def test_the_command_rejects_a_bad_file_and_keeps_the_good_one(tmp_path: Path) -> None:
    bad = tmp_path / "bad_metrics.jsonl"
    bad.write_bytes(_bad("{nope"))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_scorer_metrics", str(OBJECTIVE), str(bad), stdout=io.StringIO(), stderr=err
        )
    assert "bad_metrics.jsonl: rejected, nothing written" in err.getvalue()
    assert "line 2" in err.getvalue()
    assert set(PublishedScorerMetrics.objects.values_list("file_name", flat=True)) == {
        OBJECTIVE.name
    }
    with pytest.raises(CommandError):
        call_command("import_scorer_metrics", str(tmp_path / "missing.jsonl"), stderr=io.StringIO())


def test_imports_are_audited() -> None:
    _import(OBJECTIVE)
    event = AuditEvent.objects.get(action="published_metrics.imported")
    assert event.object_id == OBJECTIVE.name
    assert event.actor_name == "manage.py"
    assert event.detail["created"] == 2


# --- export, round trip, display ---------------------------------------------------------------


def _export(*args: str) -> list[dict[str, Any]]:
    out = io.StringIO()
    call_command("export_scorer_metrics", *args, stdout=out, stderr=io.StringIO())
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_export_round_trips_through_import(tmp_path: Path) -> None:
    build_world()
    target = tmp_path / "team_metrics.jsonl"
    call_command(
        "export_scorer_metrics", "--operation", "op_cal", "-o", str(target), stderr=io.StringIO()
    )
    exported = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert {line["eval_hash"] for line in exported} >= {E_TF}
    _import(target)
    for line in exported:
        row = PublishedScorerMetrics.objects.get(eval_hash=line["eval_hash"])
        assert row.metrics == line["metrics"]
        assert row.kind == ("objective" if "accuracy" in line["metrics"] else "harm")
    tf = next(line for line in exported if line["eval_hash"] == E_TF)
    assert tf["metrics"]["num_responses"] == 6
    assert tf["metrics"]["accuracy"] == pytest.approx(1 / 3)


def test_export_reads_only_the_named_operation_and_checks_filters() -> None:
    build_world()
    everything = {line["eval_hash"]: line for line in _export()}
    only = {line["eval_hash"]: line for line in _export("--operation", "op_cal")}
    assert everything[E_TF]["metrics"]["num_responses"] == 7
    assert only[E_TF]["metrics"]["num_responses"] == 6
    assert _export("--operation", "op_cal", "--label", "operation=op_other") == []
    with pytest.raises(CommandError):
        _export("--operation", "no_such_op")
    with pytest.raises(CommandError):
        _export("--eval-hash", "nothex")


def test_published_metrics_show_beside_the_teams(tmp_path: Path) -> None:
    build_world()
    line = _lines(OBJECTIVE)[0]
    line["eval_hash"] = E_TF
    line["metrics"]["accuracy"] = 0.987654
    registry = tmp_path / "refusal_metrics.jsonl"
    registry.write_text(json.dumps(line) + "\n", encoding="utf-8")
    _import(registry, HARM)
    viewer = User.objects.create_user("mia")
    grant(viewer, "op_cal", "read-only")
    client = Client()
    client.force_login(viewer)
    listing = client.get("/scorers/").content.decode()
    assert "0.988" in listing  # beside the team's SubStringScorer row
    assert "SelfAskLikertScorer" in listing
    assert "violence.csv" in listing
    page = client.get(f"/scorers/{E_TF}/").content.decode()
    assert "0.988" in page
    assert "refusal_metrics.jsonl" in page
    # A published eval hash nobody in the operations used has its own page too.
    azure = _lines(HARM)[0]["eval_hash"]
    assert client.get(f"/scorers/{azure}/").status_code == 200


def test_admin_lists_published_metrics_read_only() -> None:
    _import(OBJECTIVE)
    staff = User.objects.create_superuser("root", "root@example.org", "pw-root-123")
    client = Client()
    client.force_login(staff)
    response = client.get("/admin/scoring/publishedscorermetrics/")
    assert response.status_code == 200
    assert "FloatScaleThresholdScorer" in response.content.decode()
    row = PublishedScorerMetrics.objects.first()
    assert row is not None
    change = client.post(f"/admin/scoring/publishedscorermetrics/{row.pk}/change/", {})
    assert change.status_code == 403
