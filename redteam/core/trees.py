"""Identifier trees for display, and the exact differences between two identifiers.

Framework-free. Input is a flat identifier dump (PYRIT-MODEL.md section 7.3) exactly as
stored; hashes are shown as received (legacy rows keep their stored hash). Dumps are hostile:
anything that is not the expected shape is shown as a param rather than trusted.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from redteam.core.digests import is_sha256
from redteam.core.textview import visible_json, visible_text

# Keys of the flat shape that are structure, not params.
STRUCTURAL_KEYS = frozenset(
    {"class_name", "class_module", "hash", "pyrit_version", "eval_hash", "children", "attributes"}
)
# One budget for every tree this server builds (API, identifier page, diff, conversation
# page): 0.13 identifiers keep the client's hash, so stored rows can point back at themselves
# or share children (a DAG that expands exponentially). Depth, rows fetched AND nodes emitted
# are capped; whatever is cut is marked, never silently dropped.
MAX_TREE_DEPTH = 12
MAX_TREE_NODES = 300
# Characters of params (as JSON) one tree may carry: a shared child with a huge param must
# not be repeated hundreds of times.
MAX_TREE_CHARS = 1_000_000
# Longest param value shown in a tree before an ellipsis (the full value is in the API/export).
MAX_PARAM_CHARS = 2_000
# Params (and attributes) shown per node.
MAX_PARAMS_PER_NODE = 200
# Differences listed between two identifiers.
MAX_DIFFERENCES = 500

# The key a rebuilt tree uses to mark a node it did not expand (a dunder, so no PyRIT param
# can collide with it): "missing" (no stored row), "cycle" (an ancestor of itself),
# "truncated" (over the depth or node budget).
MARKER_KEY = "__tree__"


def json_text(value: Any, limit: int | None = MAX_PARAM_CHARS) -> str:
    """A param value as JSON text: ints and floats stay distinct (1 vs 1.0), Unicode kept
    (invisible characters escaped, see textview.visible_json), cut to ``limit`` characters."""
    text = visible_json(value, indent=None, sort_keys=True)
    if limit is not None and len(text) > limit:
        return f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    return text


class IdentifierRow(Protocol):
    """The columns of a stored identifier row the tree reader reads (memory.models)."""

    hash: str
    class_name: str
    class_module: str
    params: Any
    children: Any
    attributes: Any
    pyrit_version: str | None
    eval_hash: str | None


@dataclass
class RebuiltTree:
    """A tree rebuilt from rows in PyRIT's flat nested form, and what was cut from it."""

    tree: dict[str, Any]
    nodes: int
    missing: list[str]
    cycles: list[str]
    truncated: bool


def child_hashes(children: Any) -> list[str]:
    """Every child hash named by a row's ``children`` column, in order."""
    hashes: list[str] = []
    if not isinstance(children, Mapping):
        return hashes
    for value in children.values():
        for h in value if isinstance(value, list) else [value]:
            if isinstance(h, str):
                hashes.append(h)
    return hashes


def rebuild_from_rows(
    root: IdentifierRow, rows: Mapping[str, IdentifierRow], absent: Collection[str] = ()
) -> RebuiltTree:
    """The one rebuild of a tree from stored rows: cycles cut, depth, nodes and size budgeted.

    A node over the depth limit, or once MAX_TREE_NODES nodes or MAX_TREE_CHARS characters of
    params were emitted, becomes a marker ``{"hash": h, "__tree__": "truncated"}``; a child
    that is its own ancestor becomes a "cycle" marker; a child in ``absent`` (looked up and
    not stored) a "missing" one. A child neither in ``rows`` nor ``absent`` was not fetched
    (the fetch has the same budget) and is "truncated".
    """
    state = RebuiltTree(tree={}, nodes=0, missing=[], cycles=[], truncated=False)
    sizes: dict[str, int] = {}
    chars = 0
    path: set[str] = set()

    def marker(h: Any, kind: str) -> dict[str, Any]:
        state.nodes += 1
        if kind == "missing" and isinstance(h, str):
            state.missing.append(h)
        elif kind == "cycle" and isinstance(h, str):
            state.cycles.append(h)
        elif kind == "truncated":
            state.truncated = True
        return {"hash": h, MARKER_KEY: kind}

    def over_budget() -> bool:
        return state.nodes >= MAX_TREE_NODES or chars >= MAX_TREE_CHARS

    def node(row: IdentifierRow, level: int) -> dict[str, Any]:
        nonlocal chars
        state.nodes += 1
        if row.hash not in sizes:
            sizes[row.hash] = len(json.dumps([row.params, row.attributes], default=str))
        chars += sizes[row.hash]
        out: dict[str, Any] = {
            "class_name": row.class_name,
            "class_module": row.class_module,
            "hash": row.hash,
            "pyrit_version": row.pyrit_version,
        }
        if row.eval_hash is not None:
            out["eval_hash"] = row.eval_hash
        if isinstance(row.params, Mapping):
            out.update({k: v for k, v in row.params.items() if k not in out})
        if isinstance(row.children, Mapping) and row.children:
            path.add(row.hash)
            out["children"] = children(row.children, level + 1)
            path.discard(row.hash)
        if row.attributes:
            out["attributes"] = row.attributes
        return out

    def children(slots: Mapping[str, Any], level: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in slots.items():
            if over_budget():
                # One marker stands for every slot left: a row may name thousands.
                out[name] = marker(None, "truncated")
                break
            if not isinstance(value, list):
                out[name] = child(value, level)
                continue
            items: list[Any] = []
            for h in value:
                if over_budget():
                    items.append(marker(None, "truncated"))
                    break
                items.append(child(h, level))
            out[name] = items
        return out

    def child(h: Any, level: int) -> Any:
        row = rows.get(h) if isinstance(h, str) else None
        if row is None:
            return marker(h, "missing" if not isinstance(h, str) or h in absent else "truncated")
        if h in path:
            return marker(h, "cycle")
        if level > MAX_TREE_DEPTH or over_budget():
            return marker(h, "truncated")
        return node(row, level)

    state.tree = node(root, 0)
    state.missing = sorted(set(state.missing))
    state.cycles = sorted(set(state.cycles))
    return state


@dataclass
class ChildSlot:
    """One named child slot: a single child or an ordered list (possibly empty)."""

    name: str
    is_list: bool
    nodes: list[TreeNode]


@dataclass
class TreeNode:
    """One identifier in a tree, with its params as (name, JSON text) pairs.

    ``marker`` is set on a node that was not expanded ("missing", "cycle", "truncated");
    ``budget_exhausted`` on the root when the node budget cut the tree anywhere.
    """

    class_name: str
    class_module: str
    hash: str
    eval_hash: str | None
    pyrit_version: str | None
    params: list[tuple[str, str]] = field(default_factory=list)
    attributes: list[tuple[str, str]] = field(default_factory=list)
    children: list[ChildSlot] = field(default_factory=list)
    truncated: bool = False
    marker: str = ""
    budget_exhausted: bool = False
    node_count: int = 0

    @property
    def short_hash(self) -> str:
        """First 8 characters of the hash."""
        return self.hash[:8]

    @property
    def link_hash(self) -> str | None:
        """The hash to link to: only a well-formed one (a hostile dump may hold anything)."""
        return self.hash if is_sha256(self.hash) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Budget:
    """Nodes and param characters a display tree has emitted."""

    def __init__(self) -> None:
        self.emitted = 0
        self.chars = 0
        self.exhausted = False

    def full(self) -> bool:
        """True once the tree may emit nothing more."""
        return self.emitted >= MAX_TREE_NODES or self.chars >= MAX_TREE_CHARS

    def param(self, value: Any) -> str:
        """A param's display text, or a placeholder once the character budget is spent."""
        if self.chars >= MAX_TREE_CHARS:
            self.exhausted = True
            return "… (not shown: this tree is over its size budget)"
        text = json_text(value)
        self.chars += len(text)
        return text


def tree_from_dump(dump: Mapping[str, Any], root_hash: str | None = None) -> TreeNode:
    """Build a display tree from a flat identifier dump (stored, or rebuilt from rows).

    ``root_hash`` is the hash the server computed at ingest for the root (the row the dump
    belongs to); it wins over whatever hash the dump holds, so links always resolve.
    """
    budget = _Budget()
    root = _display_node(dump, 0, budget)
    if root_hash is not None:
        root.hash = root_hash
    root.budget_exhausted = budget.exhausted
    root.node_count = budget.emitted
    return root


def _display_node(dump: Mapping[str, Any], depth: int, budget: _Budget) -> TreeNode:
    budget.emitted += 1
    marker = dump.get(MARKER_KEY)
    if isinstance(marker, str) and "class_name" not in dump and "__type__" not in dump:
        if marker == "truncated":
            budget.exhausted = True
        return TreeNode("", "", str(dump.get("hash") or ""), None, None, marker=marker)
    node = TreeNode(
        class_name=visible_text(str(dump.get("class_name") or dump.get("__type__") or "Unknown")),
        class_module=visible_text(
            str(dump.get("class_module") or dump.get("__module__") or "unknown"), 512
        ),
        hash=str(dump.get("hash") or ""),
        eval_hash=_str_or_none(dump.get("eval_hash")),
        pyrit_version=_str_or_none(dump.get("pyrit_version")),
    )
    if node.pyrit_version is not None:
        node.pyrit_version = visible_text(node.pyrit_version, 64)
    node.params = _params(
        ((k, v) for k, v in dump.items() if k not in STRUCTURAL_KEYS), budget, node
    )
    attributes = dump.get("attributes")
    if isinstance(attributes, Mapping):
        node.attributes = _params(attributes.items(), budget, node)
    children = dump.get("children")
    if not isinstance(children, Mapping) or not children:
        return node
    if depth >= MAX_TREE_DEPTH:
        node.truncated = True
        budget.exhausted = True
        return node
    for name, value in children.items():
        items = value if isinstance(value, list) else [value]
        nodes: list[TreeNode] = []
        for item in items:
            if not isinstance(item, Mapping):
                continue
            if budget.full():
                node.truncated = True
                budget.exhausted = True
                break
            nodes.append(_display_node(item, depth + 1, budget))
        node.children.append(ChildSlot(visible_text(str(name)), isinstance(value, list), nodes))
        if node.truncated:
            break
    return node


def _params(
    items: Iterable[tuple[Any, Any]], budget: _Budget, node: TreeNode
) -> list[tuple[str, str]]:
    """(name, JSON text) pairs, at most MAX_PARAMS_PER_NODE, within the tree's size budget."""
    out: list[tuple[str, str]] = []
    for count, (key, value) in enumerate(items):
        if count >= MAX_PARAMS_PER_NODE:
            node.truncated = True
            budget.exhausted = True
            break
        out.append((visible_text(str(key)), budget.param(value)))
    return out


def parse_dump(dump_json: str, root_hash: str | None = None) -> TreeNode | None:
    """Parse stored dump JSON into a tree; None when it is not a JSON object."""
    try:
        value = json.loads(dump_json)
    except (ValueError, RecursionError):
        return None
    return tree_from_dump(value, root_hash) if isinstance(value, Mapping) else None


@dataclass(frozen=True)
class Difference:
    """One difference between two identifiers at a PyRIT-style property path."""

    path: str
    kind: str  # "changed", "added" (only in B), "removed" (only in A), "metadata"
    a: str | None
    b: str | None


def _leaf(value: Any) -> str:
    return json_text(value)


def _same(x: Any, y: Any) -> bool:
    """Equal as JSON text in full (1 and 1.0 differ, as in the hash); shown text is cut."""
    return json_text(x, None) == json_text(y, None)


class _DiffList(list[Difference]):
    """The differences found so far; raises once MAX_DIFFERENCES are listed."""

    def append(self, item: Difference) -> None:
        """Add one difference, stopping the walk when the list is full."""
        super().append(item)
        if len(self) >= MAX_DIFFERENCES:
            raise _DiffFull


class _DiffFull(Exception):
    """MAX_DIFFERENCES differences were found: the rest are not listed."""


def diff_dumps(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Difference]:
    """Every param, class, attribute and child difference between two flat dumps.

    At most MAX_DIFFERENCES are listed; a final ``truncated`` entry says the list was cut.
    Trees rebuilt from rows are already budgeted (rebuild_from_rows), so the walk is bounded.
    """
    out = _DiffList()
    try:
        _diff(a, b, "$", out, 0)
    except _DiffFull:
        return [*out, Difference("$", "truncated", None, None)]
    return list(out)


def _diff(
    a: Mapping[str, Any], b: Mapping[str, Any], path: str, out: list[Difference], depth: int
) -> None:
    # Equal content hashes mean equal content (the hash is a content address), except that
    # eval_hash and pyrit_version are outside the hash and reported as metadata.
    same_hash = bool(a.get("hash")) and a.get("hash") == b.get("hash")
    for key in ("pyrit_version", "eval_hash"):
        if a.get(key) != b.get(key):
            out.append(Difference(f"{path}.{key}", "metadata", _opt(a, key), _opt(b, key)))
    if same_hash or depth >= MAX_TREE_DEPTH:
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
        child_path = f"{path}.children.{visible_text(str(name))}"
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
            elif not _same(x[i], y[i]):
                out.append(Difference(item_path, "changed", _leaf(x[i]), _leaf(y[i])))
    else:
        # A single child on one side and a list on the other hash differently in PyRIT.
        out.append(Difference(path, "changed", _describe(x), _describe(y)))


def _diff_mapping(
    a: Mapping[str, Any], b: Mapping[str, Any], path: str, out: list[Difference]
) -> None:
    for key in _ordered_union(a, b):
        key_path = f"{path}.{visible_text(str(key))}"
        if key not in b:
            out.append(Difference(key_path, "removed", _leaf(a[key]), None))
        elif key not in a:
            out.append(Difference(key_path, "added", None, _leaf(b[key])))
        elif not _same(a[key], b[key]):
            out.append(Difference(key_path, "changed", _leaf(a[key]), _leaf(b[key])))


def _ordered_union(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return [*a.keys(), *(k for k in b if k not in a)]


def _opt(d: Mapping[str, Any], key: str) -> str | None:
    return None if key not in d else _leaf(d[key])


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        name = visible_text(str(value.get("class_name", "?")))
        return f"{name}::{visible_text(str(value.get('hash', '')))[:8]}"
    if isinstance(value, list):
        shown = ", ".join(_describe(v) for v in value[:20])
        more = f", … {len(value) - 20:,} more" if len(value) > 20 else ""
        return f"[{shown}{more}]"
    return _leaf(value)
