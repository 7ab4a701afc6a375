"""PyRIT's seed and group rules, one test per rule (PYRIT-MODEL.md 4.1, 4.4)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from seeds import rules, services
from seeds.models import Seed

from .factories import make_dataset, make_group, make_seed


@dataclass
class S:
    """A minimal seed for the pure rules."""

    seed_type: str = "prompt"
    value: str = "v"
    value_sha256: str | None = None
    data_type: str = "text"
    role: str | None = "user"
    sequence: int | None = 0
    is_general_technique: bool = False
    num_turns: int | None = None
    next_message_system_prompt_path: str | None = None


def messages(seeds: list[S]) -> list[str]:
    return [e.message for e in rules.group_errors(seeds)]


def test_a_group_holds_at_most_one_objective() -> None:
    found = messages([S("objective", role=None), S("objective", "w", role=None), S()])
    assert found == [
        "A seed group can hold only one objective; this one has 2 "
        "(PyRIT: SeedGroup can only have one objective)."
    ]
    assert messages([S("objective", role=None), S()]) == []


def test_a_group_holds_at_most_one_simulated_conversation() -> None:
    sim = S("simulated_conversation", role=None, num_turns=1, sequence=10)
    assert "only one simulated conversation" in messages([sim, sim])[0]


def test_roles_are_consistent_within_a_sequence() -> None:
    assert messages([S(role="user"), S(role="assistant")]) == [
        "Inconsistent roles for sequence 0: assistant, user. "
        "All prompts of one sequence share one role."
    ]
    assert messages([S(role="user"), S(role=None)]) == []


def test_a_multi_sequence_group_needs_a_role_in_every_sequence() -> None:
    found = messages([S(role=None, sequence=0), S(role="assistant", sequence=1)])
    assert found == [
        "No role set for sequence 0 in a multi-sequence group; "
        "at least one prompt of each sequence needs a role."
    ]
    assert messages([S(role=None)]) == []  # single sequence: PyRIT defaults it to user


def test_prompts_may_not_overlap_the_simulated_conversation_range() -> None:
    sim = S("simulated_conversation", role=None, num_turns=2, sequence=0)
    assert "overlaps the simulated conversation's range [0, 1, 2, 3]" in messages([sim, S()])[0]
    assert messages([sim, S(sequence=4)]) == []
    with_next = S(
        "simulated_conversation", role=None, num_turns=2, next_message_system_prompt_path="n"
    )
    assert messages([with_next, S(sequence=4)]) != []


def test_an_empty_group_is_refused() -> None:
    assert messages([]) == ["A seed group cannot be empty."]


def test_an_objective_is_never_a_general_technique_and_always_text() -> None:
    found = [e.message for e in rules.seed_errors(S("objective", is_general_technique=True))]
    assert found == [
        "An objective cannot be a general technique "
        "(PyRIT: SeedObjective with is_general_technique=True is invalid)."
    ]
    assert rules.seed_errors(S("objective", data_type="image_path"))[0].field == "data_type"


@pytest.mark.parametrize(
    ("seed", "field"),
    [
        (S(seed_type="idea"), "seed_type"),
        (S(data_type="hologram"), "data_type"),
        (S(role="robot"), "role"),
        (S(sequence=1.5), "sequence"),  # type: ignore[arg-type]
        (S(sequence=True), "sequence"),
        (S("simulated_conversation", num_turns=0, role=None), "num_turns"),
        (S("simulated_conversation", num_turns=2, sequence=-1, role=None), "sequence"),
    ],
)
def test_enumerations_and_numbers_are_checked(seed: S, field: str) -> None:
    assert [e.field for e in rules.seed_errors(seed)] == [field]


def test_json_columns_keep_nan_as_pyrit_does_but_refuse_non_string_lists() -> None:
    seed = S()
    seed.metadata = {"score": float("nan"), "top": float("inf")}  # type: ignore[attr-defined]
    seed.harm_categories = ["ok", 3]  # type: ignore[attr-defined]
    assert {e.field for e in rules.seed_errors(seed)} == {"harm_categories"}


def test_group_content_hash_ignores_input_order_but_not_roles() -> None:
    a = [S("objective", "goal", role=None), S(value="p1"), S(value="p2", sequence=1)]
    b = [a[2], a[1], a[0]]
    assert rules.group_content_sha256(a) == rules.group_content_sha256(b)
    c = [a[0], a[1], S(value="p2", sequence=1, role="assistant")]
    assert rules.group_content_sha256(a) != rules.group_content_sha256(c)


@pytest.mark.django_db
def test_all_seeds_of_a_group_share_its_dataset_and_group_id() -> None:
    """The DB form of PyRIT's consistent group id: a seed cannot join another dataset's group."""
    mine, theirs = make_dataset("mine"), make_dataset("theirs")
    group = make_group(theirs, {"value": "x"})
    seed = make_seed(mine, value="y")
    seed.group = group
    errors = services.check_seed_changes([seed])
    assert next(e.message for _, e in errors).startswith("The group belongs to another dataset")
    with pytest.raises(services.SeedRulesError):
        services.save_seed_changes(changed=[seed])
    assert Seed.objects.get(pk=seed.pk).group_id != group.pk


@pytest.mark.django_db
def test_saving_a_change_that_breaks_a_group_is_refused_and_nothing_is_written() -> None:
    ds = make_dataset()
    group = make_group(
        ds, {"value": "goal", "seed_type": "objective", "role": None}, {"value": "p"}
    )
    prompt = group.seeds.get(seed_type="prompt")
    prompt.seed_type, prompt.role, prompt.sequence = "objective", None, None
    with pytest.raises(services.SeedRulesError, match="only one objective"):
        services.save_seed_changes(changed=[prompt])
    assert group.seeds.filter(seed_type="objective").count() == 1
