"""PyRIT's eval hash and its rule tables, kept as data per PyRIT line (PYRIT-MODEL.md 7.6)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Final

from redteam.core.identity.hashing import (
    LEGACY_LINES,
    ComponentIdentifier,
    canonical_json,
    check_line,
    config_hash,
    hash_preimage,
)

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
        rules = RULE_TABLES[check_line(line)].get(self.KIND)
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
