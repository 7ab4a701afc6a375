"""Ingestion of scenario results (see memory.services for the contract).

A scenario's embedded attack results are stored through store_attack_results (same rules as
when sent on their own); a rejected one rejects the scenario, naming its path. Attack results
point at their scenario through ``attribution_parent_id`` (PyRIT's link) without a database
constraint: PyRIT's own key is ON DELETE SET NULL and a run pushes results and scenario in
any order, so a result may name a scenario that has not arrived (or never will).

Normalisations before comparing a replay (PyRIT's own memory round trip changes these):

* identifiers are compared as redteam.core.roundtrip.identifier_compared does (content hash, or
  identical dump for legacy truncated ones; memory re-stamps ``eval_hash``);
* ``error_attack_result_ids`` is not compared (PyRIT's table does not keep it, so a
  scenario read back from memory has ``[]``);
* the attack results of each atomic attack are compared as a set of ids (memory re-attaches
  them in its query order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction

from memory.bulk import insert_rows, store_identifier_uses
from memory.models import ScenarioResult
from memory.ownership import (
    NOT_WRITABLE,
    LabelRefused,
    default_operation,
    label_field,
    named_operation,
    preload,
)
from memory.parsing_scenarios import ParsedScenarioResult, parse_scenario_result
from memory.store_common import prefixed, revise_rows, row_replay
from memory.store_results import store_parsed_attack_results
from redteam.common.access import Writer
from redteam.core.batch import Batch, Entry
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.core.roundtrip import identifier_compared

KIND_SCENARIO_RESULTS = "scenario_results"

SCENARIO_COMPARE = (
    "scenario_name",
    "scenario_version",
    "scenario_identifier_id",
    "scenario_description",
    "objective_target_identifier_id",
    "objective_scorer_identifier_id",
    "scenario_run_state",
    "labels",
    "creation_time",
    "completion_time",
    "number_tries",
    "display_group_map",
    "error_message",
    "error_type",
    "metadata",
    "attack_result_ids",
    "scenario_init_data",
    "attack_results_json",
)


def _id_sets(value: Mapping[str, Any]) -> dict[str, list[str]]:
    return {name: sorted(ids) for name, ids in (value or {}).items()}


def _compare(scenario: ParsedScenarioResult) -> dict[str, Any]:
    """The compared values of an incoming scenario, in PyRIT's memory round-trip form."""
    row = dict(scenario.row)
    for key, use in (
        ("scenario_identifier_id", scenario.scenario),
        ("objective_target_identifier_id", scenario.target),
        ("objective_scorer_identifier_id", scenario.scorer),
    ):
        row[key] = identifier_compared(use.hash, use.digest) if use else None
    row["attack_result_ids"] = _id_sets(row.get("attack_result_ids", {}))
    return row


def _stored_compare(obj: ScenarioResult) -> dict[str, Any]:
    """The compared values of a stored scenario, in the same form."""
    row = {name: getattr(obj, name) for name in SCENARIO_COMPARE}
    for prefix in ("scenario", "objective_target", "objective_scorer"):
        row[f"{prefix}_identifier_id"] = identifier_compared(
            getattr(obj, f"{prefix}_identifier_id"), getattr(obj, f"{prefix}_dump_id")
        )
    row["attack_result_ids"] = _id_sets(obj.attack_result_ids)
    return row


SCENARIOS = row_replay(
    KIND_SCENARIO_RESULTS, "scenario result", _compare, lambda _: SCENARIO_COMPARE
)


def _row(scenario: ParsedScenarioResult) -> dict[str, Any]:
    row = dict(scenario.row)
    for prefix, use in (
        ("scenario", scenario.scenario),
        ("objective_target", scenario.target),
        ("objective_scorer", scenario.scorer),
    ):
        if use is not None:
            key = "scenario_identifier_id" if prefix == "scenario" else f"{prefix}_identifier_id"
            row[key] = use.hash
            row[f"{prefix}_dump_id"] = use.digest
    return row


def _revised_row(scenario: ParsedScenarioResult, old: ScenarioResult) -> dict[str, Any]:
    """A newer version's columns; an identifier equal in content hash keeps its stored dump."""
    row = _row(scenario)
    for prefix, use in (
        ("scenario", scenario.scenario),
        ("objective_target", scenario.target),
        ("objective_scorer", scenario.scorer),
    ):
        key = "scenario_identifier_id" if prefix == "scenario" else f"{prefix}_identifier_id"
        dump = f"{prefix}_dump_id"
        if use is None:
            row[key] = row[dump] = None
        elif identifier_compared(use.hash, use.digest) == identifier_compared(
            getattr(old, key), getattr(old, dump)
        ):
            row[dump] = getattr(old, dump)
    return row


def _revision_refused(
    scenario: ParsedScenarioResult, old: ScenarioResult, writer: Writer
) -> FieldError | None:
    """A newer version may not move a scenario to another operation than its labels named."""
    try:
        named = named_operation(scenario.row["labels"], writer)
    except LabelRefused as refused:
        return refused.error
    if named is not None and named != old.operation_id:
        return FieldError(
            label_field(),
            f"Scenario result {scenario.id} is stored in another operation than its new "
            "labels name; a newer version may not move it.",
            code="conflict",
        )
    return None


def _store_embedded(valid: Sequence[Entry[ParsedScenarioResult]], writer: Writer) -> None:
    """Store every valid scenario's attack results in one call; a rejection rejects its owner."""
    owners: list[tuple[Entry[ParsedScenarioResult], str]] = []
    items: list[Any] = []
    for entry in valid:
        scenario = entry.parsed
        for result, path in zip(scenario.attack_results, scenario.attack_result_paths, strict=True):
            owners.append((entry, path))
            items.append(result)
    if not items:
        return
    outcomes = store_parsed_attack_results(items, writer, embedded=True)
    for (entry, path), outcome in zip(owners, outcomes, strict=True):
        if outcome.status == "rejected":
            entry.errors.extend(prefixed(outcome.errors, path))


@transaction.atomic(savepoint=False)
def store_scenario_results(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Validate and store ScenarioResult dicts and the attack results they embed.

    Queries: the attack-result store's constant count (when results are embedded); SELECT
    stored scenarios; INSERT identifiers; INSERT dumps; INSERT their operations; INSERT
    scenarios. A scenario joins the operation its labels name, else the sender's default
    (its attack results follow their own labels); scenarios keep no author.
    """
    writer = writer or Writer.trusted()
    batch = Batch.of(SCENARIOS, [parse_scenario_result(item, i) for i, item in enumerate(items)])
    if valid := batch.pending():
        _store_embedded(valid, writer)
    if not (valid := batch.pending()):
        return batch.outcomes()
    stored = {s.pk: s for s in ScenarioResult.objects.filter(pk__in=[e.parsed.id for e in valid])}
    fresh = [e for e in valid if e.parsed.id not in stored]
    revising = writer.revise is not None
    if fresh or (stored and revising):
        preload(writer, (e.parsed.row["labels"] for e in (valid if revising else fresh)))
    new: list[ParsedScenarioResult] = []
    revised: list[tuple[ParsedScenarioResult, ScenarioResult]] = []
    for entry in valid:
        scenario = entry.parsed
        old = stored.get(scenario.id) if scenario.id is not None else None
        if old is not None and not writer.may_write(old.operation_id):
            # Never compared: the answer would tell what another operation holds.
            entry.errors.append(FieldError("id", f"This scenario result {NOT_WRITABLE}."))
        elif old is None:
            try:
                named = named_operation(scenario.row["labels"], writer)
                scenario.row["operation_id"] = (
                    named if named is not None else default_operation(writer, label_field())
                )
            except LabelRefused as refused:
                entry.errors.append(refused.error)
                continue
            scenario.row["revision"] = writer.revise
            new.append(scenario)
            entry.status = "stored"
        elif (difference := SCENARIOS.difference(scenario, _stored_compare(old))) is None:
            entry.status = "unchanged"
        elif not revising:
            batch.settle(entry, difference)
        elif (refusal := _revision_refused(scenario, old, writer)) is not None:
            entry.errors.append(refusal)
        elif not writer.supersedes(old.revision):
            entry.status = "unchanged"  # a version older than the stored one: kept as is
        else:
            scenario.row["revision"] = writer.revise
            revised.append((scenario, old))
            entry.status = "stored"
    if revised:
        store_identifier_uses(
            (use, old.operation_id)
            for s, old in revised
            for use in (s.scenario, s.target, s.scorer)
            if use is not None
        )
        revise_rows(
            ScenarioResult,
            [(old, _revised_row(s, old)) for s, old in revised],
            keep=("id", "operation_id"),
        )
    if new:
        store_identifier_uses(
            (use, s.row["operation_id"])
            for s in new
            for use in (s.scenario, s.target, s.scorer)
            if use is not None
        )
        insert_rows(ScenarioResult, [_row(s) for s in new])
    return batch.outcomes()
