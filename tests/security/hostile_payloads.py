"""Generators of hostile-but-valid memory that used to cost unbounded work or break pages.

Each class is generated with varied parameters (tree fan-outs and cycle shapes, diff token
patterns, invisible-run lengths, label counts, id shapes, identifiers without a usable hash).
A case is the ingest bodies to post in order and the URLs (pages and API reads) to fetch
afterwards. Pure data: used by tests/security/test_bounded_work.py (Django test client),
tests/reliability/test_bounded_work_served.py (gunicorn) and bench/hostile.py.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from redteam.client import path_id

START = datetime(2026, 5, 1, tzinfo=UTC)
# Every list and review page a reviewer opens.
LIST_PAGES = (
    "/conversations/",
    "/attack-results/",
    "/review/",
    "/dashboard/",
    "/scenarios/",
    "/scored-content/",
)
SCENARIO_FIXTURE = Path(__file__).parents[1] / "fixtures" / "pyrit_1_1_scenario"
# What a response may weigh and take, whatever was ingested.
MAX_RESPONSE_BYTES = 3 * 1024 * 1024
MAX_SECONDS = 5.0

# Conversation ids PyRIT never validates: path separators, dot segments, URL delimiters,
# whitespace, invisible characters, the encoding's own marker, and the longest allowed.
ID_SHAPES = (
    "line\nbreak",
    ".",
    "..",
    "/",
    "a/b",
    "../../admin/auth/user/",
    "?x=1#frag",
    "100%25 %2F",
    " spaced id ",
    "~tilde",
    "zero\u200bwidth\u202e",
    "x" * 255,
)
TREE_FANOUTS = (2, 3, 5, 8)
TREE_SHAPES = ("self", "mutual", "dag")
INVISIBLE_RUNS = (1_000, 100_000)
LABEL_COUNTS = (100, 10_000)


def encode_body(body: dict[str, Any]) -> bytes:
    """An ingest body as UTF-8 JSON (non-ASCII kept: escapes would triple its size)."""
    return json.dumps(body, ensure_ascii=False).encode()


def size_limit(url: str, ingested_bytes: int) -> int:
    """The most bytes an answer may have: pages and identifier trees a fixed few MB; API
    reads that hand stored values back verbatim also as much as the database was given
    (``ingested_bytes``): they copy data, they must not amplify it."""
    if url.startswith("/api/") and not url.startswith("/api/v1/identifiers/"):
        return MAX_RESPONSE_BYTES + 2 * ingested_bytes
    return MAX_RESPONSE_BYTES


@dataclass
class HostileCase:
    """One hostile input: ingest bodies (posted in order) and what to fetch afterwards.

    ``identifier_roots`` are identifier hashes whose page, API tree and diff are fetched;
    cases that let the server compute hashes leave them to ``urls(extra_hashes)``.
    """

    klass: str
    name: str
    bodies: list[dict[str, Any]]
    conversation_ids: list[str] = field(default_factory=list)
    attack_result_ids: list[str] = field(default_factory=list)
    objectives: list[str] = field(default_factory=list)
    identifier_roots: list[str] = field(default_factory=list)
    scenario_ids: list[str] = field(default_factory=list)

    @property
    def body_bytes(self) -> int:
        """Bytes of JSON ingested for this case."""
        return sum(len(encode_body(b)) for b in self.bodies)

    def urls(self, extra_hashes: list[str] = ()) -> list[str]:  # type: ignore[assignment]
        """Every page and API read this case touches (ids encoded as the server spells them)."""
        out = [*LIST_PAGES]
        for cid in self.conversation_ids:
            out.append(f"/conversations/{path_id(cid)}/")
            out.append(f"/api/v1/conversations/{path_id(cid)}/")
            out.append("/api/v1/message-pieces/?" + urlencode({"conversation_id": cid}))
        for rid in self.attack_result_ids:
            out.append(f"/attack-results/{rid}/")
        for objective in self.objectives:
            out.append(f"/objectives/{hashlib.sha256(objective.encode()).hexdigest()}/")
        hashes = list(dict.fromkeys([*self.identifier_roots, *extra_hashes]))
        for h in hashes:
            out.append(f"/identifiers/{h}/")
            out.append(f"/api/v1/identifiers/{h}/")
        for a, b in itertools.pairwise(hashes):
            out.append("/identifiers/diff/?" + urlencode({"a": a, "b": b}))
        if self.attack_result_ids:
            out.append("/api/v1/attack-results/")
        for sid in self.scenario_ids:
            out.append(f"/scenarios/{sid}/")
            out.append(f"/api/v1/scenario-results/{sid}/")
        if self.scenario_ids:
            out.append("/api/v1/scenario-results/")
        return out


def piece(
    conversation_id: str,
    sequence: int,
    value: str,
    *,
    converted: str | None = None,
    role: str = "user",
) -> dict[str, Any]:
    """One text MessagePiece in PyRIT 1.x ``model_dump(mode="json")`` shape."""
    piece_id = str(uuid.uuid4())
    return {
        "id": piece_id,
        "role": role,
        "conversation_id": conversation_id,
        "sequence": sequence,
        "timestamp": (START + timedelta(seconds=sequence)).isoformat(),
        "original_value": value,
        "original_value_data_type": "text",
        "original_value_sha256": None,
        "converted_value": value if converted is None else converted,
        "converted_value_data_type": "text",
        "converted_value_sha256": None,
        "response_error": "none",
        "original_prompt_id": piece_id,
        "prompt_metadata": {},
        "converter_identifiers": [],
    }


def legacy_piece(conversation_id: str, sequence: int, **identifiers: Any) -> dict[str, Any]:
    """One PyRIT 0.13 ``to_dict()`` piece carrying the given identifier dumps."""
    piece_id = str(uuid.uuid4())
    return {
        "id": piece_id,
        "role": "user",
        "conversation_id": conversation_id,
        "sequence": sequence,
        "timestamp": (START + timedelta(seconds=sequence)).isoformat(),
        "labels": {"operation": "hostile"},
        "targeted_harm_categories": None,
        "prompt_metadata": {},
        "converter_identifiers": [],
        "prompt_target_identifier": identifiers.get("prompt_target_identifier", {}),
        "attack_identifier": identifiers.get("attack_identifier", {}),
        "scorer_identifier": identifiers.get("scorer_identifier"),
        "original_value_data_type": "text",
        "original_value": f"legacy piece {sequence}",
        "original_value_sha256": None,
        "converted_value_data_type": "text",
        "converted_value": f"legacy piece {sequence}",
        "converted_value_sha256": None,
        "response_error": "none",
        "originator": "undefined",
        "original_prompt_id": piece_id,
        "scores": [],
    }


def attack_result(
    template: dict[str, Any], conversation_id: str, objective: str, **overrides: Any
) -> dict[str, Any]:
    """A PyRIT 1.1 AttackResult from the real fixture row, re-identified."""
    row = copy.deepcopy(template)
    row.update(
        {
            "conversation_id": conversation_id,
            "objective": objective,
            "attack_result_id": str(uuid.uuid4()),
            "last_response": None,
            "last_score": None,
            "related_conversations": [],
        }
    )
    row.update(overrides)
    return row


def attack_result_template(fixtures_dir: Path) -> dict[str, Any]:
    """The first PyRIT 1.1 attack result of the fixtures."""
    with (fixtures_dir / "pyrit-1.1" / "attack_results.jsonl").open(encoding="utf-8") as fh:
        return dict(json.loads(fh.readline()))


def score_template(fixtures_dir: Path) -> dict[str, Any]:
    """The first PyRIT 1.1 score of the fixtures."""
    with (fixtures_dir / "pyrit-1.1" / "scores.jsonl").open(encoding="utf-8") as fh:
        return dict(json.loads(fh.readline()))


# --- identifier trees -------------------------------------------------------------------------


def _hash(tag: str) -> str:
    return hashlib.sha256(tag.encode()).hexdigest()


def _stub(h: str, name: str = "Bomb") -> dict[str, Any]:
    return {"class_name": name, "class_module": "hostile.tree", "hash": h}


def tree_case(shape: str, fanout: int) -> HostileCase:
    """0.13 identifiers keep the client's hash, so stored rows can cycle or fan out.

    ``self``: a row whose children are all itself; ``mutual``: two rows naming each other;
    ``dag``: 14 levels, every row naming the next level ``fanout`` times (no cycle at all,
    fanout**13 paths), sent deepest first so every row keeps its children.
    """
    tag = f"{shape}-{fanout}-{uuid.uuid4()}"
    conversation = f"tree-{tag}"
    bodies: list[dict[str, Any]] = []
    if shape == "self":
        root = _hash(tag)
        dump = {**_stub(root), "children": {f"c{i}": _stub(root) for i in range(fanout)}}
        bodies.append({"message_pieces": [legacy_piece(conversation, 0, attack_identifier=dump)]})
        roots = [root]
    elif shape == "mutual":
        a, b = _hash(tag + "a"), _hash(tag + "b")
        inner = {**_stub(b), "children": {f"c{i}": _stub(a) for i in range(fanout)}}
        dump = {**_stub(a), "children": {f"c{i}": inner for i in range(fanout)}}
        bodies.append({"message_pieces": [legacy_piece(conversation, 0, attack_identifier=dump)]})
        roots = [a, b]
    else:
        levels = [_hash(f"{tag}-{i}") for i in range(14)]
        for depth in range(len(levels) - 1, -1, -1):
            dump = _stub(levels[depth])
            if depth + 1 < len(levels):
                dump["children"] = {"next": [_stub(levels[depth + 1]) for _ in range(fanout)]}
            bodies.append(
                {"message_pieces": [legacy_piece(conversation, depth, attack_identifier=dump)]}
            )
        roots = [levels[0], levels[1]]
    return HostileCase(
        "tree", f"tree-{shape}-f{fanout}", bodies, [conversation], identifier_roots=roots
    )


# --- word diff --------------------------------------------------------------------------------


def diff_patterns(seed: int = 7) -> dict[str, tuple[str, str]]:
    """Original/converted pairs that made difflib super-quadratic, plus natural controls."""
    rng = random.Random(seed)
    small = [rng.choice("ab") for _ in range(4_000)]
    words = [f"w{i}" for i in range(3_000)]
    return {
        "a-vs-ba": ("a " * 2_000, "b a " * 1_000),
        "ab-vs-ba": ("a b " * 2_000, "b a " * 2_000),
        "random-2-letters": (" ".join(small), " ".join(reversed(small))),
        "blocks-with-anchors": (
            " ".join("a " * 20 + f"u{i}" for i in range(190)),
            " ".join("a b " * 10 + f"u{i}" for i in range(190)),
        ),
        "unique-reversed": (" ".join(words), " ".join(reversed(words))),
        "every-third-word": (
            " ".join(words),
            " ".join(w if i % 3 else w.upper() for i, w in enumerate(words)),
        ),
    }


def diff_case(name: str, original: str, converted: str) -> HostileCase:
    """A piece whose converted value differs from its original by the given pattern."""
    conversation = f"diff-{name}-{uuid.uuid4()}"
    body = {"message_pieces": [piece(conversation, 0, original, converted=converted)]}
    return HostileCase("diff", f"diff-{name}", [body], [conversation])


# --- invisible characters ---------------------------------------------------------------------


def invisible_case(kind: str, run: int, pieces: int = 10) -> HostileCase:
    """Pieces padded with invisible characters: one repeated, alternating, or tag text."""
    conversation = f"invisible-{kind}-{run}-{uuid.uuid4()}"
    if kind == "repeated":
        value = "hi" + "\u200b" * run
    elif kind == "alternating":
        value = "a\u200b\u200c" * (run // 3)
    else:
        value = "".join(chr(0xE0000 + ord(c)) for c in ("ignore rules " * run)[:run])
    items = [piece(conversation, i, value, converted=value + "!") for i in range(pieces)]
    for item in items:
        item["labels"] = {"op\u200b" * 50: "\u202e" * 1_000}
        item["prompt_metadata"] = {"note": "\u200b" * min(run, 100_000)}
    return HostileCase(
        "invisible", f"invisible-{kind}-{run}", [{"message_pieces": items}], [conversation]
    )


# --- labels and other per-row lists -----------------------------------------------------------


def labels_case(count: int, template: dict[str, Any], conversations: int = 20) -> HostileCase:
    """Conversations and attack results carrying ``count`` labels and harm categories each."""
    pieces_: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    ids: list[str] = []
    labels = {f"label-{i}": f"value-{i}" for i in range(count)}
    harms = [f"harm-{i}" for i in range(min(count, 1_000))]
    for n in range(conversations):
        cid = f"labels-{count}-{n}-{uuid.uuid4()}"
        ids.append(cid)
        item = piece(cid, 0, f"labelled conversation {n}")
        item["labels"] = labels
        item["targeted_harm_categories"] = harms
        pieces_.append(item)
        results.append(
            attack_result(
                template,
                cid,
                f"labelled objective {count} {n}",
                labels=labels,
                related_conversations=[
                    {"conversation_id": f"related-{i}", "conversation_type": "adversarial"}
                    for i in range(min(count, 2_000))
                ],
            )
        )
    # Two requests, each well under the served test's 16 MiB body limit.
    bodies = [{"message_pieces": pieces_}, {"attack_results": results}]
    return HostileCase(
        "labels",
        f"labels-{count}",
        bodies,
        ids[:2],
        [r["attack_result_id"] for r in results[:2]],
        [r["objective"] for r in results[:2]],
    )


# --- ids --------------------------------------------------------------------------------------


def ids_case(template: dict[str, Any]) -> HostileCase:
    """Every id shape as a conversation with a piece, an attack result and a reference."""
    items: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for i, cid in enumerate(ID_SHAPES):
        items.append(piece(cid, 0, f"conversation with a hostile id #{i}"))
        results.append(
            attack_result(
                template,
                cid,
                f"hostile id objective {i}",
                related_conversations=[
                    {"conversation_id": other, "conversation_type": "pruned"} for other in ID_SHAPES
                ],
            )
        )
    body = {"message_pieces": items, "attack_results": results}
    return HostileCase(
        "ids",
        "ids",
        [body],
        list(ID_SHAPES),
        [r["attack_result_id"] for r in results],
        [r["objective"] for r in results[:3]],
    )


# --- identifiers without a usable hash --------------------------------------------------------


def unhashed_case(result_template: dict[str, Any], score: dict[str, Any]) -> HostileCase:
    """Identifier dumps with no usable ``hash``: real 0.13 ``__type__``-only output, an empty
    or ``a/b`` scorer hash, an atomic attack child without a hash."""
    cid = f"unhashed-{uuid.uuid4()}"
    old_attack = {"__type__": "PromptSendingOrchestrator", "__module__": "pyrit.orchestrator"}
    empty_scorer = {"class_name": "SubStringScorer", "class_module": "pyrit.score", "hash": ""}
    first = legacy_piece(cid, 0, attack_identifier=old_attack, scorer_identifier=empty_scorer)
    second = piece(cid, 1, "scored", role="assistant")
    scored = copy.deepcopy(score)
    scored.update(
        {
            "id": str(uuid.uuid4()),
            "message_piece_id": second["id"],
            "scorable": {"scorable_type": "message", "message_piece_ids": [second["id"]]},
        }
    )
    scored["scorer_class_identifier"] = {**scored["scorer_class_identifier"], "hash": "a/b"}
    atomic = copy.deepcopy(result_template["atomic_attack_identifier"])
    atomic.pop("hash", None)
    for child in atomic.get("children", {}).values():
        if isinstance(child, dict):
            child.pop("hash", None)
    result = attack_result(
        result_template, cid, "unhashed objective", atomic_attack_identifier=atomic
    )
    result["last_score"] = None
    # The 0.13 piece placed the conversation in its labelled operation: the result names it too.
    result["labels"] = {**(result.get("labels") or {}), "operation": "hostile"}
    body = {"message_pieces": [first, second], "scores": [scored], "attack_results": [result]}
    return HostileCase(
        "unhashed", "unhashed", [body], [cid], [result["attack_result_id"]], [result["objective"]]
    )


# --- many scores sharing one wide scorer tree ----------------------------------------------


def scores_case(score: dict[str, Any], count: int = 500, width: int = 250) -> HostileCase:
    """One piece scored ``count`` times by one scorer whose tree has ``width`` children: the
    page must not repeat the tree per score."""
    cid = f"scores-{count}-{uuid.uuid4()}"
    target = piece(cid, 0, "scored many times", role="assistant")
    scorer = copy.deepcopy(score["scorer_class_identifier"])
    scorer.pop("hash", None)
    scorer["children"] = {
        "sub_scorers": [
            {"class_name": f"SubScorer{i}", "class_module": "hostile.scores", "note": "n" * 50}
            for i in range(width)
        ]
    }
    scores = []
    for i in range(count):
        row = copy.deepcopy(score)
        row.update(
            {
                "id": str(uuid.uuid4()),
                "message_piece_id": target["id"],
                "scorable": {"scorable_type": "message", "message_piece_ids": [target["id"]]},
                "scorer_class_identifier": scorer,
                "score_rationale": f"rationale {i}",
            }
        )
        scores.append(row)
    body = {"message_pieces": [target], "scores": scores}
    return HostileCase("scores", f"scores-{count}x{width}", [body], [cid])


# --- everything -------------------------------------------------------------------------------


def scenario_case(count: int, run: int) -> HostileCase:
    """Scenario results with ``count`` labels, ``run``-long invisible runs in their texts and
    ``count`` errored result ids."""
    template = json.loads((SCENARIO_FIXTURE / "scenario_results.jsonl").read_text().splitlines()[0])
    hidden = ("\u200b" * run) + "visible" + ("\u202e\u200d" * (run // 2))
    scenarios: list[dict[str, Any]] = []
    for _ in range(3):
        item = copy.deepcopy(template)
        item["id"] = str(uuid.uuid4())
        item["attack_results"] = {}
        item["labels"] = {f"label-{i}": f"value-{i}{hidden[:50]}" for i in range(count)}
        item["scenario_description"] = hidden
        item["error_type"] = "Error" + hidden[:200]
        item["error_message"] = hidden
        item["error_attack_result_ids"] = [str(uuid.uuid4()) for _ in range(count)]
        item["metadata"] = {f"key-{i}": hidden[:100] for i in range(min(count, 1_000))}
        scenarios.append(item)
    return HostileCase(
        "scenarios",
        f"scenarios-{count}-{run}",
        [{"scenario_results": scenarios}],
        scenario_ids=[s["id"] for s in scenarios[:2]],
    )


def all_cases(fixtures_dir: Path) -> list[HostileCase]:
    """Every hostile class with its varied parameters."""
    result_template = attack_result_template(fixtures_dir)
    cases = [tree_case(shape, f) for shape in TREE_SHAPES for f in TREE_FANOUTS]
    cases += [diff_case(name, a, b) for name, (a, b) in diff_patterns().items()]
    cases += [
        invisible_case(kind, run)
        for kind in ("repeated", "alternating", "tags")
        for run in INVISIBLE_RUNS
    ]
    cases += [labels_case(count, result_template) for count in LABEL_COUNTS]
    cases.append(ids_case(result_template))
    cases.append(unhashed_case(result_template, score_template(fixtures_dir)))
    cases.append(scores_case(score_template(fixtures_dir)))
    cases += [scenario_case(count, run) for count in LABEL_COUNTS for run in INVISIBLE_RUNS]
    return cases


def ordinary_case(fixtures_dir: Path) -> HostileCase:
    """Ordinary data for the same pages (the benchmark's baseline)."""
    result_template = attack_result_template(fixtures_dir)
    cid = f"ordinary-{uuid.uuid4()}"
    items = [
        piece(cid, i, "Explain how to pick a lock", converted="Rkcynva ubj gb cvpx n ybpx")
        for i in range(10)
    ]
    for item in items:
        item["labels"] = {"operation": "op_2026_11", "operator": "roakey"}
    result = attack_result(result_template, cid, "ordinary objective")
    # In its conversation's operation (a result naming another one is refused).
    result["labels"] = {**(result.get("labels") or {}), "operation": "op_2026_11"}
    body = {"message_pieces": items, "attack_results": [result]}
    atomic_hash = str(result_template["atomic_attack_identifier"]["hash"])
    return HostileCase(
        "ordinary",
        "ordinary",
        [body],
        [cid],
        [result["attack_result_id"]],
        [result["objective"]],
        identifier_roots=[atomic_hash],
    )
