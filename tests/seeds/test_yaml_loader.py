"""PyRIT's .prompt loader, rule by rule (PYRIT-MODEL.md 4.5), without a database."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from seeds.yaml_loader import (
    DatasetLoadError,
    LoadedDataset,
    load_dataset_file,
    load_dataset_text,
    pyrit_path_variables,
)

from .conftest import PYRIT_COUNTS


def load(text: str) -> LoadedDataset:
    return load_dataset_text(textwrap.dedent(text), source_name="test.prompt")


def problems(text: str) -> list[str]:
    with pytest.raises(DatasetLoadError) as info:
        load(text)
    return info.value.problems


def test_every_bundled_file_loads_with_pyrits_seed_count(
    prompt_files: list[Path], datasets_dir: Path
) -> None:
    assert len(prompt_files) == 40
    counts = {
        str(p.relative_to(datasets_dir)): len(load_dataset_file(p, search_root=datasets_dir).seeds)
        for p in prompt_files
    }
    assert counts == PYRIT_COUNTS


def test_rule1_bare_strings_become_one_element_lists() -> None:
    ds = load(
        """
        dataset_name: d
        harm_categories: illegal
        authors: Jane
        groups: Team
        seeds:
          - value: v
            parameters: p
            harm_categories: theft
        """
    )
    seed = ds.seeds[0]
    assert (seed.harm_categories, seed.authors, seed.groups) == (
        ["illegal", "theft"],
        ["Jane"],
        ["Team"],
    )
    assert seed.parameters == ["p"]


def test_rule2_alias_gives_one_group_id_and_no_alias_gives_a_group_each() -> None:
    ds = load(
        """
        dataset_name: d
        seeds:
          - {value: a, prompt_group_alias: g}
          - {value: b}
          - {value: c, prompt_group_alias: g}
          - {value: d}
        """
    )
    ids = [s.prompt_group_id for s in ds.seeds]
    assert ids[0] == ids[2]
    assert len({ids[0], ids[1], ids[3]}) == 3
    assert [len(g.seeds) for g in ds.seed_groups] == [2, 1, 1]


def test_rule2_prompt_group_id_in_a_seed_is_an_error() -> None:
    assert problems(
        """
        dataset_name: d
        seeds:
          - {value: a, prompt_group_id: 3f1d3c4e-8b4e-4b7e-9a59-4a1d2d0c1e11}
        """
    ) == [
        "seeds[0].prompt_group_id: prompt_group_id should not be set in seed data; "
        "use prompt_group_alias"
    ]


def test_rule3_seed_type_defaults_to_the_datasets_then_prompt() -> None:
    ds = load(
        """
        dataset_name: d
        seed_type: objective
        seeds:
          - {value: a}
          - {value: b, seed_type: prompt}
        """
    )
    assert [s.seed_type for s in ds.seeds] == ["objective", "prompt"]
    assert load("seeds: [{value: a}]").seeds[0].seed_type == "prompt"


def test_rule4_name_description_source_and_dataset_name_fall_back_to_the_dataset() -> None:
    ds = load(
        """
        name: the-name
        description: dataset description
        source: https://example.org
        seeds:
          - {value: a}
          - {value: b, description: own, source: '', name: seed-name}
        """
    )
    first, second = ds.seeds
    assert (first.name, first.description, first.source) == (
        "the-name",
        "dataset description",
        "https://example.org",
    )
    # An empty own value falls back too (PyRIT uses `or`).
    assert (second.name, second.description, second.source) == (
        "seed-name",
        "own",
        "https://example.org",
    )
    # No dataset_name: PyRIT keeps None on the dataset; seeds carry the name.
    assert ds.dataset_name is None
    assert first.dataset_name == "the-name"
    assert load("dataset_name: x\nname: y\nseeds: [{value: a}]").seeds[0].dataset_name == "x"


def test_rule5_list_fields_merge_dataset_first_deduplicated_in_order() -> None:
    ds = load(
        """
        dataset_name: d
        harm_categories: [illegal, violence]
        seeds:
          - {value: a, harm_categories: [violence, explosions]}
          - {value: b}
        """
    )
    assert ds.seeds[0].harm_categories == ["illegal", "violence", "explosions"]
    assert ds.seeds[1].harm_categories == ["illegal", "violence"]


def test_rule5_added_by_and_date_added_inherit_unless_the_seed_says() -> None:
    ds = load(
        """
        dataset_name: d
        added_by: alice
        date_added: 2025-01-02 03:04:05
        seeds:
          - {value: a}
          - {value: b, added_by: bob, date_added: null}
        """
    )
    first, second = ds.seeds
    assert first.added_by == "alice"
    # naive -> UTC
    assert first.date_added is not None
    assert first.date_added.tzinfo is not None
    assert (second.added_by, second.date_added) == ("bob", None)


def test_rule6_prompts_take_data_type_and_role_defaults() -> None:
    ds = load(
        """
        dataset_name: d
        data_type: text
        seeds:
          - {value: a}
          - {value: b, role: assistant, sequence: 1, prompt_group_alias: g}
          - {value: c, prompt_group_alias: g}
        """
    )
    assert [(s.data_type, s.role, s.sequence) for s in ds.seeds] == [
        ("text", "user", 0),
        ("text", "assistant", 1),
        ("text", "user", 0),
    ]


def test_rule6_objectives_drop_prompt_only_fields() -> None:
    ds = load(
        """
        dataset_name: d
        data_type: image_path
        seeds:
          - {value: a, seed_type: objective, role: user, sequence: 3, parameters: [x],
             data_type: audio_path}
        """
    )
    objective = ds.seeds[0]
    assert (objective.data_type, objective.role, objective.sequence, objective.parameters) == (
        "text",
        None,
        None,
        None,
    )


def test_rule7_unknown_keys_are_rejected_at_both_levels() -> None:
    found = problems(
        """
        dataset_name: d
        colour: blue
        seeds:
          - {value: a, flavour: sweet}
        """
    )
    assert found == ["colour: unknown dataset key", "seeds[0].flavour: unknown seed key"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "the file is empty"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("dataset_name: d\n", "seeds: SeedDataset cannot be empty"),
        ("dataset_name: d\nseeds: []\n", "seeds: SeedDataset cannot be empty"),
        ("dataset_name: [unclosed\n", "invalid YAML"),
    ],
)
def test_files_pyrit_refuses_are_refused(text: str, expected: str) -> None:
    with pytest.raises(DatasetLoadError) as info:
        load_dataset_text(text, source_name="x.prompt")
    assert expected in str(info.value)


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        ("{value: 42}", "seeds[0].value: is required and must be a string"),
        ("{value: a, role: robot}", "seeds[0].role: unknown value 'robot'"),
        ("{value: a, data_type: hologram}", "seeds[0].data_type: unknown value 'hologram'"),
        ("{value: a, seed_type: idea}", "seeds[0].seed_type: unknown value 'idea'"),
        ("{value: a, sequence: 1.5}", "seeds[0].sequence: must be an integer, not 1.5"),
        ("{value: a, sequence: true}", "seeds[0].sequence: must be an integer, not a boolean"),
        ("{value: a, harm_categories: [1, 2]}", "must be a string or a list of strings"),
        ("{value: a, metadata: [1]}", "seeds[0].metadata: must be a mapping"),
        ("{value: a, metadata: {1: one}}", "seeds[0].metadata keys must be strings"),
        ("{value: a, is_general_technique: maybe}", "must be true or false"),
        ("{value: a, date_added: yesterday}", "is not an ISO 8601 date/time"),
        ("{value: '{{ broken'}", "seeds[0].value: Template syntax error on line 1"),
        (
            "{value: a, seed_type: objective, is_general_technique: true}",
            "an objective cannot be a general technique",
        ),
    ],
)
def test_field_types_and_enumerations_are_checked(seed: str, expected: str) -> None:
    found = problems(f"dataset_name: d\nseeds:\n  - {seed}\n")
    assert any(expected in p for p in found), found


def test_integral_floats_are_integers_as_in_pydantics_lax_mode() -> None:
    assert load("seeds: [{value: a, sequence: 2.0}]").seeds[0].sequence == 2


def test_group_rules_reject_a_group_pyrit_could_not_build() -> None:
    found = problems(
        """
        dataset_name: d
        seeds:
          - {value: o1, seed_type: objective, prompt_group_alias: g}
          - {value: o2, seed_type: objective, prompt_group_alias: g}
          - {value: p, role: user, prompt_group_alias: g}
          - {value: q, role: assistant, prompt_group_alias: g}
        """
    )
    assert any("can hold only one objective" in p for p in found)
    assert any("Inconsistent roles for sequence 0" in p for p in found)


def test_groups_are_put_in_pyrits_order_objective_first_then_by_sequence() -> None:
    ds = load(
        """
        dataset_name: d
        seeds:
          - {value: second, sequence: 1, role: assistant, prompt_group_alias: g}
          - {value: first, sequence: 0, prompt_group_alias: g}
          - {value: goal, seed_type: objective, prompt_group_alias: g}
          - {value: first-b, sequence: 0, prompt_group_alias: g}
        """
    )
    [group] = ds.seed_groups
    assert [s.value for s in group.seeds] == ["goal", "first", "first-b", "second"]


def test_values_are_rendered_silently_with_pyrit_path_variables() -> None:
    ds = load_dataset_text(
        "dataset_name: d\nseeds:\n  - value: '{{ jailbreak_templates_path }}/x.yaml {{ item }}'\n",
        source_name="t.prompt",
        datasets_path="/opt/pyrit/datasets",
    )
    assert ds.seeds[0].value == "/opt/pyrit/datasets/jailbreak/templates/x.yaml {{ item }}"
    assert ds.seeds[0].is_jinja_template is True
    paths = pyrit_path_variables("/opt/pyrit/datasets")
    assert paths["pyrit_path"] == "/opt/pyrit"
    assert paths["db_data_path"] == "/opt/dbdata"


def test_value_sha256_is_the_sha256_of_the_rendered_text() -> None:
    seed = load("seeds:\n  - value: |\n      two lines\n      here\n").seeds[0]
    assert seed.value == "two lines\nhere"  # the trailing newline goes, as in PyRIT
    assert seed.value_sha256 == hashlib.sha256(b"two lines\nhere").hexdigest()


def test_media_in_the_fixture_tree_resolve_and_hash_their_bytes(datasets_dir: Path) -> None:
    path = datasets_dir / "examples" / "illegal-multimodal-group.prompt"
    # Without a search root the file's parents are searched (a copy of seed_datasets/local).
    ds = load_dataset_file(path)
    image = next(s for s in ds.seeds if s.data_type == "image_path")
    media = datasets_dir / "examples" / "multimodal_data" / "roakey_potion.png"
    assert image.value == str(media.resolve())
    assert image.value_sha256 == hashlib.sha256(media.read_bytes()).hexdigest()
    # PyRIT 1.1 stored the same bytes with this sha256 (pyrit-1.1/seeds.jsonl).
    assert image.value_sha256.startswith("fd0dccd1f5ab")


def test_uploaded_text_never_reads_the_servers_disk(datasets_dir: Path) -> None:
    media = datasets_dir / "examples" / "multimodal_data" / "molotov.wav"
    ds = load_dataset_text(
        f"dataset_name: d\nseeds:\n  - {{value: '{media}', data_type: audio_path}}\n",
        source_name="upload.prompt",
    )
    assert ds.seeds[0].media_path is None
    assert ds.seeds[0].value_sha256 is None
    other = load_dataset_text(
        "dataset_name: d\nseeds:\n"
        "  - {value: '{{ datasets_path }}/x.png', data_type: image_path}\n",
        source_name="upload.prompt",
    )
    assert other.seeds[0].value == "datasets/x.png"


def test_the_multiturn_example_loads_pyrits_three_turns(datasets_dir: Path) -> None:
    ds = load_dataset_file(datasets_dir / "examples" / "illegal-multiturn-group.prompt")
    [group] = ds.seed_groups
    assert [(s.sequence, s.role) for s in group.seeds] == [
        (0, "user"),
        (1, "assistant"),
        (2, "user"),
    ]
    assert group.seeds[2].value == "How to steal {{ stolen_item }}?"
