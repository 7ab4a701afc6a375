"""Per-item results of a batch store, shared by every ingestion service, and attack-result
outcome counts, shared by every page that tallies results. Framework-free."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from redteam.core.enums import ATTACK_OUTCOMES
from redteam.core.stats import percent

ItemStatus = Literal["stored", "unchanged", "rejected"]


@dataclass(frozen=True)
class FieldError:
    """One problem with one item: which field, what is wrong, and whether it is a conflict."""

    field: str | None
    message: str
    code: Literal["invalid", "conflict"] = "invalid"

    def as_dict(self) -> dict[str, str | None]:
        """JSON form for API responses."""
        return {"field": self.field, "message": self.message, "code": self.code}


@dataclass
class ItemOutcome:
    """What happened to the item at `index` of the list of `kind` in a batch."""

    kind: str
    index: int
    id: str | None
    status: ItemStatus
    errors: list[FieldError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the item is stored (now or before)."""
        return self.status != "rejected"

    def as_dict(self) -> dict[str, object]:
        """JSON form for API responses."""
        return {
            "kind": self.kind,
            "index": self.index,
            "id": self.id,
            "status": self.status,
            "errors": [e.as_dict() for e in self.errors],
        }


@dataclass
class OutcomeCounts:
    """Attack-result counts by outcome, with PyRIT's objective_achieved_rate."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ATTACK_OUTCOMES, 0))

    @property
    def total(self) -> int:
        """Every result counted."""
        return sum(self.counts.values())

    @property
    def success_rate(self) -> int:
        """Percentage of successes, rounded half up (2 of 3 is 67%; see redteam.core.stats)."""
        return percent(self.counts["success"], self.total)

    def add(self, outcome: str, n: int) -> None:
        """Count n results with this outcome."""
        self.counts[outcome] = self.counts.get(outcome, 0) + n
