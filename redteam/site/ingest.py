"""Batch ingestion: the one entry point every ingestion path calls, once per batch.

The API (redteam.site.api), `import_pyrit_memory` (redteam.site.pyrit_sqlite) and `load_demo`
hand each batch to `ingest_batch`, so they store the same rows and answer the same outcomes.
It checks the payload's top-level shape, runs the per-item JSON guard
(redteam.core.jsonguard) once on every item, hands each list to its service (memory, seeds;
all with one signature, `StoreService`, taking the sender explicitly) in dependency order
inside ONE transaction (so a crash anywhere leaves nothing half-written), and folds the
outcomes into the API's answer. With `atomic=True` the transaction is rolled back as soon as
any item is rejected, so a batch is stored whole or not at all.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, transaction

from memory.services import (
    store_attack_results,
    store_conversations,
    store_message_pieces,
    store_scenario_results,
)
from memory.store_scores import store_scores
from redteam.common.access import Writer
from redteam.common.dbutil import prepared_statements
from redteam.common.typing import User
from redteam.core.jsonguard import item_problem, quoted
from redteam.core.outcomes import FieldError, ItemOutcome
from seeds.services import store_seeds

logger = logging.getLogger(__name__)


class StoreService(Protocol):
    """A kind's store service: validate and store the items, one ItemOutcome per item, in
    order. `writer` is who sent the batch and the operations it may write into
    (redteam.common.access.Writer; services that keep a history trail record its user)."""

    def __call__(
        self, items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
    ) -> list[ItemOutcome]: ...


def _store_seed_library(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Seeds are the shared library, outside every operation: only the author is kept."""
    return store_seeds(items, user=writer.user if writer is not None else None)


# Payload key -> service, in the order they must run: conversations before the pieces that
# belong to them, pieces before the scores and attack results that point at them, scenario
# results last (they embed attack results; results sent on their own name their scenario by
# attribution_parent_id, which may dangle as PyRIT's ON DELETE SET NULL key allows). Seeds
# depend on nothing.
INGEST_SERVICES: dict[str, StoreService] = {
    "conversations": store_conversations,
    "message_pieces": store_message_pieces,
    "scores": store_scores,
    "attack_results": store_attack_results,
    "scenario_results": store_scenario_results,
    "seeds": _store_seed_library,
}
INGEST_KINDS: tuple[str, ...] = tuple(INGEST_SERVICES)

# The per-item status reported for a valid item whose atomic batch was rolled back.
ROLLED_BACK = "rolled_back"


class PayloadError(ValueError):
    """The payload's top-level shape is wrong (answered with 400, nothing is stored)."""


def validate_payload(payload: Any) -> dict[str, list[Any]]:
    """Check the top level: an object whose keys are known kinds and whose values are lists."""
    if not isinstance(payload, dict):
        raise PayloadError(
            f"The body must be a JSON object with any of {', '.join(INGEST_KINDS)}; "
            f"got {type(payload).__name__}."
        )
    unknown = sorted(str(k) for k in payload if k not in INGEST_SERVICES)
    if unknown:
        # A typo such as "pieces" must not be silently ignored.
        raise PayloadError(
            f"Unknown key(s) {', '.join(map(repr, unknown))}; expected any of "
            f"{', '.join(INGEST_KINDS)}."
        )
    lists: dict[str, list[Any]] = {}
    for kind in INGEST_KINDS:
        if kind not in payload or payload[kind] is None:
            continue
        value = payload[kind]
        if not isinstance(value, list):
            raise PayloadError(f"{kind!r} must be a JSON array; got {type(value).__name__}.")
        lists[kind] = value
    return lists


def count_items(payload: Mapping[str, Any]) -> int:
    """How many items a (validated) payload holds, for the item limit."""
    return sum(len(v) for v in payload.values() if isinstance(v, list))


def _item_id(item: Mapping[str, Any], kind: str) -> str | None:
    key = "attack_result_id" if kind == "attack_results" else "id"
    if kind == "conversations":
        key = "conversation_id"
    value = item.get(key)
    return quoted(value) if isinstance(value, str) else None


@dataclass
class IngestReport:
    """The outcome of one batch: per-item results plus whether it was rolled back."""

    outcomes: list[ItemOutcome]
    atomic: bool = False
    rolled_back: bool = False

    @property
    def stored(self) -> int:
        """Items newly written (0 when the batch was rolled back)."""
        if self.rolled_back:
            return 0
        return sum(1 for o in self.outcomes if o.status == "stored")

    @property
    def unchanged(self) -> int:
        """Items already stored with identical content (replays)."""
        return sum(1 for o in self.outcomes if o.status == "unchanged")

    @property
    def errors(self) -> int:
        """Items rejected (invalid or conflicting)."""
        return sum(1 for o in self.outcomes if o.status == "rejected")

    @property
    def ok(self) -> bool:
        """True when every item is stored now or was before."""
        return self.errors == 0 and not self.rolled_back

    @property
    def status_code(self) -> int:
        """200 when every item is stored or unchanged, else 207 (multi-status)."""
        return 200 if self.ok else 207

    def as_dict(self) -> dict[str, Any]:
        """The API response body."""
        items = []
        for outcome in self.outcomes:
            item = outcome.as_dict()
            if self.rolled_back and outcome.status == "stored":
                item["status"] = ROLLED_BACK
            items.append(item)
        body: dict[str, Any] = {
            "stored": self.stored,
            "unchanged": self.unchanged,
            "errors": self.errors,
            "items": items,
        }
        if self.atomic:
            body["atomic"] = True
            body["rolled_back"] = self.rolled_back
        return body


class _RollBack(Exception):
    """Raised inside the atomic block to undo an atomic batch with rejected items."""


def _rejected(kind: str, index: int, item_id: str | None, error: FieldError) -> ItemOutcome:
    return ItemOutcome(kind=kind, index=index, id=item_id, status="rejected", errors=[error])


def guard_error(item: Any, field: str | None = None) -> FieldError | None:
    """The per-item JSON guard (redteam.core.jsonguard) with the configured limits, as an error
    naming the offending value (under `field` when the item is one field of a row)."""
    problem = item_problem(
        item,
        max_chars=settings.REDTEAM_MAX_STRING_CHARS,
        max_depth=settings.REDTEAM_MAX_JSON_DEPTH,
    )
    if problem is None:
        return None
    path = ".".join(p for p in (field, problem.path) if p) or None
    return FieldError(path, str(problem))


def store_items(kind: str, items: list[Any], *, writer: Writer) -> list[ItemOutcome]:
    """One list of a batch: guard each item once (redteam.core.jsonguard), hand the sound
    objects to the kind's service with the sender, and answer one outcome per item at its
    index. Called by ingest_batch, inside its transaction."""
    if kind not in INGEST_SERVICES:
        raise ValueError(f"Unknown ingest kind {kind!r}.")
    outcomes: list[ItemOutcome | None] = [None] * len(items)
    objects: list[Mapping[str, Any]] = []
    positions: list[int] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            message = f"Each item must be a JSON object; got {type(item).__name__}."
            outcomes[index] = _rejected(kind, index, None, FieldError(None, message))
            continue
        error = guard_error(item)
        if error is not None:
            outcomes[index] = _rejected(kind, index, _item_id(item, kind), error)
            continue
        objects.append(item)
        positions.append(index)
    if objects:
        store = INGEST_SERVICES[kind]
        results = store(objects, writer=writer)
        if len(results) != len(objects):  # a broken service must not misreport silently
            raise RuntimeError(
                f"The {kind} service returned {len(results)} outcomes for {len(objects)} items"
            )
        for position, result in zip(positions, results, strict=True):
            result.kind = kind
            result.index = position
            if result.id is None:
                result.id = _item_id(items[position], kind)
            outcomes[position] = result
    return [o for o in outcomes if o is not None]


def ingest_batch(
    payload: Any,
    *,
    atomic: bool = False,
    user: User | None = None,
    writer: Writer | None = None,
) -> IngestReport:
    """Validate the payload's shape and store every list through its service, in one transaction.

    `writer` is who sent it and the operations it may write into (the API builds it from the
    request with Writer.for_request); without one the caller is trusted (the commands:
    Writer.trusted, any operation, `user` as the author), and it is handed to every service.
    Raises PayloadError for a wrong top-level shape. Per-item problems come back as rejected
    ItemOutcomes. Any unexpected exception rolls back the whole batch and
    propagates.
    """
    lists = validate_payload(payload)
    writer = writer or Writer.trusted(user)
    outcomes: list[ItemOutcome] = []
    rolled_back = False
    try:
        # Every statement of an ingest looks rows up by key or writes them: prepared.
        with prepared_statements(DEFAULT_DB_ALIAS), transaction.atomic():
            for kind in INGEST_KINDS:
                if lists.get(kind):
                    outcomes.extend(store_items(kind, lists[kind], writer=writer))
            if atomic and any(o.status == "rejected" for o in outcomes):
                raise _RollBack
    except _RollBack:
        rolled_back = True
    report = IngestReport(outcomes=outcomes, atomic=atomic, rolled_back=rolled_back)
    if report.errors:
        logger.info(
            "ingest by %s: %d stored, %d unchanged, %d rejected%s",
            writer.user.get_username() if writer.user is not None else None,
            report.stored,
            report.unchanged,
            report.errors,
            " (rolled back)" if rolled_back else "",
        )
    return report
