"""One list of one kind through its store service: each item's state, and replays told apart
from conflicts the same way for every kind. Framework-free.

Every ingestion service (memory's conversations, pieces, scores, attack and scenario results,
and seeds) runs its items through the same steps:

1. ``Batch.add``: each parsed item becomes an ``Entry`` (its parse, its own copy of the parse
   errors, its id as reported, what happened to it). An item repeating the id of an earlier
   valid item of the batch is a *repeat*: it is never compared with stored rows, it follows
   the first one.
2. The service compares each ``pending`` entry with the stored row of its id
   (``Batch.compare``): equal in the kind's comparable form is ``unchanged``, different is a
   ``conflict`` naming the first field that differs (stored rows are never overwritten).
   The new ones are inserted and marked ``stored``; whatever else rejects an item is appended
   to its ``errors``.
3. ``Batch.outcomes``: one ItemOutcome per item, in order. A repeat with the same content as
   its first item gets that item's answer (``unchanged`` once the first is stored or was
   already, else the first's errors); with different content it is a conflict.

How a kind compares is a ``Replay``: the values and fields it compares, in which form
(``canonical`` by default), and the words of its conflict errors.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from redteam.core.outcomes import FieldError, ItemOutcome, ItemStatus

__all__ = [
    "Batch",
    "Entry",
    "EntryStatus",
    "Parsed",
    "Replay",
    "canonical",
    "first_difference",
    "repeat_conflict",
    "stored_conflict",
]

# "new": decided as not stored yet, waiting for the insert that makes it "stored".
EntryStatus = Literal["new", "stored", "unchanged"]


# --- canonical forms -----------------------------------------------------------------------


def _canon_json(value: Any) -> Any:
    """Map a JSON value to the form both databases give back, for comparisons only."""
    if isinstance(value, float):
        # PostgreSQL's jsonb keeps "1.0" as 1.0 but prints exponent floats without the
        # exponent (1e+20 -> 100000000000000000000, read back as int) and has no -0.
        if value == 0.0:
            return 0.0
        if value.is_integer() and "e" in repr(value):
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: _canon_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canon_json(v) for v in value]
    return value


def canonical(value: Any) -> Any:
    """A comparable form of a stored or incoming field value (1 and 1.0 stay distinct)."""
    if isinstance(value, dict | list):
        return json.dumps(_canon_json(value), sort_keys=True, separators=(",", ":"))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return value


def first_difference(
    new: Mapping[str, Any],
    old: Mapping[str, Any],
    fields: Iterable[str],
    canon: Callable[[Any], Any] = canonical,
) -> str | None:
    """The first field whose values differ in `canon` form, or None when all are equal."""
    for name in fields:
        if canon(new.get(name)) != canon(old.get(name)):
            return name
    return None


# --- how a kind compares -------------------------------------------------------------------


class Parsed(Protocol):
    """A parsed item: whatever its kind, it carries the problems its parser found."""

    @property
    def errors(self) -> list[FieldError]: ...


P = TypeVar("P", bound=Parsed)


def stored_conflict(noun: str) -> Callable[[str | None, str | None], FieldError]:
    """The error of an item whose id is stored with other content (`field` differs)."""

    def error(item_id: str | None, field: str | None) -> FieldError:
        detail = f" (field {field!r} differs)" if field else ""
        return FieldError(
            field,
            f"A {noun} with id {item_id} is already stored with different content{detail}; "
            "stored items are never overwritten.",
            code="conflict",
        )

    return error


def repeat_conflict(item_id: str | None, field: str | None) -> FieldError:
    """The error of an item repeating an earlier item's id with other content."""
    return FieldError(
        field,
        f"Id {item_id} appears twice in this batch with different content "
        f"(field {field!r} differs).",
        code="conflict",
    )


@dataclass(frozen=True)
class Replay(Generic[P]):
    """How one kind tells a replay (same id, same content) from a conflict.

    `key` is the id items are deduplicated by (None: not deduplicated), `label` the id an
    outcome reports, `values` and `fields` what is compared, in `canon` form. `repeat`
    compares two items of one batch (default: `values` on `fields`). `conflict` and
    `repeat_conflict` word the errors.
    """

    kind: str
    key: Callable[[P], Hashable | None]
    label: Callable[[P], str | None]
    values: Callable[[P], Mapping[str, Any]]
    fields: Callable[[P], Iterable[str]]
    conflict: Callable[[str | None, str | None], FieldError]
    canon: Callable[[Any], Any] = canonical
    repeat: Callable[[P, P], str | None] | None = None
    repeat_conflict: Callable[[str | None, str | None], FieldError] = repeat_conflict

    def difference(self, new: P, old_values: Mapping[str, Any]) -> str | None:
        """The first compared field where `new` differs from a stored row's values."""
        return first_difference(self.values(new), old_values, self.fields(new), self.canon)

    def repeat_difference(self, item: P, first: P) -> str | None:
        """The first compared field where a repeat differs from the first item of its id."""
        if self.repeat is not None:
            return self.repeat(item, first)
        return first_difference(
            self.values(item), self.values(first), self.fields(item), self.canon
        )


# --- one item, one batch -------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Entry(Generic[P]):
    """One item of a batch: its parse, its problems (a copy, the parse is left as it was),
    the id it is reported under, and what happened to it."""

    index: int
    parsed: P
    id: str | None
    errors: list[FieldError]
    status: EntryStatus | None = None
    # The earlier valid item of the batch with the same key, when this one repeats it.
    first: Entry[P] | None = None

    @property
    def pending(self) -> bool:
        """Still to be decided: valid so far, not a repeat, no status yet."""
        return not self.errors and self.first is None and self.status is None

    def outcome(self, kind: str) -> ItemOutcome:
        """The item's outcome: rejected when it has errors or was never decided."""
        status: ItemStatus = "rejected"
        if not self.errors and self.status != "new" and self.status is not None:
            status = self.status
        return ItemOutcome(kind, self.index, self.id, status, self.errors)


@dataclass(eq=False)
class Batch(Generic[P]):
    """The items of one list of one kind, in order, deduplicated by the kind's key."""

    replay: Replay[P]
    entries: list[Entry[P]] = field(default_factory=list)
    # Items rejected before they could be parsed, by index (answered as they are).
    _rejected: list[ItemOutcome] = field(default_factory=list)
    _firsts: dict[Hashable, Entry[P]] = field(default_factory=dict)

    @classmethod
    def of(cls, replay: Replay[P], parsed: Iterable[P]) -> Batch[P]:
        """A batch of parsed items, each at its position."""
        batch = cls(replay)
        for index, item in enumerate(parsed):
            batch.add(item, index)
        return batch

    def add(self, parsed: P, index: int) -> Entry[P]:
        """Add one parsed item (at `index` of the list); a repeat of an earlier id follows it."""
        entry = Entry(index, parsed, self.replay.label(parsed), list(parsed.errors))
        if not entry.errors:
            key = self.replay.key(parsed)
            if key is not None:
                first = self._firsts.setdefault(key, entry)
                if first is not entry:
                    entry.first = first
        self.entries.append(entry)
        return entry

    def reject(self, index: int, item_id: str | None, errors: list[FieldError]) -> None:
        """An item (at `index`) that did not parse at all: rejected with these errors."""
        self._rejected.append(ItemOutcome(self.replay.kind, index, item_id, "rejected", errors))

    def pending(self) -> list[Entry[P]]:
        """The entries still to be decided, in order."""
        return [e for e in self.entries if e.pending]

    def compare(self, entry: Entry[P], old_values: Mapping[str, Any]) -> None:
        """Decide an entry whose id is stored: unchanged when equal, else a conflict."""
        self.settle(entry, self.replay.difference(entry.parsed, old_values))

    def settle(self, entry: Entry[P], difference: str | None) -> None:
        """Decide an entry whose id is stored, given the first field that differs (or None)."""
        if difference is None:
            entry.status = "unchanged"
        else:
            entry.errors.append(self.replay.conflict(entry.id, difference))

    def outcomes(self) -> list[ItemOutcome]:
        """One outcome per item, in index order; repeats follow their first item."""
        kind = self.replay.kind
        out: list[ItemOutcome] = []
        for entry in self.entries:
            first = entry.first
            if first is None:
                answer = entry.outcome(kind)
            elif (diff := self.replay.repeat_difference(entry.parsed, first.parsed)) is not None:
                error = self.replay.repeat_conflict(entry.id, diff)
                answer = ItemOutcome(kind, entry.index, entry.id, "rejected", [error])
            elif first.outcome(kind).status == "rejected":
                answer = ItemOutcome(kind, entry.index, entry.id, "rejected", list(first.errors))
            else:
                answer = ItemOutcome(kind, entry.index, entry.id, "unchanged")
            out.append(answer)
        if self._rejected:
            out = sorted([*out, *self._rejected], key=lambda o: o.index)
        return out
