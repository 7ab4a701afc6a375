"""PyRIT ComponentIdentifier content hashing and eval hashing, reproduced byte for byte.

Framework-free (stdlib only) so the ingestion services, the REST client and the compat tests can
share one implementation. The reference is PYRIT-MODEL.md section 7; the golden vectors live in
``../shared/fixtures/pyrit-{1.1,0.13}/identifiers.jsonl``.

Two PyRIT lines are covered. Content hashes are identical in both; what differs is the
serialized shape (legacy ``to_dict``/``from_dict`` truncate and keep a stored hash, 1.x
``model_dump``/``model_validate`` never truncate and always recompute) and the eval-hash rule
tables, which are kept as data in :data:`RULE_TABLES`, selectable by line.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Final

__all__ = [
    "LEGACY_LINES",
    "LINE_PYRIT_VERSIONS",
    "REGISTRY_NAME_PATTERN",
    "RESERVED_PARAM_NAMES",
    "RULE_TABLES",
    "SEED_CLASSES",
    "AtomicAttackEvaluationIdentifier",
    "ChildEvalRule",
    "ComponentIdentifier",
    "EvalRuleSet",
    "EvaluationIdentifier",
    "Identifiable",
    "ObjectiveTargetEvaluationIdentifier",
    "ScenarioEvaluationIdentifier",
    "ScorerEvaluationIdentifier",
    "build_atomic_attack_identifier",
    "build_seed_identifier",
    "canonical_json",
    "class_name_to_snake_case",
    "compute_eval_hash",
    "compute_seed_group_hash",
    "config_hash",
    "eval_preimage",
    "hash_preimage",
    "snake_case_to_class_name",
]

#: PyRIT lines whose rules and shapes are reproduced. "0.12"-"0.14" are the legacy line.
LEGACY_LINES: Final = frozenset({"0.12", "0.13", "0.14"})
#: The pyrit_version builders stamp for each line (it is stored, never hashed).
LINE_PYRIT_VERSIONS: Final[Mapping[str, str]] = {
    "0.12": "0.12.1",
    "0.13": "0.13.0",
    "0.14": "0.14.0",
    "1.1": "1.1.0",
}

#: Param names that would collide with the structural keys of the flat shape (1.1 list).
RESERVED_PARAM_NAMES: Final = frozenset(
    {
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
    }
)
# Promoted fields of the 1.x typed subclasses that are children (section 7.5). `of()` needs
# this only to place an explicitly passed empty list, which could otherwise be a param.
_PROMOTED_CHILD_NAMES: Final = frozenset(
    {
        "targets",
        "converter_target",
        "sub_converter",
        "prompt_target",
        "sub_scorers",
        "objective_target",
        "adversarial_chat",
        "objective_scorer",
        "request_converters",
        "response_converters",
        "attack",
        "technique_seeds",
        "attack_technique",
        "seed_identifiers",
    }
)


def _check_line(line: str) -> str:
    """Return ``line`` if it is a supported PyRIT line, else raise ValueError."""
    if line not in LINE_PYRIT_VERSIONS:
        raise ValueError(
            f"unknown PyRIT line {line!r}; expected one of {sorted(LINE_PYRIT_VERSIONS)}"
        )
    return line


# --------------------------------------------------------------------------------------------
# Canonical JSON and the content hash (section 7.2)
# --------------------------------------------------------------------------------------------


def canonical_json(d: Mapping[str, Any]) -> str:
    """Serialize ``d`` exactly as PyRIT's ``config_hash`` does before hashing."""
    # Every other json.dumps option stays at its default on purpose: ensure_ascii=True turns
    # non-ASCII into \\uXXXX (surrogate pairs for astral characters), allow_nan=True, and floats
    # use repr, so 1 and 1.0 stay distinct.
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def config_hash(d: Mapping[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``d`` (PyRIT's ``config_hash``)."""
    return hashlib.sha256(canonical_json(d).encode("utf-8")).hexdigest()


def _hash_dict(ci: ComponentIdentifier) -> dict[str, Any]:
    """Build the dict whose canonical JSON is the content-hash preimage of ``ci``."""
    d: dict[str, Any] = {"class_name": ci.class_name, "class_module": ci.class_module}
    # Only top-level None params are dropped, so adding an optional param defaulting to None
    # keeps old hashes; nulls nested inside dict/list values are kept as JSON null.
    d.update({k: v for k, v in ci.params.items() if v is not None})
    attributes = {k: v for k, v in ci.attributes.items() if v is not None}
    if attributes:
        d["attributes"] = attributes
    children: dict[str, Any] = {}
    for name, child in ci.children.items():
        # A parent depends only on its children's hashes (stored ones included), and a list
        # stays a list even with one item or none, unlike the eval hash.
        children[name] = (
            child.hash if isinstance(child, ComponentIdentifier) else [c.hash for c in child]
        )
    if children:
        d["children"] = children
    return d


def hash_preimage(identifier: ComponentIdentifier) -> str:
    """The exact canonical string whose SHA-256 is ``identifier``'s content hash."""
    return canonical_json(_hash_dict(identifier))


def _truncate(value: Any, max_length: int | None) -> Any:
    """Cut a string longer than ``max_length`` to ``value[:max_length] + "..."`` (legacy)."""
    if max_length is not None and isinstance(value, str) and len(value) > max_length:
        return value[:max_length] + "..."
    return value


def _is_child_value(value: Any) -> bool:
    """True when ``value`` is an identifier or a non-empty list of identifiers."""
    if isinstance(value, ComponentIdentifier):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, ComponentIdentifier) for v in value)
    )


# --------------------------------------------------------------------------------------------
# ComponentIdentifier (sections 7.1-7.5)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ComponentIdentifier:
    """Immutable snapshot of a component's behavioural configuration, addressed by content."""

    class_name: str
    class_module: str
    params: dict[str, Any] = field(default_factory=dict)
    children: dict[str, ComponentIdentifier | list[ComponentIdentifier]] = field(
        default_factory=dict
    )
    attributes: dict[str, Any] = field(default_factory=dict)
    pyrit_version: str | None = None
    eval_hash: str | None = None
    #: Hash read from a legacy (<=0.14) row. It was computed on untruncated params, so it
    #: wins over a recomputation; only ``from_dict`` sets it.
    stored_hash: str | None = None
    #: Legacy ``from_dict`` accepted any key as a param (e.g. a leftover ``__type__``).
    check_reserved: InitVar[bool] = True
    _content_hash: str = field(init=False, repr=False)

    def __post_init__(self, check_reserved: bool) -> None:
        """Validate names and child types, then compute the content hash once."""
        if not isinstance(self.class_name, str) or not isinstance(self.class_module, str):
            raise TypeError("class_name and class_module must be strings")
        if check_reserved:
            clashes = sorted(set(self.params) & RESERVED_PARAM_NAMES)
            if clashes:
                raise ValueError(
                    f"ComponentIdentifier params must not use reserved names: {clashes}"
                )
        for name, child in self.children.items():
            items = child if isinstance(child, list) else [child]
            if not all(isinstance(c, ComponentIdentifier) for c in items):
                raise TypeError(f"child {name!r} must be a ComponentIdentifier or a list of them")
        object.__setattr__(self, "_content_hash", config_hash(_hash_dict(self)))

    # -- identity -------------------------------------------------------------------------

    @property
    def content_hash(self) -> str:
        """The hash recomputed from the current content, ignoring any stored hash."""
        return self._content_hash

    @property
    def hash(self) -> str:
        """The identity: a stored legacy hash when present, else the content hash."""
        return self.stored_hash or self._content_hash

    @property
    def short_hash(self) -> str:
        """First 8 hex characters of :attr:`hash`."""
        return self.hash[:8]

    @property
    def unique_name(self) -> str:
        """Display name ``"<class_name>::<short_hash>"``."""
        return f"{self.class_name}::{self.short_hash}"

    def __str__(self) -> str:
        """Same as :attr:`unique_name`."""
        return self.unique_name

    def __repr__(self) -> str:
        """Debug form listing params, children and the short hash."""
        params = ", ".join(f"{k}={v!r}" for k, v in sorted(self.params.items()))
        children = ", ".join(
            f"{k}={v if isinstance(v, ComponentIdentifier) else [str(c) for c in v]}"
            for k, v in sorted(self.children.items())
        )
        parts = [f"class={self.class_name}"]
        parts += [f"params=({params})"] if params else []
        parts += [f"children=({children})"] if children else []
        return f"ComponentIdentifier({', '.join([*parts, f'hash={self.short_hash}'])})"

    def __eq__(self, other: object) -> bool:
        """Identifiers are equal when their hashes are."""
        if not isinstance(other, ComponentIdentifier):
            return NotImplemented
        return self.hash == other.hash

    def __hash__(self) -> int:
        """Python hash of :attr:`hash`."""
        return hash(self.hash)

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        obj: object,
        *,
        params: Mapping[str, Any] | None = None,
        children: Mapping[str, ComponentIdentifier | list[ComponentIdentifier] | None]
        | None = None,
        attributes: Mapping[str, Any] | None = None,
        pyrit_version: str | None = None,
        **promoted: Any,
    ) -> ComponentIdentifier:
        """Build from a live object, dropping None params, children, attributes and promoted."""
        clean_params = {k: v for k, v in (params or {}).items() if v is not None}
        clean_children = {k: v for k, v in (children or {}).items() if v is not None}
        # Typed 1.x subclasses mirror promoted fields into params/children after the explicit
        # ones, so a typed identifier dumps and hashes like a plain one.
        for name, value in promoted.items():
            if value is None:
                continue
            if _is_child_value(value) or (name in _PROMOTED_CHILD_NAMES and value == []):
                clean_children[name] = list(value) if isinstance(value, list) else value
            else:
                clean_params[name] = value
        return cls(
            class_name=type(obj).__name__,
            class_module=type(obj).__module__,
            params=clean_params,
            children=clean_children,
            attributes={k: v for k, v in (attributes or {}).items() if v is not None},
            pyrit_version=pyrit_version,
        )

    def with_eval_hash(self, eval_hash: str) -> ComponentIdentifier:
        """Copy with ``eval_hash`` set; the content (and any stored) hash is unchanged."""
        return ComponentIdentifier(
            class_name=self.class_name,
            class_module=self.class_module,
            params=dict(self.params),
            children=dict(self.children),
            attributes=dict(self.attributes),
            pyrit_version=self.pyrit_version,
            eval_hash=eval_hash,
            stored_hash=self.stored_hash,
            check_reserved=False,  # the source was already validated (or is a legacy row)
        )

    # -- children ---------------------------------------------------------------------------

    def get_child(self, key: str) -> ComponentIdentifier | None:
        """The single child under ``key``, None when missing; ValueError when it is a list."""
        child = self.children.get(key)
        if isinstance(child, list):
            raise ValueError(
                f"Child '{key}' is a list of {len(child)} components. Use get_child_list() instead."
            )
        return child

    def get_child_list(self, key: str) -> list[ComponentIdentifier]:
        """The children under ``key`` as a list: ``[]`` when missing, a single child wrapped."""
        child = self.children.get(key)
        if child is None:
            return []
        return [child] if isinstance(child, ComponentIdentifier) else list(child)

    # -- serialization ----------------------------------------------------------------------

    def _flat(self, max_value_length: int | None) -> dict[str, Any]:
        """The flat storage shape of section 7.3, optionally truncating string params."""
        out: dict[str, Any] = {
            "class_name": self.class_name,
            "class_module": self.class_module,
            "hash": self.hash,
            "pyrit_version": self.pyrit_version,
        }
        if self.eval_hash is not None:
            out["eval_hash"] = self.eval_hash
        # Every param is inlined, None included: the dump is lossless even though the hash
        # ignores top-level None values.
        for key, value in self.params.items():
            out[key] = _truncate(value, max_value_length)
        if self.children:
            out["children"] = {
                name: child._flat(max_value_length)
                if isinstance(child, ComponentIdentifier)
                else [c._flat(max_value_length) for c in child]
                for name, child in self.children.items()
            }
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out

    def model_dump(self) -> dict[str, Any]:
        """1.x flat dump: never truncated; ``attributes`` only when non-empty."""
        return self._flat(None)

    def to_dict(self, max_value_length: int | None = None) -> dict[str, Any]:
        """Legacy flat dict; string params longer than N become ``value[:N] + "..."``."""
        # Truncation reaches children too, but never structural keys, hashes or non-strings.
        return self._flat(max_value_length)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ComponentIdentifier:
        """Legacy parse: stored ``hash`` and ``eval_hash`` are kept, children parsed alike."""
        data = dict(d)
        # The `or` chain is PyRIT's: when class_name is present, __type__ is never popped and
        # so survives as a param (a verified quirk); the same holds for __module__.
        class_name = data.pop("class_name", None) or data.pop("__type__", None) or "Unknown"
        class_module = data.pop("class_module", None) or data.pop("__module__", None) or "unknown"
        stored_hash = data.pop("hash", None) or None
        eval_hash = data.pop("eval_hash", None) or None
        pyrit_version = data.pop("pyrit_version", None)
        raw_children = data.pop("children", None)
        # 0.12-0.14 had no attributes bucket; a 1.x row read through here keeps its bucket
        # instead of turning it into a param (the stored hash decides identity anyway).
        attributes = data.pop("attributes") if isinstance(data.get("attributes"), dict) else {}
        children: dict[str, ComponentIdentifier | list[ComponentIdentifier]] = {}
        if isinstance(raw_children, Mapping):
            for name, value in raw_children.items():
                if isinstance(value, Mapping):
                    children[name] = cls.from_dict(value)
                elif isinstance(value, list):
                    children[name] = [cls.from_dict(c) for c in value if isinstance(c, Mapping)]
        return cls(
            class_name=class_name,
            class_module=class_module,
            params=data,
            children=children,
            attributes=attributes,
            pyrit_version=pyrit_version,
            eval_hash=eval_hash,
            stored_hash=stored_hash,
            check_reserved=False,
        )

    @classmethod
    def model_validate(cls, d: Mapping[str, Any] | ComponentIdentifier) -> ComponentIdentifier:
        """1.x parse: any incoming hash is ignored and recomputed, children included."""
        if isinstance(d, ComponentIdentifier):
            return d
        if not isinstance(d, Mapping):
            raise TypeError(f"expected a mapping, got {type(d).__name__}")
        data = dict(d)
        data.pop("hash", None)
        # Legacy keys fill a missing canonical key; otherwise they are discarded.
        for key, legacy in (("class_name", "__type__"), ("class_module", "__module__")):
            legacy_value = data.pop(legacy, None)
            if key not in data and legacy_value is not None:
                data[key] = legacy_value
        class_name = data.pop("class_name", "Unknown")
        class_module = data.pop("class_module", "unknown")
        pyrit_version = data.pop("pyrit_version", None)
        eval_hash = data.pop("eval_hash", None)
        raw_children = data.pop("children", None) or {}
        attributes = data.pop("attributes", None) or {}
        if "params" in data:
            params = data.pop("params")
            if data:
                raise ValueError(
                    "ComponentIdentifier received both 'params' and stray top-level keys "
                    f"{sorted(data)}; use the flat shape or the structured shape, not a mixed shape"
                )
            if not isinstance(params, Mapping):
                raise ValueError("'params' must be a mapping")
            params = dict(params)
        else:
            params = data
        if not isinstance(raw_children, Mapping) or not isinstance(attributes, Mapping):
            raise ValueError("'children' and 'attributes' must be mappings")
        children: dict[str, ComponentIdentifier | list[ComponentIdentifier]] = {}
        for name, value in raw_children.items():
            if isinstance(value, list):
                children[name] = [cls.model_validate(c) for c in value]
            else:
                children[name] = cls.model_validate(value)
        return cls(
            class_name=class_name,
            class_module=class_module,
            params=params,
            children=children,
            attributes=dict(attributes),
            pyrit_version=pyrit_version,
            eval_hash=eval_hash,
        )

    @classmethod
    def normalize(cls, value: ComponentIdentifier | Mapping[str, Any]) -> ComponentIdentifier:
        """Legacy: pass identifiers through, parse dicts with ``from_dict`` (deprecated)."""
        if isinstance(value, ComponentIdentifier):
            return value
        if isinstance(value, Mapping):
            warnings.warn(
                "passing a dict for ComponentIdentifier is deprecated",
                DeprecationWarning,
                stacklevel=2,
            )
            return cls.from_dict(value)
        raise TypeError(f"Expected ComponentIdentifier or dict, got {type(value).__name__}")


class Identifiable(ABC):
    """A component that can describe itself with a (lazily built, cached) ComponentIdentifier."""

    _identifier: ComponentIdentifier | None = None

    @abstractmethod
    def _build_identifier(self) -> ComponentIdentifier:
        """Build the behavioural identity (only params that change the output)."""

    def get_identifier(self) -> ComponentIdentifier:
        """Return the identifier, building it on first access."""
        if self._identifier is None:
            self._identifier = self._build_identifier()
        return self._identifier


# --------------------------------------------------------------------------------------------
# Eval hash (section 7.6)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildEvalRule:
    """How one named child (at any depth) enters the eval hash."""

    exclude: bool = False
    included_params: frozenset[str] | None = None
    included_item_values: Mapping[str, Any] | None = None
    param_fallbacks: Mapping[str, str] | None = None
    inner_child_name: str | None = None

    def __post_init__(self) -> None:
        """Normalize to immutable containers: rules are shared module-level data."""
        if self.included_params is not None:
            object.__setattr__(self, "included_params", frozenset(self.included_params))
        for name in ("included_item_values", "param_fallbacks"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by the fixture rule tables (params as a sorted list)."""
        return {
            "exclude": self.exclude,
            "included_params": None
            if self.included_params is None
            else sorted(self.included_params),
            "included_item_values": None
            if self.included_item_values is None
            else dict(self.included_item_values),
            "param_fallbacks": None if self.param_fallbacks is None else dict(self.param_fallbacks),
            "inner_child_name": self.inner_child_name,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ChildEvalRule:
        """Inverse of :meth:`to_dict`."""
        included = d.get("included_params")
        return cls(
            exclude=bool(d.get("exclude", False)),
            included_params=None if included is None else frozenset(included),
            included_item_values=d.get("included_item_values"),
            param_fallbacks=d.get("param_fallbacks"),
            inner_child_name=d.get("inner_child_name"),
        )


def _eval_dict(
    ci: ComponentIdentifier,
    rules: Mapping[str, ChildEvalRule],
    included: frozenset[str] | None,
    fallbacks: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The filtered dict hashed for the eval hash of node ``ci``."""
    d: dict[str, Any] = {"class_name": ci.class_name, "class_module": ci.class_module}
    # Attributes never enter the eval hash; params obey the allowed set of the parent's rule.
    d.update(
        {
            k: v
            for k, v in ci.params.items()
            if v is not None and (included is None or k in included)
        }
    )
    for primary, fallback in (fallbacks or {}).items():
        # The primary counts as missing also when the allowed set filtered it out.
        if d.get(primary) is None or d.get(primary) == "":
            value = ci.params.get(fallback)
            if value is not None and value != "":
                d[primary] = value
    children: dict[str, Any] = {}
    for name in sorted(ci.children):
        # Rules are a flat dict keyed by child name, so they match at any depth.
        rule = rules.get(name)
        if rule is not None and rule.exclude:
            continue
        items = ci.get_child_list(name)
        if rule is not None and rule.inner_child_name:
            # Look through wrappers (e.g. RoundRobinTarget) to their first inner target.
            items = [(c.get_child_list(rule.inner_child_name) or [c])[0] for c in items]
        if rule is not None and rule.included_item_values:
            required = rule.included_item_values
            items = [c for c in items if all(c.params.get(k) == v for k, v in required.items())]
        # The allowed set and fallbacks apply to this child only, not to grandchildren: each
        # descendant uses its own rule by name (the code, which the vectors follow, not the
        # docstring that says they propagate).
        hashes = [
            config_hash(
                _eval_dict(
                    c,
                    rules,
                    rule.included_params if rule is not None else None,
                    rule.param_fallbacks if rule is not None else None,
                )
            )
            for c in items
        ]
        # Unlike the content hash, one surviving item collapses to a bare string.
        children[name] = hashes[0] if len(hashes) == 1 else hashes
    if children:
        d["children"] = children
    return d


def _eval_root(
    identifier: ComponentIdentifier,
    own_rule: ChildEvalRule | None,
    root_unwrap_child: str | None,
) -> ComponentIdentifier:
    """Validate ``own_rule`` and apply the root unwrap (1.0+)."""
    if own_rule is not None:
        if own_rule.exclude:
            raise ValueError("own_rule.exclude is not meaningful at the root entity")
        if own_rule.included_item_values is not None:
            raise ValueError("own_rule.included_item_values is not meaningful at the root entity")
        if own_rule.inner_child_name is not None:
            raise ValueError("own_rule.inner_child_name is not meaningful at the root entity")
    if root_unwrap_child is not None:
        inner = identifier.get_child_list(root_unwrap_child)
        if inner:
            return inner[0]
    return identifier


def eval_preimage(
    identifier: ComponentIdentifier,
    *,
    child_eval_rules: Mapping[str, ChildEvalRule],
    own_rule: ChildEvalRule | None = None,
    root_unwrap_child: str | None = None,
) -> str:
    """The canonical string hashed by :func:`compute_eval_hash` (content preimage if no rules)."""
    root = _eval_root(identifier, own_rule, root_unwrap_child)
    if not child_eval_rules and own_rule is None:
        return hash_preimage(root)
    return canonical_json(
        _eval_dict(
            root,
            child_eval_rules,
            own_rule.included_params if own_rule is not None else None,
            own_rule.param_fallbacks if own_rule is not None else None,
        )
    )


def compute_eval_hash(
    identifier: ComponentIdentifier,
    *,
    child_eval_rules: Mapping[str, ChildEvalRule],
    own_rule: ChildEvalRule | None = None,
    root_unwrap_child: str | None = None,
) -> str:
    """Behavioural-equivalence hash of ``identifier`` under the given rules (section 7.6)."""
    root = _eval_root(identifier, own_rule, root_unwrap_child)
    if not child_eval_rules and own_rule is None:
        # No filtering at all: the eval hash is the (possibly stored) content hash.
        return root.hash
    return hashlib.sha256(
        eval_preimage(root, child_eval_rules=child_eval_rules, own_rule=own_rule).encode("utf-8")
    ).hexdigest()


@dataclass(frozen=True)
class EvalRuleSet:
    """One evaluation kind's configuration: child rules, root rule and root unwrap slot."""

    child_eval_rules: Mapping[str, ChildEvalRule]
    own_rule: ChildEvalRule | None = None
    root_unwrap_child: str | None = None

    def __post_init__(self) -> None:
        """Freeze the rules mapping (rule sets are shared module-level data)."""
        object.__setattr__(self, "child_eval_rules", MappingProxyType(dict(self.child_eval_rules)))

    def eval_hash(self, identifier: ComponentIdentifier) -> str:
        """:func:`compute_eval_hash` of ``identifier`` under this rule set."""
        return compute_eval_hash(
            identifier,
            child_eval_rules=self.child_eval_rules,
            own_rule=self.own_rule,
            root_unwrap_child=self.root_unwrap_child,
        )

    def eval_preimage(self, identifier: ComponentIdentifier) -> str:
        """:func:`eval_preimage` of ``identifier`` under this rule set."""
        return eval_preimage(
            identifier,
            child_eval_rules=self.child_eval_rules,
            own_rule=self.own_rule,
            root_unwrap_child=self.root_unwrap_child,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fixture's table shape: CHILD_EVAL_RULES, OWN_RULE, ROOT_UNWRAP_CHILD."""
        return {
            "CHILD_EVAL_RULES": {k: r.to_dict() for k, r in self.child_eval_rules.items()},
            "OWN_RULE": None if self.own_rule is None else self.own_rule.to_dict(),
            "ROOT_UNWRAP_CHILD": self.root_unwrap_child,
        }


# Rule tables, as data (section 7.6 "Rule tables"). TEP/FB are PyRIT's target eval params and
# fallbacks; legacy 0.12/0.13 kept model_name instead of underlying_model_name.
_TEP: Final = frozenset({"underlying_model_name", "temperature", "top_p"})
_FB: Final[Mapping[str, str]] = {"underlying_model_name": "model_name"}
_LEGACY_TARGET_PARAMS: Final = frozenset({"model_name", "temperature", "top_p"})
_TARGET_RULE: Final = ChildEvalRule(
    included_params=_TEP, param_fallbacks=_FB, inner_child_name="targets"
)
_EXCLUDE: Final = ChildEvalRule(exclude=True)
_LEGACY_SCORER: Final = EvalRuleSet(
    {"prompt_target": ChildEvalRule(included_params=_LEGACY_TARGET_PARAMS)}
)
_LEGACY_ATTACK_RULES: Final[Mapping[str, ChildEvalRule]] = {
    "objective_target": ChildEvalRule(included_params=frozenset({"temperature"})),
    "adversarial_chat": ChildEvalRule(included_params=_LEGACY_TARGET_PARAMS),
    "objective_scorer": _EXCLUDE,
}

#: line -> kind -> rule set (read-only as RULE_TABLES). Kinds: "scorer", "atomic_attack",
#: "objective_target" (0.14+), "scenario" (1.1).
_RULE_TABLES: dict[str, dict[str, EvalRuleSet]] = {
    "0.12": {
        "scorer": _LEGACY_SCORER,
        "atomic_attack": EvalRuleSet(
            {
                **_LEGACY_ATTACK_RULES,
                "seeds": ChildEvalRule(included_item_values={"is_general_technique": True}),
            }
        ),
    },
    "0.13": {
        "scorer": _LEGACY_SCORER,
        "atomic_attack": EvalRuleSet({**_LEGACY_ATTACK_RULES, "seed_identifiers": _EXCLUDE}),
    },
    "0.14": {
        "scorer": EvalRuleSet({"prompt_target": _TARGET_RULE}),
        "atomic_attack": EvalRuleSet(
            {
                "objective_target": ChildEvalRule(
                    included_params=frozenset({"temperature"}), inner_child_name="targets"
                ),
                "adversarial_chat": ChildEvalRule(included_params=_TEP, param_fallbacks=_FB),
                "objective_scorer": _EXCLUDE,
                "seed_identifiers": _EXCLUDE,
            }
        ),
        "objective_target": EvalRuleSet(
            {}, own_rule=ChildEvalRule(included_params=_TEP, param_fallbacks=_FB)
        ),
    },
    "1.1": {
        "scorer": EvalRuleSet({"prompt_target": _TARGET_RULE, "targets": _TARGET_RULE}),
        "atomic_attack": EvalRuleSet(
            {
                "objective_target": ChildEvalRule(
                    included_params=frozenset({"temperature"}), inner_child_name="targets"
                ),
                "adversarial_chat": _TARGET_RULE,
                "converter_target": _TARGET_RULE,
                "targets": _TARGET_RULE,
                "objective_scorer": _EXCLUDE,
                "seed_identifiers": _EXCLUDE,
            }
        ),
        "objective_target": EvalRuleSet(
            {"targets": _TARGET_RULE},
            own_rule=ChildEvalRule(included_params=_TEP, param_fallbacks=_FB),
            root_unwrap_child="targets",
        ),
        # Documented in section 7.6 but not covered by golden vectors.
        "scenario": EvalRuleSet(
            {
                "objective_target": _TARGET_RULE,
                "prompt_target": _TARGET_RULE,
                "targets": _TARGET_RULE,
            }
        ),
    },
}


RULE_TABLES: Final[Mapping[str, Mapping[str, EvalRuleSet]]] = MappingProxyType(
    {line: MappingProxyType(kinds) for line, kinds in _RULE_TABLES.items()}
)


class EvaluationIdentifier:
    """Wraps an identifier with one evaluation kind's rules for a given PyRIT line."""

    KIND: ClassVar[str | None] = None

    def __init__(self, identifier: ComponentIdentifier, line: str = "1.1") -> None:
        """Resolve the rule set for ``(line, KIND)`` and the eval hash."""
        if self.KIND is None:
            raise TypeError("use a concrete EvaluationIdentifier subclass")
        rules = RULE_TABLES[_check_line(line)].get(self.KIND)
        if rules is None:
            raise ValueError(f"PyRIT {line} has no {self.KIND} evaluation identifier")
        self.identifier = identifier
        self.line = line
        self.rules = rules
        # 0.12-0.14 trusted an eval_hash read back from storage (it was computed before the
        # row's params were truncated); 1.x never trusts it and always recomputes.
        if line in LEGACY_LINES and identifier.eval_hash is not None:
            self._eval_hash = identifier.eval_hash
        else:
            self._eval_hash = rules.eval_hash(identifier)

    @property
    def eval_hash(self) -> str:
        """Behavioural-equivalence hash for grouping evaluation results."""
        return self._eval_hash


class ScorerEvaluationIdentifier(EvaluationIdentifier):
    """Eval identity of a scorer (its judge target reduced to behavioural params)."""

    KIND = "scorer"


class AtomicAttackEvaluationIdentifier(EvaluationIdentifier):
    """Eval identity of an atomic attack (targets reduced, scorer and seeds excluded)."""

    KIND = "atomic_attack"


class ObjectiveTargetEvaluationIdentifier(EvaluationIdentifier):
    """Eval identity of an objective target (0.14+)."""

    KIND = "objective_target"


class ScenarioEvaluationIdentifier(EvaluationIdentifier):
    """Eval identity of a scenario (1.1 only)."""

    KIND = "scenario"


# --------------------------------------------------------------------------------------------
# Seed and atomic-attack identifiers (sections 7.7, 7.8)
# --------------------------------------------------------------------------------------------

#: seed_type -> (class name, module) of PyRIT's seed classes.
SEED_CLASSES: Final[Mapping[str, tuple[str, str]]] = {
    "prompt": ("SeedPrompt", "pyrit.models.seeds.seed_prompt"),
    "objective": ("SeedObjective", "pyrit.models.seeds.seed_objective"),
    "simulated_conversation": (
        "SeedSimulatedConversation",
        "pyrit.models.seeds.seed_simulated_conversation",
    ),
}
_ATOMIC_ATTACK: Final = ("AtomicAttack", "pyrit.scenario.core.atomic_attack")
_ATTACK_TECHNIQUE: Final = ("AttackTechnique", "pyrit.scenario.core.attack_technique")


def _seed_class(seed: Mapping[str, Any], seed_class: str | None) -> tuple[str, str]:
    """Resolve (class name, module) from an explicit class name or the seed's ``seed_type``."""
    if seed_class is not None:
        for name, module in SEED_CLASSES.values():
            if name == seed_class:
                return name, module
        raise ValueError(f"unknown seed class {seed_class!r}")
    # SeedGroup dict inputs and the seeds table both default seed_type to "prompt".
    seed_type = seed.get("seed_type") or "prompt"
    if seed_type not in SEED_CLASSES:
        raise ValueError(f"unknown seed_type {seed_type!r}")
    return SEED_CLASSES[seed_type]


def build_seed_identifier(
    seed: Mapping[str, Any],
    *,
    line: str = "1.1",
    seed_class: str | None = None,
    pyrit_version: str | None = None,
) -> ComponentIdentifier:
    """Identifier of a seed given as a mapping (e.g. a seed's ``model_dump``).

    The class comes from ``seed_class`` (e.g. ``"SeedObjective"``, for legacy rows without
    ``seed_type``) or else from ``seed["seed_type"]`` (default ``"prompt"``). 1.x
    (``SeedIdentifier.from_seed``) has params value, value_sha256, data_type, dataset_name,
    is_general_technique with None dropped; a missing data_type is the Seed default
    ``"text"``. Legacy lines have no data_type and keep None values. ``pyrit_version``
    defaults to the line's release.
    """
    name, module = _seed_class(seed, seed_class)
    version = pyrit_version or LINE_PYRIT_VERSIONS[_check_line(line)]
    params: dict[str, Any] = {"value": seed.get("value"), "value_sha256": seed.get("value_sha256")}
    if line not in LEGACY_LINES:
        params["data_type"] = seed.get("data_type") or "text"
    params["dataset_name"] = seed.get("dataset_name")
    params["is_general_technique"] = bool(seed.get("is_general_technique", False))
    if line not in LEGACY_LINES:
        # 1.x builds with of(), which drops None values before storing them.
        params = {k: v for k, v in params.items() if v is not None}
    return ComponentIdentifier(name, module, params=params, pyrit_version=version)


def _seed_identifiers(
    value: Mapping[str, Any] | Sequence[ComponentIdentifier | Mapping[str, Any]] | None,
    line: str,
    pyrit_version: str,
) -> list[ComponentIdentifier]:
    """Normalize a seed group / list of seeds / list of seed identifiers to identifiers."""
    if value is None:
        return []
    items: Iterable[Any] = (value.get("seeds") or []) if isinstance(value, Mapping) else value
    return [
        item
        if isinstance(item, ComponentIdentifier)
        else build_seed_identifier(item, line=line, pyrit_version=pyrit_version)
        for item in items
    ]


def build_atomic_attack_identifier(
    *,
    attack_identifier: ComponentIdentifier | None = None,
    technique_identifier: ComponentIdentifier | None = None,
    seed_identifiers_or_group: Mapping[str, Any]
    | Sequence[ComponentIdentifier | Mapping[str, Any]]
    | None = None,
    line: str = "1.1",
    pyrit_version: str | None = None,
) -> ComponentIdentifier:
    """Composite ``AtomicAttack`` identifier of an attack (or technique) and its seeds.

    ``seed_identifiers_or_group`` is a seed group mapping (``{"seeds": [...]}``), or a
    sequence of seed identifiers and/or seed mappings (built with
    :func:`build_seed_identifier` for ``line``), or None for no seeds.

    0.13+/1.x: exactly one of ``technique_identifier``/``attack_identifier``; a bare attack is
    wrapped in an ``AttackTechnique`` node; children are ``attack_technique`` and
    ``seed_identifiers`` (``[]`` when there are none; ``[]`` enters the hash).
    0.12: children are ``attack`` and ``seeds`` (``attack_identifier`` only).
    """
    version = pyrit_version or LINE_PYRIT_VERSIONS[_check_line(line)]
    seeds = _seed_identifiers(seed_identifiers_or_group, line, version)
    children: dict[str, ComponentIdentifier | list[ComponentIdentifier]]
    if line == "0.12":
        if technique_identifier is not None or attack_identifier is None:
            raise ValueError("PyRIT 0.12 atomic attacks take attack_identifier only")
        children = {"attack": attack_identifier, "seeds": seeds}
    else:
        if (technique_identifier is None) == (attack_identifier is None):
            raise ValueError("Provide exactly one of technique_identifier and attack_identifier")
        if technique_identifier is None:
            assert attack_identifier is not None  # narrowed by the check above
            technique_identifier = ComponentIdentifier(
                *_ATTACK_TECHNIQUE, children={"attack": attack_identifier}, pyrit_version=version
            )
        children = {"attack_technique": technique_identifier, "seed_identifiers": seeds}
    return ComponentIdentifier(*_ATOMIC_ATTACK, children=children, pyrit_version=version)


def compute_seed_group_hash(seed_identifiers: Iterable[ComponentIdentifier]) -> str:
    """1.x logical seed-group id: ``config_hash`` of the seeds' full flat dumps."""
    # PyRIT asks to exclude hash/eval_hash/pyrit_version, but its flat serializer ignores
    # `exclude`, so they are hashed; matching 1.1.0 means hashing the full dump (verified).
    return config_hash({"seed_identifiers": [s.model_dump() for s in seed_identifiers]})


# --------------------------------------------------------------------------------------------
# Name utilities (section 7.9)
# --------------------------------------------------------------------------------------------

#: Names accepted by PyRIT's registries.
REGISTRY_NAME_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CAPITALIZED_WORD: Final = re.compile(r"(.)([A-Z][a-z]+)")
_LOWER_THEN_UPPER: Final = re.compile(r"([a-z0-9])([A-Z])")


def class_name_to_snake_case(name: str, suffix: str = "") -> str:
    """``OpenAIChatTarget`` -> ``open_ai_chat_target``, stripping ``suffix`` first."""
    if suffix and name.endswith(suffix):
        name = name[: -len(suffix)]
    # Split before a capitalized word (keeps acronyms together: XMLParser -> XML_Parser), then
    # between a lowercase letter or digit and a capital (getHTTP -> get_HTTP).
    name = _CAPITALIZED_WORD.sub(r"\1_\2", name)
    return _LOWER_THEN_UPPER.sub(r"\1_\2", name).lower()


def snake_case_to_class_name(name: str, suffix: str = "") -> str:
    """``open_ai_chat`` -> ``OpenAiChat`` + ``suffix`` (str.capitalize per part)."""
    return "".join(part.capitalize() for part in name.split("_")) + suffix
