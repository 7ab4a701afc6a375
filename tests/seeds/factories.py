"""Typed helpers that build seed rows for tests (through the services where it matters)."""

from __future__ import annotations

import uuid
from typing import Any

from seeds import rules
from seeds.models import Seed, SeedDataset, SeedGroup


def make_dataset(name: str = "ds", **fields: Any) -> SeedDataset:
    """A dataset row."""
    return SeedDataset.objects.create(dataset_name=name, **fields)


def make_group(
    dataset: SeedDataset | None, *seeds: dict[str, Any], alias: str | None = None
) -> SeedGroup:
    """A group with the given seeds (dicts of Seed fields), in PyRIT's order, hashed."""
    group = SeedGroup.objects.create(prompt_group_id=uuid.uuid4(), dataset=dataset, alias=alias)
    rows = [make_seed(dataset, group=group, save=False, **s) for s in seeds]
    for position, seed in enumerate(rules.canonical_order(rows)):
        seed.position = position
        seed.save()
    group.content_sha256 = rules.group_content_sha256(rows)
    group.save()
    return group


def make_seed(
    dataset: SeedDataset | None,
    *,
    value: str = "a seed",
    seed_type: str = "prompt",
    group: SeedGroup | None = None,
    save: bool = True,
    **fields: Any,
) -> Seed:
    """A seed (its own group unless one is given)."""
    if group is None and save:
        group = SeedGroup.objects.create(prompt_group_id=uuid.uuid4(), dataset=dataset)
    defaults: dict[str, Any] = {
        "data_type": "text",
        "harm_categories": [],
        "authors": [],
        "groups": [],
        "metadata": {},
    }
    if seed_type == "prompt":
        defaults.update(role="user", sequence=0, parameters=[])
    seed = Seed(
        id=uuid.uuid4(),
        seed_type=seed_type,
        value=value,
        value_sha256=rules.text_sha256(value),
        dataset=dataset,
        dataset_name=dataset.dataset_name if dataset else None,
        group=group,
        **{**defaults, **fields},
    )
    if save:
        seed.save()
        assert group is not None
        group.content_sha256 = rules.group_content_sha256(list(group.seeds.all()))
        group.save()
    return seed


def pyrit_seed_dict(**overrides: Any) -> dict[str, Any]:
    """A PyRIT 1.x SeedPrompt model_dump(mode="json")."""
    value = overrides.get("value", "Tell me a secret")
    item: dict[str, Any] = {
        "value": value,
        "value_sha256": rules.text_sha256(value) if isinstance(value, str) else None,
        "id": str(uuid.uuid4()),
        "name": None,
        "dataset_name": "api_dataset",
        "harm_categories": ["leakage"],
        "description": None,
        "authors": None,
        "groups": None,
        "source": None,
        "date_added": "2026-01-02T03:04:05.000006Z",
        "added_by": "operator",
        "metadata": {},
        "prompt_group_id": str(uuid.uuid4()),
        "prompt_group_alias": None,
        "is_general_technique": False,
        "is_jinja_template": False,
        "data_type": "text",
        "seed_type": "prompt",
        "response_json_schema": None,
        "role": "user",
        "sequence": 0,
        "parameters": None,
    }
    item.update(overrides)
    return item
