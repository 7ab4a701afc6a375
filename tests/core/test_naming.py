"""Display names and kinds of identifiers (redteam.core.identity.display), on real dumps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from redteam.core.identity import ComponentIdentifier
from redteam.core.identity.display import (
    MAX_DISPLAY_NAME,
    display_name,
    identifier_kind,
    model_label,
)


def _targets(fixtures_dir: Path) -> dict[str, dict[str, Any]]:
    """The conversation target dumps of the PyRIT 1.1 run, by hash."""
    rows = (fixtures_dir / "pyrit-1.1" / "conversations.jsonl").read_text().splitlines()
    dumps = [json.loads(line)["target_identifier"] for line in rows if line.strip()]
    return {d["hash"]: d for d in dumps if d}


def _name(dump: dict[str, Any]) -> str:
    identifier = ComponentIdentifier.model_validate(dump)
    return display_name(identifier.class_name, identifier.params)


def test_fixture_target_with_deployment_and_underlying_model(fixtures_dir: Path) -> None:
    vision = _targets(fixtures_dir)[
        "9eb19b98f288704411bd996cd6be5b6af69b353840140744b62686210273abde"
    ]
    assert _name(vision) == "ScriptedChatTarget · gpt-4o (deployment contoso-vision)"


def test_fixture_target_with_empty_underlying_model_uses_model_name(fixtures_dir: Path) -> None:
    filtered = _targets(fixtures_dir)[
        "223cf7265b22925a37794b01aa654c06b37adc4d7d719809c7788b02dcb206af"
    ]
    assert _name(filtered) == "ScriptedChatTarget · filtered"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"model_name": "gpt-4o"}, "OpenAIChatTarget · gpt-4o"),
        ({"underlying_model_name": "gpt-4o"}, "OpenAIChatTarget · gpt-4o"),
        ({"model_name": "gpt-4o", "underlying_model_name": "gpt-4o"}, "OpenAIChatTarget · gpt-4o"),
        (
            {"model_name": "judge-deploy", "underlying_model_name": "gpt-4o"},
            "OpenAIChatTarget · gpt-4o (deployment judge-deploy)",
        ),
        ({"deployment_name": "my-dep"}, "OpenAIChatTarget · deployment my-dep"),
        (
            {"model_name": "gpt-4o", "deployment_name": "my-dep"},
            "OpenAIChatTarget · gpt-4o (deployment my-dep)",
        ),
        ({"model": "llama3"}, "OpenAIChatTarget · llama3"),
        ({}, "OpenAIChatTarget"),
        ({"endpoint": "https://x", "temperature": 0.7}, "OpenAIChatTarget"),
        # Only strings name a model.
        ({"model_name": 42, "underlying_model_name": ["gpt"]}, "OpenAIChatTarget"),
        ({"model_name": "  \n "}, "OpenAIChatTarget"),
    ],
)
def test_target_names(params: dict[str, Any], expected: str) -> None:
    assert display_name("OpenAIChatTarget", params) == expected


def test_scorers_are_named_by_class_and_model() -> None:
    assert display_name("SubStringScorer", {"substring": "Sure"}) == "SubStringScorer"
    assert (
        display_name("SelfAskRefusalScorer", {"model_name": "gpt-4o-mini"})
        == "SelfAskRefusalScorer · gpt-4o-mini"
    )
    assert display_name("HumanReviewScorer", {"reviewer": "roakey"}) == "HumanReviewScorer"


def test_missing_params_and_class() -> None:
    assert display_name("OpenAIChatTarget", None) == "OpenAIChatTarget"
    assert display_name("", {}) == "(unnamed)"
    assert model_label(None) == ""


def test_hostile_params_are_bounded_and_one_line() -> None:
    huge = "x" * 1_000_000
    name = display_name("T" * 5000, {"model_name": huge, "underlying_model_name": "a\nb\tc" + huge})
    assert len(name) <= MAX_DISPLAY_NAME
    assert "\n" not in name
    assert "\t" not in name
    assert name.startswith("T" * 99 + "…")
    spaced = display_name("OpenAIChatTarget", {"model_name": "gpt\n\n-4o <script>"})
    # Markup is kept as text (templates escape it); whitespace runs become one space.
    assert spaced == "OpenAIChatTarget · gpt -4o <script>"


@pytest.mark.parametrize(
    ("class_name", "module", "kind"),
    [
        ("OpenAIChatTarget", "pyrit.prompt_target.openai.openai_chat_target", "target"),
        ("ScriptedChatTarget", "steering.fixtures.scripted_chat_target", "target"),
        ("SubStringScorer", "pyrit.score.true_false.substring_scorer", "scorer"),
        ("HumanReviewScorer", "redteam.review", "scorer"),
        ("ROT13Converter", "pyrit.prompt_converter.rot13_converter", "converter"),
        ("PromptSendingAttack", "pyrit.executor.attack.single_turn.prompt_sending", "attack"),
        ("AtomicAttack", "pyrit.scenario.core.atomic_attack", "attack"),
        ("Custom", "pyrit.prompt_target.custom", "target"),
        ("Judge", "pyrit.score.custom", "scorer"),
        ("SeedPrompt", "pyrit.models.seeds.seed_prompt", "other"),
        ("A", "m", "other"),
    ],
)
def test_kinds(class_name: str, module: str, kind: str) -> None:
    assert identifier_kind(class_name, module) == kind
