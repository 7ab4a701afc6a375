"""Which operation each ingested row joins (the write side of redteam.common.access).

The rules, for every store service:

- An item whose labels name an operation (`operation`, or `op_name` in older runs) goes there,
  if the sender may write it; else the item is rejected (field `labels.operation`), never
  relabelled.
- A piece joins its conversation's operation. A new conversation takes the operation of its
  first labelled piece; unlabelled (1.x pieces carry no labels) it takes the operation of an
  attack result that already names it, else the sender's default operation, *unclaimed*.
- A labelled attack result claims its conversation and related conversations while they are
  unclaimed (PyRIT 1.x keeps labels on results only, and a run's pieces arrive first): they
  move into its operation, with the scores of their pieces. A claimed conversation never
  moves; an item naming another operation for it is rejected.
- Nothing is added to a row of an operation the sender may not write.
- Scores join the operation of the piece they score (when stored), else the sender's default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db.models import Subquery

from memory.bulk import bulk_update
from memory.models import (
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    IdentifierOperation,
    MessagePiece,
    PieceConverter,
    Score,
)
from redteam.common.access import Writer, WriteRefused
from redteam.core.operations import OperationLabelError, labelled_operation
from redteam.core.outcomes import FieldError
from redteam.core.trees import MAX_TREE_DEPTH, child_hashes

__all__ = [
    "NOT_WRITABLE",
    "ConversationPlacer",
    "LabelRefused",
    "default_operation",
    "label_field",
    "mark_identifier_operations",
    "move_conversations",
    "named_operation",
    "preload",
]

NOT_WRITABLE = "belongs to an operation this sender may not write to"


def label_field(prefix: str = "") -> str:
    """The error field of an operation label."""
    return f"{prefix}labels.operation"


def named_operation(labels: Any, writer: Writer, prefix: str = "") -> int | None:
    """The id of the operation `labels` names (None: none named); raises LabelRefused (with
    the per-item error) for a bad or forbidden name."""
    try:
        name = labelled_operation(labels)
    except OperationLabelError as exc:
        raise LabelRefused(FieldError(f"{prefix}labels.{exc.key}", str(exc))) from None
    if name is None:
        return None
    try:
        return writer.named(name)
    except WriteRefused as exc:
        raise LabelRefused(FieldError(label_field(prefix), str(exc))) from None


class LabelRefused(Exception):
    """An item's operation is refused; carries the per-item error."""

    def __init__(self, error: FieldError) -> None:
        super().__init__(error.message)
        self.error = error


def default_operation(writer: Writer, field: str) -> int:
    """The sender's default operation, or LabelRefused naming `field`."""
    try:
        return writer.default()
    except WriteRefused as exc:
        raise LabelRefused(FieldError(field, str(exc))) from None


def preload(writer: Writer, labels: Iterable[Any]) -> None:
    """Look up every operation the batch names, and the default, in one query."""
    names: list[str] = []
    for value in labels:
        try:
            name = labelled_operation(value)
        except OperationLabelError:
            continue
        if name is not None:
            names.append(name)
    writer.load(names)


# The conversation columns a placement sets.
PLACEMENT_FIELDS = ["operation", "operation_claimed"]


class ConversationPlacer:
    """Places items into the (locked) conversations of one batch and remembers the moves."""

    def __init__(
        self, conversations: Mapping[str, Conversation], writer: Writer, *, adopt: bool = True
    ) -> None:
        self.conversations = conversations
        self.writer = writer
        self.moved: dict[str, tuple[int, int]] = {}
        self.touched: set[str] = set()
        if adopt:
            self._adopt_referenced()

    def _adopt_referenced(self) -> None:
        """A conversation created now that an attack result already names joins its operation."""
        fresh = [cid for cid, c in self.conversations.items() if c.operation_id is None]
        if not fresh:
            return
        for cid, op in (
            ConversationReference.objects.filter(conversation_id__in=fresh)
            .exclude(attack_result__operation=None)
            .order_by("conversation_id", "attack_result_id")
            .values_list("conversation_id", "attack_result__operation_id")
        ):
            conv = self.conversations[cid]
            if conv.operation_id is None:
                conv.operation_id, conv.operation_claimed = op, True
                self.touched.add(cid)

    def place(self, conversation_id: str, named: int | None, field: str) -> None:
        """Put an item naming operation `named` (None: none) into the conversation.

        Raises LabelRefused when it may not go there.
        """
        conv = self.conversations[conversation_id]
        current = conv.operation_id
        if current is None:
            conv.operation_id = (
                named if named is not None else default_operation(self.writer, field)
            )
            conv.operation_claimed = named is not None
            self.touched.add(conversation_id)
            return
        if not self.writer.may_write(current):
            raise LabelRefused(FieldError(field, f"conversation {NOT_WRITABLE}"))
        if named is None or named == current:
            if named is not None and not conv.operation_claimed:
                conv.operation_claimed = True
                self.touched.add(conversation_id)
            return
        if conv.operation_claimed:
            raise LabelRefused(FieldError(field, "names another operation than its conversation's"))
        self._move(conv, named)

    def claim_related(self, conversation_ids: Iterable[str], operation_id: int) -> None:
        """A labelled result claims its related conversations that are stored and unclaimed
        (and the sender may write); others stay where they are."""
        for cid in conversation_ids:
            conv = self.conversations.get(cid)
            if (
                conv is None
                or conv.operation_claimed
                or not self.writer.may_write(conv.operation_id)
            ):
                continue
            if conv.operation_id == operation_id:
                conv.operation_claimed = True
                self.touched.add(cid)
            else:
                self._move(conv, operation_id)

    def _move(self, conv: Conversation, operation_id: int) -> None:
        old = self.moved.get(conv.pk, (conv.operation_id, operation_id))[0]
        assert old is not None
        self.moved[conv.pk] = (old, operation_id)
        conv.operation_id, conv.operation_claimed = operation_id, True
        self.touched.add(conv.pk)

    def finish(self, changed: Sequence[Conversation] = (), fields: Sequence[str] = ()) -> None:
        """Write the placements, then what moved with the moved ones.

        `changed`: conversations whose `fields` the caller also changed; they are written in
        the same UPDATE as the placements (one statement, one new row version each: every
        version of a conversation row is entered in each of its indexes).
        """
        columns = [*fields, *(PLACEMENT_FIELDS if self.touched else [])]
        rows = {c.pk: c for c in changed}
        for cid in self.touched:
            rows.setdefault(cid, self.conversations[cid])
        if rows and columns:
            bulk_update(Conversation, [rows[cid] for cid in sorted(rows)], columns)
        if self.moved:
            move_conversations(self.moved)


def move_conversations(moves: Mapping[str, tuple[int, int]]) -> None:
    """Conversations claimed away from the operation they were placed in by default: the
    scores of their pieces follow, and their identifiers are marked as used in the new one."""
    by_target: dict[tuple[int, int], list[str]] = {}
    for cid, pair in moves.items():
        by_target.setdefault(pair, []).append(cid)
    for (old, new), ids in by_target.items():
        prompts = MessagePiece.objects.filter(conversation_id__in=ids).values("original_prompt_id")
        Score.objects.filter(operation_id=old, message_piece_id__in=Subquery(prompts)).update(
            operation_id=new
        )
        roots: set[str] = set()
        for row in Conversation.objects.filter(pk__in=ids).values_list(
            "target_identifier_id", flat=True
        ):
            if row:
                roots.add(row)
        for values in (
            MessagePiece.objects.filter(conversation_id__in=ids)
            .values_list("target_identifier_id", "attack_identifier_id", "scorer_identifier_id")
            .distinct()
        ):
            roots.update(h for h in values if h)
        roots.update(
            PieceConverter.objects.filter(piece__conversation_id__in=ids)
            .order_by()
            .values_list("identifier_id", flat=True)
            .distinct()
        )
        mark_identifier_operations((h, new) for h in roots)


def mark_identifier_operations(pairs: Iterable[tuple[str, int]]) -> None:
    """Record (identifier, operation) for each root and every stored node below it.

    One query per tree level (at most MAX_TREE_DEPTH) plus one INSERT; used when rows move
    between operations (ingestion records new uses with store_identifier_uses).
    """
    wanted = {(h, op) for h, op in pairs}
    if not wanted:
        return
    seen: set[tuple[str, int]] = set()
    frontier = wanted
    for _ in range(MAX_TREE_DEPTH + 1):
        frontier = frontier - seen
        if not frontier:
            break
        rows = dict(
            ComponentIdentifier.objects.filter(pk__in={h for h, _ in frontier}).values_list(
                "hash", "children"
            )
        )
        seen |= {(h, op) for h, op in frontier if h in rows}
        frontier = {(child, op) for h, op in frontier for child in child_hashes(rows.get(h) or {})}
    IdentifierOperation.objects.bulk_create(
        [IdentifierOperation(identifier_id=h, operation_id=op) for h, op in sorted(seen)],
        ignore_conflicts=True,
    )
