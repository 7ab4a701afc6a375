"""Write seeds back as a PyRIT `.prompt` file that loads to the same seeds. Framework-free.

The writer is the loader (`yaml_loader`) run backwards. A dataset-level value is written only
when every seed would inherit exactly its own value back; otherwise seeds carry their values
themselves. Values that PyRIT's load-time render would change (a trailing newline, `{{x}}`,
a `{% raw %}`) are escaped so they render back to themselves. Group aliases are made unique in
the file, because PyRIT groups by alias. Media seeds carry `value_sha256`, so a re-import can
find their bytes among the stored blobs when the path does not exist on the importing machine.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from seeds.rules import value_sha256_for
from seeds.templating import escape_many

# Seed-level scalars inherited from the dataset when the seed's own is empty (`or`) ...
_OR_INHERITED = ("name", "description", "source")
# ... and those inherited only when the seed does not say (so an explicit null survives).
_KEY_INHERITED = ("added_by", "date_added")
_LISTS = ("harm_categories", "authors", "groups")


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as literal blocks when YAML allows it."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def _common(values: Sequence[Any]) -> tuple[bool, Any]:
    first = values[0] if values else None
    return (bool(values) and all(v == first for v in values)), first


def _top_scalar(field: str, dataset_value: Any, seeds: Sequence[Any]) -> Any:
    """The dataset-level value to write for an inherited scalar, or None for "write none"."""
    values = [getattr(s, field) for s in seeds]
    same, first = _common(values)
    if same and first is not None:
        return first
    if dataset_value is None:
        return None
    if field in _OR_INHERITED:
        # Seeds whose own value is empty would pick the dataset's up; only safe if none is.
        return dataset_value if all(values) else None
    return dataset_value


def _top_list(dataset_value: Sequence[str] | None, seeds: Sequence[Any], field: str) -> list[str]:
    """The dataset-level list to write: only if every seed's list starts with it, no repeats."""
    top = list(dataset_value or [])
    if not top:
        return []
    for seed in seeds:
        own = list(getattr(seed, field) or [])
        if own[: len(top)] != top or len(set(own)) != len(own):
            return []
    return top


def _unique_alias(wanted: str, used: set[str]) -> str:
    alias, n = wanted, 2
    while alias in used:
        alias, n = f"{wanted}_{n}", n + 1
    used.add(alias)
    return alias


class ExportProblem(ValueError):
    """Some seeds cannot be written; `problems` names each one and why."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def seed_label(seed: Any) -> str:
    """How a problem names a seed: its id (and name when it has one)."""
    name = getattr(seed, "name", None)
    return f"seed {getattr(seed, 'id', '?')}" + (f" ({name})" if name else "")


def _escaped_values(seeds: Sequence[Any]) -> dict[int, str]:
    """Each value escaped for Jinja, keyed by id(seed); all checked in one bounded batch."""
    valued = [s for s in seeds if s.seed_type != "simulated_conversation"]
    results = escape_many([s.value for s in valued])
    problems = [
        f"{seed_label(s)}: {r}"
        for s, r in zip(valued, results, strict=True)
        if not isinstance(r, str)
    ]
    if problems:
        raise ExportProblem(problems)
    return {id(s): r for s, r in zip(valued, results, strict=True) if isinstance(r, str)}


def build_document(
    dataset: Mapping[str, Any], groups: Sequence[tuple[str | None, Sequence[Any]]]
) -> dict[str, Any]:
    """The YAML mapping for one dataset.

    `dataset` holds the dataset-level fields (`dataset_name`, `dataset_name_declared`, `name`,
    `description`, `source`, `added_by`, `data_type`, `seed_type`, `harm_categories`,
    `authors`, `groups`, `date_added`); `groups` is (alias, seeds in group order) per group.
    Seeds are any objects with the Seed attributes. Raises ExportProblem naming every seed
    whose value cannot be checked for Jinja (over the template budget).
    """
    seeds = [s for _, members in groups for s in members]
    if not seeds:
        raise ValueError("a dataset with no seeds cannot be written (PyRIT refuses empty ones)")
    escaped = _escaped_values(seeds)
    doc: dict[str, Any] = {}
    dataset_name = dataset.get("dataset_name")
    declared = dataset.get("dataset_name_declared", True)
    if declared and dataset_name:
        doc["dataset_name"] = dataset_name
    top: dict[str, Any] = {}
    for field in _OR_INHERITED + _KEY_INHERITED:
        top[field] = _top_scalar(field, dataset.get(field), seeds)
    if not declared:
        # The file names its dataset through `name` only; seeds get it as their dataset_name.
        top["name"] = dataset_name
    effective_dataset_name = dataset_name if declared else top["name"]
    for field in ("name", "description", "source"):
        if top[field] is not None:
            doc[field] = top[field]
    lists = {f: _top_list(dataset.get(f), seeds, f) for f in _LISTS}
    for field in _LISTS:
        if lists[field]:
            doc[field] = lists[field]
    data_type = dataset.get("data_type")
    if data_type:
        doc["data_type"] = data_type
    default_data_type = data_type or "text"
    seed_type = dataset.get("seed_type")
    if seed_type:
        doc["seed_type"] = seed_type
    default_seed_type = seed_type or "prompt"
    for field in _KEY_INHERITED:
        if top[field] is not None:
            doc[field] = top[field]

    entries: list[dict[str, Any]] = []
    used_aliases: set[str] = set()
    for number, (alias, members) in enumerate(groups, start=1):
        group_alias = None
        if alias or len(members) > 1:
            group_alias = _unique_alias(alias or f"group_{number}", used_aliases)
        for seed in members:
            entries.append(
                _seed_entry(
                    seed,
                    escaped_value=escaped.get(id(seed)),
                    top=top,
                    lists=lists,
                    alias=group_alias,
                    dataset_name=effective_dataset_name,
                    default_seed_type=default_seed_type,
                    default_data_type=default_data_type,
                )
            )
    doc["seeds"] = entries
    return doc


def _seed_entry(
    seed: Any,
    *,
    escaped_value: str | None,
    top: Mapping[str, Any],
    lists: Mapping[str, list[str]],
    alias: str | None,
    dataset_name: str | None,
    default_seed_type: str,
    default_data_type: str,
) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    simulated = seed.seed_type == "simulated_conversation"
    if not simulated:
        entry["value"] = escaped_value
    if seed.seed_type != default_seed_type:
        entry["seed_type"] = seed.seed_type
    if seed.dataset_name and seed.dataset_name != dataset_name:
        entry["dataset_name"] = seed.dataset_name
    for field in _OR_INHERITED:
        value = getattr(seed, field)
        if value and value != top[field]:
            entry[field] = value
    for field in _KEY_INHERITED:
        value = getattr(seed, field)
        if value != top[field]:
            entry[field] = value
    for field in _LISTS:
        own = list(getattr(seed, field) or [])
        rest = own[len(lists[field]) :]
        if rest:
            entry[field] = rest
    if seed.seed_type == "prompt":
        if seed.data_type != default_data_type:
            entry["data_type"] = seed.data_type
        entry["role"] = seed.role or "user"
        if seed.sequence:
            entry["sequence"] = seed.sequence
        if seed.parameters:
            entry["parameters"] = list(seed.parameters)
        if seed.response_json_schema:
            entry["response_json_schema"] = seed.response_json_schema
    if seed.metadata:
        entry["metadata"] = dict(seed.metadata)
    if alias:
        entry["prompt_group_alias"] = alias
    if simulated:
        if not seed.is_general_technique:
            entry["is_general_technique"] = False
        entry["num_turns"] = seed.num_turns
        for key in (
            "adversarial_chat_system_prompt_path",
            "simulated_target_system_prompt_path",
            "next_message_system_prompt_path",
            "pyrit_version",
        ):
            if getattr(seed, key):
                entry[key] = getattr(seed, key)
    elif seed.is_general_technique:
        entry["is_general_technique"] = True
    if not simulated and value_sha256_for(seed.data_type, seed.value) is None:
        # Media: the bytes' hash lets a re-import find the stored blob.
        entry["value_sha256"] = seed.value_sha256
    return entry


def dump_document(doc: Mapping[str, Any]) -> str:
    """YAML text for a document from build_document (UTF-8 characters kept, keys in order)."""
    return yaml.dump(
        dict(doc),
        Dumper=_Dumper,
        allow_unicode=True,
        sort_keys=False,
        default_flow_style=False,
        width=100,
    )
