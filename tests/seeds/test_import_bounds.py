"""Hostile `.prompt` files: alias bombs, paths out of the import folder, media that lie.

Each must end in a clear per-file or per-seed error within a generous 5 s ceiling; nothing
outside the import folder is read, and nothing is stored for a rejected file.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from redteam.common.models import MediaBlob
from seeds.importing import ImportSource, import_dataset
from seeds.models import Seed
from seeds.yaml_loader import (
    MAX_YAML_ALIASES,
    MAX_YAML_EXPANDED_NODES,
    DatasetLoadError,
    load_dataset_file,
    load_dataset_text,
)

CEILING_SECONDS = 5.0
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 32


@pytest.fixture
def ceiling() -> Iterator[None]:
    """Fail the test if it took longer than the generous ceiling."""
    started = time.monotonic()
    yield
    assert time.monotonic() - started < CEILING_SECONDS


def alias_bomb(levels: int, fan_out: int, leaf: str = "lol") -> str:
    """The billion-laughs shape: each level lists the previous one `fan_out` times."""
    lines = [f"a0: &a0 [{leaf!r}]"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * fan_out)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("dataset_name: bomb")
    lines.append(f"seeds:\n  - value: x\n    metadata: {{bomb: *a{levels}}}")
    return "\n".join(lines) + "\n"


def load_problems(text: str) -> list[str]:
    with pytest.raises(DatasetLoadError) as info:
        load_dataset_text(text, source_name="hostile.prompt")
    return info.value.problems


@pytest.mark.usefixtures("ceiling")
@pytest.mark.parametrize(("levels", "fan_out"), [(7, 10), (9, 10), (30, 2), (5, 40), (3, 1000)])
def test_alias_bombs_are_refused_before_anything_walks_them(levels: int, fan_out: int) -> None:
    [problem] = load_problems(alias_bomb(levels, fan_out))
    assert "invalid YAML" in problem
    assert f"more than {MAX_YAML_EXPANDED_NODES} nodes" in problem or "aliases" in problem


@pytest.mark.usefixtures("ceiling")
def test_a_long_string_repeated_by_aliases_is_refused() -> None:
    big = "x" * 200_000
    text = f"big: &big {big}\ndataset_name: d\nseeds:\n" + "".join(
        "  - value: *big\n" for _ in range(40)
    )
    [problem] = load_problems(text)
    assert "characters" in problem


@pytest.mark.usefixtures("ceiling")
def test_too_many_aliases_are_refused_while_composing() -> None:
    text = (
        "a: &a x\ndataset_name: d\nseeds:\n  - value: x\n    metadata: {k: ["
        + ", ".join(["*a"] * (MAX_YAML_ALIASES + 1))
        + "]}\n"
    )
    [problem] = load_problems(text)
    assert f"more than {MAX_YAML_ALIASES} YAML aliases" in problem


@pytest.mark.usefixtures("ceiling")
@pytest.mark.parametrize("shape", ["&a [*a]", "&a {k: *a}", "&a [[[*a]]]"])
def test_recursive_aliases_are_refused(shape: str) -> None:
    [problem] = load_problems(f"r: {shape}\ndataset_name: d\nseeds:\n  - value: x\n")
    assert "refers to a node that contains it" in problem


@pytest.mark.usefixtures("ceiling")
@pytest.mark.parametrize("depth", [2_000, 50_000])
def test_deeply_nested_yaml_is_refused(depth: int) -> None:
    [problem] = load_problems("dataset_name: d\nx: " + "[" * depth + "]" * depth + "\n")
    assert "invalid YAML" in problem


def test_a_few_ordinary_aliases_still_load() -> None:
    text = (
        "dataset_name: d\nharm_categories: &h [violence]\nseeds:\n"
        "  - {value: one, harm_categories: *h}\n  - {value: two, harm_categories: *h}\n"
    )
    loaded = load_dataset_text(text, source_name="ok.prompt")
    assert [s.harm_categories for s in loaded.seeds] == [["violence"], ["violence"]]


def test_templates_over_budget_are_per_seed_load_errors() -> None:
    text = (
        "dataset_name: d\nseeds:\n"
        "  - value: fine {{ x }}\n"
        '  - value: \'{{ ("a" * 10000)|list|join("b" * 100000) }}\'\n'
        "  - value: '{{ " + "(" * 200 + "1" + ")" * 200 + " }}'\n"
    )
    problems = load_problems(text)
    assert problems[0].startswith("seeds[1].value: the template is over budget")
    assert problems[1].startswith("seeds[2].value: Template syntax error")
    assert len(problems) == 2


# -- confinement --------------------------------------------------------------------------


def _tree(tmp_path: Path) -> Path:
    """A dataset folder inside tmp_path, with a secret next to (outside) it."""
    folder = tmp_path / "datasets"
    (folder / "media").mkdir(parents=True)
    (folder / "media" / "ok.png").write_bytes(PNG)
    (folder / "media" / "sound.wav").write_bytes(WAV)
    (folder / "media" / "notes.png").write_text("just text, not an image")
    (tmp_path / "secret.png").write_bytes(PNG)
    (folder / "media" / "link.png").symlink_to(tmp_path / "secret.png")
    return folder


def _prompt(folder: Path, value: str, data_type: str = "image_path") -> Path:
    path = folder / "hostile.prompt"
    path.write_text(f"dataset_name: d\nseeds:\n  - value: '{value}'\n    data_type: {data_type}\n")
    return path


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/etc/passwd", "absolute media paths are refused"),
        ("{SECRET}", "absolute media paths are refused"),
        ("../secret.png", "leads outside the import folder"),
        ("media/../../secret.png", "leads outside the import folder"),
        ("../../../../../../etc/hostname", "leads outside the import folder"),
        ("media/link.png", "leads outside the import folder"),
        ("{{ datasets_path }}/seed_datasets/local/../../secret.png", "leads outside"),
    ],
)
def test_media_paths_outside_the_import_folder_are_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    folder = _tree(tmp_path)
    path = _prompt(folder, value.replace("{SECRET}", str(tmp_path / "secret.png")))
    with pytest.raises(DatasetLoadError) as info:
        load_dataset_file(path)
    [problem] = info.value.problems
    assert problem.startswith("seeds[0].value: ")
    assert message in problem


def test_root_widens_the_folder_media_may_come_from(tmp_path: Path) -> None:
    folder = _tree(tmp_path)
    path = _prompt(folder, "../secret.png")
    loaded = load_dataset_file(path, search_root=tmp_path)
    assert loaded.seeds[0].media_path == (tmp_path / "secret.png").resolve()


def test_media_inside_the_folder_load(tmp_path: Path) -> None:
    folder = _tree(tmp_path)
    for value in ("media/ok.png", "{{ datasets_path }}/seed_datasets/local/media/ok.png"):
        loaded = load_dataset_file(_prompt(folder, value))
        assert loaded.seeds[0].media_path == (folder / "media" / "ok.png").resolve()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("value", "data_type", "sniffed"),
    [
        ("media/notes.png", "image_path", "application/octet-stream"),
        ("media/sound.wav", "image_path", "audio/wav"),
        ("media/ok.png", "audio_path", "image/png"),
        ("media/ok.png", "video_path", "image/png"),
    ],
)
def test_media_that_do_not_sniff_as_their_data_type_are_refused(
    tmp_path: Path, value: str, data_type: str, sniffed: str
) -> None:
    folder = _tree(tmp_path)
    path = _prompt(folder, value, data_type)
    [report] = import_dataset(sources=[ImportSource("hostile.prompt", path=path)])
    [problem] = report.errors
    assert problem.startswith("seeds[0].value: The file is " + sniffed)
    assert not Seed.objects.exists()
    assert not MediaBlob.objects.exists()


@pytest.mark.django_db
def test_uploaded_media_are_sniffed_too() -> None:
    text = "dataset_name: d\nseeds:\n  - {value: upload/pic.png, data_type: image_path}\n"
    [report] = import_dataset(
        sources=[ImportSource("u.prompt", text=text)], media={"pic.png": b"<svg>no</svg>"}
    )
    assert "does not fit a image_path seed" in report.errors[0]
    [report] = import_dataset(sources=[ImportSource("u.prompt", text=text)], media={"pic.png": PNG})
    assert report.ok
    assert Seed.objects.get().media_id == MediaBlob.objects.get().sha256


@pytest.mark.django_db
def test_the_command_refuses_escapes_per_seed_and_reads_nothing(tmp_path: Path) -> None:
    folder = _tree(tmp_path)
    _prompt(folder, "../secret.png")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 file"):
        call_command("import_seed_dataset", str(folder), stdout=io.StringIO(), stderr=err)
    assert "seeds[0].value: media path leads outside the import folder" in err.getvalue()
    assert not MediaBlob.objects.exists()
    call_command(
        "import_seed_dataset",
        str(folder / "hostile.prompt"),
        "--root",
        str(tmp_path),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert Seed.objects.get().media_id == MediaBlob.objects.get().sha256


@pytest.mark.django_db
def test_the_command_refuses_a_prompt_symlinked_from_outside(tmp_path: Path) -> None:
    folder = _tree(tmp_path)
    (tmp_path / "elsewhere.prompt").write_text("dataset_name: d\nseeds:\n  - value: x\n")
    (folder / "in.prompt").symlink_to(tmp_path / "elsewhere.prompt")
    with pytest.raises(CommandError, match="leads outside"):
        call_command("import_seed_dataset", str(folder), stdout=io.StringIO())
