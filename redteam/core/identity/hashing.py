"""PyRIT's ComponentIdentifier and its content hash (PYRIT-MODEL.md 7.1-7.5), byte for byte."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from typing import Any, Final

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


def check_line(line: str) -> str:
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
