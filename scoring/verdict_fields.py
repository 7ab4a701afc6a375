"""What a review asks for, and what a reviewer answered.

A queue asks for any of: the objective true/false (the default), a 0..1 scale, one category from
a configured list, free-text notes. Each answer is stored as its own PyRIT-shaped human Score
(scoring.services.record_review): `true_false`, `float_scale`, or a category as a
`true_false` "true" score whose `score_category` names the category and whose
`score_metadata` carries it under "category". Notes ride in every score's `score_metadata`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_CATEGORIES = 9  # keys 1..9 pick them
MAX_CATEGORY_CHARS = 60
MAX_NOTES_CHARS = 10_000


@dataclass(frozen=True)
class VerdictFields:
    """The fields a review form shows (a queue's configuration, or the default)."""

    true_false: bool = True
    scale: bool = False
    categories: tuple[str, ...] = ()
    notes: bool = False

    @property
    def category(self) -> bool:
        """Whether a category is asked for."""
        return bool(self.categories)


DEFAULT_FIELDS = VerdictFields()


@dataclass(frozen=True)
class VerdictAnswers:
    """One submitted review: the answers to the fields asked for (None: not asked)."""

    rationale: str
    objective: bool | None = None
    scale: float | None = None
    category: str | None = None
    notes: str = ""
    fields: VerdictFields = field(default=DEFAULT_FIELDS)
