"""PyRIT ComponentIdentifier content hashing and eval hashing, reproduced byte for byte.

Framework-free (stdlib only) so the ingestion services, the REST client and the compat tests can
share one implementation. The reference is PYRIT-MODEL.md section 7; the golden vectors live in
``../shared/fixtures/pyrit-{1.1,0.13}/identifiers.jsonl``.

Two PyRIT lines are covered. Content hashes are identical in both; what differs is the
serialized shape (legacy ``to_dict``/``from_dict`` truncate and keep a stored hash, 1.x
``model_dump``/``model_validate`` never truncate and always recompute) and the eval-hash rule
tables, which are kept as data in :data:`RULE_TABLES`, selectable by line.

The package: ``hashing`` (ComponentIdentifier and its content hash), ``evalrules`` (eval hash
and rule tables), ``builders`` (seed and atomic-attack identifiers), ``naming`` (class and
registry names). Callers import from the package.
"""

from __future__ import annotations

from redteam.core.identity.builders import (
    SEED_CLASSES,
    build_atomic_attack_identifier,
    build_seed_identifier,
    compute_seed_group_hash,
)
from redteam.core.identity.evalrules import (
    RULE_TABLES,
    AtomicAttackEvaluationIdentifier,
    ChildEvalRule,
    EvalRuleSet,
    EvaluationIdentifier,
    ObjectiveTargetEvaluationIdentifier,
    ScenarioEvaluationIdentifier,
    ScorerEvaluationIdentifier,
    compute_eval_hash,
    eval_preimage,
)
from redteam.core.identity.hashing import (
    LEGACY_LINES,
    LINE_PYRIT_VERSIONS,
    RESERVED_PARAM_NAMES,
    ComponentIdentifier,
    canonical_json,
    config_hash,
    hash_preimage,
)
from redteam.core.identity.naming import (
    REGISTRY_NAME_PATTERN,
    class_name_to_snake_case,
    snake_case_to_class_name,
)

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
