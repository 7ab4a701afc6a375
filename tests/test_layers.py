"""The layering written in pyproject.toml holds, and would catch an import that breaks it.

`make check` runs the same contracts through lint-imports; these tests keep them in the suite
that CI runs, and prove the layers contract is not vacuous.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("redteam", "memory", "scoring", "seeds")


def _config() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        config: dict[str, Any] = tomllib.load(f)["tool"]["importlinter"]
    return config


def _layers() -> list[grimp.Layer]:
    contract = next(c for c in _config()["contracts"] if c["id"] == "layers")
    layers = []
    for layer in contract["layers"]:
        independent = ":" not in layer
        names = [n.strip() for n in re.split(r"[:|]", layer)]
        layers.append(grimp.Layer(*names, independent=independent))
    return layers


@pytest.fixture
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def test_every_contract_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert lint_imports(no_cache=True, no_logo=True) == 0


def test_the_layers_are_the_documented_ones() -> None:
    assert [sorted(layer.module_tails) for layer in _layers()] == [
        ["redteam.site", "redteam.urls"],
        ["scoring"],
        ["memory"],
        ["seeds"],
        ["redteam.common"],
        ["redteam.core"],
    ]


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("seeds.models", "memory.models"),
        ("memory.store_pieces", "scoring.tallies"),
        ("redteam.common.roles", "redteam.site.ingest"),
        ("redteam.core.trees", "redteam.common.media"),
        ("scoring.views", "redteam.site.ingest"),
    ],
)
def test_an_upward_import_is_reported(
    graph: grimp.ImportGraph, importer: str, imported: str
) -> None:
    assert not graph.find_illegal_dependencies_for_layers(_layers())
    graph.add_import(importer=importer, imported=imported)
    illegal = graph.find_illegal_dependencies_for_layers(_layers())
    assert any(
        importer in route.heads and imported in route.tails
        for dependency in illegal
        for route in dependency.routes
    )


def test_no_layer_is_crossed_through_the_app_registry_or_dotted_paths() -> None:
    """Models and services are imported, never looked up by name (migrations excepted:
    their historical models come from the registry by design)."""
    lookups = re.compile(r"\b(get_model|import_string)\(")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if lookups.search(line)
    ]
    assert offenders == []
