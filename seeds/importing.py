"""PyRIT `.prompt` import (with a dry-run preview) and export, over the YAML modules.

Dedup without loss: a group is identified by its content (rules.group_content_sha256, which
covers every seed's type, sequence, role, data type and value_sha256). Importing a group the
dataset already holds adds nothing and is reported as skipped; a standalone seed is a group of
one, so the same goes for it. Repeated text *inside* a group is never touched: groups arrive
whole. Counting is by multiset, so a file that holds the same group twice imports twice the
first time and nothing the second time: importing a file twice leaves the rows of one import.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Prefetch, QuerySet
from django.utils import timezone

from redteam.common.typing import User
from seeds import rules
from seeds.bulk import create_with_history
from seeds.models import Seed, SeedDataset, SeedGroup
from seeds.yaml_export import build_document, dump_document
from seeds.yaml_loader import (
    DatasetLoadError,
    LoadedDataset,
    LoadedSeed,
    load_dataset_file,
    load_dataset_text,
    media_file_name,
)

DEFAULT_ADDED_BY = "redteam-import"
# A dataset's defaults for its seeds (written to the YAML; also the admin's fieldset).
DATASET_DEFAULT_FIELDS = (
    "source",
    "added_by",
    "data_type",
    "seed_type",
    "harm_categories",
    "authors",
    "groups",
    "date_added",
)
_DATASET_FIELDS = ("name", "description", *DATASET_DEFAULT_FIELDS)


@dataclass
class ImportSource:
    """One `.prompt` file to import: YAML text (an upload) or a path on disk (a command)."""

    name: str
    text: str | None = None
    path: Path | None = None
    search_root: Path | None = None


@dataclass
class GroupPlan:
    """One group of a file and what the import does with it."""

    alias: str | None
    seeds: list[LoadedSeed]
    content_sha256: str
    status: str  # "new" or "identical" (already held by the dataset: skipped)


@dataclass
class FileReport:
    """What importing one file did (or, in a dry run, would do)."""

    source: str
    dataset_name: str | None = None
    dataset_exists: bool = False
    seeds_loaded: int = 0
    groups_loaded: int = 0
    seeds_created: int = 0
    groups_created: int = 0
    seeds_skipped: int = 0
    groups_skipped: int = 0
    errors: list[str] = field(default_factory=list)
    groups: list[GroupPlan] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the file loaded and passed every rule."""
        return not self.errors

    def summary(self) -> str:
        """One line for messages and command output."""
        if self.errors:
            return f"{self.source}: rejected ({len(self.errors)} problem(s))"
        return (
            f"{self.source}: {self.dataset_name or '(no dataset name)'}: "
            f"{self.seeds_loaded} seeds in {self.groups_loaded} groups; created "
            f"{self.seeds_created} seeds / {self.groups_created} groups, skipped "
            f"{self.seeds_skipped} seeds / {self.groups_skipped} groups already present"
        )


def import_dataset(
    *,
    sources: Sequence[ImportSource],
    user: User | None = None,
    dry_run: bool = False,
    media: Mapping[str, bytes] | None = None,
) -> list[FileReport]:
    """Import `.prompt` files, each all-or-nothing in its own transaction.

    `media` maps file names to bytes uploaded alongside the YAML (matched to a media seed by
    the file name its value ends with). In a dry run nothing is written, and files later in
    the list see what earlier ones would have created.
    """
    planned: dict[str | None, Counter[str]] = defaultdict(Counter)
    reports = []
    for source in sources:
        report = FileReport(source=source.name)
        try:
            loaded = _load(source)
        except DatasetLoadError as exc:
            report.errors = list(exc.problems)
            reports.append(report)
            continue
        report.dataset_name = loaded.effective_dataset_name
        report.seeds_loaded = len(loaded.seeds)
        report.groups_loaded = len(loaded.seed_groups)
        blobs = _resolve_media(loaded, media or {}, report)
        if report.errors:
            reports.append(report)
            continue
        if dry_run:
            _plan(loaded, report, planned[loaded.effective_dataset_name])
        else:
            with transaction.atomic():
                _lock_dataset_name(loaded.effective_dataset_name)
                dataset = _plan(loaded, report, planned[loaded.effective_dataset_name])
                _write(loaded, report, dataset, blobs, user=user)
        reports.append(report)
    return reports


def _lock_dataset_name(name: str | None) -> None:
    """Serialise imports into one dataset until the transaction ends (plan, then write).

    Without it two concurrent imports of the same file (a double-clicked confirm, a retry)
    both plan against the rows that existed before either, and both insert: the groups twice,
    or a unique-name violation on a new dataset. PostgreSQL: a transaction-scoped advisory lock
    on the name, taken before the plan reads anything. SQLite needs none: every transaction
    starts with BEGIN IMMEDIATE (settings), so writers already run one at a time.
    """
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            [f"seeds.import:{name or ''}"],
        )


def _load(source: ImportSource) -> LoadedDataset:
    max_bytes: int = settings.REDTEAM_MAX_MEDIA_BYTES
    if source.path is not None:
        return load_dataset_file(
            source.path, search_root=source.search_root, max_media_bytes=max_bytes
        )
    return load_dataset_text(source.text or "", source_name=source.name, max_media_bytes=max_bytes)


def _resolve_media(
    loaded: LoadedDataset, uploaded: Mapping[str, bytes], report: FileReport
) -> dict[int, bytes | str]:
    """Bytes (or an already stored blob's sha256) for each media seed, by seed index.

    Disk files were read by the loader; uploaded files match by file name; otherwise a stored
    blob whose sha256 the YAML names (as redteam's exports do) is used.
    """
    from redteam.common.models import MediaBlob
    from seeds.media import check_media_matches

    found: dict[int, bytes | str] = {}
    wanted: dict[int, LoadedSeed] = {}
    for seed in loaded.seeds:
        if rules.value_sha256_for(seed.data_type, seed.value) is not None:
            continue
        data = (
            seed.media_path.read_bytes()
            if seed.media_path is not None
            else uploaded.get(media_file_name(seed.value))
        )
        if data is None:
            wanted[seed.index] = seed
            continue
        try:
            # Only bytes that sniff as the declared type are stored (a text file is no image).
            check_media_matches(seed.data_type, data)
        except ValueError as exc:
            report.errors.append(f"seeds[{seed.index}].value: {exc}")
            continue
        found[seed.index] = data
        seed.value_sha256 = rules.bytes_sha256(data)
    shas = {s.value_sha256 for s in wanted.values() if s.value_sha256}
    stored = set(MediaBlob.objects.filter(sha256__in=shas).values_list("sha256", flat=True))
    for index, seed in wanted.items():
        if seed.value_sha256 in stored:
            found[index] = seed.value_sha256
        else:
            report.errors.append(
                f"seeds[{index}].value: media file {media_file_name(seed.value)!r} not found; "
                "upload it together with the .prompt file"
            )
    return found


def _plan(loaded: LoadedDataset, report: FileReport, planned: Counter[str]) -> SeedDataset | None:
    """Mark each group new or identical (multiset against the dataset's stored groups)."""
    name = loaded.effective_dataset_name
    dataset = SeedDataset.objects.filter(dataset_name=name).first() if name else None
    report.dataset_exists = dataset is not None
    hashes = [g.content_sha256 for g in loaded.seed_groups]
    held: Counter[str] = Counter()
    if dataset is not None or name is None:
        rows = (
            SeedGroup.objects.filter(dataset=dataset, content_sha256__in=set(hashes))
            .values("content_sha256")
            .annotate(n=Count("id"))
        )
        held.update({r["content_sha256"]: r["n"] for r in rows})
    held.update(planned)
    for group, content in zip(loaded.seed_groups, hashes, strict=True):
        identical = held[content] > 0
        if identical:
            held[content] -= 1
            report.groups_skipped += 1
            report.seeds_skipped += len(group.seeds)
        else:
            planned[content] += 1
            report.groups_created += 1
            report.seeds_created += len(group.seeds)
        report.groups.append(
            GroupPlan(group.alias, group.seeds, content, "identical" if identical else "new")
        )
    return dataset


def _write(
    loaded: LoadedDataset,
    report: FileReport,
    dataset: SeedDataset | None,
    blobs: Mapping[int, bytes | str],
    *,
    user: User | None,
) -> None:
    """Insert the new groups and seeds in bulk (with history rows)."""
    from seeds.media import store_media

    new_groups = [p for p in report.groups if p.status == "new"]
    if not new_groups:
        return
    if dataset is None and loaded.effective_dataset_name:
        dataset = SeedDataset(
            dataset_name=loaded.effective_dataset_name,
            dataset_name_declared=loaded.dataset_name is not None,
            **{f: getattr(loaded, f) for f in _DATASET_FIELDS},
        )
        if dataset.harm_categories is None:
            dataset.harm_categories = []
        create_with_history(SeedDataset, [dataset], user=user, reason=f"import {report.source}")
    by_index = {s.index: s for s in loaded.seeds}
    media_shas: dict[int, str] = {}
    for index, data in blobs.items():
        if isinstance(data, str):
            media_shas[index] = data  # a blob stored earlier, named by the YAML's value_sha256
        else:
            name = media_file_name(by_index[index].value)
            media_shas[index] = store_media(data, filename=name, user=user).sha256
    now = timezone.now()
    username = user.get_username() if user is not None and user.is_authenticated else None
    groups: list[SeedGroup] = []
    seeds: list[Seed] = []
    for plan in new_groups:
        group = SeedGroup(
            prompt_group_id=uuid.uuid4(),
            dataset=dataset,
            alias=plan.alias,
            content_sha256=plan.content_sha256,
        )
        groups.append(group)
        for position, loaded_seed in enumerate(plan.seeds):
            seeds.append(_seed_row(loaded_seed, position, group, dataset, now, username))
            seeds[-1].media_id = media_shas.get(loaded_seed.index)
    create_with_history(SeedGroup, groups, user=user, reason=f"import {report.source}")
    for seed in seeds:
        seed.group_id = seed.group.pk  # type: ignore[union-attr]
    create_with_history(Seed, seeds, user=user, reason=f"import {report.source}")


def _seed_row(
    s: LoadedSeed,
    position: int,
    group: SeedGroup,
    dataset: SeedDataset | None,
    now: Any,
    username: str | None,
) -> Seed:
    return Seed(
        id=uuid.uuid4(),
        seed_type=s.seed_type,
        value=s.value,
        value_sha256=s.value_sha256,
        data_type=s.data_type,
        name=s.name,
        dataset=dataset,
        dataset_name=s.dataset_name,
        description=s.description,
        source=s.source,
        added_by=s.added_by or username or DEFAULT_ADDED_BY,
        date_added=s.date_added or now,
        harm_categories=s.harm_categories,
        authors=s.authors,
        groups=s.groups,
        metadata=s.metadata,
        group=group,
        position=position,
        prompt_group_alias=s.prompt_group_alias,
        is_general_technique=s.is_general_technique,
        is_jinja_template=s.is_jinja_template,
        role=s.role,
        sequence=s.sequence,
        parameters=s.parameters,
        response_json_schema=s.response_json_schema,
        num_turns=s.num_turns,
        adversarial_chat_system_prompt_path=s.adversarial_chat_system_prompt_path,
        simulated_target_system_prompt_path=s.simulated_target_system_prompt_path,
        next_message_system_prompt_path=s.next_message_system_prompt_path,
        pyrit_version=s.pyrit_version,
    )


# -- export ----------------------------------------------------------------------------------


def _groups_with_seeds(groups: QuerySet[SeedGroup]) -> list[SeedGroup]:
    """Groups in import order with their seeds in group order (two queries)."""
    return list(
        groups.order_by("id").prefetch_related(
            Prefetch("seeds", queryset=Seed.objects.order_by("position", "id"))
        )
    )


def _dataset_fields(dataset: SeedDataset | None) -> dict[str, Any]:
    if dataset is None:
        return {"dataset_name": None, "dataset_name_declared": True}
    values = {f: getattr(dataset, f) for f in _DATASET_FIELDS}
    values["dataset_name"] = dataset.dataset_name
    values["dataset_name_declared"] = dataset.dataset_name_declared
    return values


def _document(dataset: SeedDataset | None, groups: Sequence[SeedGroup]) -> str:
    pairs = [(g.alias, list(g.seeds.all())) for g in groups]
    pairs = [(alias, members) for alias, members in pairs if members]
    return dump_document(build_document(_dataset_fields(dataset), pairs))


def export_dataset(dataset: SeedDataset | str) -> str:
    """The dataset as a PyRIT `.prompt` file (YAML text) that imports to the same seeds."""
    if isinstance(dataset, str):
        dataset = SeedDataset.objects.get(dataset_name=dataset)
    groups = _groups_with_seeds(SeedGroup.objects.filter(dataset=dataset))
    return _document(dataset, groups)


def export_seeds(seeds: QuerySet[Seed]) -> dict[str, str]:
    """The selected seeds as `.prompt` files, one per dataset: {file name: YAML}.

    A file holds whole groups: a seed selected from a multi-seed group brings its group, since
    PyRIT loads groups, not loose members.
    """
    group_ids = seeds.exclude(group__isnull=True).values("group_id")
    groups = _groups_with_seeds(
        SeedGroup.objects.filter(pk__in=group_ids).select_related("dataset")
    )
    by_dataset: dict[int | None, list[SeedGroup]] = defaultdict(list)
    datasets: dict[int | None, SeedDataset | None] = {}
    for group in groups:
        by_dataset[group.dataset_id].append(group)
        datasets[group.dataset_id] = group.dataset
    files: dict[str, str] = {}
    for key, members in by_dataset.items():
        dataset = datasets[key]
        stem = export_file_stem(dataset.dataset_name if dataset else "no-dataset")
        files[f"{stem}.prompt"] = _document(dataset, members)
    return files


def export_file_stem(name: str) -> str:
    """A safe file name for a dataset name (letters, digits, dot, dash, underscore)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "dataset"
    return stem[:100]


def group_plan_rows(plan: GroupPlan) -> list[dict[str, Any]]:
    """Per-seed rows of a planned group, for the preview page."""
    return [
        {
            "seed_type": s.seed_type,
            "data_type": s.data_type,
            "role": s.role,
            "sequence": s.sequence,
            "value": s.value,
            "harm_categories": s.harm_categories,
        }
        for s in plan.seeds
    ]
