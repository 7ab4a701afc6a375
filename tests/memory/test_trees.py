"""Identifier trees from stored dumps, and exact differences between two identifiers."""

from __future__ import annotations

import json
from typing import Any

from redteam.core.identity import ComponentIdentifier
from redteam.core.trees import diff_dumps, parse_dump, tree_from_dump


def _attack(temperature: Any = 0.7, converters: int = 1) -> dict[str, Any]:
    target = ComponentIdentifier(
        "OpenAIChatTarget", "pyrit.prompt_target", {"temperature": temperature, "model": "m"}
    )
    convs = [ComponentIdentifier("ROT13Converter", "pyrit.prompt_converter")] * converters
    return ComponentIdentifier(
        "PromptSendingAttack",
        "pyrit.executor.attack",
        children={"objective_target": target, "request_converters": convs},
        pyrit_version="1.1.0",
    ).model_dump()


def test_tree_keeps_params_children_and_the_stored_hash() -> None:
    dump = _attack()
    tree = tree_from_dump(dump)
    assert tree.class_name == "PromptSendingAttack"
    assert tree.hash == dump["hash"]
    slots = {slot.name: slot for slot in tree.children}
    assert slots["objective_target"].nodes[0].params == [("temperature", "0.7"), ("model", '"m"')]
    assert slots["request_converters"].is_list
    assert len(slots["request_converters"].nodes) == 1


def test_parse_dump_rejects_non_objects() -> None:
    assert parse_dump("[1, 2]") is None
    assert parse_dump("not json") is None


def test_diff_names_the_param_path_that_differs() -> None:
    differences = diff_dumps(_attack(0.7), _attack(0.9))
    paths = {d.path: d for d in differences}
    changed = paths["$.children.objective_target.temperature"]
    assert (changed.kind, changed.a, changed.b) == ("changed", "0.7", "0.9")
    # Only that param (and the hashes it changes) differ: no other param is reported.
    assert [d.path for d in differences if d.kind != "metadata"] == [
        "$.children.objective_target.temperature"
    ]


def test_diff_distinguishes_int_from_float_like_the_hash() -> None:
    differences = diff_dumps(_attack(1), _attack(1.0))
    assert [(d.path, d.a, d.b) for d in differences] == [
        ("$.children.objective_target.temperature", "1", "1.0")
    ]


def test_diff_reports_added_list_children() -> None:
    differences = diff_dumps(_attack(converters=1), _attack(converters=2))
    assert [(d.path, d.kind) for d in differences] == [
        ("$.children.request_converters[1]", "added")
    ]


def test_identical_dumps_have_no_differences() -> None:
    assert diff_dumps(_attack(), _attack()) == []


def test_eval_hash_differences_are_metadata() -> None:
    a, b = _attack(), _attack()
    b["eval_hash"] = "e" * 64
    assert [(d.path, d.kind) for d in diff_dumps(a, b)] == [("$.eval_hash", "metadata")]


def test_a_stored_dump_is_shown_under_its_rows_hash_and_once_per_page() -> None:
    from memory.models import IdentifierDump
    from memory.presenters import TreesOnce, dump_tree

    row_hash = "a" * 64
    without = {k: v for k, v in _attack().items() if k != "hash"}
    dump = IdentifierDump(digest="d" * 64, identifier_id=row_hash, dump_json=json.dumps(without))
    tree = dump_tree(dump)
    assert tree is not None
    assert tree.hash == row_hash
    assert tree.link_hash == row_hash
    assert dump_tree(None) is None
    once = TreesOnce()
    first, again = once(dump), once(dump)
    assert first is not None
    assert first.hash == row_hash
    assert again is None
