"""PyRIT's memory round trip as rules: how an object differs once PyRIT wrote and re-read it.

An attack returns live objects; PyRIT's memory gives back a slightly different copy of each
(PYRIT-MODEL.md 4.6, 6.1, 8.1; read in PyRIT 1.1's ``memory_models.py`` and confirmed by
writing live objects to a memory file and reading them back). Both copies may be sent here,
in either order, and must get the same answer: ``unchanged``, never ``conflict``. The
ingestion services therefore store and compare what this module says:

* a pruned or adversarial related conversation sent without a description gets the text
  PyRIT's memory gives it on reload (storage and comparison);
* related conversations compare on (conversation_id, conversation_type) of the pruned and
  adversarial ones only: PyRIT's memory replaces their descriptions and drops the score and
  converter ones (those are stored when sent, never compared);
* an attack result's ``error_traceback`` compares on its first 10240 characters, what the
  memory keeps;
* identifiers compare by content hash (or, for legacy rows whose stored hash cannot be
  recomputed from their truncated params, by identical dump): PyRIT stamps ``eval_hash``
  (and the writer's ``pyrit_version``) when it writes memory, which changes the dump but not
  the identifier;
* a seed's empty lists (harm categories, authors, groups, parameters) equal null, which is
  how the memory stores them, and ``is_general_technique``, ``is_jinja_template`` and
  ``prompt_group_alias``, which the memory has no column for, are not compared;
* timestamps compare as UTC instants (memory keeps naive UTC with microseconds) and lists
  PyRIT keeps as sets (related conversations) compare sorted.

Pure functions, no Django: memory, scoring and seeds all call them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "RELOAD_DESCRIPTIONS",
    "SEED_FIELDS_NOT_PERSISTED",
    "SEED_LIST_FIELDS",
    "TRACEBACK_LIMIT",
    "SameIdentifier",
    "identifier_compared",
    "related_compared",
    "related_description",
    "seed_compared",
    "traceback_compared",
]

# The only related-conversation types PyRIT's memory keeps, and the description it gives each
# on reload (AttackResultEntry.get_attack_result).
RELOAD_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "pruned": "pruned conversation",
    "adversarial": "adversarial chat conversation",
}
# AttackResultEntry keeps error_traceback[:10240].
TRACEBACK_LIMIT: Final = 10240
# SeedEntry stores these lists as null when empty.
SEED_LIST_FIELDS: Final = ("harm_categories", "authors", "groups", "parameters")
# SeedEntry has no column for these (PYRIT-MODEL.md 4.6): reloaded seeds carry the defaults.
SEED_FIELDS_NOT_PERSISTED: Final = frozenset(
    {"is_general_technique", "is_jinja_template", "prompt_group_alias"}
)


@dataclass(frozen=True, eq=False)
class SameIdentifier:
    """One identifier use in a comparison: equal to another with its content hash or dump."""

    hash: str
    digest: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameIdentifier) and (
            self.hash == other.hash or self.digest == other.digest
        )

    __hash__ = None  # type: ignore[assignment]  # equality is not transitive: unhashable


def identifier_compared(hash_: str | None, digest: str | None) -> SameIdentifier | None:
    """The compared form of an identifier use (None when there is none)."""
    if hash_ is None:
        return None
    return SameIdentifier(hash_, digest or "")


def related_description(conversation_type: Any, description: Any) -> Any:
    """The description to store: as sent, or PyRIT's reload text when none was sent."""
    if description is None and isinstance(conversation_type, str):
        return RELOAD_DESCRIPTIONS.get(conversation_type)
    return description


def related_compared(related: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    """The related conversations PyRIT's memory keeps, as sorted [id, type] pairs."""
    return sorted(
        [ref["conversation_id"], ref["conversation_type"]]
        for ref in related
        if ref["conversation_type"] in RELOAD_DESCRIPTIONS
    )


def traceback_compared(traceback: str | None) -> str | None:
    """The part of an error traceback PyRIT's memory keeps (an empty one becomes null)."""
    return traceback[:TRACEBACK_LIMIT] if traceback else None


def seed_compared(values: Mapping[str, Any]) -> dict[str, Any]:
    """A seed's compared values as PyRIT's memory gives them back."""
    return {
        name: (value or None) if name in SEED_LIST_FIELDS else value
        for name, value in values.items()
        if name not in SEED_FIELDS_NOT_PERSISTED
    }
