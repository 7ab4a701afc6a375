"""Scenario results: ingestion (both shapes), replays, conflicts, per-item errors, import."""

from __future__ import annotations

import copy
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memory.models import AttackResult, ComponentIdentifier, ScenarioResult
from redteam.site.ingest import ingest_batch
from redteam.site.pyrit_sqlite import import_pyrit_memory
from tests.api.pyrit_fixtures import SCENARIO_FIXTURES, renumbered, scenario_rows

pytestmark = pytest.mark.django_db

COMPLETED = "5c3e1f0a-8b7d-4e2a-9c61-0d2f4a6b8e10"
FAILED = "6d4f2a1b-9c8e-4f3b-8d72-1e3a5b7c9f21"


def statuses(payload: dict[str, Any]) -> list[tuple[str, str]]:
    report = ingest_batch(payload)
    return [
        (o.status, "; ".join(f"{e.field}: {e.message}" for e in o.errors)) for o in report.outcomes
    ]


def test_ingest_stores_scenario_with_its_attack_results_by_atomic_attack_name() -> None:
    assert statuses({"scenario_results": scenario_rows()}) == [("stored", ""), ("stored", "")]
    scenario = ScenarioResult.objects.get(pk=COMPLETED)
    assert scenario.scenario_name == "EncodingScenario"
    assert scenario.scenario_version == 2
    assert scenario.scenario_run_state == "COMPLETED"
    assert scenario.number_tries == 2
    assert sorted(scenario.attack_result_ids) == ["base64", "rot13"]
    assert all(len(ids) == 3 for ids in scenario.attack_result_ids.values())
    assert scenario.target_class == "OpenAIChatTarget"
    assert ComponentIdentifier.objects.filter(pk=scenario.scenario_identifier_id).exists()
    # The attack results are stored through the attack-result service, linked by attribution.
    assert AttackResult.objects.filter(attribution_parent_id=COMPLETED).count() == 6
    failed = ScenarioResult.objects.get(pk=FAILED)
    assert failed.error_type == "RuntimeError"
    assert failed.attack_result_ids == {}


def test_replay_and_memory_reload_of_a_scenario_are_unchanged() -> None:
    ingest_batch({"scenario_results": scenario_rows()})
    assert statuses({"scenario_results": scenario_rows()}) == [("unchanged", "")] * 2
    # PyRIT's reload re-stamps eval hashes and loses error_attack_result_ids: same scenario.
    reloaded = scenario_rows("scenario_results_reloaded.jsonl")
    assert statuses({"scenario_results": reloaded}) == [("unchanged", "")] * 2
    assert ScenarioResult.objects.count() == 2


def test_changed_scenario_under_the_same_id_is_a_conflict_and_others_are_stored() -> None:
    ingest_batch({"scenario_results": scenario_rows()[:1]})
    changed = copy.deepcopy(scenario_rows()[0])
    changed["scenario_run_state"] = "FAILED"
    result = statuses({"scenario_results": [changed, scenario_rows()[1]]})
    assert result[0][0] == "rejected"
    assert "scenario_run_state" in result[0][1]
    assert result[1] == ("stored", "")
    assert ScenarioResult.objects.get(pk=COMPLETED).scenario_run_state == "COMPLETED"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("scenario_run_state", "PAUSED", "is not one of"),
        ("scenario_identifier", None, "required"),
        ("scenario_name", "Other", "class name"),
        ("labels", {"k": 1}, "strings"),
        ("attack_results", [], "object"),
        ("unknown_key", 1, "Unknown"),
    ],
)
def test_invalid_scenario_is_rejected_alone(field: str, value: Any, message: str) -> None:
    bad = copy.deepcopy(scenario_rows()[0])
    bad[field] = value
    result = statuses({"scenario_results": [bad, scenario_rows()[1]]})
    assert result[0][0] == "rejected"
    assert message in result[0][1]
    assert result[1] == ("stored", "")


def test_rejected_embedded_attack_result_rejects_its_scenario_naming_the_path() -> None:
    bad = copy.deepcopy(scenario_rows()[0])
    bad["attack_results"]["rot13"][1]["outcome"] = "won"
    [(status, errors)] = statuses({"scenario_results": [bad]})
    assert status == "rejected"
    assert "attack_results.rot13[1].outcome" in errors


def test_attack_result_may_name_a_scenario_that_never_arrives() -> None:
    result = copy.deepcopy(scenario_rows()[0]["attack_results"]["base64"][0])
    result["attribution_parent_id"] = "5c3e1f0a-0000-4000-8000-000000000000"
    assert statuses({"attack_results": [result]}) == [("stored", "")]


def test_scenario_results_run_after_attack_results_in_one_batch() -> None:
    rows = scenario_rows()
    results = [r for rs in rows[0]["attack_results"].values() for r in rs]
    outcomes = statuses({"scenario_results": rows, "attack_results": results})
    assert [s for s, _ in outcomes] == ["stored"] * 6 + ["stored", "stored"]


def test_legacy_013_row_keeps_init_data_and_attack_results_json() -> None:
    row: dict[str, Any] = {
        "id": "7e5a3b2c-1d0f-4a6b-9c8d-2f4e6a8b0c13",
        "scenario_name": "FoundryScenario",
        "scenario_description": "legacy",
        "scenario_version": 1,
        "pyrit_version": "0.13.0",
        "scenario_init_data": {"max_turns": 3},
        "objective_target_identifier": {"__type__": "OpenAIChatTarget", "__module__": "m"},
        "objective_scorer_identifier": None,
        "scenario_run_state": "COMPLETED",
        "attack_results_json": '{"crescendo": ["8d8e9712-0b76-4e08-bcad-409a1c2ae64e"]}',
        "labels": {"op": "x"},
        "number_tries": 1,
        "completion_time": "2025-10-01T10:00:00+00:00",
        "timestamp": "2025-10-01T09:00:00+00:00",
    }
    assert statuses({"scenario_results": [row]}) == [("stored", "")]
    stored = ScenarioResult.objects.get(pk=row["id"])
    assert stored.source_shape == "0.13"
    assert stored.scenario_init_data == {"max_turns": 3}
    assert stored.attack_result_ids == {"crescendo": ["8d8e9712-0b76-4e08-bcad-409a1c2ae64e"]}
    assert statuses({"scenario_results": [row]}) == [("unchanged", "")]
    cancelled = {
        **row,
        "id": "7e5a3b2c-1d0f-4a6b-9c8d-2f4e6a8b0c14",
        "scenario_run_state": "CANCELLED",
    }
    assert statuses({"scenario_results": [cancelled]})[0][0] == "rejected"  # 0.13 had no CANCELLED


def test_import_reads_scenario_results_and_reattaches_their_attack_results() -> None:
    report = import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite")
    assert report.rejected == 0, report.errors
    table = report.tables["ScenarioResultEntries"]
    assert (table.read, table.stored) == (2, 2)
    scenario = ScenarioResult.objects.get(pk=COMPLETED)
    assert {k: len(v) for k, v in scenario.attack_result_ids.items()} == {"base64": 3, "rot13": 3}
    # The file and the run's own dumps are the same scenarios.
    assert statuses({"scenario_results": scenario_rows()}) == [("unchanged", "")] * 2
    again = import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite")
    assert again.tables["ScenarioResultEntries"].unchanged == 2


def test_push_then_import_of_a_scenario_is_unchanged() -> None:
    ingest_batch({"scenario_results": scenario_rows()})
    report = import_pyrit_memory(SCENARIO_FIXTURES / "pyrit_memory.sqlite")
    assert report.rejected == 0, report.errors
    assert report.tables["ScenarioResultEntries"].unchanged == 2


def test_import_reads_013_scenario_rows(tmp_path: Path, fixtures_dir: Path) -> None:
    path = tmp_path / "memory.sqlite"
    shutil.copy(fixtures_dir / "pyrit-0.13" / "pyrit_memory.sqlite", path)
    path.chmod(0o600)
    with sqlite3.connect(path) as conn:
        conn.execute(
            'INSERT INTO "ScenarioResultEntries" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)',
            (
                "7e5a3b2c-1d0f-4a6b-9c8d-2f4e6a8b0c13",
                "FoundryScenario",
                None,
                1,
                "0.13.0",
                '{"max_turns": 3}',
                '{"__type__": "OpenAIChatTarget", "__module__": "m"}',
                "null",
                "COMPLETED",
                "{}",
                '{"op": "x"}',
                1,
                "2025-10-01 10:00:00.000000",
                "2025-10-01 09:00:00.000000",
            ),
        )
    report = import_pyrit_memory(path)
    assert report.rejected == 0, report.errors
    stored = ScenarioResult.objects.get(pk="7e5a3b2c-1d0f-4a6b-9c8d-2f4e6a8b0c13")
    assert stored.source_shape == "0.13"
    assert stored.attack_results_json == "{}"
    assert stored.target_class == "OpenAIChatTarget"
    assert stored.labels == {"op": "x"}


def test_many_scenarios_cost_constant_queries(django_assert_max_num_queries: Any) -> None:
    rows = [renumbered(scenario_rows()[0], k) for k in range(30)]
    ingest_batch({"scenario_results": rows[:3]})
    with django_assert_max_num_queries(46) as three:
        ingest_batch({"scenario_results": [renumbered(scenario_rows()[0], k) for k in range(3, 6)]})
    with django_assert_max_num_queries(46) as thirty:
        ingest_batch({"scenario_results": rows[6:]})
    assert len(thirty.captured_queries) == len(three.captured_queries)
