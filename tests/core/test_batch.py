"""redteam.core.batch: per-item entries, repeats inside a batch, replays vs conflicts."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from redteam.core.batch import Batch, Replay, canonical, first_difference, stored_conflict
from redteam.core.outcomes import FieldError


@dataclass
class Item:
    id: str | None
    value: Any = None
    errors: list[FieldError] = field(default_factory=list)


ITEMS: Replay[Item] = Replay(
    kind="things",
    key=lambda item: item.id,
    label=lambda item: item.id,
    values=lambda item: {"value": item.value},
    fields=lambda _: ("value",),
    conflict=stored_conflict("thing"),
)


def statuses(batch: Batch[Item]) -> list[tuple[int, str]]:
    return [(o.index, o.status) for o in batch.outcomes()]


def test_canonical_keeps_int_and_float_apart_and_ignores_spelling() -> None:
    assert canonical({"a": 1}) != canonical({"a": 1.0})
    assert canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1})
    assert canonical([1e20]) == canonical([100000000000000000000])
    assert canonical(-0.0) == canonical(0.0)
    later = datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert canonical(later) == canonical(datetime(2026, 1, 1, tzinfo=UTC))
    some = uuid.uuid4()
    assert canonical(some) == canonical(str(some))


def test_first_difference_names_the_first_differing_field_in_the_given_order() -> None:
    new, old = {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 5, "c": 4}
    assert first_difference(new, old, ("a", "c", "b")) == "c"
    assert first_difference(new, old, ("a",)) is None
    assert first_difference({"a": [1]}, {"a": [1.0]}, ("a",)) == "a"
    assert first_difference({"a": [1]}, {"a": [1.0]}, ("a",), canon=lambda v: v) is None


def test_a_repeat_follows_its_first_item() -> None:
    batch = Batch.of(ITEMS, [Item("x", 1), Item("x", 1), Item("y", 2), Item("x", 9)])
    assert [e.first is batch.entries[0] for e in batch.entries] == [False, True, False, True]
    assert [e.index for e in batch.pending()] == [0, 2]
    for entry in batch.pending():
        entry.status = "stored"
    outcomes = batch.outcomes()
    assert [o.status for o in outcomes] == ["stored", "unchanged", "stored", "rejected"]
    [error] = outcomes[3].errors
    assert (error.field, error.code) == ("value", "conflict")
    assert "appears twice in this batch" in error.message


def test_a_repeat_of_a_rejected_item_is_rejected_with_its_errors() -> None:
    batch = Batch.of(ITEMS, [Item("x", 1), Item("x", 1)])
    first = batch.entries[0]
    first.errors.append(FieldError("value", "not allowed"))
    outcomes = batch.outcomes()
    assert [o.status for o in outcomes] == ["rejected", "rejected"]
    assert outcomes[1].errors == outcomes[0].errors
    assert outcomes[1].errors is not outcomes[0].errors


def test_items_with_errors_or_without_a_key_are_never_repeats() -> None:
    broken = Item("x", 1, errors=[FieldError("id", "bad")])
    batch = Batch.of(ITEMS, [broken, Item("x", 2), Item(None, 3), Item(None, 3)])
    assert [e.first for e in batch.entries] == [None, None, None, None]
    assert [e.index for e in batch.pending()] == [1, 2, 3]
    assert broken.errors == [FieldError("id", "bad")]  # the parse is left as it was


def test_compare_against_a_stored_row_is_unchanged_or_a_conflict() -> None:
    batch = Batch.of(ITEMS, [Item("x", 1), Item("y", 2)])
    same, other = batch.entries
    batch.compare(same, {"value": 1})
    batch.compare(other, {"value": 3})
    outcomes = batch.outcomes()
    assert [o.status for o in outcomes] == ["unchanged", "rejected"]
    [error] = outcomes[1].errors
    assert error == FieldError(
        "value",
        "A thing with id y is already stored with different content (field 'value' differs); "
        "stored items are never overwritten.",
        code="conflict",
    )


def test_an_item_never_decided_or_left_new_is_rejected() -> None:
    batch = Batch.of(ITEMS, [Item("x", 1), Item("y", 2)])
    batch.entries[1].status = "new"
    assert statuses(batch) == [(0, "rejected"), (1, "rejected")]


def test_items_rejected_before_parsing_keep_their_place() -> None:
    batch: Batch[Item] = Batch(ITEMS)
    batch.reject(0, "raw", [FieldError(None, "not an object")])
    batch.add(Item("x", 1), 1)
    batch.reject(2, None, [FieldError(None, "not an object")])
    batch.add(Item("x", 1), 3)
    batch.entries[0].status = "stored"
    outcomes = batch.outcomes()
    assert [(o.index, o.id, o.status) for o in outcomes] == [
        (0, "raw", "rejected"),
        (1, "x", "stored"),
        (2, None, "rejected"),
        (3, "x", "unchanged"),
    ]


def test_a_kind_may_compare_repeats_its_own_way() -> None:
    strict: Replay[Item] = Replay(
        kind="things",
        key=lambda item: item.id,
        label=lambda item: item.id,
        values=lambda item: {"value": item.value},
        fields=lambda _: ("value",),
        conflict=stored_conflict("thing"),
        repeat=lambda item, first: None if item.value == first.value else "whole",
        repeat_conflict=lambda item_id, field: FieldError("id", f"{item_id} twice ({field})"),
    )
    batch = Batch.of(strict, [Item("x", 1), Item("x", 1.0), Item("x", 2)])
    batch.entries[0].status = "stored"
    outcomes = batch.outcomes()
    assert [o.status for o in outcomes] == ["stored", "unchanged", "rejected"]
    assert outcomes[2].errors == [FieldError("id", "x twice (whole)")]
