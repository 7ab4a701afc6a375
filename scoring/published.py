"""Importing PyRIT's published scorer metrics (``*_metrics.jsonl`` registry files).

A registry line is a scorer identifier's flat dump with ``eval_hash`` and ``metrics`` set
after its keys (PyRIT's ``add_evaluation_results``); PyRIT 1.1 bundles such files under
``pyrit/datasets/scorer_evals/``. A file is imported all or nothing: every line is checked
first (JSON, size, nesting, the eval hash, the metrics' types) and a single bad line rejects
the file with the line named. PyRIT keeps one entry per eval hash per file and its lookup
takes the first, so a repeated eval hash keeps its first line. Re-importing a file makes its
rows equal the file again: unchanged rows are left alone, changed ones updated, rows of
entries the file no longer has removed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Final

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from redteam.common.audit import record_audit
from redteam.core.jsonguard import item_problem, quoted
from scoring.models import PublishedScorerMetrics

MAX_FILE_BYTES: Final = 16 * 1024 * 1024
MAX_LINES: Final = 10_000
MAX_FILE_NAME: Final = 255
EVAL_HASH_RE: Final = re.compile(r"^[0-9a-f]{64}$")
# Metric fields PyRIT writes as text; every other metric is a number (or null).
TEXT_METRICS: Final = {
    "dataset_name": 1000,
    "dataset_version": 255,
    "harm_category": 120,
    "harm_definition": 1000,
    "harm_definition_version": 255,
}
OBJECTIVE_REQUIRED: Final = (
    "num_responses",
    "num_human_raters",
    "accuracy",
    "accuracy_standard_error",
    "f1_score",
    "precision",
    "recall",
)
HARM_REQUIRED: Final = (
    "num_responses",
    "num_human_raters",
    "mean_absolute_error",
    "mae_standard_error",
    "t_statistic",
    "p_value",
    "krippendorff_alpha_combined",
)
_FIELDS: Final = (
    "kind",
    "scorer_class",
    "scorer_hash",
    "scorer_identifier",
    "metrics",
    "dataset_name",
    "dataset_version",
    "harm_category",
    "pyrit_version",
    "line_number",
)


class RegistryError(ValueError):
    """A registry file that cannot be imported; `problems` name the lines."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:5]))
        self.problems = problems


@dataclass
class ImportReport:
    """What importing one file did."""

    file_name: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    repeated: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One line for the command's output."""
        text = (
            f"{self.file_name}: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.removed} removed"
        )
        if self.repeated:
            text += f"; {len(self.repeated)} repeated eval hash(es) kept their first line"
        return text


def _is_number(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _text(value: Any, limit: int, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    if len(value) > limit:
        raise ValueError(f"{what} is longer than {limit} characters")
    return value


def _kind(metrics: dict[str, Any]) -> str:
    if "accuracy" in metrics:
        kind, required = "objective", OBJECTIVE_REQUIRED
    elif "mean_absolute_error" in metrics:
        kind, required = "harm", HARM_REQUIRED
    else:
        raise ValueError("metrics are neither objective (accuracy) nor harm (mean_absolute_error)")
    missing = [name for name in required if name not in metrics]
    if missing:
        raise ValueError(f"metrics lack {', '.join(missing)}")
    for name, value in metrics.items():
        if name in TEXT_METRICS:
            _text(value, TEXT_METRICS[name], f"metrics.{quoted(name, 60)}")
        elif not _is_number(value):
            raise ValueError(f"metrics.{quoted(name, 60)} must be a number or null")
    for name in ("num_responses", "num_human_raters"):
        if not isinstance(metrics[name], int) or isinstance(metrics[name], bool):
            raise ValueError(f"metrics.{name} must be an integer")
    return kind


def _row(entry: Any, line_number: int) -> dict[str, Any]:
    """The stored fields of one registry line (ValueError saying what is wrong)."""
    if not isinstance(entry, dict):
        raise ValueError("a line must be a JSON object")
    problem = item_problem(entry, max_chars=settings.REDTEAM_MAX_STRING_CHARS)
    if problem is not None:
        raise ValueError(str(problem))
    eval_hash = entry.get("eval_hash")
    if not isinstance(eval_hash, str) or not EVAL_HASH_RE.match(eval_hash):
        raise ValueError("eval_hash must be 64 lowercase hex digits")
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        raise ValueError("metrics must be an object")
    kind = _kind(metrics)
    identity = {k: v for k, v in entry.items() if k not in ("eval_hash", "metrics")}
    scorer_hash = _text(identity.get("hash"), 64, "hash")
    return {
        "eval_hash": eval_hash,
        "kind": kind,
        "scorer_class": _text(identity.get("class_name"), 255, "class_name"),
        "scorer_hash": scorer_hash if EVAL_HASH_RE.match(scorer_hash) else "",
        "scorer_identifier": identity,
        "metrics": metrics,
        "dataset_name": _text(metrics.get("dataset_name"), 1000, "dataset_name"),
        "dataset_version": _text(metrics.get("dataset_version"), 255, "dataset_version"),
        "harm_category": _text(metrics.get("harm_category"), 120, "harm_category"),
        "pyrit_version": _text(identity.get("pyrit_version"), 32, "pyrit_version"),
        "line_number": line_number,
    }


def parse_registry(data: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    """Every line's row (first line of each eval hash) and the eval hashes repeated; a
    RegistryError naming each bad line (at most 20) when any line is bad."""
    if len(data) > MAX_FILE_BYTES:
        raise RegistryError([f"the file is over {MAX_FILE_BYTES} bytes"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(["the file is not UTF-8 text"]) from None
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise RegistryError([f"the file has over {MAX_LINES} lines"])
    rows: dict[str, dict[str, Any]] = {}
    repeated: list[str] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = _row(json.loads(line), number)
        except RecursionError:
            problems.append(f"line {number}: nested too deeply")
            continue
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            problems.append(f"line {number}: {quoted(str(exc), 300)}")
            if len(problems) >= 20:
                break
            continue
        if row["eval_hash"] in rows:
            repeated.append(row["eval_hash"])
            continue
        rows[row["eval_hash"]] = row
    if problems:
        raise RegistryError(problems)
    if not rows:
        raise RegistryError(["the file holds no metrics line"])
    return list(rows.values()), repeated


def _same(a: Any, b: Any) -> bool:
    """Equal as stored JSON, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def clean_file_name(name: str) -> str:
    """The registry's name as stored: its base name, bounded."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or len(base) > MAX_FILE_NAME:
        raise RegistryError([f"a file name of 1 to {MAX_FILE_NAME} characters is needed"])
    return base


@transaction.atomic
def import_registry(*, data: bytes, file_name: str, imported_by: Any = None) -> ImportReport:
    """Make the rows of `file_name` equal the registry `data` (RegistryError, nothing
    written, when any line is bad); audited as `published_metrics.imported`.

    Queries: the file's rows (locked), then one INSERT, UPDATEs of changed rows, one DELETE,
    and the audit event.
    """
    name = clean_file_name(file_name)
    rows, repeated = parse_registry(data)
    report = ImportReport(file_name=name, repeated=repeated)
    now = timezone.now()
    username = imported_by.get_username() if imported_by is not None else ""
    existing = {
        row.eval_hash: row
        for row in PublishedScorerMetrics.objects.select_for_update().filter(file_name=name)
    }
    created, changed = [], []
    for row in rows:
        stored = existing.pop(row["eval_hash"], None)
        if stored is None:
            created.append(
                PublishedScorerMetrics(**row, file_name=name, imported_at=now, imported_by=username)
            )
        elif all(_same(getattr(stored, f), row[f]) for f in _FIELDS):
            report.unchanged += 1
        else:
            for f in _FIELDS:
                setattr(stored, f, row[f])
            stored.imported_at, stored.imported_by = now, username
            changed.append(stored)
    PublishedScorerMetrics.objects.bulk_create(created)
    if changed:
        fields = [*_FIELDS, "imported_at", "imported_by"]
        PublishedScorerMetrics.objects.bulk_update(changed, fields)
    if existing:
        PublishedScorerMetrics.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
    report.created, report.updated, report.removed = len(created), len(changed), len(existing)
    # Without a user, the caller's `acting_as` (manage.py) names who imported it.
    actor: dict[str, Any] = {"actor": imported_by} if imported_by is not None else {}
    record_audit(
        **actor,
        action="published_metrics.imported",
        object_type="published_scorer_metrics",
        object_id=name,
        detail={
            "created": report.created,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "removed": report.removed,
        },
    )
    return report
