"""Every write to seeds, groups and datasets: API ingestion, YAML import, admin curation.

The API, the admin, the review UI and the management commands all call these functions, so
PyRIT's rules, dedup and the history trail (who, when, what) apply the same way everywhere.
Writes are transactional and bulk: ingestion costs a constant number of queries per batch.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from redteam.common.models import MediaBlob
from redteam.common.typing import User
from redteam.core.batch import Batch, Entry, Replay
from redteam.core.enums import MEDIA_PATH_DATA_TYPES
from redteam.core.outcomes import FieldError, ItemOutcome
from seeds import rules
from seeds.bulk import create_with_history, update_quietly, update_with_history
from seeds.importing import export_dataset, export_seeds, import_dataset
from seeds.models import Seed, SeedDataset, SeedGroup
from seeds.parsing import COMPARED, ParsedSeed, comparable, parse_item

__all__ = [
    "SeedRulesError",
    "add_harm_category",
    "add_promoted_seed",
    "attach_media",
    "check_seed_changes",
    "delete_seeds",
    "export_dataset",
    "export_seeds",
    "import_dataset",
    "link_media",
    "move_seeds_to_dataset",
    "remove_harm_category",
    "rename_dataset",
    "save_seed_changes",
    "store_seeds",
]

KIND = "seeds"


class SeedRulesError(ValueError):
    """A write would break PyRIT's seed rules; `errors` pairs each seed (or None) with a rule."""

    def __init__(self, errors: list[tuple[Seed | None, rules.RuleError]]) -> None:
        super().__init__("; ".join(e.message for _, e in errors))
        self.errors = errors


# -- API ingestion ---------------------------------------------------------------------------


def _seed_conflict(item_id: str | None, _field: str | None) -> FieldError:
    return FieldError("id", f"Seed {item_id} is already stored with different content.", "conflict")


def _no_canon(value: Any) -> Any:
    # JSON columns may come back with ints for floats (or the reverse); 1 == 1.0 is fine here.
    return value


SEEDS: Replay[ParsedSeed] = Replay(
    kind=KIND,
    key=lambda p: p.seed.id,
    label=lambda p: str(p.seed.id),
    values=ParsedSeed.comparable,
    fields=lambda _: COMPARED,
    conflict=_seed_conflict,
    canon=_no_canon,
    repeat_conflict=_seed_conflict,
)


@transaction.atomic
def store_seeds(
    items: Sequence[Mapping[str, Any]], *, user: User | None = None
) -> list[ItemOutcome]:
    """Store PyRIT seed dicts; idempotent by id, conflict on same id + different content.

    Replays are told from conflicts by redteam.core.batch, as for every kind. Queries are
    constant in the batch size: look up ids, datasets, groups, the groups' other seeds and
    media blobs once each, then bulk-insert datasets, groups and seeds (each with its history
    rows, written by `user`) and bulk-update the groups and positions the new seeds changed.
    """
    batch = Batch(SEEDS)
    for index, item in enumerate(items):
        result = parse_item(index, item)
        if isinstance(result, ParsedSeed):
            batch.add(result, index)
        else:
            raw_id = item.get("id") if isinstance(item, Mapping) else None
            batch.reject(index, _id_text(raw_id), result)

    existing = {
        s.id: s
        for s in Seed.objects.select_related("group").filter(
            id__in=[e.parsed.seed.id for e in batch.entries]
        )
    }
    fresh: list[Entry[ParsedSeed]] = []
    for entry in batch.pending():
        stored = existing.get(entry.parsed.seed.id)
        if stored is None:
            fresh.append(entry)
        else:
            group_id = stored.group.prompt_group_id if stored.group else None
            batch.compare(entry, comparable(stored, group_id))
    _place_and_insert(fresh, user=user)
    return batch.outcomes()


def _id_text(raw: Any) -> str | None:
    return str(raw)[:64] if isinstance(raw, str | uuid.UUID) else None


def _place_and_insert(fresh: list[Entry[ParsedSeed]], *, user: User | None) -> None:
    """Resolve datasets and groups for new seeds, check group rules, insert in bulk."""
    if not fresh:
        return
    datasets = _datasets_by_name({e.parsed.seed.dataset_name for e in fresh}, user=user)
    group_ids = {e.parsed.prompt_group_id for e in fresh}
    groups = {g.prompt_group_id: g for g in SeedGroup.objects.filter(prompt_group_id__in=group_ids)}
    members: dict[uuid.UUID, list[Seed]] = defaultdict(list)
    if groups:
        by_pk = {g.pk: g.prompt_group_id for g in groups.values()}
        for s in Seed.objects.filter(group_id__in=list(by_pk)).order_by("position", "id"):
            if s.group_id is not None:
                members[by_pk[s.group_id]].append(s)
    blobs = _blobs_for(e.parsed.seed for e in fresh)

    by_group: dict[uuid.UUID, list[Entry[ParsedSeed]]] = defaultdict(list)
    for e in fresh:
        by_group[e.parsed.prompt_group_id].append(e)

    new_groups: list[SeedGroup] = []
    changed_groups: list[SeedGroup] = []
    moved: list[Seed] = []
    accepted: list[Entry[ParsedSeed]] = []
    for group_id, new in by_group.items():
        old = members.get(group_id, [])
        candidates = [*old, *(e.parsed.seed for e in new)]
        problems = rules.group_errors(candidates)
        if problems:
            for e in new:
                e.errors.extend(
                    FieldError(p.field, f"Group {group_id}: {p.message}") for p in problems
                )
            continue
        group = groups.get(group_id)
        if group is None:
            first = new[0].parsed.seed
            group = SeedGroup(
                prompt_group_id=group_id,
                dataset=datasets.get(first.dataset_name),
                alias=first.prompt_group_alias,
            )
            new_groups.append(group)
        ordered = rules.canonical_order(candidates)
        for position, s in enumerate(ordered):
            if s.pk is not None and not s._state.adding and s.position != position:
                s.position = position
                moved.append(s)
            s.position = position
        content = rules.group_content_sha256(ordered)
        if group.content_sha256 != content:
            group.content_sha256 = content
            if group.pk is not None:
                changed_groups.append(group)
        for e in new:
            seed = e.parsed.seed
            seed.group = group
            seed.dataset = datasets.get(seed.dataset_name)
            blob = blobs.get(seed.value_sha256 or "")
            if blob is not None and rules.is_media(seed.data_type):
                seed.media = blob
            accepted.append(e)

    create_with_history(SeedGroup, new_groups, user=user)
    for e in accepted:
        e.parsed.seed.group_id = e.parsed.seed.group.pk  # type: ignore[union-attr]
    create_with_history(Seed, [e.parsed.seed for e in accepted], user=user)
    update_quietly(SeedGroup, changed_groups, ["content_sha256"])
    update_quietly(Seed, moved, ["position"])
    for e in accepted:
        e.status = "stored"


def _datasets_by_name(
    names: Iterable[str | None], *, user: User | None
) -> dict[str | None, SeedDataset]:
    """The datasets seeds name, creating the missing ones (one SELECT, one INSERT at most)."""
    wanted = {n for n in names if n}
    found = {d.dataset_name: d for d in SeedDataset.objects.filter(dataset_name__in=wanted)}
    missing = [SeedDataset(dataset_name=n) for n in sorted(wanted - set(found))]
    for d in create_with_history(SeedDataset, missing, user=user, reason="created by ingestion"):
        found[d.dataset_name] = d
    result: dict[str | None, SeedDataset] = {name: d for name, d in found.items()}
    return result


def _blobs_for(seeds: Iterable[Seed]) -> dict[str, Any]:
    """Stored media blobs the seeds' value_sha256 name (one SELECT, none without media)."""
    shas = {s.value_sha256 for s in seeds if s.value_sha256 and rules.is_media(s.data_type)}
    if not shas:
        return {}
    return {b.sha256: b for b in MediaBlob.objects.filter(sha256__in=shas)}


def link_media(blob: Any) -> int:
    """Point media seeds whose value_sha256 is the blob's sha256 at it; returns how many."""
    media_types = [*MEDIA_PATH_DATA_TYPES, "url"]
    return Seed.objects.filter(
        value_sha256=blob.sha256, data_type__in=media_types, media__isnull=True
    ).update(media=blob)


# -- curation (admin) ------------------------------------------------------------------------


def _group_members(groups: Iterable[SeedGroup | None]) -> dict[int, list[Seed]]:
    ids = {g.pk for g in groups if g is not None and g.pk is not None}
    members: dict[int, list[Seed]] = defaultdict(list)
    for s in Seed.objects.filter(group_id__in=ids).order_by("position", "id"):
        members[s.group_id].append(s)  # type: ignore[index]
    return members


def check_seed_changes(
    changed: Sequence[Seed], deleted: Sequence[Seed] = ()
) -> list[tuple[Seed | None, rules.RuleError]]:
    """PyRIT's seed and group rules over the groups as they would be after the change."""
    errors: list[tuple[Seed | None, rules.RuleError]] = []
    for seed in changed:
        errors.extend((seed, e) for e in rules.seed_errors(seed))
        if (
            seed.group is not None
            and seed.dataset_id is not None
            and seed.group.dataset_id not in (None, seed.dataset_id)
        ):
            errors.append(
                (
                    seed,
                    rules.RuleError(
                        "group",
                        "The group belongs to another dataset; all seeds of a group share "
                        "one dataset (and one prompt_group_id).",
                    ),
                )
            )
    for final in _final_groups(changed, deleted).values():
        if not final:
            continue
        for error in rules.group_errors(final):
            culprit = final[error.index] if error.index is not None else None
            errors.append((culprit, error))
    return errors


def _final_groups(changed: Sequence[Seed], deleted: Sequence[Seed]) -> dict[int, list[Seed]]:
    """Each affected group's members after the change (changed seeds replace stored ones)."""
    previous = Seed.objects.filter(pk__in=[s.pk for s in changed if s.pk]).values_list(
        "pk", "group_id"
    )
    old_group = dict(previous)
    affected = {s.group_id for s in changed if s.group_id} | {g for g in old_group.values() if g}
    affected |= {s.group_id for s in deleted if s.group_id}
    members = _group_members(SeedGroup(pk=pk) for pk in affected)
    gone = {s.pk for s in deleted} | {s.pk for s in changed}
    final: dict[int, list[Seed]] = {pk: [] for pk in affected}
    for pk in affected:
        final[pk] = [s for s in members.get(pk, []) if s.pk not in gone]
    for s in changed:
        if s.group_id:
            final.setdefault(s.group_id, []).append(s)
    return final


@transaction.atomic
def save_seed_changes(
    *, changed: Sequence[Seed], deleted: Sequence[Seed] = (), user: User | None = None
) -> None:
    """Save curated seeds: check rules, recompute hashes, positions and group content."""
    for seed in changed:
        _normalise(seed)
    errors = check_seed_changes(changed, deleted)
    if errors:
        raise SeedRulesError(errors)
    final = _final_groups(changed, deleted)
    for seed in changed:
        if seed.group_id is None:
            # A seed always belongs to a group: alone, it is a group of its own (as in PyRIT).
            group = SeedGroup(prompt_group_id=uuid.uuid4(), dataset=seed.dataset)
            _remember_user(group, user)
            group.save()
            seed.group = group
            final[group.pk] = [seed]
        _remember_user(seed, user)
        seed.save()
    for seed in deleted:
        _remember_user(seed, user)
        seed.delete()
    _refresh_groups(final, user=user)


def _normalise(seed: Seed) -> None:
    """Derived fields a curator does not type: dataset_name, value_sha256, simulated value."""
    if seed.dataset_id is not None:
        seed.dataset_name = seed.dataset.dataset_name  # type: ignore[union-attr]
    if seed.seed_type == "simulated_conversation":
        from seeds.yaml_loader import simulated_value

        seed.value = simulated_value(seed)
    if seed.seed_type != "prompt":
        seed.role = None
        seed.sequence = None if seed.seed_type == "objective" else (seed.sequence or 0)
        seed.parameters = None if seed.seed_type == "objective" else seed.parameters
    elif seed.sequence is None:
        seed.sequence = 0
    computed = rules.value_sha256_for(seed.data_type, seed.value)
    if computed is not None:
        seed.value_sha256 = computed
        seed.media = None
    elif seed.media_id is not None:
        seed.value_sha256 = seed.media_id


def _remember_user(obj: Any, user: User | None) -> None:
    if user is not None and user.is_authenticated:
        obj._history_user = user


def _refresh_groups(final: Mapping[int, Sequence[Seed]], *, user: User | None) -> None:
    """Positions and content hashes follow the seeds; empty groups go (with history)."""
    groups = {g.pk: g for g in SeedGroup.objects.filter(pk__in=list(final))}
    moved: list[Seed] = []
    changed_groups: list[SeedGroup] = []
    for pk, members in final.items():
        group = groups.get(pk)
        if group is None:
            continue
        if not members:
            _remember_user(group, user)
            group.delete()
            continue
        for position, s in enumerate(rules.canonical_order(members)):
            if s.position != position:
                s.position = position
                moved.append(s)
        content = rules.group_content_sha256(members)
        if group.content_sha256 != content:
            group.content_sha256 = content
            changed_groups.append(group)
    update_quietly(Seed, moved, ["position"])
    update_quietly(SeedGroup, changed_groups, ["content_sha256"])


@transaction.atomic
def delete_seeds(*, seeds: Sequence[Seed], user: User | None = None) -> None:
    """Delete seeds (history keeps them); their groups are re-checked and re-hashed."""
    save_seed_changes(changed=[], deleted=seeds, user=user)


@dataclass
class MoveResult:
    """What move_seeds_to_dataset did, group by group."""

    moved_groups: int
    moved_seeds: int
    skipped_groups: int


@transaction.atomic
def move_seeds_to_dataset(
    *, seeds: QuerySet[Seed], dataset: SeedDataset, user: User | None = None
) -> MoveResult:
    """Move the selected seeds' whole groups to `dataset`; groups it already holds stay put."""
    group_ids = set(seeds.exclude(group__isnull=True).values_list("group_id", flat=True))
    groups = list(SeedGroup.objects.filter(pk__in=group_ids).exclude(dataset=dataset))
    present = set(
        SeedGroup.objects.filter(
            dataset=dataset, content_sha256__in=[g.content_sha256 for g in groups]
        ).values_list("content_sha256", flat=True)
    )
    to_move = [g for g in groups if g.content_sha256 not in present]
    for group in to_move:
        group.dataset = dataset
    update_with_history(SeedGroup, to_move, ["dataset"], user=user, reason="moved to dataset")
    members = list(Seed.objects.filter(group__in=to_move))
    for seed in members:
        seed.dataset = dataset
        seed.dataset_name = dataset.dataset_name
    update_with_history(
        Seed, members, ["dataset", "dataset_name"], user=user, reason="moved to dataset"
    )
    return MoveResult(len(to_move), len(members), len(groups) - len(to_move))


@transaction.atomic
def add_harm_category(*, seeds: QuerySet[Seed], category: str, user: User | None = None) -> int:
    """Append a harm category to the seeds that lack it; returns how many changed."""
    category = _clean_category(category)
    changed = []
    for seed in seeds:
        current = list(seed.harm_categories or [])
        if category not in current:
            seed.harm_categories = [*current, category]
            changed.append(seed)
    update_with_history(Seed, changed, ["harm_categories"], user=user, reason="harm category +")
    return len(changed)


@transaction.atomic
def remove_harm_category(*, seeds: QuerySet[Seed], category: str, user: User | None = None) -> int:
    """Remove a harm category from the seeds that have it; returns how many changed."""
    category = _clean_category(category)
    changed = []
    for seed in seeds:
        current = list(seed.harm_categories or [])
        if category in current:
            seed.harm_categories = [c for c in current if c != category]
            changed.append(seed)
    update_with_history(Seed, changed, ["harm_categories"], user=user, reason="harm category -")
    return len(changed)


def _clean_category(category: str) -> str:
    category = (category or "").strip()
    if not category or len(category) > 200:
        raise ValueError("A harm category is 1 to 200 characters.")
    return category


@transaction.atomic
def rename_dataset(*, dataset: SeedDataset, user: User | None = None) -> None:
    """Save a dataset; if its name changed, its seeds' dataset_name follows (with history)."""
    _remember_user(dataset, user)
    dataset.save()
    stale = list(Seed.objects.filter(dataset=dataset).exclude(dataset_name=dataset.dataset_name))
    for seed in stale:
        seed.dataset_name = dataset.dataset_name
    update_with_history(Seed, stale, ["dataset_name"], user=user, reason="dataset renamed")


@transaction.atomic
def attach_media(*, seed: Seed, data: bytes, filename: str, user: User | None = None) -> Seed:
    """Store uploaded bytes as the seed's media; value_sha256 becomes their sha256."""
    from seeds.media import check_media_matches, store_media

    check_media_matches(seed.data_type, data)
    blob = store_media(data, filename=filename, user=user)
    seed.media = blob
    seed.value_sha256 = blob.sha256
    if not seed.value:
        seed.value = filename
    save_seed_changes(changed=[seed], user=user)
    return seed


# -- promote a reviewed piece ----------------------------------------------------------------


@dataclass
class PromoteResult:
    """The seed a piece became (or the identical one the dataset already held)."""

    seed: Seed
    created: bool


@dataclass(frozen=True)
class PromotedValue:
    """What a promoted seed is made of: a reviewed value and where it came from."""

    value: str
    value_sha256: str | None
    data_type: str
    role: str
    harm_categories: list[str]
    media_id: str | None
    source_piece_id: uuid.UUID
    source_attack_result_id: uuid.UUID | str | None


def promoted_seed(
    *,
    source: PromotedValue,
    dataset: SeedDataset | None,
    dataset_name: str,
    seed_type: str,
    user: User,
) -> Seed:
    """The seed ``add_promoted_seed`` would store for this value (not saved): what the
    promote preview shows, field for field. ``dataset`` is None for a dataset the promotion
    would create under ``dataset_name``. Raises ValueError for what a dataset refuses."""
    if seed_type not in ("prompt", "objective"):
        raise ValueError("A promoted seed is a prompt or an objective.")
    if seed_type == "objective" and source.data_type != "text":
        raise ValueError("An objective is text; this piece holds " + source.data_type + ".")
    # PyRIT's SeedPrompt.from_messages uses the API role: simulated_assistant -> assistant.
    role = "assistant" if source.role == "simulated_assistant" else source.role
    seed = Seed(
        id=uuid.uuid4(),
        seed_type=seed_type,
        value=source.value,
        value_sha256=source.value_sha256,
        data_type=source.data_type,
        dataset=dataset,
        dataset_name=dataset_name,
        harm_categories=list(source.harm_categories),
        authors=[],
        groups=[],
        metadata={},
        added_by=user.get_username(),
        role=role if seed_type == "prompt" else None,
        sequence=0 if seed_type == "prompt" else None,
        parameters=[] if seed_type == "prompt" else None,
        media_id=source.media_id,
        source_piece_id=source.source_piece_id,
        source_attack_result_id=source.source_attack_result_id,
        date_added=timezone.now(),
    )
    computed = rules.value_sha256_for(seed.data_type, seed.value)
    if computed is not None:
        seed.value_sha256 = computed
    return seed


def promoted_twin(seed: Seed, dataset: SeedDataset | None) -> Seed | None:
    """The identical standalone seed ``dataset`` already holds, if any (one query)."""
    if dataset is None:
        return None
    content = rules.group_content_sha256([seed])
    return Seed.objects.filter(group__dataset=dataset, group__content_sha256=content).first()


@transaction.atomic
def add_promoted_seed(
    *, source: PromotedValue, dataset: SeedDataset, seed_type: str, user: User
) -> PromoteResult:
    """Make a prompt or objective seed of a reviewed value in ``dataset``.

    An identical standalone seed already in the dataset is returned instead of a duplicate.
    """
    seed = promoted_seed(
        source=source,
        dataset=dataset,
        dataset_name=dataset.dataset_name,
        seed_type=seed_type,
        user=user,
    )
    twin = promoted_twin(seed, dataset)
    if twin is not None:
        return PromoteResult(twin, False)
    content = rules.group_content_sha256([seed])
    group = SeedGroup(prompt_group_id=uuid.uuid4(), dataset=dataset, content_sha256=content)
    _remember_user(group, user)
    group.save()
    seed.group = group
    _remember_user(seed, user)
    seed._change_reason = f"promoted from piece {source.source_piece_id}"  # type: ignore[attr-defined]
    seed.save()
    return PromoteResult(seed, True)
