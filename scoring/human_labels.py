"""Human verdicts as PyRIT 1.1's human-labeled CSV (`HumanLabeledDataset.from_csv`).

One implementation for `manage.py export_human_labels` and the download on the attack-results
list (scoring.human_label_views): both hand a query string (the list page's filters plus the
export's own options) and a scope to `export_human_labels`, so the same filter gives the same
bytes. The CSV itself is written by redteam.core.pyrit_csv, which refuses what PyRIT would read
back changed.

What goes into a file:

* The attack results of the scope that the attack-results FilterSet (memory.filters) selects,
  optionally one review view (scoring.review.for_review), and that hold at least one standing
  human verdict of the kind asked for: `objective` (true/false verdicts; an objective file) or
  `harm` (0..1 scale verdicts; a harm file for the one `harm_category` asked for, since PyRIT
  evaluates one harm category per file). Oldest ingested first.
* A row per result: `objective` is the result's objective, `assistant_response` the converted
  value of its last response piece and `data_type` that piece's converted data type (a media
  response is its stored path, as PyRIT's memory holds it), `harm_category` the result's
  targeted harm categories joined by ";" in an objective file (empty when it has none) and the
  category asked for in a harm file.
* Raters: one per reviewer, that reviewer's latest standing verdict of the kind. PyRIT reads
  every `human_score*` column and refuses a missing cell, so every row has the same number of
  raters, `raters` (1 by default): a result with more raters keeps the `raters` whose verdicts
  are newest (with 1, the latest verdict: the one that decides the result's outcome), written
  oldest first; a result with fewer is left out.
* Left out, and listed in `#` comment lines after the first line (PyRIT and pandas skip them,
  the report stays with the file): results without a stored response, with too few raters, or
  with a value PyRIT would read back changed (pyrit_csv.split_readable: missing-looking text
  such as "NA", a NUL, numbers pandas would retype).

Values are written as stored (a response starting with "=" stays one): the file is PyRIT's
input, not a spreadsheet, and PyRIT must read back exactly what the reviewers judged.

Bounded: at most `settings.HUMAN_LABELS_MAX_ROWS` results and `HUMAN_LABELS_MAX_CHARS`
characters of objectives and responses per file (more is refused, as a 400 on the page, as soon
as the bound is passed while reading), and two queries whatever the number of rows.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.http import QueryDict

from memory.filters import AttackResultFilterSet
from memory.models import AttackResult, MessagePiece, Score, ScoreSource, VerdictField
from redteam.common.access import Scope
from redteam.core import pyrit_csv
from redteam.core.pyrit_csv import LabeledRow
from scoring.blind import settled_q
from scoring.review import REVIEW_VIEWS, for_review, verdict_success

KINDS = ("objective", "harm")
# The verdict field each kind of file reads.
KIND_FIELDS = {"objective": VerdictField.OBJECTIVE, "harm": VerdictField.SCALE}
DEFAULT_MAX_ROWS = 5_000
# A stored value may hold millions of characters: the file's text is bounded too.
DEFAULT_MAX_CHARS = 32 * 1024 * 1024
READ_CHUNK = 500
MAX_RATERS = 20
# Comment lines naming left-out results; the count of the others follows.
MAX_REPORTED = 100
MAX_REASON_CHARS = 160
CATEGORY_SEPARATOR = ";"
# The export's own parameters; every other one is the attack-results FilterSet's.
EXPORT_PARAMS = (
    "kind",
    "dataset_version",
    "harm_definition",
    "harm_definition_version",
    "raters",
    "review",
)
# The list page's own parameters, which say nothing about the rows.
PAGE_PARAMS = ("cursor", "size")
_META_RE = re.compile(r"^[^,\r\n\x00]+$")
_FILENAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def max_rows() -> int:
    """The most results one file may hold (settings.HUMAN_LABELS_MAX_ROWS)."""
    return int(getattr(settings, "HUMAN_LABELS_MAX_ROWS", DEFAULT_MAX_ROWS))


def max_chars() -> int:
    """The most characters of objectives and responses one file may hold
    (settings.HUMAN_LABELS_MAX_CHARS)."""
    return int(getattr(settings, "HUMAN_LABELS_MAX_CHARS", DEFAULT_MAX_CHARS))


class ExportRefused(ValueError):
    """The request cannot be answered with a file: bad options or filters, or too many rows."""


def human_label_verdicts(scope: Scope) -> QuerySet[Score]:
    """Every human verdict a human-label export may read: standing (not withdrawn) objective
    and scale verdicts on attack results of the scope.

    The one place exports read human verdicts from. Blind double review filters here too
    (`scoring.blind.settled_q`): verdicts on items still pending a blind double review or
    disputed are never exported, and an adjudicated item exports its final verdict only.
    """
    return (
        Score.objects.visible_to(scope)
        .standing()
        .filter(
            source=ScoreSource.HUMAN,
            attack_result__isnull=False,
            verdict_field__in=(VerdictField.OBJECTIVE, VerdictField.SCALE),
        )
        .filter(settled_q())
    )


class ExportOptions(forms.Form):
    """The export's own options (query parameters and command flags of the same names)."""

    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS], required=False)
    dataset_version = forms.CharField(max_length=100, required=False)
    harm_definition = forms.CharField(max_length=300, required=False)
    harm_definition_version = forms.CharField(max_length=100, required=False)
    raters = forms.IntegerField(min_value=1, max_value=MAX_RATERS, required=False)
    review = forms.ChoiceField(choices=[(v, v) for v in REVIEW_VIEWS], required=False)

    def clean_dataset_version(self) -> str:
        return _meta_value(self.cleaned_data["dataset_version"] or "1.0", "dataset_version")

    def clean_harm_definition_version(self) -> str:
        value = self.cleaned_data["harm_definition_version"] or "1.0"
        return _meta_value(value, "harm_definition_version")

    def clean_harm_definition(self) -> str:
        value = self.cleaned_data["harm_definition"]
        return _meta_value(value, "harm_definition") if value else ""


def _meta_value(value: str, name: str) -> str:
    if value != value.strip() or not _META_RE.match(value):
        raise forms.ValidationError(
            f"{name} goes into the file's first line: no comma, newline or surrounding space."
        )
    return value


@dataclass(frozen=True)
class Request:
    """A validated export request: the filtered results and how to write them."""

    results: QuerySet[AttackResult]
    kind: str
    dataset_version: str
    raters: int
    harm_category: str = ""
    harm_definition: str = ""
    harm_definition_version: str = ""
    review: str = ""


@dataclass
class HumanLabels:
    """A written file: its text, a file name, its row count and the results left out."""

    text: str
    filename: str
    rows: int
    left_out: list[tuple[uuid.UUID, str]] = field(default_factory=list)


def _errors(form: forms.Form) -> str:
    problems = form.errors.items()
    return "; ".join(f"{name}: {' '.join(str(e) for e in errors)}" for name, errors in problems)


def parse_request(data: QueryDict, scope: Scope) -> Request:
    """The export `data` asks for, over the attack results of `scope` (ExportRefused naming
    what is wrong)."""
    options = ExportOptions(data)
    if not options.is_valid():
        raise ExportRefused(f"Invalid export option: {_errors(options)}")
    filters = data.copy()
    for name in (*EXPORT_PARAMS, *PAGE_PARAMS):
        filters.pop(name, None)
    filterset = AttackResultFilterSet(
        filters, queryset=AttackResult.objects.visible_to(scope), scope=scope
    )
    if not filterset.is_valid():
        raise ExportRefused(f"Invalid filter: {_errors(filterset.form)}")
    cleaned = options.cleaned_data
    kind = cleaned["kind"] or "objective"
    request = Request(
        results=filterset.qs,
        kind=kind,
        dataset_version=cleaned["dataset_version"],
        raters=cleaned["raters"] or 1,
        review=cleaned["review"] or "",
    )
    if kind == "objective":
        return request
    categories = list(dict.fromkeys(filterset.form.cleaned_data.get("harm_category") or []))
    if len(categories) != 1:
        raise ExportRefused(
            "A harm file is for one harm category (PyRIT evaluates one per file): give exactly "
            "one harm_category."
        )
    category = categories[0]
    definition = cleaned["harm_definition"] or f"{category}.yaml"
    try:
        _meta_value(definition, "harm_definition")
    except forms.ValidationError:
        raise ExportRefused(
            f"The harm category {category!r} cannot name its harm definition file; give "
            "harm_definition (no comma or newline)."
        ) from None
    return Request(
        results=request.results,
        kind=kind,
        dataset_version=request.dataset_version,
        raters=request.raters,
        harm_category=category,
        harm_definition=definition,
        harm_definition_version=cleaned["harm_definition_version"],
        review=request.review,
    )


def _selected(request: Request, scope: Scope) -> QuerySet[AttackResult]:
    """The results the request exports, with their visible last response's value and type."""
    verdicts = human_label_verdicts(scope).filter(
        attack_result=OuterRef("pk"), verdict_field=KIND_FIELDS[request.kind]
    )
    qs = request.results.filter(Exists(verdicts))
    if request.review:
        qs = for_review(qs, request.review)
    response = MessagePiece.objects.visible_to(scope).filter(pk=OuterRef("last_response_id"))
    return qs.annotate(
        response_value=Subquery(response.values("converted_value")[:1]),
        response_type=Subquery(response.values("converted_value_data_type")[:1]),
    ).order_by("ingested_at", "attack_result_id")


def _rater_scores(
    request: Request, scope: Scope, results: QuerySet[AttackResult]
) -> dict[uuid.UUID, list[float]]:
    """Each result's rater scores (one per reviewer, their latest verdict), oldest first."""
    verdicts = (
        human_label_verdicts(scope)
        .filter(
            verdict_field=KIND_FIELDS[request.kind],
            attack_result_id__in=results.order_by().values("pk"),
        )
        .order_by("timestamp", "ingested_at", "id")
        .values_list(
            "attack_result_id",
            "reviewer_id",
            "scorer_identifier_id",
            "score_type",
            "score_value",
        )
    )
    # Per result, rater -> score, kept in the order of each rater's latest verdict.
    latest: dict[uuid.UUID, dict[Any, float]] = {}
    for result_id, reviewer_id, scorer_hash, score_type, value in verdicts.iterator():
        number = _rating(request.kind, score_type, value)
        if number is None:
            continue
        # A reviewer whose account was deleted is still one rater: their scorer identifier.
        rater = reviewer_id if reviewer_id is not None else f"scorer:{scorer_hash}"
        raters = latest.setdefault(result_id, {})
        raters.pop(rater, None)  # the newer verdict replaces it, in order
        raters[rater] = number
    return {rid: list(raters.values()) for rid, raters in latest.items()}


def _rating(kind: str, score_type: str, value: str | None) -> float | None:
    if kind == "objective":
        success = verdict_success(score_type, value) if score_type == "true_false" else None
        return None if success is None else float(success)
    try:
        number = float(value) if score_type == "float_scale" and value is not None else None
    except ValueError:
        return None
    return number


def export_human_labels(request: Request, scope: Scope, limit: int | None = None) -> HumanLabels:
    """The file for a parsed request (ExportRefused when more results match than `limit`,
    settings.HUMAN_LABELS_MAX_ROWS by default). Queries: the results (one, with their
    responses) and their verdicts (one)."""
    limit = max_rows() if limit is None else limit
    budget = max_chars()
    selected = _selected(request, scope)
    rows_wanted = selected.only("attack_result_id", "objective", "targeted_harm_categories")
    results: list[AttackResult] = []
    used = 0
    # Read in chunks and stop at the first result past either bound, before holding it all.
    for result in rows_wanted[: limit + 1].iterator(chunk_size=READ_CHUNK):
        if len(results) == limit:
            raise ExportRefused(
                f"More than {limit} attack results match; narrow the filters (a file holds at "
                f"most {limit})."
            )
        used += len(result.objective) + len(getattr(result, "response_value", None) or "")
        if used > budget:
            raise ExportRefused(
                f"The matching results hold more than {budget:,} characters of objectives and "
                "responses; narrow the filters."
            )
        results.append(result)
    scores = _rater_scores(request, scope, selected) if results else {}
    rows: list[LabeledRow] = []
    row_ids: list[uuid.UUID] = []
    left_out: list[tuple[uuid.UUID, str]] = []
    for result in results:
        raters = scores.get(result.pk, [])
        value: str | None = getattr(result, "response_value", None)
        if value is None:
            left_out.append((result.pk, "no response stored"))
            continue
        if len(raters) < request.raters:
            left_out.append(
                (result.pk, f"{len(raters)} rater(s), fewer than the {request.raters} asked")
            )
            continue
        rows.append(
            LabeledRow(
                objective=result.objective,
                assistant_response=value,
                human_scores=raters[-request.raters :],
                data_type=getattr(result, "response_type", None) or "text",
                harm_category=request.harm_category
                or CATEGORY_SEPARATOR.join(result.targeted_harm_categories or []),
            )
        )
        row_ids.append(result.pk)
    harm = request.kind == "harm"
    try:
        kept, refused = pyrit_csv.split_readable(rows, harm=harm)
    except ValueError as exc:  # pragma: no cover - split_readable's pass bound
        raise ExportRefused(str(exc)) from None
    left_out += [(row_ids[i], reason) for i, reason in refused.items()]
    if harm:
        text = pyrit_csv.harm_csv(
            kept,
            dataset_version=request.dataset_version,
            harm_definition=request.harm_definition,
            harm_definition_version=request.harm_definition_version,
        )
    else:
        text = pyrit_csv.objective_csv(kept, dataset_version=request.dataset_version)
    return HumanLabels(
        text=_with_report(text, left_out, results),
        filename=_filename(request),
        rows=len(kept),
        left_out=left_out,
    )


def _with_report(
    text: str, left_out: list[tuple[uuid.UUID, str]], results: list[AttackResult]
) -> str:
    """`text` with comment lines naming the left-out results after its first line, in the
    order of the results."""
    if not left_out:
        return text
    order = {r.pk: i for i, r in enumerate(results)}
    ordered = sorted(left_out, key=lambda item: order[item[0]])
    lines = [f"# left out {len(ordered)} attack result(s) (attack_result_id: reason):"]
    lines += [f"# {rid}: {_one_line(reason)}" for rid, reason in ordered[:MAX_REPORTED]]
    if len(ordered) > MAX_REPORTED:
        lines.append(f"# ... and {len(ordered) - MAX_REPORTED} more")
    first, rest = text.split("\n", 1)
    return "\n".join([first, *lines, rest])


def _one_line(reason: str) -> str:
    """A reason on one comment line: control characters (line breaks included) escaped, cut."""
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in reason)
    return flat if len(flat) <= MAX_REASON_CHARS else flat[: MAX_REASON_CHARS - 1] + "…"


def _filename(request: Request) -> str:
    what = request.harm_category if request.kind == "harm" else "objective"
    stem = _FILENAME_UNSAFE.sub("_", what).strip("._") or request.kind
    return f"human_labels_{stem[:80]}.csv"
