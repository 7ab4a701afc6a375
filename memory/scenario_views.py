"""Scenario pages: the list of scenario runs and one run with its atomic attacks.

A scenario's attack results are the rows whose ``attribution_parent_id`` names it (PyRIT's
link). They are counted per atomic attack by the database (name from
``attribution_data["parent_collection"]``, eval hash of the atomic attack identifier), so a
scenario with a hundred thousand results costs the same few queries as one with three.

Scenarios and the results counted and listed under them are those of the viewer's
operations (`scope_for(request)`); a scenario of another operation is a 404.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db.models import Count, F, QuerySet
from django.db.models.fields.json import KT
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memory.filters import ScenarioResultFilterSet
from memory.models import AttackResult, ScenarioResult
from memory.presenters import dump_tree
from memory.querysets import scenario_result_for_detail, scenario_results_for_list
from redteam.common.access import Scope, scope_for
from redteam.common.pagination import filtered_list_page
from redteam.common.roles import viewer_required
from redteam.core.enums import SCENARIO_RUN_STATES
from redteam.core.outcomes import OutcomeCounts
from redteam.core.textview import display_text

# Result rows listed under each atomic attack (the counts cover all of them).
MAX_RESULTS_SHOWN = 200
UNNAMED = "(no atomic attack name)"


@dataclass
class AtomicAttackView:
    """One atomic attack of a scenario: its name, eval hash, counts and shown results."""

    name: str
    display_group: str
    eval_hash: str | None
    attack_class: str
    identifier_hash: str | None
    outcomes: OutcomeCounts = field(default_factory=OutcomeCounts)
    results: list[AttackResult] = field(default_factory=list)


def _scenario_rates(ids: list[uuid.UUID], scope: Scope) -> dict[str, OutcomeCounts]:
    """Outcome counts of the visible results per scenario id (one grouped query)."""
    rates: dict[str, OutcomeCounts] = {}
    if not ids:
        return rates
    rows = (
        AttackResult.objects.visible_to(scope)
        .filter(attribution_parent_id__in=[str(i) for i in ids])
        .values("attribution_parent_id", "outcome")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in rows:
        rates.setdefault(str(row["attribution_parent_id"]), OutcomeCounts()).add(
            row["outcome"], row["n"]
        )
    return rates


@require_GET
@viewer_required
def scenario_list(request: HttpRequest) -> HttpResponse:
    """The viewer's scenario runs filtered from the URL, newest first, keyset-paginated."""
    # Queries: session, user, memberships, one page, outcome counts of the page.
    scope = scope_for(request)
    filterset = ScenarioResultFilterSet(
        request.GET, queryset=scenario_results_for_list(scope), request=request
    )
    page = filtered_list_page(request, filterset, ts_field="creation_time", pk_field="id")
    rates = _scenario_rates([s.id for s in page.rows], scope)
    context = {
        "filterset": filterset,
        **page.context(),
        "rows": [{"s": s, "rate": rates.get(str(s.id), OutcomeCounts())} for s in page.rows],
        "run_states": SCENARIO_RUN_STATES,
        "selected_states": request.GET.getlist("run_state"),
        "labels": request.GET.getlist("label"),
    }
    return render(request, "memory/scenario_list.html", context, status=page.status)


def _atomic_attacks(
    scenario: ScenarioResult, scope: Scope
) -> tuple[list[AtomicAttackView], OutcomeCounts]:
    """The scenario's atomic attacks with the counts of their visible results (one grouped
    query) and the newest of them (one query, at most MAX_RESULTS_SHOWN rows)."""
    scenario_id = str(scenario.id)
    mine: QuerySet[AttackResult] = AttackResult.objects.visible_to(scope).filter(
        attribution_parent_id=scenario_id
    )
    # A result the scenario's dump names keeps that name even without attribution data.
    named = {i: name for name, ids in (scenario.attack_result_ids or {}).items() for i in ids}
    grouped = (
        mine.annotate(
            collection=KT("attribution_data__parent_collection"),
            eval_hash=F("atomic_attack_identifier__eval_hash"),
        )
        .values("collection", "eval_hash", "attack_class", "outcome")
        .annotate(n=Count("pk"))
        .order_by()
    )
    views: dict[tuple[str, str | None], AtomicAttackView] = {}
    total = OutcomeCounts()
    groups = scenario.display_group_map or {}
    for row in grouped:
        name = row["collection"] or UNNAMED
        key = (name, row["eval_hash"])
        view = views.get(key)
        if view is None:
            view = views[key] = AtomicAttackView(
                name=name,
                display_group=groups.get(name, ""),
                eval_hash=row["eval_hash"],
                attack_class=row["attack_class"],
                identifier_hash=None,
            )
        view.outcomes.add(row["outcome"], row["n"])
        total.add(row["outcome"], row["n"])
    shown = (
        mine.select_related("atomic_attack_identifier")
        .only(
            "attack_result_id",
            "conversation_id",
            "objective",
            "outcome",
            "timestamp",
            "error_type",
            "attribution_data",
            "atomic_attack_identifier__eval_hash",
            "atomic_attack_identifier__hash",
        )
        .order_by("-timestamp", "-attack_result_id")[:MAX_RESULTS_SHOWN]
    )
    for result in shown:
        data = result.attribution_data if isinstance(result.attribution_data, dict) else {}
        name = data.get("parent_collection") or named.get(str(result.pk)) or UNNAMED
        if not isinstance(name, str):
            name = UNNAMED
        eval_hash = (
            result.atomic_attack_identifier.eval_hash if result.atomic_attack_identifier else None
        )
        view = views.get((name, eval_hash))
        if view is not None:
            view.results.append(result)
            # Identifiers differ by seeds; any one shows the technique's tree.
            view.identifier_hash = view.identifier_hash or result.atomic_attack_identifier_id
    ordered = sorted(views.values(), key=lambda v: (v.display_group, v.name, v.eval_hash or ""))
    return ordered, total


@require_GET
@viewer_required
def scenario_detail(request: HttpRequest, scenario_id: uuid.UUID) -> HttpResponse:
    """One scenario run of the viewer's operations: identity, run state, errors, and its
    atomic attacks with results (404 for a scenario of another operation)."""
    # Queries: session, user, memberships; scenario (+3 dumps); counts per atomic attack;
    # the newest results.
    scope = scope_for(request)
    scenario = scenario_result_for_detail(scope).filter(pk=scenario_id).first()
    if scenario is None:
        raise Http404("No such scenario result.")
    attacks, total = _atomic_attacks(scenario, scope)
    context = {
        "scenario": scenario,
        "attacks": attacks,
        "total": total,
        "shown_limit": MAX_RESULTS_SHOWN,
        "description": display_text(scenario.scenario_description or ""),
        "error": display_text(scenario.error_message) if scenario.error_message else None,
        "scenario_tree": dump_tree(scenario.scenario_dump),
        "target_tree": dump_tree(scenario.objective_target_dump),
        "scorer_tree": dump_tree(scenario.objective_scorer_dump),
    }
    return render(request, "memory/scenario_detail.html", context)
