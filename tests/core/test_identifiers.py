"""Tests for redteam.core.identity: PyRIT golden vectors plus one focused test per rule of §7."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from redteam.core.identity import (
    LINE_PYRIT_VERSIONS,
    REGISTRY_NAME_PATTERN,
    RESERVED_PARAM_NAMES,
    RULE_TABLES,
    AtomicAttackEvaluationIdentifier,
    ChildEvalRule,
    ComponentIdentifier,
    EvalRuleSet,
    EvaluationIdentifier,
    ObjectiveTargetEvaluationIdentifier,
    ScorerEvaluationIdentifier,
    build_atomic_attack_identifier,
    build_seed_identifier,
    canonical_json,
    class_name_to_snake_case,
    compute_eval_hash,
    compute_seed_group_hash,
    config_hash,
    eval_preimage,
    hash_preimage,
    snake_case_to_class_name,
)

FIXTURES = Path(
    os.environ.get(
        "REDTEAM_FIXTURES", Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
    )
)


def _jsonl(relpath: str) -> list[dict[str, Any]]:
    """Read one fixture JSONL file (never copied into the repo)."""
    with open(FIXTURES / relpath, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _ordered(d: Any) -> str:
    """JSON text without key sorting, so equality also checks key order at every level."""
    return json.dumps(d)


V11_ALL = _jsonl("pyrit-1.1/identifiers.jsonl")
V11 = [r for r in V11_ALL if "model_dump" in r]
V11_TABLES = next(r for r in V11_ALL if r["case_id"] == "_eval_rule_tables")
V11_BY_ID = {r["case_id"]: r for r in V11}
V13 = _jsonl("pyrit-0.13/identifiers.jsonl")
NAMING = _jsonl("pyrit-1.1/naming.jsonl")
SEED_GROUPS = _jsonl("pyrit-1.1/seed_groups.jsonl")
SEEDS_11 = _jsonl("pyrit-1.1/seeds.jsonl")
SEEDS_13 = _jsonl("pyrit-0.13/seeds.jsonl")

v11_cases = pytest.mark.parametrize("row", V11, ids=[r["case_id"] for r in V11])
v13_cases = pytest.mark.parametrize("row", V13, ids=[r["case_id"] for r in V13])
CUSTOM_RULE_VECTORS = [(r, v) for r in V11 for v in r.get("custom_rule_vectors", [])]


def _v11(row: dict[str, Any]) -> ComponentIdentifier:
    """Parse a 1.1 vector the way 1.x does."""
    return ComponentIdentifier.model_validate(row["model_dump"])


def _v13(row: dict[str, Any]) -> ComponentIdentifier:
    """Parse a 0.13 vector the way 0.13 did."""
    return ComponentIdentifier.from_dict(row["to_dict"])


def ci(name: str = "A", module: str = "m", **kwargs: Any) -> ComponentIdentifier:
    """Shorthand constructor for focused tests."""
    return ComponentIdentifier(name, module, **kwargs)


def _obj(class_name: str, module: str) -> object:
    """An instance of a throwaway class with the given name and module, for ``of()``."""
    return type(class_name, (), {"__module__": module})()


# ============================================================================================
# Golden vectors: meta
# ============================================================================================

# Every key a vector may carry, and the test asserting it. A new key in the fixtures fails here
# until a test covers it.
V11_KEYS = {
    "case_id": "parametrize id",
    "description": "documentation only",
    "identifier_type": "test_v11_typed_identifier_dumps_like_plain_one",
    "model_dump": "test_v11_model_dump_round_trip",
    "hash": "test_v11_hash_and_preimage",
    "short_hash": "test_v11_short_hash_and_unique_name",
    "unique_name": "test_v11_short_hash_and_unique_name",
    "hash_preimage": "test_v11_hash_and_preimage",
    "eval_hashes": "test_v11_eval_hashes",
    "scorer_eval_preimage": "test_v11_eval_preimages",
    "atomic_attack_eval_preimage": "test_v11_eval_preimages",
    "with_eval_hash_model_dump": "test_v11_with_eval_hash_model_dump",
    "custom_rule_vectors": "test_v11_custom_rule_vectors",
}
V13_KEYS = {
    "case_id": "parametrize id",
    "to_dict": "test_v13_to_dict_round_trip",
    "to_dict_max_value_length_80": "test_v13_to_dict_max_value_length_80",
    "hash": "test_v13_hash",
    "from_dict_of_truncated_keeps_hash": "test_v13_from_dict_of_truncated_keeps_hash",
    "hash_recomputed_from_truncated_params": "test_v13_hash_recomputed_from_truncated_params",
    "scorer_eval_hash": "test_v13_eval_hashes",
    "atomic_attack_eval_hash": "test_v13_eval_hashes",
    "same_hash_in_pyrit_1_1_0": "test_v13_same_hash_in_pyrit_1_1_0",
}


def test_fixture_counts_match_the_spec() -> None:
    assert len(V11) == 29
    assert len(V11_ALL) == 30
    assert len(V13) == 19
    assert len(NAMING) == 20
    assert len(SEED_GROUPS) == 10
    assert len(SEEDS_11) == 17


def test_every_vector_key_is_asserted_by_a_test() -> None:
    assert {k for r in V11 for k in r} <= set(V11_KEYS)
    assert {k for r in V13 for k in r} <= set(V13_KEYS)
    assert set(V11_TABLES) == {
        "case_id",
        "description",
        "ScorerEvaluationIdentifier",
        "AtomicAttackEvaluationIdentifier",
        "ObjectiveTargetEvaluationIdentifier",
        "legacy",
    }


# ============================================================================================
# Golden vectors: PyRIT 1.1
# ============================================================================================


@v11_cases
def test_v11_hash_and_preimage(row: dict[str, Any]) -> None:
    identifier = _v11(row)
    assert hash_preimage(identifier) == row["hash_preimage"]
    assert hashlib.sha256(row["hash_preimage"].encode()).hexdigest() == row["hash"]
    assert identifier.hash == row["hash"] == row["model_dump"]["hash"]


@v11_cases
def test_v11_model_dump_round_trip(row: dict[str, Any]) -> None:
    dumped = _v11(row).model_dump()
    assert _ordered(dumped) == _ordered(row["model_dump"])
    assert _ordered(ComponentIdentifier.model_validate(dumped).model_dump()) == _ordered(dumped)


@v11_cases
def test_v11_short_hash_and_unique_name(row: dict[str, Any]) -> None:
    identifier = _v11(row)
    assert identifier.short_hash == row["short_hash"]
    assert identifier.unique_name == row["unique_name"] == str(identifier)


# Which rule set produced each eval_hashes key.
V11_EVAL_KEYS = {
    "scorer": ("1.1", "scorer"),
    "atomic_attack": ("1.1", "atomic_attack"),
    "objective_target": ("1.1", "objective_target"),
}
V11_LEGACY_EVAL_KEYS = {
    "scorer_0.12_0.13": [("0.12", "scorer"), ("0.13", "scorer")],
    "atomic_attack_0.12": [("0.12", "atomic_attack")],
    "atomic_attack_0.13": [("0.13", "atomic_attack")],
}


@v11_cases
def test_v11_eval_hashes(row: dict[str, Any]) -> None:
    identifier = _v11(row)
    eval_hashes = row["eval_hashes"]
    assert set(eval_hashes) == {*V11_EVAL_KEYS, "legacy_rules_0_12_0_13"}
    assert ScorerEvaluationIdentifier(identifier).eval_hash == eval_hashes["scorer"]
    assert AtomicAttackEvaluationIdentifier(identifier).eval_hash == eval_hashes["atomic_attack"]
    assert (
        ObjectiveTargetEvaluationIdentifier(identifier, line="1.1").eval_hash
        == eval_hashes["objective_target"]
    )
    legacy = eval_hashes["legacy_rules_0_12_0_13"]
    assert set(legacy) == set(V11_LEGACY_EVAL_KEYS)
    for key, tables in V11_LEGACY_EVAL_KEYS.items():
        for line, kind in tables:
            # The raw rule tables, not the legacy EvaluationIdentifier, which would return a
            # stored eval_hash instead of computing.
            assert RULE_TABLES[line][kind].eval_hash(identifier) == legacy[key], (key, line)


@v11_cases
def test_v11_eval_preimages(row: dict[str, Any]) -> None:
    identifier = _v11(row)
    for kind in ("scorer", "atomic_attack"):
        preimage = RULE_TABLES["1.1"][kind].eval_preimage(identifier)
        assert preimage == row[f"{kind}_eval_preimage"]
        assert hashlib.sha256(preimage.encode()).hexdigest() == row["eval_hashes"][kind]


@v11_cases
def test_v11_with_eval_hash_model_dump(row: dict[str, Any]) -> None:
    identifier = _v11(row)
    stamped = identifier.with_eval_hash(AtomicAttackEvaluationIdentifier(identifier).eval_hash)
    assert _ordered(stamped.model_dump()) == _ordered(row["with_eval_hash_model_dump"])
    assert stamped.hash == identifier.hash


@pytest.mark.parametrize(
    ("row", "vector"),
    CUSTOM_RULE_VECTORS,
    ids=[f"{r['case_id']}-{v['rule_set']}" for r, v in CUSTOM_RULE_VECTORS],
)
def test_v11_custom_rule_vectors(row: dict[str, Any], vector: dict[str, Any]) -> None:
    rules = {k: ChildEvalRule.from_dict(v) for k, v in vector["child_eval_rules"].items()}
    own = ChildEvalRule.from_dict(vector["own_rule"]) if vector["own_rule"] else None
    assert compute_eval_hash(_v11(row), child_eval_rules=rules, own_rule=own) == vector["eval_hash"]


def test_custom_rule_vectors_cover_every_rule_kind() -> None:
    assert len(CUSTOM_RULE_VECTORS) == 18
    assert {v["rule_set"] for _, v in CUSTOM_RULE_VECTORS} == {
        "empty_rules",
        "exclude_objective_scorer",
        "objective_target_temperature_only",
        "fallback_underlying_model",
        "only_general_technique_seeds",
        "own_rule_only",
    }


# Promoted fields of PyRIT 1.x's typed subclasses (§7.5), in field-definition order.
PROMOTED = {
    "TargetIdentifier": [
        "endpoint",
        "model_name",
        "underlying_model_name",
        "temperature",
        "top_p",
        "max_requests_per_minute",
        "supported_auth_modes",
        "targets",
    ],
    "ConverterIdentifier": [
        "supported_input_types",
        "supported_output_types",
        "converter_target",
        "sub_converter",
    ],
    "ScorerIdentifier": ["scorer_type", "score_aggregator", "prompt_target", "sub_scorers"],
    "AttackIdentifier": [
        "adversarial_system_prompt",
        "adversarial_seed_prompt",
        "objective_target",
        "adversarial_chat",
        "objective_scorer",
        "request_converters",
        "response_converters",
    ],
    "AtomicAttackIdentifier": ["attack_technique", "seed_identifiers"],
    "SeedIdentifier": [
        "value",
        "value_sha256",
        "data_type",
        "dataset_name",
        "is_general_technique",
    ],
    "ComponentIdentifier": [],
}


@v11_cases
def test_v11_typed_identifier_dumps_like_plain_one(row: dict[str, Any]) -> None:
    # A typed identifier built with of(**promoted) must dump and hash like the plain vector.
    parsed = _v11(row)
    promoted_names = PROMOTED[row["identifier_type"]]
    promoted = {
        n: parsed.params.get(n, parsed.children.get(n)) for n in promoted_names
    }  # None for absent ones, which of() must drop
    built = ComponentIdentifier.of(
        _obj(parsed.class_name, parsed.class_module),
        params={k: v for k, v in parsed.params.items() if k not in promoted_names},
        children={k: v for k, v in parsed.children.items() if k not in promoted_names},
        attributes=parsed.attributes,
        pyrit_version=parsed.pyrit_version,
        **promoted,
    )
    assert built.hash == row["hash"]
    expected = {k: v for k, v in row["model_dump"].items() if k != "eval_hash"}
    if row["identifier_type"] == "ComponentIdentifier":
        # of() drops None params and None attributes; the plain constructor keeps them.
        expected = {k: v for k, v in expected.items() if v is not None}
        if "attributes" in expected:
            expected["attributes"] = {
                k: v for k, v in expected["attributes"].items() if v is not None
            }
    assert built.model_dump() == expected


def test_v11_rule_tables_equal_the_data_tables() -> None:
    for cls_name, kind in [
        ("ScorerEvaluationIdentifier", "scorer"),
        ("AtomicAttackEvaluationIdentifier", "atomic_attack"),
        ("ObjectiveTargetEvaluationIdentifier", "objective_target"),
    ]:
        assert RULE_TABLES["1.1"][kind].to_dict() == V11_TABLES[cls_name]
    legacy = V11_TABLES["legacy"]
    assert set(legacy) == {"scorer_0.12_0.13", "atomic_attack_0.12", "atomic_attack_0.13"}
    for key, tables in V11_LEGACY_EVAL_KEYS.items():
        for line, kind in tables:
            rule_set = RULE_TABLES[line][kind]
            assert rule_set.own_rule is None
            assert rule_set.root_unwrap_child is None
            assert rule_set.to_dict()["CHILD_EVAL_RULES"] == legacy[key]


def test_child_eval_rule_dict_round_trip() -> None:
    for rule_set in (t for line in RULE_TABLES.values() for t in line.values()):
        for rule in rule_set.child_eval_rules.values():
            assert ChildEvalRule.from_dict(rule.to_dict()) == rule


def test_v11_legacy_type_module_dict_parses_from_pre_0_12_shape() -> None:
    row = V11_BY_ID["legacy_type_module_dict"]
    dump = row["model_dump"]
    raw = {"__type__": dump["class_name"], "__module__": dump["class_module"]}
    raw |= {k: v for k, v in dump.items() if k not in {"class_name", "class_module", "hash"}}
    raw.pop("pyrit_version")
    parsed = ComponentIdentifier.model_validate(raw)
    assert (parsed.class_name, parsed.class_module) == (dump["class_name"], dump["class_module"])
    assert parsed.hash == row["hash"]
    assert ComponentIdentifier.from_dict(raw).hash == row["hash"]


def test_v11_flat_dict_bogus_stored_hash_is_recomputed_eval_hash_kept() -> None:
    row = V11_BY_ID["flat_dict_roundtrip"]
    parsed = ComponentIdentifier.model_validate({**row["model_dump"], "hash": "0" * 64})
    assert parsed.hash == row["hash"]
    assert parsed.eval_hash == row["model_dump"]["eval_hash"]
    assert parsed.pyrit_version == "0.13.0"


# ============================================================================================
# Golden vectors: PyRIT 0.13 (legacy to_dict / from_dict)
# ============================================================================================


@v13_cases
def test_v13_to_dict_round_trip(row: dict[str, Any]) -> None:
    assert _ordered(_v13(row).to_dict()) == _ordered(row["to_dict"])


@v13_cases
def test_v13_hash(row: dict[str, Any]) -> None:
    identifier = _v13(row)
    assert identifier.hash == row["hash"]
    # The untruncated content recomputes to the stored hash.
    assert identifier.content_hash == row["hash"]
    assert ComponentIdentifier.model_validate(row["to_dict"]).hash == row["hash"]


@v13_cases
def test_v13_to_dict_max_value_length_80(row: dict[str, Any]) -> None:
    truncated = _v13(row).to_dict(max_value_length=80)
    assert _ordered(truncated) == _ordered(row["to_dict_max_value_length_80"])


@v13_cases
def test_v13_from_dict_of_truncated_keeps_hash(row: dict[str, Any]) -> None:
    parsed = ComponentIdentifier.from_dict(row["to_dict_max_value_length_80"])
    assert (parsed.hash == row["hash"]) is row["from_dict_of_truncated_keeps_hash"]
    assert _ordered(parsed.to_dict()) == _ordered(row["to_dict_max_value_length_80"])


@v13_cases
def test_v13_hash_recomputed_from_truncated_params(row: dict[str, Any]) -> None:
    # The legacy recomputation: own (truncated) params plus the children's stored hashes.
    parsed = ComponentIdentifier.from_dict(row["to_dict_max_value_length_80"])
    assert parsed.content_hash == row["hash_recomputed_from_truncated_params"]


def test_v13_long_param_gets_a_new_hash_when_recomputed() -> None:
    row = next(r for r in V13 if r["case_id"] == "long_param")
    truncated = row["to_dict_max_value_length_80"]
    assert row["hash_recomputed_from_truncated_params"] != row["hash"]
    # 1.x reloads the legacy row and recomputes, so the identity changes.
    assert (
        ComponentIdentifier.model_validate(truncated).hash
        == (row["hash_recomputed_from_truncated_params"])
    )


def test_v13_model_validate_also_recomputes_truncated_children() -> None:
    # Legacy recompute keeps the children's stored hashes; 1.x recomputes the whole tree, so a
    # truncated child (system_prompt) changes the parent too.
    row = next(r for r in V13 if r["case_id"] == "attack_prompt_sending_0_13")
    truncated = row["to_dict_max_value_length_80"]
    assert ComponentIdentifier.from_dict(truncated).content_hash == row["hash"]
    assert ComponentIdentifier.model_validate(truncated).hash != row["hash"]


@v13_cases
def test_v13_eval_hashes(row: dict[str, Any]) -> None:
    identifier = _v13(row)
    assert ScorerEvaluationIdentifier(identifier, line="0.13").eval_hash == row["scorer_eval_hash"]
    assert (
        AtomicAttackEvaluationIdentifier(identifier, line="0.13").eval_hash
        == row["atomic_attack_eval_hash"]
    )


@v13_cases
def test_v13_same_hash_in_pyrit_1_1_0(row: dict[str, Any]) -> None:
    if "same_hash_in_pyrit_1_1_0" not in row:
        assert row["case_id"] not in V11_BY_ID or V11_BY_ID[row["case_id"]]["hash"] != row["hash"]
        return
    assert row["same_hash_in_pyrit_1_1_0"] is True
    if row["case_id"] in V11_BY_ID:
        assert V11_BY_ID[row["case_id"]]["hash"] == row["hash"]
    # Whatever the line, 1.x parsing of the untruncated dict yields the same hash.
    assert ComponentIdentifier.model_validate(row["to_dict"]).hash == row["hash"]


def test_v13_build_seed_identifier_from_0_13_seed_row() -> None:
    row = next(r for r in V13 if r["case_id"] == "build_seed_identifier_0")
    seed = next(s for s in SEEDS_13 if s["value"] == row["to_dict"]["value"])
    built = build_seed_identifier(seed, line="0.13", seed_class=seed["_seed_class"])
    assert _ordered(built.to_dict()) == _ordered(row["to_dict"])


@pytest.mark.parametrize("case_id", ["build_seed_identifier_0", "build_seed_identifier_1"])
def test_v13_build_seed_identifier_legacy_shape(case_id: str) -> None:
    # build_seed_identifier_1's seed is flagged is_general_technique=True, unlike the stored
    # 0.13 seed row with the same value, so the seed is rebuilt from the vector's own params.
    row = next(r for r in V13 if r["case_id"] == case_id)
    expected = row["to_dict"]
    seed = {k: expected[k] for k in ("value", "value_sha256", "dataset_name")}
    seed["is_general_technique"] = expected["is_general_technique"]
    built = build_seed_identifier(seed, line="0.13", seed_class=expected["class_name"])
    assert _ordered(built.to_dict()) == _ordered(expected)


# ============================================================================================
# Golden vectors: seeds, seed groups, atomic attacks, naming
# ============================================================================================


@pytest.mark.parametrize("seed", SEEDS_11, ids=[s["id"][:8] for s in SEEDS_11])
def test_v11_build_seed_identifier_matches_seed_from_seed(seed: dict[str, Any]) -> None:
    built = build_seed_identifier(seed)
    assert built.class_name == seed["_seed_class"]
    assert _ordered(built.model_dump()) == _ordered(seed["_seed_identifier"])


@pytest.mark.parametrize("group", SEED_GROUPS, ids=[g["prompt_group_id"][:8] for g in SEED_GROUPS])
def test_v11_logical_seed_group_hash(group: dict[str, Any]) -> None:
    seeds = group["model_dump"]["seeds"]
    identifiers = [build_seed_identifier(s) for s in seeds]
    assert compute_seed_group_hash(identifiers) == group["logical_seed_group_hash"]
    assert [i.class_name for i in identifiers] == group["seed_classes"]
    assert [s["id"] for s in seeds] == group["seed_ids"]
    assert {s["prompt_group_id"] for s in seeds} == {group["prompt_group_id"]}
    # An AttackSeedGroup is chosen exactly when the group has its objective.
    assert (group["_group_class"] == "AttackSeedGroup") == (
        "SeedObjective" in group["seed_classes"]
    )


def test_v11_build_atomic_attack_identifier_without_seeds() -> None:
    row = V11_BY_ID["atomic_attack_no_seeds"]
    attack = ComponentIdentifier.model_validate(
        row["model_dump"]["children"]["attack_technique"]["children"]["attack"]
    )
    built = build_atomic_attack_identifier(attack_identifier=attack)
    assert _ordered(built.model_dump()) == _ordered(row["model_dump"])


def test_v11_build_atomic_attack_identifier_from_seed_group() -> None:
    row = V11_BY_ID["atomic_attack_with_seed_group"]
    children = row["model_dump"]["children"]
    technique = ComponentIdentifier.model_validate(children["attack_technique"])
    # The group is given as seed mappings rebuilt from the vector (the stored seed_groups row
    # of the same seeds flags the second prompt is_general_technique=False, the vector True).
    seed_types = {"SeedObjective": "objective", "SeedPrompt": "prompt"}
    group = {
        "seeds": [
            {
                **{k: v for k, v in s.items() if k not in {"class_name", "class_module", "hash"}},
                "seed_type": seed_types[s["class_name"]],
            }
            for s in children["seed_identifiers"]
        ]
    }
    built = build_atomic_attack_identifier(
        technique_identifier=technique, seed_identifiers_or_group=group
    )
    assert _ordered(built.model_dump()) == _ordered(row["model_dump"])


def test_v11_atomic_attack_seed_group_matches_stored_group_except_flag() -> None:
    # Documents the fixture difference above: same seeds, same order, one flag differs.
    children = V11_BY_ID["atomic_attack_with_seed_group"]["model_dump"]["children"]
    stored = next(
        g for g in SEED_GROUPS if g["model_dump"]["seeds"][0]["dataset_name"] == "fixture_groups"
    )
    built = [build_seed_identifier(s) for s in stored["model_dump"]["seeds"]]
    assert [b.params["value"] for b in built] == [s["value"] for s in children["seed_identifiers"]]
    flags = [
        (b.params["is_general_technique"], s["is_general_technique"])
        for b, s in zip(built, children["seed_identifiers"], strict=True)
    ]
    assert flags == [(False, False), (False, True), (False, False)]


def test_v11_build_atomic_attack_identifier_0_12_shape() -> None:
    row = V11_BY_ID["atomic_attack_0_12_shape"]
    children = row["model_dump"]["children"]
    built = build_atomic_attack_identifier(
        attack_identifier=ComponentIdentifier.model_validate(children["attack"]),
        seed_identifiers_or_group=[
            ComponentIdentifier.model_validate(s) for s in children["seeds"]
        ],
        line="0.12",
        pyrit_version="1.1.0",
    )
    assert _ordered(built.model_dump()) == _ordered(row["model_dump"])


@pytest.mark.parametrize(
    "vector", NAMING, ids=[f"{v['fn']}-{v['input']}-{v['suffix']}" for v in NAMING]
)
def test_naming_vectors(vector: dict[str, Any]) -> None:
    fn = {
        "class_name_to_snake_case": class_name_to_snake_case,
        "snake_case_to_class_name": snake_case_to_class_name,
    }[vector["fn"]]
    assert fn(vector["input"], vector["suffix"]) == vector["output"]


# ============================================================================================
# §7.2 content hash rules
# ============================================================================================


def test_minimal_identifier_hashes_to_spec_example() -> None:
    identifier = ci()
    assert hash_preimage(identifier) == '{"class_module":"m","class_name":"A"}'
    assert identifier.hash == "75e3cf2cecf452f45ecba73f55ba6d3c60daee899fd4ae119449799828ed01d7"


def test_config_hash_is_sha256_of_canonical_json() -> None:
    d = {"b": [1, {"z": None, "a": 2}], "a": "x"}
    assert canonical_json(d) == '{"a":"x","b":[1,{"a":2,"z":null}]}'
    assert config_hash(d) == hashlib.sha256(canonical_json(d).encode()).hexdigest()


def test_top_level_none_params_are_dropped_but_nested_none_kept() -> None:
    with_none = ci(params={"a": 1, "top_p": None, "nested": {"x": None}, "items": [None]})
    assert hash_preimage(with_none) == (
        '{"a":1,"class_module":"m","class_name":"A","items":[null],"nested":{"x":null}}'
    )
    assert with_none.hash == ci(params={"a": 1, "nested": {"x": None}, "items": [None]}).hash
    assert with_none.hash != ci(params={"a": 1, "nested": {}, "items": []}).hash


def test_empty_list_child_changes_hash() -> None:
    assert ci(children={"x": []}).hash != ci().hash
    assert hash_preimage(ci(children={"x": []})) == (
        '{"children":{"x":[]},"class_module":"m","class_name":"A"}'
    )


def test_single_child_vs_one_item_list() -> None:
    child = ci("C")
    single, listed = ci(children={"c": child}), ci(children={"c": [child]})
    assert single.hash != listed.hash
    assert f'"c":"{child.hash}"' in hash_preimage(single)
    assert f'"c":["{child.hash}"]' in hash_preimage(listed)


def test_list_child_order_matters() -> None:
    a, b = ci("X"), ci("Y")
    assert ci(children={"c": [a, b]}).hash != ci(children={"c": [b, a]}).hash


def test_int_and_float_hash_differently() -> None:
    as_int, as_float = ci(params={"t": 1}), ci(params={"t": 1.0})
    assert as_int.hash != as_float.hash
    assert hash_preimage(as_float).endswith('"t":1.0}')
    # bool is not int either: true vs 1.
    assert ci(params={"t": True}).hash != as_int.hash


def test_non_ascii_is_escaped_like_python_json() -> None:
    preimage = hash_preimage(ci(params={"p": "héllo 你 🙂"}))
    assert preimage.isascii()
    assert '"p":"h\\u00e9llo \\u4f60 \\ud83d\\ude42"' in preimage


def test_nan_and_infinity_are_allowed_like_python_json() -> None:
    assert '"x":NaN' in hash_preimage(ci(params={"x": float("nan")}))
    assert '"y":Infinity' in hash_preimage(ci(params={"y": float("inf")}))


def test_nested_dict_keys_are_sorted_and_empty_values_kept() -> None:
    preimage = hash_preimage(ci(params={"h": {"z": 1, "a": 2}, "s": "", "l": [], "d": {}}))
    assert preimage == (
        '{"class_module":"m","class_name":"A","d":{},"h":{"a":2,"z":1},"l":[],"s":""}'
    )


def test_key_names_enter_the_hash() -> None:
    assert ci(params={"a": 1}).hash != ci(params={"b": 1}).hash


def test_pyrit_version_and_eval_hash_are_not_hashed() -> None:
    base = ci(params={"a": 1})
    other = ci(params={"a": 1}, pyrit_version="9.9", eval_hash="e" * 64)
    assert base.hash == other.hash
    assert base == other


def test_parent_depends_only_on_child_hash() -> None:
    # A child parsed from a legacy row keeps its stored hash, and the parent uses it.
    stored = ComponentIdentifier.from_dict(
        {"class_name": "C", "class_module": "m", "hash": "f" * 64, "p": "truncated..."}
    )
    parent = ci(children={"c": stored})
    assert hash_preimage(parent) == (
        '{"children":{"c":"' + "f" * 64 + '"},"class_module":"m","class_name":"A"}'
    )


def test_attributes_are_hashed_without_none_values() -> None:
    plain = ci(params={"t": 0.2})
    with_attrs = ci(params={"t": 0.2}, attributes={"v": "1", "ignored": None})
    assert '"attributes":{"v":"1"}' in hash_preimage(with_attrs)
    assert with_attrs.hash != plain.hash
    assert ci(params={"t": 0.2}, attributes={"ignored": None}).hash == plain.hash


# ============================================================================================
# §7.1 fields, identity and reserved names
# ============================================================================================


@pytest.mark.parametrize("name", sorted(RESERVED_PARAM_NAMES))
def test_reserved_param_names_raise(name: str) -> None:
    with pytest.raises(ValueError, match="reserved"):
        ci(params={name: 1})
    with pytest.raises(ValueError, match="reserved"):
        ComponentIdentifier.model_validate({"class_name": "A", "params": {name: 1}})


def test_reserved_names_are_the_1_1_list() -> None:
    assert {
        "class_name",
        "class_module",
        "hash",
        "pyrit_version",
        "eval_hash",
        "children",
        "params",
        "attributes",
        "__type__",
        "__module__",
    } == RESERVED_PARAM_NAMES


def test_of_rejects_reserved_promoted_names() -> None:
    with pytest.raises(ValueError, match="reserved"):
        ComponentIdentifier.of(_obj("A", "m"), eval_hash="x")


def test_equality_and_python_hash_follow_content_hash() -> None:
    a, b = ci(params={"x": 1}, pyrit_version="1"), ci(params={"x": 1}, pyrit_version="2")
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != ci(params={"x": 2})
    assert a != a.hash  # not equal to a bare string


def test_identifier_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ci().class_name = "B"  # type: ignore[misc]


def test_children_must_be_identifiers() -> None:
    with pytest.raises(TypeError):
        ci(children={"c": {"class_name": "C"}})
    with pytest.raises(TypeError):
        ci(children={"c": [ci(), "nope"]})


def test_display_helpers() -> None:
    identifier = ci("Scorer")
    assert identifier.short_hash == identifier.hash[:8]
    assert str(identifier) == identifier.unique_name == f"Scorer::{identifier.hash[:8]}"
    assert "Scorer" in repr(identifier)
    assert identifier.short_hash in repr(identifier)


# ============================================================================================
# §7.3 flat shape and legacy truncation
# ============================================================================================


def test_model_dump_key_order_and_optional_keys() -> None:
    child = ci("C", pyrit_version="1.1.0")
    identifier = ci(
        params={"b": None, "a": 1},
        children={"c": child, "e": []},
        attributes={"k": None},
        pyrit_version="1.1.0",
        eval_hash="e" * 64,
    )
    dump = identifier.model_dump()
    assert list(dump) == [
        "class_name",
        "class_module",
        "hash",
        "pyrit_version",
        "eval_hash",
        "b",
        "a",
        "children",
        "attributes",
    ]
    assert dump["b"] is None  # None params print as null
    assert dump["children"] == {"c": child.model_dump(), "e": []}
    assert dump["attributes"] == {"k": None}  # None attributes kept in the dump
    assert list(ci().model_dump()) == ["class_name", "class_module", "hash", "pyrit_version"]


def test_model_dump_never_truncates() -> None:
    long = "x" * 500
    assert ci(params={"p": long}).model_dump()["p"] == long


def test_to_dict_truncates_only_long_string_params_and_propagates() -> None:
    child = ci("C", params={"s": "c" * 10})
    identifier = ci(
        params={"s": "a" * 11, "edge": "b" * 10, "n": 12345678901, "l": ["z" * 50]},
        children={"one": child, "many": [child]},
    )
    out = identifier.to_dict(max_value_length=10)
    assert out["s"] == "a" * 10 + "..."
    assert out["edge"] == "b" * 10  # exactly N is not cut
    # non-strings never cut
    assert out["n"] == 12345678901
    assert out["l"] == ["z" * 50]
    assert out["hash"] == identifier.hash
    assert len(out["hash"]) == 64
    assert out["children"]["one"]["s"] == "c" * 10
    short = identifier.to_dict(max_value_length=5)
    assert short["children"]["one"]["s"] == "ccccc..."
    assert short["children"]["many"][0]["s"] == "ccccc..."
    assert short["class_name"] == "A"
    assert identifier.to_dict() == identifier.model_dump()


# ============================================================================================
# §7.4 parsing
# ============================================================================================


def test_model_validate_ignores_incoming_hash_at_every_level() -> None:
    child = {"class_name": "C", "class_module": "m", "hash": "1" * 64}
    parsed = ComponentIdentifier.model_validate(
        {"class_name": "A", "class_module": "m", "hash": "2" * 64, "children": {"c": child}}
    )
    assert parsed.hash == ci(children={"c": ci("C")}).hash
    child_parsed = parsed.get_child("c")
    assert child_parsed is not None
    assert child_parsed.hash == ci("C").hash


def test_model_validate_legacy_keys_fill_only_missing_names() -> None:
    legacy = ComponentIdentifier.model_validate({"__type__": "T", "__module__": "mod", "x": 1})
    assert (legacy.class_name, legacy.class_module, legacy.params) == ("T", "mod", {"x": 1})
    both = ComponentIdentifier.model_validate(
        {"class_name": "A", "__type__": "T", "class_module": "m", "__module__": "mod"}
    )
    assert (both.class_name, both.class_module, both.params) == ("A", "m", {})


def test_model_validate_defaults_unknown_names() -> None:
    parsed = ComponentIdentifier.model_validate({"x": 1})
    assert (parsed.class_name, parsed.class_module) == ("Unknown", "unknown")


def test_model_validate_structured_and_flat_shapes_agree() -> None:
    flat = ComponentIdentifier.model_validate({"class_name": "A", "class_module": "m", "p": 1})
    structured = ComponentIdentifier.model_validate(
        {"class_name": "A", "class_module": "m", "params": {"p": 1}, "pyrit_version": "1.1.0"}
    )
    assert flat.hash == structured.hash
    assert structured.params == {"p": 1}


def test_model_validate_rejects_mixed_shape() -> None:
    with pytest.raises(ValueError, match="mixed shape"):
        ComponentIdentifier.model_validate({"class_name": "A", "params": {"p": 1}, "q": 2})


def test_model_validate_keeps_pyrit_version_and_eval_hash_verbatim() -> None:
    parsed = ComponentIdentifier.model_validate(
        {"class_name": "A", "class_module": "m", "pyrit_version": "<0.10.0", "eval_hash": "abc"}
    )
    assert (parsed.pyrit_version, parsed.eval_hash) == ("<0.10.0", "abc")


def test_model_validate_attributes_bucket() -> None:
    parsed = ComponentIdentifier.model_validate(
        {"class_name": "A", "class_module": "m", "attributes": {"k": "v"}}
    )
    assert parsed.attributes == {"k": "v"}
    assert parsed.params == {}


def test_from_dict_keeps_stored_hash_and_eval_hash() -> None:
    parsed = ComponentIdentifier.from_dict(
        {"class_name": "A", "class_module": "m", "hash": "a" * 64, "eval_hash": "b" * 64, "p": 1}
    )
    assert parsed.hash == "a" * 64
    assert parsed.eval_hash == "b" * 64
    assert parsed.content_hash == ci(params={"p": 1}).hash
    assert parsed.with_eval_hash("c" * 64).hash == "a" * 64  # 0.13 with_eval_hash kept it


def test_from_dict_quirk_type_stays_a_param_when_class_name_present() -> None:
    parsed = ComponentIdentifier.from_dict(
        {"class_name": "A", "class_module": "m", "__type__": "T", "__module__": "mod"}
    )
    assert parsed.class_name == "A"
    assert parsed.params == {"__type__": "T", "__module__": "mod"}


def test_from_dict_legacy_type_module_dict() -> None:
    parsed = ComponentIdentifier.from_dict({"__type__": "T", "__module__": "mod", "x": 1})
    assert (parsed.class_name, parsed.class_module, parsed.params) == ("T", "mod", {"x": 1})
    assert parsed.stored_hash is None
    bare = ComponentIdentifier.from_dict({})
    assert (bare.class_name, bare.class_module) == ("Unknown", "unknown")


# ============================================================================================
# §7.5 helpers
# ============================================================================================


def test_of_takes_class_from_object_and_drops_none() -> None:
    built = ComponentIdentifier.of(
        _obj("Thing", "pkg.things"),
        params={"a": 1, "b": None},
        children={"c": ci("C"), "d": None},
        attributes={"k": None, "v": 2},
        extra=None,
        promoted_param="x",
    )
    assert (built.class_name, built.class_module) == ("Thing", "pkg.things")
    assert built.params == {"a": 1, "promoted_param": "x"}
    assert list(built.children) == ["c"]
    assert built.attributes == {"v": 2}
    # The constructor keeps None params in the dump but the hash ignores them.
    direct = ci(
        "Thing",
        "pkg.things",
        params={"a": 1, "b": None, "promoted_param": "x"},
        children={"c": ci("C")},
        attributes={"v": 2},
    )
    assert "b" in direct.model_dump()
    assert "b" not in built.model_dump()
    assert direct.hash == built.hash


def test_of_places_promoted_children_and_explicit_empty_lists() -> None:
    built = ComponentIdentifier.of(
        _obj("AtomicAttack", "m"), attack_technique=ci("T"), seed_identifiers=[], modes=[]
    )
    assert built.children == {"attack_technique": ci("T"), "seed_identifiers": []}
    assert built.params == {"modes": []}


def test_get_child_and_get_child_list() -> None:
    child = ci("C")
    identifier = ci(children={"one": child, "many": [child, ci("D")]})
    assert identifier.get_child("one") is child
    assert identifier.get_child("missing") is None
    with pytest.raises(ValueError, match="get_child_list"):
        identifier.get_child("many")
    assert identifier.get_child_list("missing") == []
    assert identifier.get_child_list("one") == [child]
    assert len(identifier.get_child_list("many")) == 2


def test_with_eval_hash_returns_copy_with_same_hash() -> None:
    original = ci(params={"p": 1}, pyrit_version="1.1.0")
    stamped = original.with_eval_hash("e" * 64)
    assert stamped is not original
    assert original.eval_hash is None
    assert stamped.eval_hash == "e" * 64
    assert stamped.hash == original.hash
    assert type(stamped) is ComponentIdentifier
    assert stamped.model_dump()["eval_hash"] == "e" * 64


# ============================================================================================
# §7.6 eval hash rules
# ============================================================================================

TEMP_ONLY = ChildEvalRule(included_params=frozenset({"temperature"}))


def _target(**params: Any) -> ComponentIdentifier:
    return ci("Target", "t", params=params)


def test_eval_hash_without_rules_is_content_hash() -> None:
    identifier = ci(children={"c": [_target(temperature=1)]})
    assert compute_eval_hash(identifier, child_eval_rules={}) == identifier.hash
    legacy = ComponentIdentifier.from_dict({"class_name": "A", "hash": "9" * 64})
    assert compute_eval_hash(legacy, child_eval_rules={}) == "9" * 64


def test_eval_hash_collapses_single_item_list() -> None:
    child = _target(temperature=1)
    rules = {"unrelated": ChildEvalRule(exclude=True)}
    listed = ci(children={"c": [child]})
    single = ci(children={"c": child})
    assert compute_eval_hash(listed, child_eval_rules=rules) == compute_eval_hash(
        single, child_eval_rules=rules
    )
    assert f'"c":"{child.hash}"' in eval_preimage(listed, child_eval_rules=rules)
    two = ci(children={"c": [child, child]})
    assert f'"c":["{child.hash}","{child.hash}"]' in eval_preimage(two, child_eval_rules=rules)


def test_rule_applies_by_name_at_any_depth_but_params_do_not_carry_to_grandchildren() -> None:
    grandchild = _target(temperature=0.5, endpoint="https://g")
    target = ci(
        "Target",
        "t",
        params={"temperature": 1, "endpoint": "https://x"},
        children={"inner": grandchild},
    )
    deep = ci("Root", children={"wrapper": ci("W", children={"objective_target": target})})
    rules = {"objective_target": TEMP_ONLY}
    # Depth: the rule keyed by name reaches objective_target two levels down.
    same_but_other_endpoint = ci(
        "Root",
        children={
            "wrapper": ci(
                "W",
                children={
                    "objective_target": ci(
                        "Target",
                        "t",
                        params={"temperature": 1, "endpoint": "https://y"},
                        children={"inner": grandchild},
                    )
                },
            )
        },
    )
    assert compute_eval_hash(deep, child_eval_rules=rules) == compute_eval_hash(
        same_but_other_endpoint, child_eval_rules=rules
    )
    # No carry: the grandchild (no rule of its own) keeps its endpoint in full.
    other_grandchild = ci(
        "Root",
        children={
            "wrapper": ci(
                "W",
                children={
                    "objective_target": ci(
                        "Target",
                        "t",
                        params={"temperature": 1, "endpoint": "https://x"},
                        children={"inner": _target(temperature=0.5, endpoint="https://other")},
                    )
                },
            )
        },
    )
    assert compute_eval_hash(deep, child_eval_rules=rules) != compute_eval_hash(
        other_grandchild, child_eval_rules=rules
    )


def test_exclude_drops_child_and_children_key_when_nothing_survives() -> None:
    identifier = ci(children={"objective_scorer": ci("S")})
    rules = {"objective_scorer": ChildEvalRule(exclude=True)}
    assert eval_preimage(identifier, child_eval_rules=rules) == (
        '{"class_module":"m","class_name":"A"}'
    )


def test_included_params_filter_and_none_params_dropped() -> None:
    identifier = ci(children={"t": _target(temperature=0.1, endpoint="e", top_p=None)})
    rules = {"t": ChildEvalRule(included_params=frozenset({"temperature", "top_p"}))}
    expected_child = config_hash({"class_module": "t", "class_name": "Target", "temperature": 0.1})
    assert f'"t":"{expected_child}"' in eval_preimage(identifier, child_eval_rules=rules)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"model_name": "m1"}, "m1"),  # primary missing
        ({"model_name": "m1", "underlying_model_name": None}, "m1"),  # primary None
        ({"model_name": "m1", "underlying_model_name": ""}, "m1"),  # primary ""
        ({"model_name": "m1", "underlying_model_name": "u"}, "u"),  # primary wins
        ({"model_name": ""}, None),  # empty fallback is not used
        ({}, None),
    ],
)
def test_fallbacks(params: dict[str, Any], expected: str | None) -> None:
    rule = ChildEvalRule(
        included_params=frozenset({"underlying_model_name"}),
        param_fallbacks={"underlying_model_name": "model_name"},
    )
    root = ci(children={"t": _target(**params)})
    child_dict: dict[str, Any] = {"class_module": "t", "class_name": "Target"}
    if params.get("underlying_model_name") == "":
        child_dict["underlying_model_name"] = ""  # kept by the filter, then not replaced
    if expected is not None:
        child_dict["underlying_model_name"] = expected
    assert f'"t":"{config_hash(child_dict)}"' in eval_preimage(root, child_eval_rules={"t": rule})


def test_fallback_applies_even_when_primary_filtered_out() -> None:
    rule = ChildEvalRule(included_params=frozenset(), param_fallbacks={"x": "y"})
    root = ci(children={"t": _target(x="primary", y="fallback")})
    child = config_hash({"class_module": "t", "class_name": "Target", "x": "fallback"})
    assert f'"t":"{child}"' in eval_preimage(root, child_eval_rules={"t": rule})


def test_inner_child_name_unwraps_first_inner_item() -> None:
    inner = _target(temperature=0.3)
    wrapper = ci("RoundRobin", children={"targets": [inner, _target(temperature=0.9)]})
    rule = ChildEvalRule(included_params=frozenset({"temperature"}), inner_child_name="targets")
    wrapped = ci(children={"objective_target": wrapper})
    bare = ci(children={"objective_target": inner})
    rules = {"objective_target": rule}
    assert compute_eval_hash(wrapped, child_eval_rules=rules) == compute_eval_hash(
        bare, child_eval_rules=rules
    )
    # Without an inner list the item itself is used.
    no_inner = ci(children={"objective_target": ci("RoundRobin", params={"x": 1})})
    expected = config_hash({"class_module": "m", "class_name": "RoundRobin"})
    assert f'"objective_target":"{expected}"' in eval_preimage(no_inner, child_eval_rules=rules)


def test_included_item_values_filters_items() -> None:
    general = ci("Seed", params={"is_general_technique": True, "v": 1})
    specific = ci("Seed", params={"is_general_technique": False, "v": 2})
    rule = ChildEvalRule(included_item_values={"is_general_technique": True})
    rules = {"seeds": rule}
    mixed = ci(children={"seeds": [general, specific]})
    assert compute_eval_hash(mixed, child_eval_rules=rules) == compute_eval_hash(
        ci(children={"seeds": [general]}), child_eval_rules=rules
    )
    none_left = ci(children={"seeds": [specific]})
    assert '"children":{"seeds":[]}' in eval_preimage(none_left, child_eval_rules=rules)


def test_attributes_never_enter_the_eval_hash() -> None:
    rules = {"x": ChildEvalRule(exclude=True)}
    with_attrs = ci(params={"t": 1}, attributes={"model_version": "v"})
    assert compute_eval_hash(with_attrs, child_eval_rules=rules) == compute_eval_hash(
        ci(params={"t": 1}), child_eval_rules=rules
    )
    # With no rules at all it is the content hash, which does include attributes.
    assert (
        compute_eval_hash(with_attrs, child_eval_rules={})
        == with_attrs.hash
        != ci(params={"t": 1}).hash
    )


@pytest.mark.parametrize(
    "own_rule",
    [
        ChildEvalRule(exclude=True),
        ChildEvalRule(included_item_values={}),
        ChildEvalRule(inner_child_name="targets"),
    ],
    ids=["exclude", "included_item_values", "inner_child_name"],
)
def test_own_rule_rejects_root_meaningless_fields(own_rule: ChildEvalRule) -> None:
    with pytest.raises(ValueError, match="own_rule"):
        compute_eval_hash(ci(), child_eval_rules={}, own_rule=own_rule)


def test_own_rule_filters_root_params() -> None:
    own = ChildEvalRule(included_params=frozenset({"temperature"}))
    a = _target(temperature=0.5, endpoint="a")
    b = _target(temperature=0.5, endpoint="b")
    assert compute_eval_hash(a, child_eval_rules={}, own_rule=own) == compute_eval_hash(
        b, child_eval_rules={}, own_rule=own
    )
    assert compute_eval_hash(a, child_eval_rules={}, own_rule=own) != a.hash


def test_root_unwrap() -> None:
    inner = _target(temperature=0.5, model_name="m")
    wrapper = ci("RoundRobinTarget", "t", params={"x": 1}, children={"targets": [inner, ci("B")]})
    rules = RULE_TABLES["1.1"]["objective_target"]
    assert rules.eval_hash(wrapper) == rules.eval_hash(inner)
    # No unwrap when the slot is missing or empty.
    empty = ci("RoundRobinTarget", "t", params={"x": 1}, children={"targets": []})
    assert rules.eval_hash(empty) != rules.eval_hash(inner)
    assert (
        compute_eval_hash(wrapper, child_eval_rules={}, root_unwrap_child="targets") == inner.hash
    )


def test_1_x_evaluation_identifier_always_recomputes() -> None:
    stamped = ci(params={"p": 1}).with_eval_hash("e" * 64)
    assert ScorerEvaluationIdentifier(stamped).eval_hash != "e" * 64
    assert ScorerEvaluationIdentifier(stamped).eval_hash == RULE_TABLES["1.1"]["scorer"].eval_hash(
        stamped
    )


@pytest.mark.parametrize("line", ["0.12", "0.13", "0.14"])
def test_legacy_evaluation_identifier_trusts_stored_eval_hash(line: str) -> None:
    stamped = ci(params={"p": 1}).with_eval_hash("e" * 64)
    assert AtomicAttackEvaluationIdentifier(stamped, line=line).eval_hash == "e" * 64
    fresh = ci(params={"p": 1})
    evaluation = AtomicAttackEvaluationIdentifier(fresh, line=line)
    assert evaluation.eval_hash == RULE_TABLES[line]["atomic_attack"].eval_hash(fresh)
    assert evaluation.identifier is fresh
    assert evaluation.line == line


def test_evaluation_identifier_rejects_unknown_line_kind_and_base_class() -> None:
    with pytest.raises(ValueError, match="line"):
        ScorerEvaluationIdentifier(ci(), line="2.0")
    with pytest.raises(ValueError, match="objective_target"):
        ObjectiveTargetEvaluationIdentifier(ci(), line="0.13")
    with pytest.raises(TypeError):
        EvaluationIdentifier(ci())


def test_rule_tables_are_read_only() -> None:
    with pytest.raises(TypeError):
        RULE_TABLES["1.1"]["new"] = EvalRuleSet({})  # type: ignore[index]
    with pytest.raises(TypeError):
        RULE_TABLES["1.1"]["scorer"].child_eval_rules["x"] = ChildEvalRule()  # type: ignore[index]
    fallbacks = RULE_TABLES["1.1"]["scorer"].child_eval_rules["prompt_target"].param_fallbacks
    with pytest.raises(TypeError):
        fallbacks["x"] = "y"  # type: ignore[index]


def test_legacy_rule_table_differences() -> None:
    # 0.12 filtered seeds by is_general_technique; 0.13+ excludes seed_identifiers.
    assert RULE_TABLES["0.12"]["atomic_attack"].child_eval_rules["seeds"].included_item_values == {
        "is_general_technique": True
    }
    assert "seeds" not in RULE_TABLES["0.13"]["atomic_attack"].child_eval_rules
    assert RULE_TABLES["0.13"]["atomic_attack"].child_eval_rules["seed_identifiers"].exclude
    # 0.14 adversarial_chat has fallbacks but no unwrap; 1.1 unwraps.
    adv14 = RULE_TABLES["0.14"]["atomic_attack"].child_eval_rules["adversarial_chat"]
    assert adv14.param_fallbacks
    assert adv14.inner_child_name is None
    own14 = RULE_TABLES["0.14"]["objective_target"]
    assert own14.own_rule is not None
    assert own14.root_unwrap_child is None
    assert isinstance(RULE_TABLES["1.1"]["scenario"], EvalRuleSet)


# ============================================================================================
# §7.7 seeds and atomic attacks, §7.8 seed-group id
# ============================================================================================

SEED = {
    "value": "v",
    "value_sha256": None,
    "data_type": "text",
    "dataset_name": None,
    "is_general_technique": False,
    "seed_type": "objective",
}


def test_seed_identifier_1_x_drops_none_legacy_keeps_none_without_data_type() -> None:
    new = build_seed_identifier(SEED)
    old = build_seed_identifier(SEED, line="0.13")
    assert (new.class_name, new.class_module) == (
        "SeedObjective",
        "pyrit.models.seeds.seed_objective",
    )
    assert new.params == {"value": "v", "data_type": "text", "is_general_technique": False}
    assert old.params == {
        "value": "v",
        "value_sha256": None,
        "dataset_name": None,
        "is_general_technique": False,
    }
    assert new.hash != old.hash  # data_type is hashed in 1.x only
    assert new.pyrit_version == LINE_PYRIT_VERSIONS["1.1"]
    assert old.pyrit_version == "0.13.0"


def test_seed_identifier_class_resolution() -> None:
    assert build_seed_identifier({"value": "v"}).class_name == "SeedPrompt"
    simulated = build_seed_identifier({"value": "{}", "seed_type": "simulated_conversation"})
    assert simulated.class_module == "pyrit.models.seeds.seed_simulated_conversation"
    assert build_seed_identifier(SEED, seed_class="SeedPrompt").class_name == "SeedPrompt"
    with pytest.raises(ValueError, match="unknown seed class 'NotASeed'"):
        build_seed_identifier(SEED, seed_class="NotASeed")
    with pytest.raises(ValueError, match="unknown seed_type 'bogus'"):
        build_seed_identifier({"value": "v", "seed_type": "bogus"})


def test_atomic_attack_requires_exactly_one_of_attack_and_technique() -> None:
    with pytest.raises(ValueError, match="exactly one of technique_identifier and attack_"):
        build_atomic_attack_identifier()
    with pytest.raises(ValueError, match="exactly one of technique_identifier and attack_"):
        build_atomic_attack_identifier(attack_identifier=ci(), technique_identifier=ci())
    with pytest.raises(ValueError, match=r"0\.12 atomic attacks take attack_identifier only"):
        build_atomic_attack_identifier(technique_identifier=ci(), line="0.12")


def test_atomic_attack_empty_seed_list_enters_the_hash() -> None:
    built = build_atomic_attack_identifier(technique_identifier=ci("T"))
    assert built.children["seed_identifiers"] == []
    assert '"seed_identifiers":[]' in hash_preimage(built)
    legacy = build_atomic_attack_identifier(attack_identifier=ci("Atk"), line="0.12")
    assert list(legacy.children) == ["attack", "seeds"]
    assert legacy.children["seeds"] == []


def test_atomic_attack_builds_seed_identifiers_from_seed_mappings() -> None:
    built = build_atomic_attack_identifier(
        attack_identifier=ci("Atk"), seed_identifiers_or_group=[SEED], line="0.13"
    )
    technique = built.get_child("attack_technique")
    assert technique is not None
    assert technique.class_name == "AttackTechnique"
    assert technique.get_child("attack") == ci("Atk")
    assert built.get_child_list("seed_identifiers") == [build_seed_identifier(SEED, line="0.13")]


def test_seed_group_hash_includes_pyrit_version() -> None:
    a = build_seed_identifier(SEED, pyrit_version="1.1.0")
    b = build_seed_identifier(SEED, pyrit_version="1.2.0")
    assert a.hash == b.hash
    assert compute_seed_group_hash([a]) != compute_seed_group_hash([b])
    assert compute_seed_group_hash([a]) == config_hash({"seed_identifiers": [a.model_dump()]})


# ============================================================================================
# §7.9 names
# ============================================================================================


@pytest.mark.parametrize(
    ("name", "suffix", "expected"),
    [
        ("getHTTPResponse", "", "get_http_response"),
        ("Scorer", "Scorer", ""),
        ("TargetX", "Target", "target_x"),  # suffix only stripped at the end
    ],
)
def test_class_name_to_snake_case_rules(name: str, suffix: str, expected: str) -> None:
    assert class_name_to_snake_case(name, suffix) == expected


def test_registry_name_pattern() -> None:
    assert REGISTRY_NAME_PATTERN.match("a" + "b" * 63)
    assert not REGISTRY_NAME_PATTERN.match("a" + "b" * 64)
    assert not REGISTRY_NAME_PATTERN.match("1abc")
    assert not REGISTRY_NAME_PATTERN.match("Abc")
    assert REGISTRY_NAME_PATTERN.match("rot13_converter")
