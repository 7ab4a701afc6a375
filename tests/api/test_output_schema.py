"""The read API's OpenAPI output schemas describe every key of both PyRIT shapes, exactly.

Real rows (both PyRIT fixture lines, the scenario fixture, a 0.13 scenario row, loose-content
scores, the demo data, a reviewer's verdict and identifier trees with cut branches) are read
through every read endpoint in every shape, and each answer is validated with jsonschema
against the schema the server serves. Every closed shape must be met, each answer item must
match the shape it was asked in, and each closed shape's keys must be the keys export writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from memory.api.reads import export_pieces_page
from memory.api.views import identifier_row_dict
from memory.export import (
    export_attack_result,
    export_conversation,
    export_piece,
    export_scenario_result,
    export_score,
)
from memory.models import AttackResult, ComponentIdentifier, Conversation, Score
from memory.ownership import mark_identifier_operations
from memory.parsing_scenarios import SCENARIO_RESULT_KEYS_013, SCENARIO_RESULT_KEYS_1X
from memory.querysets import (
    attack_results_for_export,
    pieces_for_export,
    scenario_results_for_export,
)
from memory.shapes import (
    ATTACK_RESULT_KEYS_013,
    ATTACK_RESULT_KEYS_1X,
    CONVERSATION_KEYS,
    PIECE_KEYS_013,
    PIECE_KEYS_1X,
    RETRY_EVENT_KEYS,
    SCORE_KEYS_013,
    SCORE_KEYS_1X,
    SCORE_KEYS_ENTRY,
)
from redteam.client import path_id
from redteam.common.access import Scope, user_scope
from redteam.common.models import Operation
from redteam.core.operations import UNASSIGNED
from redteam.site.demo import build_demo_data, demo_payload
from scoring.services import record_verdict
from seeds.api.schema import SEED_CLASSES, SEED_KEYS_013, SEED_KEYS_1X
from seeds.api.views import export_seed
from seeds.models import Seed
from tests.api.pyrit_fixtures import (
    LINES,
    SCENARIO_FIXTURES,
    fixture_payload,
    read_jsonl,
    renumbered,
    scenario_rows,
)
from tests.api.test_roundtrip import ingest
from tests.api.test_scenario_results import LEGACY_ROW

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

pytestmark = pytest.mark.django_db

# Each list endpoint, the `shape` values it takes, and the union of shapes it answers.
ENDPOINTS: dict[str, tuple[tuple[str, ...], str]] = {
    "message-pieces": (("stored", "1.x", "0.13"), "MessagePieceOut"),
    "scores": (("stored", "1.x", "0.13", "entry"), "ScoreOut"),
    "attack-results": (("stored", "1.x", "0.13"), "AttackResultOut"),
    "scenario-results": (("stored", "1.x", "0.13"), "ScenarioResultOut"),
    "seeds": (("1.x", "0.13"), "SeedOut"),
    "conversations": (("",), "ConversationOut"),
    "identifiers": (("",), "IdentifierOut"),
}
# The detail answers: endpoint -> (id key of a list row, component).
DETAILS: dict[str, tuple[str, str]] = {
    "message-pieces": ("id", "MessagePieceOut"),
    "scores": ("id", "ScoreOut"),
    "attack-results": ("attack_result_id", "AttackResultOut"),
    "scenario-results": ("id", "ScenarioResultOut"),
    "seeds": ("id", "SeedOut"),
    "conversations": ("conversation_id", "ConversationMessages"),
    "identifiers": ("hash", "ComponentIdentifierTree"),
}
# The closed shapes an answer in a given shape must match (a row in "stored" may be either).
SHAPED = {
    ("MessagePieceOut", "1.x"): "MessagePiece1x",
    ("MessagePieceOut", "0.13"): "MessagePiece013",
    ("ScoreOut", "1.x"): "Score1x",
    ("ScoreOut", "0.13"): "Score013",
    ("ScoreOut", "entry"): "ScoreEntry",
    ("AttackResultOut", "1.x"): "AttackResult1x",
    ("AttackResultOut", "0.13"): "AttackResult013",
    ("ScenarioResultOut", "1.x"): "ScenarioResult1x",
    ("ScenarioResultOut", "0.13"): "ScenarioResult013",
    ("ConversationPiece", "1.x"): "ScoredMessagePiece1x",
    ("ConversationPiece", "0.13"): "MessagePiece013",
}
SHAPES = ("stored", "1.x", "0.13")
SIMULATED_CONVERSATION = {
    "id": "5e3d9f1c-2b4a-4c6d-8e0f-1a2b3c4d5e6f",
    "seed_type": "simulated_conversation",
    "dataset_name": "schema_check",
    "num_turns": 2,
    "adversarial_chat_system_prompt_path": "red_team/adversarial.yaml",
    "pyrit_version": "1.1.0",
}
MISSING_HASH = "0" * 64
CYCLIC_HASH = "c" * 64


# --- the schema as JSON Schema --------------------------------------------------------------


def json_schema(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: `nullable: true` becomes "or null"."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: json_schema(value) for key, value in node.items()}
    if converted.pop("nullable", False):
        return {"anyOf": [converted, {"type": "null"}]}
    return converted


class Schema:
    """The served OpenAPI document, with a jsonschema validator per component or response."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.components: dict[str, Any] = document["components"]["schemas"]
        self._converted = json_schema(document["components"])
        self._validators: dict[str, Draft202012Validator] = {}

    def validator(self, schema: dict[str, Any]) -> Draft202012Validator:
        """A validator of ``schema``, whose $refs point into the document's components."""
        root = {**json_schema(schema), "components": self._converted}
        return Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)

    def component(self, name: str) -> Draft202012Validator:
        """A validator of the component ``name`` (made once)."""
        if name not in self._validators:
            self._validators[name] = self.validator({"$ref": f"#/components/schemas/{name}"})
        return self._validators[name]

    def response(self, path: str) -> Draft202012Validator:
        """A validator of the 200 answer of GET ``path`` (a templated schema path)."""
        content = self.document["paths"][path]["get"]["responses"]["200"]["content"]
        return self.validator(content["application/json"]["schema"])

    def branches(self, union: str) -> list[str]:
        """The closed shapes a union component is the oneOf of."""
        return [ref["$ref"].rsplit("/", 1)[1] for ref in self.components[union]["oneOf"]]

    def matching(self, union: str, item: Any) -> list[str]:
        """The shapes of ``union`` that ``item`` is valid against."""
        return [b for b in self.branches(union) if self.component(b).is_valid(item)]


def errors_of(validator: Draft202012Validator, value: Any) -> list[str]:
    """Every validation error, with the path where it occurred."""
    return [f"{list(e.absolute_path)}: {e.message[:300]}" for e in validator.iter_errors(value)]


@pytest.fixture
def schema(api: APIClient) -> Schema:
    """The OpenAPI document the server serves."""
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return Schema(json.loads(response.content))


# --- the data -------------------------------------------------------------------------------


@pytest.fixture
def corpus(api: APIClient, fixtures_dir: Path, reviewer: User) -> None:
    """Every kind of row the read API serves, in both shapes, with nulls and edge values."""
    for line in LINES:
        response = ingest(api, fixture_payload(fixtures_dir, line))
        assert response.status_code == 200, line
    loose = read_jsonl(SCENARIO_FIXTURES / "loose_scores_after_storage.jsonl")
    inline = renumbered(read_jsonl(SCENARIO_FIXTURES / "loose_scores_before_storage.jsonl"), 1)
    payload = {
        "scenario_results": [*scenario_rows(), LEGACY_ROW],
        "scores": [*loose, *inline],
    }
    assert ingest(api, payload).status_code == 200
    demo = demo_payload(build_demo_data())
    assert ingest(api, demo).status_code == 200
    assert ingest(api, {"seeds": [SIMULATED_CONVERSATION]}).status_code == 200
    result = AttackResult.objects.filter(last_response__isnull=False).first()
    assert result is not None
    record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=True,
        score_type="true_false",
        rationale="checked by hand",
    )
    # Identifier trees with every kind of cut: a child not stored, a node its own ancestor.
    ComponentIdentifier.objects.create(
        hash=CYCLIC_HASH,
        class_name="Looping",
        class_module="tests",
        children={"itself": CYCLIC_HASH, "gone": [MISSING_HASH]},
    )
    # Used in an operation the reader belongs to, so its tree is visible.
    mark_identifier_operations([(CYCLIC_HASH, Operation.objects.get(name=UNASSIGNED).pk)])


def read_pages(api: APIClient, resource: str, params: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Every page of a list endpoint, following cursors."""
    response = api.get(f"/api/v1/{resource}/", {"page_size": "5", **params})
    while True:
        assert response.status_code == 200, response.content[:300]
        body: dict[str, Any] = response.json()
        yield body
        if not body["next"]:
            return
        response = api.get(body["next"])


# The closed shapes nested in each closed shape: key -> shape of the value (or of each item).
NESTED: dict[str, dict[str, str]] = {
    "AttackResult1x": {
        "last_response": "MessagePiece1x",
        "last_score": "Score1x",
        "retry_events": "RetryEvent",
        "related_conversations": "ConversationReference",
    },
    "AttackResult013": {
        "last_response": "MessagePiece013",
        "last_score": "Score013",
        "related_conversations": "ConversationReference",
    },
    "ScenarioResult1x": {"attack_results": "AttackResult1x"},
    "MessagePiece013": {"scores": "Score013"},
    "ScoredMessagePiece1x": {"scores": "Score1x"},
    "Score1x": {"scorable": "Scorable"},
    "ScoreEntry": {"scorable": "Scorable"},
    "ConversationOut": {"retries": "ConversationRetry"},
    "ConversationMessages": {"retries": "ConversationRetry", "messages": "ConversationMessage"},
    "ConversationMessage": {"pieces": "ConversationPiece"},
    "ComponentIdentifierTree": {"tree_budget": "TreeBudget"},
}


def _values(key: str, value: Any) -> list[Any]:
    """The dicts a key holds: itself, a list's items, or (attack_results) every list's items."""
    if key == "attack_results":
        return [item for items in value.values() for item in items]
    if isinstance(value, list):
        return value
    return [] if value is None else [value]


def _markers(node: Any) -> Iterator[dict[str, Any]]:
    """Every marker in a rebuilt identifier tree."""
    if isinstance(node, list):
        for item in node:
            yield from _markers(item)
    elif isinstance(node, dict):
        if "__tree__" in node and "class_name" not in node:
            yield node
        for child in (node.get("children") or {}).values():
            yield from _markers(child)


class Checker:
    """Validates answers and records which closed shapes they exercised."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.met: set[str] = set()
        self.problems: list[str] = []

    def answer(self, validator: Draft202012Validator, body: Any, where: str) -> None:
        """A whole answer against its operation's schema."""
        self.problems += [f"{where}: {p}" for p in errors_of(validator, body)]

    def item(self, name: str, shape: str, item: dict[str, Any], where: str) -> None:
        """One dict: exactly one shape of a union (the one asked for), or a closed shape."""
        if "oneOf" in self.schema.components[name]:
            matches = self.schema.matching(name, item)
            expected = SHAPED.get((name, shape))
            if len(matches) != 1 or (expected is not None and matches != [expected]):
                wanted = [expected] if expected else self.schema.branches(name)
                errors = [e for b in wanted for e in errors_of(self.schema.component(b), item)]
                self.problems.append(
                    f"{where}: matches {matches}, wanted {expected or 'one'}: {errors}"
                )
                return
            name = matches[0]
        else:
            self.problems += [f"{where}: {p}" for p in errors_of(self.schema.component(name), item)]
        self.met.add(name)
        if name == "ComponentIdentifierTree" and any(True for _ in _markers(item["tree"])):
            self.met.add("IdentifierTreeMarker")
        # A closed shape's nested dicts are in its line; a wrapper's follow the request.
        line = "0.13" if name.endswith("013") else "1.x" if name.endswith("1x") else shape
        for key, nested in NESTED.get(name, {}).items():
            for value in _values(key, item[key]):
                self.item(nested, line, value, f"{where} {key}")


def test_every_read_answer_matches_the_served_schema_in_every_shape(
    api: APIClient, corpus: None, schema: Schema
) -> None:
    check = Checker(schema)
    rows: dict[str, set[str]] = {}
    for resource, (shapes, union) in ENDPOINTS.items():
        # A page is the cursor envelope around `results`, whose items are the union.
        page_schema = schema.response(f"/api/v1/{resource}/")
        answer = schema.document["paths"][f"/api/v1/{resource}/"]["get"]["responses"]["200"]
        assert answer["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/Paginated{union}List"
        }
        assert schema.components[f"Paginated{union}List"]["properties"]["results"]["items"] == {
            "$ref": f"#/components/schemas/{union}"
        }
        id_key = DETAILS[resource][0]
        for shape in shapes:
            params = {"shape": shape} if shape else {}
            for page in read_pages(api, resource, params):
                check.answer(page_schema, {**page, "results": []}, f"{resource} {params}")
                for item in page["results"]:
                    check.item(union, shape, item, f"{resource} {params} {item[id_key]}")
                    rows.setdefault(resource, set()).add(str(item[id_key]))

    for resource, ids in rows.items():
        component = DETAILS[resource][1]
        detail = schema.document["paths"][_detail_path(schema, resource)]["get"]["responses"]
        assert detail["200"]["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{component}"
        }
        # A detail is a page of one (the list answers above cover every shape), except for
        # conversations, whose detail is their messages.
        shapes = SHAPES if resource == "conversations" else ENDPOINTS[resource][0][:1]
        for row_id in sorted(ids):
            for shape in shapes:
                params = {"shape": shape} if shape else {}
                response = api.get(f"/api/v1/{resource}/{path_id(row_id)}/", params)
                assert response.status_code == 200, (resource, row_id, response.content[:300])
                check.item(component, shape, response.json(), f"{resource}/{row_id} {params}")

    assert not check.problems, "\n".join(check.problems[:20])
    assert closed_shapes(schema) - check.met == set(), "closed shapes no answer exercised"


def closed_shapes(schema: Schema) -> set[str]:
    """Every closed component the read endpoints' answers refer to, directly or not."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[1]
                if name not in names:
                    names.add(name)
                    walk(schema.components[name])
            for value in node.values():
                walk(value)

    for path, item in schema.document["paths"].items():
        if path.startswith("/api/v1/") and "get" in item and "media" not in path:
            walk(item["get"]["responses"]["200"])
    return {n for n in names if schema.components[n].get("additionalProperties") is False}


def _detail_path(schema: Schema, resource: str) -> str:
    """The templated path of a resource's detail endpoint."""
    prefix = f"/api/v1/{resource}/{{"
    paths: dict[str, Any] = schema.document["paths"]
    return next(p for p in paths if p.startswith(prefix))


def _keys(schema: Schema, name: str) -> list[str]:
    """A closed component's properties, in order, after checking it is closed."""
    component = schema.components[name]
    assert component["additionalProperties"] is False, name
    return list(component["properties"])


def test_each_closed_shape_lists_exactly_the_keys_export_writes_in_pyrit_order(
    api: APIClient, corpus: None, schema: Schema
) -> None:
    piece = pieces_for_export(EVERYTHING).filter(source_shape="1.x").first()
    legacy_piece = pieces_for_export(EVERYTHING).filter(source_shape="0.13").first()
    score = Score.objects.select_related("scorer_dump").filter(scorable__isnull=False).first()
    result = attack_results_for_export(EVERYTHING).filter(last_score_id__isnull=False).first()
    scenario = scenario_results_for_export(EVERYTHING).first()
    conversation = Conversation.objects.select_related("target_dump").first()
    identifier = ComponentIdentifier.objects.exclude(children={}).first()
    assert None not in (piece, legacy_piece, score, result, scenario, conversation, identifier)
    assert piece
    assert legacy_piece
    assert score
    assert result
    assert scenario
    assert conversation
    assert identifier
    exported: dict[str, dict[str, Any]] = {
        "MessagePiece1x": export_piece(piece, "1.x"),
        "MessagePiece013": export_piece(legacy_piece, "0.13"),
        "ScoredMessagePiece1x": export_pieces_page(
            [piece], "1.x", scope=EVERYTHING, with_scores=True
        )[0],
        "Score1x": export_score(score, "1.x"),
        "Score013": export_score(score, "0.13"),
        "ScoreEntry": export_score(score, "entry"),
        "AttackResult1x": export_attack_result(result, "1.x", last_response=result.last_response),
        "AttackResult013": export_attack_result(result, "0.13", last_response=result.last_response),
        "ScenarioResult1x": export_scenario_result(scenario, "1.x", {}),
        "ScenarioResult013": export_scenario_result(scenario, "0.13", {}),
        "ConversationOut": export_conversation(conversation),
        "IdentifierOut": identifier_row_dict(identifier),
        "ConversationMessages": api.get(
            f"/api/v1/conversations/{conversation.conversation_id}/"
        ).json(),
        "ComponentIdentifierTree": api.get(f"/api/v1/identifiers/{identifier.hash}/").json(),
    }
    exported["ConversationMessage"] = exported["ConversationMessages"]["messages"][0]
    for seed_type in ("prompt", "objective", "simulated_conversation"):
        seed = Seed.objects.select_related("group").filter(seed_type=seed_type).first()
        assert seed is not None, seed_type
        for shape, line in (("1.x", "1x"), ("0.13", "013")):
            name = f"{SEED_CLASSES[seed_type]}{line}"
            exported[name] = export_seed(seed, shape)
    for name, row in exported.items():
        assert _keys(schema, name) == list(row), name
        assert sorted(schema.components[name]["required"]) == sorted(row), name

    # The key lists export uses are the components' (in PyRIT's order), for every row.
    expected = {
        "MessagePiece1x": PIECE_KEYS_1X,
        "MessagePiece013": PIECE_KEYS_013,
        "ScoredMessagePiece1x": (*PIECE_KEYS_1X, "scores"),
        "Score1x": SCORE_KEYS_1X,
        "Score013": SCORE_KEYS_013,
        "ScoreEntry": SCORE_KEYS_ENTRY,
        "AttackResult1x": ATTACK_RESULT_KEYS_1X,
        "AttackResult013": ATTACK_RESULT_KEYS_013,
        "ScenarioResult1x": SCENARIO_RESULT_KEYS_1X,
        "ScenarioResult013": SCENARIO_RESULT_KEYS_013,
        "ConversationOut": CONVERSATION_KEYS,
        "ConversationMessages": (*CONVERSATION_KEYS, "messages"),
        "RetryEvent": RETRY_EVENT_KEYS,
    }
    for seed_type, cls in SEED_CLASSES.items():
        expected[f"{cls}1x"] = SEED_KEYS_1X[seed_type]
        expected[f"{cls}013"] = SEED_KEYS_013[seed_type]
    for name, keys in expected.items():
        assert _keys(schema, name) == list(keys), name
    # A retry event is stored as sent, so none of its keys is required.
    assert "required" not in schema.components["RetryEvent"]


def _first_items(api: APIClient) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(union, shape, first item) of every list endpoint in every shape."""
    for resource, (shapes, union) in ENDPOINTS.items():
        for shape in shapes:
            params = {"shape": shape} if shape else {}
            results = api.get(f"/api/v1/{resource}/", params).json()["results"]
            assert results, (resource, shape)
            yield union, shape, results[0]


def test_an_undocumented_missing_or_mistyped_key_fails_validation(
    api: APIClient, corpus: None, schema: Schema
) -> None:
    checked = 0
    for union, shape, item in _first_items(api):
        validator = schema.component(union)
        assert validator.is_valid(item), (union, shape)
        assert not validator.is_valid({**item, "undocumented": None}), (union, shape)
        for key in item:
            trimmed = {k: v for k, v in item.items() if k != key}
            assert not validator.is_valid(trimmed), (union, shape, key)
        checked += 1
    assert checked == sum(len(shapes) for shapes, _ in ENDPOINTS.values())

    # Nested shapes are closed too, and timestamps tell the lines apart.
    result = api.get("/api/v1/attack-results/", {"shape": "1.x", "page_size": "50"}).json()
    full = next(r for r in result["results"] if r["last_response"] and r["last_score"])
    attack_result = schema.component("AttackResultOut")
    assert attack_result.is_valid(full)
    for key in ("last_response", "last_score"):
        assert not attack_result.is_valid({**full, key: {**full[key], "undocumented": 1}}), key
    as_013 = full["timestamp"].replace("Z", "+00:00")
    assert not attack_result.is_valid({**full, "timestamp": as_013})
    piece = {**full["last_response"], "timestamp": as_013}
    assert not schema.component("MessagePieceOut").is_valid(piece)
    # Free-form by PyRIT's design: labels, metadata and identifier params take any key.
    assert attack_result.is_valid(
        {
            **full,
            "labels": {"any key": "any text"},
            "metadata": {"nested": [1, None, {"x": 1.5}]},
            "atomic_attack_identifier": {**full["atomic_attack_identifier"], "new_param": [1]},
        }
    )
    assert not attack_result.is_valid({**full, "labels": {"op": 1}})


def test_schema_generation_is_warning_free_and_valid(tmp_path: Path) -> None:
    call_command(
        "spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yaml")
    )
    assert (tmp_path / "schema.yaml").stat().st_size > 0
