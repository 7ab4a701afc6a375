"""manage.py import_seed_dataset / export_seed_dataset."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from seeds.models import Seed, SeedDataset

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err, verbosity=0)
    return out.getvalue(), err.getvalue()


def test_import_a_folder_reports_created_then_skipped_per_file(
    datasets_dir: Path, curator: User
) -> None:
    out, _ = run("import_seed_dataset", str(datasets_dir / "airt"), "--user", "curator")
    assert "hate.prompt: airt_hate: 9 seeds in 4 groups; created 9 seeds / 4 groups" in out
    assert out.rstrip().endswith(
        "14 file(s): created 72 seeds, skipped 0 already present, 0 file(s) rejected."
    )
    out, _ = run("import_seed_dataset", str(datasets_dir / "airt"))
    assert "skipped 9 seeds / 4 groups already present" in out
    assert Seed.objects.count() == 72
    assert Seed.history.filter(history_user=curator).count() == 72


def test_import_a_single_file_finds_its_media_above_it(datasets_dir: Path) -> None:
    path = datasets_dir / "examples" / "illegal-multimodal-dataset.prompt"
    out, _ = run("import_seed_dataset", str(path))
    assert "created 8 seeds / 6 groups" in out
    assert Seed.objects.filter(media__isnull=False).count() == 3


def test_dry_run_writes_nothing(datasets_dir: Path) -> None:
    out, _ = run("import_seed_dataset", str(datasets_dir / "adv_bench.prompt"), "--dry-run")
    assert "would create 520 seeds" in out
    assert Seed.objects.count() == 0


def test_a_rejected_file_fails_the_command_and_names_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.prompt"
    bad.write_text("dataset_name: d\nseeds:\n  - {value: a, role: robot}\n", "utf-8")
    with pytest.raises(CommandError, match="1 file"):
        run("import_seed_dataset", str(bad))
    assert SeedDataset.objects.count() == 0


def test_missing_paths_and_users_are_errors(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="neither a file nor a folder"):
        run("import_seed_dataset", str(tmp_path / "nope"))
    with pytest.raises(CommandError, match=r"No \.prompt files"):
        run("import_seed_dataset", str(tmp_path))
    with pytest.raises(CommandError, match="No user named"):
        run("import_seed_dataset", str(tmp_path), "--user", "ghost")


def test_export_writes_yaml_that_imports_back_to_nothing_new(
    datasets_dir: Path, tmp_path: Path
) -> None:
    run("import_seed_dataset", str(datasets_dir / "airt" / "illegal.prompt"))
    out, _ = run("export_seed_dataset", "airt_illegal")
    assert out.startswith("dataset_name: airt_illegal\n")
    target = tmp_path / "out.prompt"
    run("export_seed_dataset", "airt_illegal", "-o", str(target))
    assert target.read_text("utf-8") == out
    again, _ = run("import_seed_dataset", str(target))
    assert "created 0 seeds / 0 groups, skipped 5 seeds / 5 groups" in again
    with pytest.raises(CommandError, match="No dataset named"):
        run("export_seed_dataset", "nope")
