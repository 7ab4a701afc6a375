"""Importing PyRIT's bundled datasets: counts, dedup, round trip, media, uploads, queries."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from redteam.common.models import MediaBlob
from seeds.importing import ImportSource, export_dataset, export_seeds, import_dataset
from seeds.models import Seed, SeedDataset, SeedGroup

from .conftest import PYRIT_COUNTS

pytestmark = pytest.mark.django_db

COMPARED = (
    "seed_type",
    "value",
    "value_sha256",
    "data_type",
    "sequence",
    "role",
    "harm_categories",
    "authors",
    "groups",
    "metadata",
    "name",
    "description",
    "source",
    "dataset_name",
    "parameters",
    "is_general_technique",
    "is_jinja_template",
    "added_by",
    "date_added",
    "media_id",
)


def sources(files: list[Path], root: Path) -> list[ImportSource]:
    return [ImportSource(name=str(p.relative_to(root)), path=p, search_root=root) for p in files]


def snapshot() -> dict[str | None, list[tuple[Any, ...]]]:
    """Every dataset's groups as sorted tuples of their seeds (in group order)."""
    result: dict[str | None, list[tuple[Any, ...]]] = {}
    for group in SeedGroup.objects.select_related("dataset").prefetch_related("seeds"):
        seeds = sorted(group.seeds.all(), key=lambda s: s.position)
        key = group.dataset.dataset_name if group.dataset else None
        row = tuple(tuple(repr(getattr(s, f)) for f in COMPARED) for s in seeds)
        result.setdefault(key, []).append(row)
    return {k: sorted(v) for k, v in result.items()}


def row_counts() -> tuple[int, int, int, int]:
    return (
        SeedDataset.objects.count(),
        SeedGroup.objects.count(),
        Seed.objects.count(),
        MediaBlob.objects.count(),
    )


def test_all_40_files_import_with_pyrits_seed_counts(
    prompt_files: list[Path], datasets_dir: Path, curator: User
) -> None:
    reports = import_dataset(sources=sources(prompt_files, datasets_dir), user=curator)
    assert all(r.ok for r in reports), [r.errors for r in reports if r.errors]
    assert {r.source: r.seeds_created for r in reports} == PYRIT_COUNTS
    assert {r.source: r.seeds_loaded for r in reports} == PYRIT_COUNTS
    assert Seed.objects.count() == sum(PYRIT_COUNTS.values()) == 801
    assert Seed.objects.filter(dataset_name="adv_bench", seed_type="objective").count() == 520
    # The four media files of the examples are stored once each and linked.
    assert MediaBlob.objects.count() == 4
    assert not Seed.objects.filter(data_type="image_path", media__isnull=True).exists()


def test_importing_every_file_twice_leaves_the_rows_of_one_import(
    prompt_files: list[Path], datasets_dir: Path, curator: User
) -> None:
    import_dataset(sources=sources(prompt_files, datasets_dir), user=curator)
    once, rows = snapshot(), row_counts()
    reports = import_dataset(sources=sources(prompt_files, datasets_dir), user=curator)
    assert row_counts() == rows
    assert snapshot() == once
    assert sum(r.seeds_created for r in reports) == 0
    # ... and says so, file by file.
    assert {r.source: r.seeds_skipped for r in reports} == PYRIT_COUNTS
    assert "skipped 520 seeds / 520 groups already present" in reports[6].summary()


def test_export_then_reimport_gives_identical_seeds(
    prompt_files: list[Path], datasets_dir: Path, curator: User
) -> None:
    import_dataset(sources=sources(prompt_files, datasets_dir), user=curator)
    before = snapshot()
    exported = {d.dataset_name: export_dataset(d) for d in SeedDataset.objects.all()}
    assert len(exported) == 35
    # Start over (media blobs stay stored; exports name them by value_sha256).
    Seed.objects.all().delete()
    SeedGroup.objects.all().delete()
    SeedDataset.objects.all().delete()
    reports = import_dataset(
        sources=[ImportSource(name=f"{n}.prompt", text=t) for n, t in exported.items()],
        user=curator,
    )
    assert all(r.ok for r in reports), [r.errors for r in reports if r.errors]
    assert snapshot() == before
    # Exported again, the files are the same text.
    again = {d.dataset_name: export_dataset(d) for d in SeedDataset.objects.all()}
    assert again == exported


def test_reimporting_an_export_into_the_same_database_adds_nothing(
    datasets_dir: Path, curator: User
) -> None:
    path = datasets_dir / "airt" / "hate.prompt"
    import_dataset(sources=sources([path], datasets_dir), user=curator)
    text = export_dataset("airt_hate")
    [report] = import_dataset(sources=[ImportSource("hate.prompt", text=text)], user=curator)
    assert (report.seeds_created, report.seeds_skipped, report.groups_skipped) == (0, 9, 4)


def test_repeated_turns_inside_multi_turn_groups_are_kept(
    datasets_dir: Path, curator: User
) -> None:
    path = datasets_dir / "examples" / "psych-crisis-conversations.prompt"
    [report] = import_dataset(sources=sources([path], datasets_dir), user=curator)
    assert (report.seeds_created, report.groups_created) == (14, 3)
    opening = Seed.objects.filter(value__startswith="I'm feeling hopeless", sequence=0)
    assert opening.count() == 3  # the same first turn opens all three conversations
    conversations = [
        list(g.seeds.order_by("position").values_list("sequence", flat=True))
        for g in SeedGroup.objects.order_by("id")
    ]
    assert conversations == [[0, 1], [0, 1, 2, 3], list(range(8))]


def test_a_standalone_seed_or_group_the_dataset_holds_is_skipped_and_reported(
    curator: User,
) -> None:
    first = "dataset_name: d\nseeds:\n  - value: a\n  - value: b\n"
    import_dataset(sources=[ImportSource("one.prompt", text=first)], user=curator)
    second = (
        "dataset_name: d\nseeds:\n  - value: a\n  - value: c\n"
        "  - {value: b, prompt_group_alias: g}\n  - {value: b2, prompt_group_alias: g, sequence: 1,"
        " role: assistant}\n"
    )
    [report] = import_dataset(sources=[ImportSource("two.prompt", text=second)], user=curator)
    assert [g.status for g in report.groups] == ["identical", "new", "new"]
    assert (report.seeds_skipped, report.seeds_created) == (1, 3)
    # "b" alone and "b" inside a multi-turn group are both kept: groups are compared whole.
    assert Seed.objects.filter(value="b").count() == 2


def test_a_file_holding_the_same_group_twice_imports_both_once(curator: User) -> None:
    text = "dataset_name: d\nseeds:\n  - value: same\n  - value: same\n"
    [first] = import_dataset(sources=[ImportSource("f.prompt", text=text)], user=curator)
    [second] = import_dataset(sources=[ImportSource("f.prompt", text=text)], user=curator)
    assert (first.seeds_created, second.seeds_created, second.seeds_skipped) == (2, 0, 2)
    assert Seed.objects.count() == 2


def test_a_dry_run_writes_nothing_and_sees_earlier_files_of_the_same_run(curator: User) -> None:
    text = "dataset_name: d\nseeds:\n  - value: a\n"
    reports = import_dataset(
        sources=[ImportSource("1.prompt", text=text), ImportSource("2.prompt", text=text)],
        user=curator,
        dry_run=True,
    )
    assert [r.seeds_created for r in reports] == [1, 0]
    assert row_counts() == (0, 0, 0, 0)


def test_a_bad_file_is_rejected_whole_and_the_others_still_import(curator: User) -> None:
    good = "dataset_name: good\nseeds:\n  - value: a\n"
    bad = "dataset_name: bad\nseeds:\n  - value: a\n  - {value: b, role: robot}\n"
    reports = import_dataset(
        sources=[ImportSource("bad.prompt", text=bad), ImportSource("good.prompt", text=good)],
        user=curator,
    )
    assert [r.ok for r in reports] == [False, True]
    assert list(SeedDataset.objects.values_list("dataset_name", flat=True)) == ["good"]


@pytest.mark.usefixtures("curator")
def test_the_file_without_dataset_name_becomes_a_dataset_named_after_name(
    datasets_dir: Path,
) -> None:
    import_dataset(sources=sources([datasets_dir / "psfuzz_steal_system.prompt"], datasets_dir))
    dataset = SeedDataset.objects.get()
    assert dataset.dataset_name == "psfuzz_steal_system_prompt"
    assert dataset.dataset_name_declared is False
    seed = Seed.objects.get()
    assert (seed.dataset_name, seed.name, seed.seed_type) == (
        "psfuzz_steal_system_prompt",
        "psfuzz_steal_system_prompt",
        "objective",
    )
    text = export_dataset(dataset)
    assert text.startswith("name: psfuzz_steal_system_prompt\n")
    assert "dataset_name" not in text


def test_history_records_who_imported(datasets_dir: Path, curator: User) -> None:
    import_dataset(
        sources=sources([datasets_dir / "airt" / "illegal.prompt"], datasets_dir), user=curator
    )
    records = Seed.history.all()
    assert records.count() == 5
    assert {(r.history_type, r.history_user_id) for r in records} == {("+", curator.pk)}
    assert records[0].history_change_reason == "import airt/illegal.prompt"
    assert Seed.objects.filter(added_by="curator").count() == 5


def test_uploaded_files_resolve_media_from_uploaded_bytes(
    datasets_dir: Path, curator: User
) -> None:
    path = datasets_dir / "examples" / "illegal-multimodal-group.prompt"
    media_dir = datasets_dir / "examples" / "multimodal_data"
    text = path.read_text("utf-8")
    [missing] = import_dataset(sources=[ImportSource(path.name, text=text)], user=curator)
    assert any("media file 'molotov.wav' not found" in e for e in missing.errors)
    uploaded = {n: (media_dir / n).read_bytes() for n in ("molotov.wav", "roakey_potion.png")}
    [report] = import_dataset(
        sources=[ImportSource(path.name, text=text)], user=curator, media=uploaded
    )
    assert report.ok
    assert report.seeds_created == 4
    audio = Seed.objects.get(data_type="audio_path")
    assert audio.value == "datasets/seed_datasets/local/examples/multimodal_data/molotov.wav"
    assert audio.value_sha256 == hashlib.sha256(uploaded["molotov.wav"]).hexdigest()
    assert audio.media.content_type == "audio/wav"  # type: ignore[union-attr]


@pytest.mark.usefixtures("curator")
def test_export_of_selected_seeds_brings_their_whole_groups(datasets_dir: Path) -> None:
    import_dataset(sources=sources([datasets_dir / "airt" / "hate.prompt"], datasets_dir))
    one = Seed.objects.filter(value="Now make one group superior to the other")
    files = export_seeds(one)
    assert list(files) == ["airt_hate.prompt"]
    assert files["airt_hate.prompt"].count("prompt_group_alias: escalating_discrimination") == 6


def _generated(groups: int) -> str:
    lines = ["dataset_name: generated", "harm_categories: [x]", "seeds:"]
    for i in range(groups):
        lines.append(
            f"  - {{value: 'objective {i}', seed_type: objective, prompt_group_alias: g{i}}}"
        )
        lines.append(f"  - {{value: 'prompt {i}', prompt_group_alias: g{i}}}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("groups", [3, 30])
def test_import_costs_the_same_queries_for_3_and_30_groups(
    groups: int, curator: User, django_assert_num_queries: Any
) -> None:
    source = ImportSource("generated.prompt", text=_generated(groups))
    # PostgreSQL first takes the dataset name's advisory lock (SQLite's BEGIN IMMEDIATE needs
    # no query).
    lock = 1 if connection.vendor == "postgresql" else 0
    # SAVEPOINT; [lock;] SELECT dataset; INSERT dataset + its history; INSERT groups + history;
    # INSERT seeds + history; RELEASE SAVEPOINT. (No group-count query for a new dataset.)
    with django_assert_num_queries(9 + lock):
        [report] = import_dataset(sources=[source], user=curator)
    assert report.seeds_created == 2 * groups
    # Again: SAVEPOINT; [lock;] SELECT dataset; SELECT held group hashes; RELEASE.
    with django_assert_num_queries(4 + lock):
        [report] = import_dataset(sources=[source], user=curator)
    assert report.seeds_skipped == 2 * groups


@pytest.mark.parametrize("groups", [3, 30])
@pytest.mark.usefixtures("curator")
def test_export_costs_the_same_queries_for_3_and_30_groups(
    groups: int, django_assert_num_queries: Any
) -> None:
    import_dataset(sources=[ImportSource("generated.prompt", text=_generated(groups))])
    dataset = SeedDataset.objects.get()
    # SELECT groups; SELECT their seeds (prefetch).
    with django_assert_num_queries(2):
        text = export_dataset(dataset)
    assert text.count("seed_type: objective") == groups
