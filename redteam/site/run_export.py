"""A whole run as one PyRIT 1.x ingest payload: conversations, pieces, scores, results,
scenario results, seeds.

``manage.py export_conversations --run`` writes it. The file is a JSON object keyed like
``POST /api/v1/ingest/`` (and ``RedteamClient.push``), each list in PyRIT's
``model_dump(mode="json")`` shape, so sending it to any redteam server (this one included)
stores the same rows, and every item is ``unchanged`` where they already are.

What a run holds, within the operations of its `Scope` (the command's ``--operation``
options; every operation by default):

* Unfiltered: every stored row of each kind in those operations; every seed when no
  operation is named (seeds are the shared library), else the seeds the results name.
* Filtered (the piece filters of the command): the conversations with at least one matching
  piece, plus the conversations their attack results name as related (recursively), each
  whole; the attack results of those conversations; the scores of their pieces; the scenario
  results those attack results belong to (``attribution_parent_id``); the seeds named by the
  results' atomic attack identifiers (their seed identifiers' ``value_sha256``). A related
  conversation, result or score outside the scope is left out, never followed.

Sections are written in RUN_SECTIONS order, conversations a chunk at a time, so memory stays
bounded and each chunk costs a constant number of queries. A new kind of row joins the run by
adding a section there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from memory.api.reads import export_scenarios_page
from memory.export import (
    export_attack_results,
    export_conversation,
    export_pieces_with_scores,
    export_score,
)
from memory.models import (
    AttackResult,
    Conversation,
    ConversationReference,
    MessagePiece,
    ScenarioResult,
    Score,
)
from memory.querysets import (
    attack_results_for_export,
    conversations_for_export,
    pieces_for_export,
    scenario_results_for_export,
)
from redteam.common.access import Scope
from seeds.api.views import export_seed
from seeds.models import Seed

__all__ = [
    "RUN_SECTIONS",
    "RunSelection",
    "chunked",
    "note_result",
    "scenarios_of",
    "score_row",
    "seeds_of",
    "select_conversations",
    "select_run",
    "write_run",
]

# Conversations exported per round trip: bounds memory for very large runs.
CONVERSATIONS_PER_CHUNK = 200
# Related conversations are followed this many hops at most (a hostile cycle stops here).
MAX_RELATED_DEPTH = 8
# Rows read per round trip when a whole table is exported.
ROWS_PER_CHUNK = 2000
# Scenarios per round trip: each embeds its attack results.
SCENARIOS_PER_CHUNK = 20


@dataclass
class RunSelection:
    """The conversations of a run (in PyRIT order), or everything in ``scope`` when ``whole``
    is set."""

    conversation_ids: list[str]
    whole: bool
    scope: Scope
    # Filled while the attack results are written: the seeds and scenarios they name.
    seed_sha256s: set[str] = field(default_factory=set)
    scenario_ids: set[str] = field(default_factory=set)

    def chunks(self) -> Iterator[list[str]]:
        """The conversation ids, CONVERSATIONS_PER_CHUNK at a time."""
        ids = self.conversation_ids
        for start in range(0, len(ids), CONVERSATIONS_PER_CHUNK):
            yield ids[start : start + CONVERSATIONS_PER_CHUNK]


def select_run(pieces: QuerySet[MessagePiece] | None, *, scope: Scope) -> RunSelection:
    """The run of the filtered pieces (None: every row) within the scope's operations; one
    query per related hop."""
    if pieces is None:
        return select_conversations(None, scope=scope)
    ids = pieces.order_by().values_list("conversation_id", flat=True).distinct()
    return select_conversations(ids, scope=scope)


def select_conversations(conversation_ids: Iterable[str] | None, *, scope: Scope) -> RunSelection:
    """The run of these conversations (None: every row) within the scope's operations, with
    the conversations their attack results name as related; one query per related hop."""
    conversations = Conversation.objects.visible_to(scope)
    if conversation_ids is not None:
        selected = set(conversation_ids)
        frontier = set(selected)
        for _ in range(MAX_RELATED_DEPTH):
            if not frontier:
                break
            related = set(
                ConversationReference.objects.visible_to(scope)
                .filter(attack_result__conversation_id__in=frontier)
                .values_list("conversation_id", flat=True)
            )
            frontier = related - selected
            selected |= frontier
        conversations = conversations.filter(pk__in=selected)
    # PyRIT's memory order: by earliest piece, then id (conversations without pieces last).
    ordered = conversations.order_by("first_timestamp", "conversation_id").values_list(
        "conversation_id", flat=True
    )
    return RunSelection(conversation_ids=list(ordered), whole=conversation_ids is None, scope=scope)


def _conversations(selection: RunSelection) -> Iterator[dict[str, Any]]:
    # Only conversations a client declared: the others were made here from pieces or results,
    # and PyRIT has no Conversation object for them (0.13 runs).
    for chunk in selection.chunks():
        rows = conversations_for_export(selection.scope).filter(pk__in=chunk, declared=True)
        by_id = {c.conversation_id: c for c in rows}
        for conversation_id in chunk:
            if conversation_id in by_id:
                yield export_conversation(by_id[conversation_id])


def _pieces(selection: RunSelection) -> Iterator[dict[str, Any]]:
    for chunk in selection.chunks():
        rows = pieces_for_export(selection.scope).filter(conversation_id__in=chunk)
        yield from export_pieces_with_scores(
            rows.order_by("conversation_id", "sequence", "position"), "1.x", scope=selection.scope
        )


def chunked(query: QuerySet[Any], size: int = ROWS_PER_CHUNK) -> Iterator[list[Any]]:
    """A whole ordered table, `size` rows per query (keyset on the primary key)."""
    last: Any = None
    while True:
        page = query if last is None else query.filter(pk__gt=last)
        rows = list(page.order_by("pk")[:size])
        if not rows:
            return
        yield rows
        last = rows[-1].pk


def score_row(score: Score) -> dict[str, Any]:
    """A score's 1.x dict; a content_entry score carries the loose text it names
    (``scorable_content``), so the receiving server stores the text too."""
    row = export_score(score, "1.x")
    content = score.loose_content
    scorable = score.scorable if isinstance(score.scorable, dict) else {}
    if content is not None and scorable.get("scorable_type") == "content_entry":
        row["scorable_content"] = {
            "id": scorable.get("content_id"),
            "value": content.value,
            "value_sha256": content.value_sha256,
            "data_type": content.data_type,
        }
    return row


def _scores(selection: RunSelection) -> Iterator[dict[str, Any]]:
    scores = (
        Score.objects.visible_to(selection.scope)
        .standing()
        .select_related("scorer_dump", "loose_content")
    )
    if selection.whole:
        for rows in chunked(scores):
            yield from (score_row(s) for s in rows)
        return
    for chunk in selection.chunks():
        prompt_ids = MessagePiece.objects.filter(conversation_id__in=chunk).values(
            "original_prompt_id"
        )
        linked = scores.filter(message_piece_id__in=prompt_ids).order_by("timestamp", "id")
        yield from (score_row(s) for s in linked)


def _seed_sha256s(dump: Any) -> Iterator[str]:
    """Every ``value_sha256`` of a seed identifier inside an identifier dump."""
    stack = [dump]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        sha = node.get("value_sha256")
        if isinstance(sha, str) and str(node.get("class_name", "")).startswith("Seed"):
            yield sha
        for child in (node.get("children") or {}).values():
            stack.extend(child if isinstance(child, list) else [child])


def note_result(row: dict[str, Any], selection: RunSelection) -> None:
    """Remember the seeds and the scenario an exported (1.x) attack result names."""
    selection.seed_sha256s.update(_seed_sha256s(row["atomic_attack_identifier"]))
    if row.get("attribution_parent_id"):
        selection.scenario_ids.add(row["attribution_parent_id"])


def _results_in(rows: Iterable[AttackResult], selection: RunSelection) -> list[dict[str, Any]]:
    exported = export_attack_results(rows, "1.x", scope=selection.scope)
    for row in exported:
        note_result(row, selection)
    return exported


def _attack_results(selection: RunSelection) -> Iterator[dict[str, Any]]:
    results_query = attack_results_for_export(selection.scope)
    if selection.whole:
        for rows in chunked(results_query):
            yield from _results_in(rows, selection)
        return
    for chunk in selection.chunks():
        results = results_query.filter(conversation_id__in=chunk)
        yield from _results_in(results.order_by("timestamp", "attack_result_id"), selection)


def scenarios_of(selection: RunSelection) -> QuerySet[ScenarioResult] | None:
    """The scenario results of the run (None: none): every one, or those its attack results
    belong to."""
    scenarios = scenario_results_for_export(selection.scope)
    if selection.whole:
        return scenarios
    wanted = []
    for value in sorted(selection.scenario_ids):
        try:
            wanted.append(uuid.UUID(value))
        except ValueError:
            continue  # attribution_parent_id is free text; only UUIDs name scenarios
    return scenarios.filter(pk__in=wanted) if wanted else None


def _scenario_results(selection: RunSelection) -> Iterator[dict[str, Any]]:
    """Scenario results (their attack results embedded), SCENARIOS_PER_CHUNK per round trip."""
    scenarios = scenarios_of(selection)
    if scenarios is None:
        return
    for rows in chunked(scenarios, SCENARIOS_PER_CHUNK):
        yield from export_scenarios_page(rows, "1.x", scope=selection.scope, max_results=None)


def seeds_of(selection: RunSelection) -> QuerySet[Seed] | None:
    """The seeds of the run (None: none)."""
    seeds = Seed.objects.select_related("group")
    # Seeds belong to no operation: a run of some operations carries the seeds its results
    # name, a run of everything the whole library.
    if not (selection.whole and selection.scope.everything):
        if not selection.seed_sha256s:
            return None
        seeds = seeds.filter(value_sha256__in=sorted(selection.seed_sha256s))
    return seeds


def _seeds(selection: RunSelection) -> Iterator[dict[str, Any]]:
    seeds = seeds_of(selection)
    if seeds is None:
        return
    for rows in chunked(seeds):
        yield from (export_seed(s, "1.x") for s in rows)


Section = Callable[[RunSelection], Iterator[dict[str, Any]]]
# Ingest payload key -> rows, in the order written (attack results before seeds: they name
# the seeds of a filtered run).
RUN_SECTIONS: tuple[tuple[str, Section], ...] = (
    ("conversations", _conversations),
    ("message_pieces", _pieces),
    ("scores", _scores),
    ("attack_results", _attack_results),
    ("scenario_results", _scenario_results),
    ("seeds", _seeds),
)


def write_run(write: Callable[[str], Any], selection: RunSelection) -> dict[str, int]:
    """Write the run as ``json.dump(payload, f, indent=4)`` would; returns rows per section."""
    counts: dict[str, int] = {}
    write("{")
    for number, (key, section) in enumerate(RUN_SECTIONS):
        write(("," if number else "") + f"\n    {json.dumps(key)}: [")
        count = 0
        for row in section(selection):
            text = json.dumps(row, indent=4).replace("\n", "\n        ")
            write(("," if count else "") + "\n        " + text)
            count += 1
        write("\n    ]" if count else "]")
        counts[key] = count
    write("\n}")
    return counts
