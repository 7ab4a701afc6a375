"""Identifier trees for display, and the exact differences between two identifiers.

Framework-free. Input is a flat identifier dump (PYRIT-MODEL.md section 7.3) exactly as
stored; hashes are shown as received (legacy rows keep their stored hash). Dumps are hostile:
anything that is not the expected shape is shown as a param rather than trusted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memory.textview import visible_json

# Keys of the flat shape that are structure, not params.
STRUCTURAL_KEYS = frozenset(
    {"class_name", "class_module", "hash", "pyrit_version", "eval_hash", "children", "attributes"}
)
# A hostile dump could nest deeply; deeper levels are summarised instead of recursed into.
MAX_DEPTH = 12


def json_text(value: Any) -> str:
    """A param value as JSON text: ints and floats stay distinct (1 vs 1.0), Unicode kept
    (invisible characters escaped, see textview.visible_json)."""
    return visible_json(value, indent=None, sort_keys=True)


@dataclass
class ChildSlot:
    """One named child slot: a single child or an ordered list (possibly empty)."""

    name: str
    is_list: bool
    nodes: list[TreeNode]


@dataclass
class TreeNode:
    """One identifier in a tree, with its params as (name, JSON text) pairs."""

    class_name: str
    class_module: str
    hash: str
    eval_hash: str | None
    pyrit_version: str | None
    params: list[tuple[str, str]] = field(default_factory=list)
    attributes: list[tuple[str, str]] = field(default_factory=list)
    children: list[ChildSlot] = field(default_factory=list)
    truncated: bool = False

    @property
    def short_hash(self) -> str:
        """First 8 characters of the hash."""
        return self.hash[:8]


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def tree_from_dump(dump: Mapping[str, Any], depth: int = 0) -> TreeNode:
    """Build a display tree from a flat identifier dump."""
    node = TreeNode(
        class_name=str(dump.get("class_name") or dump.get("__type__") or "Unknown"),
        class_module=str(dump.get("class_module") or dump.get("__module__") or "unknown"),
        hash=str(dump.get("hash") or ""),
        eval_hash=_str_or_none(dump.get("eval_hash")),
        pyrit_version=_str_or_none(dump.get("pyrit_version")),
    )
    node.params = [(k, json_text(v)) for k, v in dump.items() if k not in STRUCTURAL_KEYS]
    attributes = dump.get("attributes")
    if isinstance(attributes, Mapping):
        node.attributes = [(str(k), json_text(v)) for k, v in attributes.items()]
    children = dump.get("children")
    if not isinstance(children, Mapping):
        return node
    if depth >= MAX_DEPTH:
        node.truncated = True
        return node
    for name, value in children.items():
        if isinstance(value, Mapping):
            node.children.append(ChildSlot(str(name), False, [tree_from_dump(value, depth + 1)]))
        elif isinstance(value, list):
            nodes = [tree_from_dump(v, depth + 1) for v in value if isinstance(v, Mapping)]
            node.children.append(ChildSlot(str(name), True, nodes))
    return node


def parse_dump(dump_json: str) -> TreeNode | None:
    """Parse stored dump JSON into a tree; None when it is not a JSON object."""
    try:
        value = json.loads(dump_json)
    except ValueError:
        return None
    return tree_from_dump(value) if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class Difference:
    """One difference between two identifiers at a PyRIT-style property path."""

    path: str
    kind: str  # "changed", "added" (only in B), "removed" (only in A), "metadata"
    a: str | None
    b: str | None


def _leaf(value: Any) -> str:
    return json_text(value)


def diff_dumps(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every param, class, attribute and child difference between two flat dumps."""
    out: list[Difference] = []
    _diff(a, b, "$", out, 0)
    return out


def _diff(
    a: Mapping[str, Any], b: Mapping[str, Any], path: str, out: list[Difference], depth: int
) -> None:
    # Equal content hashes mean equal content (the hash is a content address), except that
    # eval_hash and pyrit_version are outside the hash and reported as metadata.
    same_hash = bool(a.get("hash")) and a.get("hash") == b.get("hash")
    for key in ("pyrit_version", "eval_hash"):
        if a.get(key) != b.get(key):
            out.append(Difference(f"{path}.{key}", "metadata", _opt(a, key), _opt(b, key)))
    if same_hash or depth >= MAX_DEPTH:
        return
    for key in ("class_name", "class_module"):
        if a.get(key) != b.get(key):
            out.append(Difference(f"{path}.{key}", "changed", _opt(a, key), _opt(b, key)))
    _diff_mapping(
        {k: v for k, v in a.items() if k not in STRUCTURAL_KEYS},
        {k: v for k, v in b.items() if k not in STRUCTURAL_KEYS},
        path,
        out,
    )
    attrs_a, attrs_b = a.get("attributes"), b.get("attributes")
    _diff_mapping(
        attrs_a if isinstance(attrs_a, Mapping) else {},
        attrs_b if isinstance(attrs_b, Mapping) else {},
        f"{path}.attributes",
        out,
    )
    ch_a, ch_b = a.get("children"), b.get("children")
    ch_a = ch_a if isinstance(ch_a, Mapping) else {}
    ch_b = ch_b if isinstance(ch_b, Mapping) else {}
    for name in _ordered_union(ch_a, ch_b):
        child_path = f"{path}.children.{name}"
        if name not in ch_b:
            out.append(Difference(child_path, "removed", _describe(ch_a[name]), None))
        elif name not in ch_a:
            out.append(Difference(child_path, "added", None, _describe(ch_b[name])))
        else:
            _diff_child(ch_a[name], ch_b[name], child_path, out, depth)


def _diff_child(x: Any, y: Any, path: str, out: list[Difference], depth: int) -> None:
    if isinstance(x, Mapping) and isinstance(y, Mapping):
        _diff(x, y, path, out, depth + 1)
    elif isinstance(x, list) and isinstance(y, list):
        for i in range(max(len(x), len(y))):
            item_path = f"{path}[{i}]"
            if i >= len(y):
                out.append(Difference(item_path, "removed", _describe(x[i]), None))
            elif i >= len(x):
                out.append(Difference(item_path, "added", None, _describe(y[i])))
            elif isinstance(x[i], Mapping) and isinstance(y[i], Mapping):
                _diff(x[i], y[i], item_path, out, depth + 1)
            elif _leaf(x[i]) != _leaf(y[i]):
                out.append(Difference(item_path, "changed", _leaf(x[i]), _leaf(y[i])))
    else:
        # A single child on one side and a list on the other hash differently in PyRIT.
        out.append(Difference(path, "changed", _describe(x), _describe(y)))


def _diff_mapping(
    a: Mapping[str, Any], b: Mapping[str, Any], path: str, out: list[Difference]
) -> None:
    for key in _ordered_union(a, b):
        key_path = f"{path}.{key}"
        if key not in b:
            out.append(Difference(key_path, "removed", _leaf(a[key]), None))
        elif key not in a:
            out.append(Difference(key_path, "added", None, _leaf(b[key])))
        elif _leaf(a[key]) != _leaf(b[key]):
            out.append(Difference(key_path, "changed", _leaf(a[key]), _leaf(b[key])))


def _ordered_union(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [*a.keys(), *(k for k in b if k not in a)]


def _opt(d: Mapping[str, Any], key: str) -> str | None:
    return None if key not in d else _leaf(d[key])


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"{value.get('class_name', '?')}::{str(value.get('hash', ''))[:8]}"
    if isinstance(value, list):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return _leaf(value)
