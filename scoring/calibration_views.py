"""Scorer calibration pages: every scorer configuration against human verdicts, and one.

`/scorers/` lists each configuration (eval hash) with n and PyRIT's metrics, worst first,
sortable by column, beside the metrics PyRIT published for it (imported registry files);
`?format=jsonl` downloads the rows as PyRIT ``*_metrics.jsonl`` lines. `/scorers/<eval
hash>/` shows one configuration: metrics, the confusion matrix as a chart, its identifier
tree, the identifiers under the eval hash, and every disagreement (bounded pages).

Everything is computed on request from the viewer's operations (scoring.calibration), so a
verdict recorded a moment ago already counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memory.models import ComponentIdentifier, MessagePiece, original_prompt_in
from memory.querysets import identifier_tree
from redteam.common.access import Scope, scope_for
from redteam.common.roles import viewer_required
from redteam.core.calibration import HarmScorerMetrics, ObjectiveScorerMetrics
from redteam.core.trees import tree_from_dump
from scoring.calibration import (
    FLOAT_SCALE,
    TRUE_FALSE,
    CalibrationFilterError,
    CalibrationQuery,
    Pair,
    ScorerCalibration,
    calibration_query,
    jsonl_lines,
    scorer_calibrations,
)
from scoring.models import PublishedScorerMetrics

# Scorer identifiers listed as not calibrated yet (n = 0).
MAX_UNCALIBRATED: Final = 100
# Published rows shown on the list (a registry file holds a few dozen; imports are bounded).
MAX_PUBLISHED: Final = 500
DISAGREEMENTS_PER_PAGE: Final = 50
# Columns a table sorts by: name -> (label, metric). None sorts by the text of the class.
TF_COLUMNS: Final = {
    "n": "num_responses",
    "accuracy": "accuracy",
    "f1_score": "f1_score",
    "precision": "precision",
    "recall": "recall",
    "cohen_kappa": "cohen_kappa",
}
FS_COLUMNS: Final = {
    "n": "num_responses",
    "mean_absolute_error": "mean_absolute_error",
    "t_statistic": "t_statistic",
    "p_value": "p_value",
    "krippendorff_alpha_combined": "krippendorff_alpha_combined",
}
# Worst first: lowest accuracy, highest mean absolute error.
TF_DEFAULT: Final = "accuracy"
FS_DEFAULT: Final = "-mean_absolute_error"
FILTER_PARAMS: Final = ("eval_hash", "scorer", "label", "harm_category", "after", "before")


def metric_text(value: Any) -> str:
    """A metric for display: integers as they are, floats to 3 decimals, NaN/None as a dash."""
    if value is None or isinstance(value, bool):
        return "—"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "—" if not math.isfinite(value) else f"{value:.3f}"
    return "—"


@dataclass(frozen=True)
class MetricRow:
    """A configuration as a table row: the calibration and its column values as text."""

    c: ScorerCalibration
    values: list[str]


def _rows(calibrations: list[ScorerCalibration], columns: dict[str, str]) -> list[MetricRow]:
    return [
        MetricRow(c, [metric_text(getattr(c.metrics, m, None)) for m in columns.values()])
        for c in calibrations
    ]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def _sorted(
    rows: list[ScorerCalibration], sort: str, columns: dict[str, str], default: str
) -> tuple[list[ScorerCalibration], str]:
    """Rows sorted by a column ("-" first: descending); NaN and missing values last."""
    name = sort.lstrip("-")
    if name not in columns:
        sort, name = default, default.lstrip("-")
    descending = sort.startswith("-")
    metric = columns[name]

    def key(c: ScorerCalibration) -> tuple[bool, float, str]:
        value = _number(getattr(c.metrics, metric, None))
        if value is None:
            return (True, 0.0, c.eval_hash)
        return (False, -value if descending else value, c.eval_hash)

    return sorted(rows, key=key), sort


@dataclass(frozen=True)
class SortLink:
    """A column header: its query string when clicked and whether it is the current sort."""

    name: str
    label: str
    query: str
    current: str  # "", "ascending" or "descending"


def _sort_links(
    request: HttpRequest, table: str, columns: dict[str, str], current: str
) -> list[SortLink]:
    links = []
    for name in columns:
        state = ""
        if current.lstrip("-") == name:
            state = "descending" if current.startswith("-") else "ascending"
        flipped = name if state == "descending" else f"-{name}" if state else name
        params = request.GET.copy()
        params[table] = flipped
        params.pop("format", None)
        links.append(SortLink(name, name.replace("_", " "), params.urlencode(), state))
    return links


def _published_by_hash(
    eval_hashes: Sequence[str] | None,
) -> dict[str, list[PublishedScorerMetrics]]:
    """Published metrics by eval hash (1 query; every imported row when None)."""
    rows = PublishedScorerMetrics.objects.all()
    if eval_hashes is not None:
        rows = rows.filter(eval_hash__in=list(eval_hashes))
    out: dict[str, list[PublishedScorerMetrics]] = {}
    for row in rows.order_by("file_name", "line_number")[:MAX_PUBLISHED]:
        out.setdefault(row.eval_hash, []).append(row)
    return out


def _uncalibrated(scope: Scope, calibrated: set[str]) -> list[ComponentIdentifier]:
    """Scorer identifiers used in the scope's operations with no human-rated response yet
    (1 query on the identifier table, bounded); human scorers left out."""
    rows = (
        ComponentIdentifier.objects.visible_to(scope)
        .filter(kind="scorer")
        .exclude(class_name__startswith="Human")
        .only("hash", "class_name", "display_name")
        .order_by("class_name", "hash")[: MAX_UNCALIBRATED + len(calibrated)]
    )
    return [row for row in rows if row.hash not in calibrated][:MAX_UNCALIBRATED]


def _query(request: HttpRequest, scope: Scope) -> tuple[CalibrationQuery | None, dict[str, Any]]:
    try:
        return calibration_query(scope, request.GET), {}
    except CalibrationFilterError as exc:
        return None, exc.errors


def _filter_values(request: HttpRequest) -> dict[str, list[str]]:
    return {name: request.GET.getlist(name) for name in FILTER_PARAMS}


def _jsonl_response(calibrations: list[ScorerCalibration], query: CalibrationQuery) -> HttpResponse:
    body = "".join(line + "\n" for line in jsonl_lines(calibrations, query))
    response = HttpResponse(body, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="redteam_metrics.jsonl"'
    return response


@require_GET
@viewer_required
def scorer_list(request: HttpRequest) -> HttpResponse:
    """Every scorer configuration the viewer's verdicts calibrate, worst first.

    Queries: session, user, memberships; the calibration's 7 (scoring.calibration); published
    metrics; scorers not calibrated yet; at any number of verdicts, scores or configurations.
    """
    scope = scope_for(request)
    query, errors = _query(request, scope)
    calibrations = scorer_calibrations(query) if query is not None else []
    if request.GET.get("format") == "jsonl":
        if query is None:
            return HttpResponse(
                "Invalid filters: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()),
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        return _jsonl_response(calibrations, query)
    published = _published_by_hash(None)
    tf, tf_sort = _sorted(
        [c for c in calibrations if c.score_type == TRUE_FALSE],
        request.GET.get("tf_sort", ""),
        TF_COLUMNS,
        TF_DEFAULT,
    )
    fs, fs_sort = _sorted(
        [c for c in calibrations if c.score_type == FLOAT_SCALE],
        request.GET.get("fs_sort", ""),
        FS_COLUMNS,
        FS_DEFAULT,
    )
    for c in calibrations:
        c.published = published.get(c.eval_hash, [])
    calibrated = {m.identity.hash for c in calibrations for m in c.members}
    jsonl_params = request.GET.copy()
    jsonl_params["format"] = "jsonl"
    context = {
        "true_false": _rows(tf, TF_COLUMNS),
        "float_scale": _rows(fs, FS_COLUMNS),
        "tf_links": _sort_links(request, "tf_sort", TF_COLUMNS, tf_sort),
        "fs_links": _sort_links(request, "fs_sort", FS_COLUMNS, fs_sort),
        "published": [row for rows in published.values() for row in rows],
        "uncalibrated": _uncalibrated(scope, calibrated),
        "uncalibrated_limit": MAX_UNCALIBRATED,
        "published_limit": MAX_PUBLISHED,
        "errors": errors,
        "filters": _filter_values(request),
        "jsonl_query": jsonl_params.urlencode(),
    }
    return render(request, "scoring/scorer_list.html", context, status=400 if errors else 200)


@dataclass(frozen=True)
class ConfusionCell:
    """One cell of the confusion matrix chart: its count, share and SVG geometry."""

    name: str
    label: str
    count: int
    percent: int
    x: int
    y: int
    opacity: str
    correct: bool


def confusion_cells(metrics: ObjectiveScorerMetrics) -> list[ConfusionCell]:
    """The 2x2 matrix as SVG cells (rows: people said true / false; columns: the scorer)."""
    c = metrics.confusion
    total = max(c.tp + c.fp + c.tn + c.fn, 1)
    cells = []
    for name, label, count, col, row, correct in (
        ("tp", "true positive", c.tp, 0, 0, True),
        ("fn", "false negative", c.fn, 1, 0, False),
        ("fp", "false positive", c.fp, 0, 1, False),
        ("tn", "true negative", c.tn, 1, 1, True),
    ):
        share = count / total
        cells.append(
            ConfusionCell(
                name=name,
                label=label,
                count=count,
                percent=round(share * 100),
                x=120 + col * 150,
                y=40 + row * 110,
                opacity=f"{0.08 + 0.8 * share:.2f}",
                correct=correct,
            )
        )
    return cells


@dataclass(frozen=True)
class ErrorBin:
    """One bar of the absolute-error histogram (float_scale scorers)."""

    label: str
    count: int
    x: int
    height: int
    y: int


def error_bins(pairs: Sequence[Pair], bins: int = 10) -> list[ErrorBin]:
    """Absolute errors in `bins` equal bins over 0..1, as SVG bars."""
    counts = [0] * bins
    for pair in pairs:
        error = pair.error
        if math.isnan(error):
            continue
        counts[min(int(error * bins), bins - 1)] += 1
    top = max(counts) or 1
    out = []
    for i, count in enumerate(counts):
        height = round(140 * count / top)
        out.append(
            ErrorBin(
                label=f"{i / bins:.1f} to {(i + 1) / bins:.1f}",
                count=count,
                x=40 + i * 36,
                height=height,
                y=170 - height,
            )
        )
    return out


@dataclass(frozen=True)
class DisagreementRow:
    """A disagreement on the scorer page, with where to read the response."""

    pair: Pair
    conversation_id: str | None
    piece_id: Any
    humans: str
    trials: str


def _fmt(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _disagreement_rows(scope: Scope, pairs: Sequence[Pair]) -> list[DisagreementRow]:
    """Rows for one page of disagreements; 1 query for the pieces they point at."""
    prompt_ids = [p.obj.piece_prompt_id for p in pairs if p.obj.piece_prompt_id is not None]
    pieces: dict[Any, tuple[Any, str]] = {}
    if prompt_ids:
        for pid, prompt_id, conversation_id in (
            MessagePiece.objects.visible_to(scope)
            .filter(original_prompt_in(prompt_ids))
            .order_by("timestamp", "id")
            .values_list("id", "original_prompt_id", "conversation_id")
        ):
            pieces.setdefault(prompt_id, (pid, conversation_id))
    rows = []
    for pair in pairs:
        piece = pieces.get(pair.obj.piece_prompt_id)
        rows.append(
            DisagreementRow(
                pair=pair,
                conversation_id=pair.obj.conversation_id or (piece[1] if piece else None),
                piece_id=piece[0] if piece else None,
                humans=_fmt(pair.humans),
                trials=_fmt([t.value for t in pair.trials]),
            )
        )
    return rows


def _tree(identifier_hash: str) -> Any:
    """The identifier's tree rebuilt from rows (one query per level), or None."""
    identifier = ComponentIdentifier.objects.filter(hash=identifier_hash).first()
    if identifier is None:
        return None
    return tree_from_dump(identifier_tree(identifier).tree, identifier.hash)


def _page_number(request: HttpRequest) -> int:
    raw = request.GET.get("page", "1")
    return int(raw) if raw.isdigit() and 0 < len(raw) < 7 else 1


@require_GET
@viewer_required
def scorer_detail(request: HttpRequest, eval_hash: str) -> HttpResponse:
    """One scorer configuration: its metrics beside PyRIT's published ones, the confusion
    matrix (or error histogram), identifier tree, identifiers, and disagreements.

    404 when neither the viewer's operations nor an imported registry know the eval hash.
    Queries: session, user, memberships; the calibration's 7; published metrics; the
    identifier and one per tree level; the disagreement page's pieces.
    """
    scope = scope_for(request)
    params = request.GET.copy()
    params["eval_hash"] = eval_hash
    try:
        query = calibration_query(scope, params)
    except CalibrationFilterError as exc:
        return render(
            request,
            "scoring/scorer_detail.html",
            {"errors": exc.errors, "eval_hash": eval_hash, "filters": _filter_values(request)},
            status=400,
        )
    calibrations = scorer_calibrations(query)
    published = _published_by_hash([eval_hash]).get(eval_hash, [])
    if not calibrations and not published:
        raise Http404("No scorer configuration with this eval hash in your operations.")
    sections = []
    page_number = _page_number(request)
    for c in calibrations:
        disagreements = c.disagreements()
        page = Paginator(disagreements, DISAGREEMENTS_PER_PAGE).get_page(page_number)
        section: dict[str, Any] = {
            "c": c,
            "page": page,
            "rows": _disagreement_rows(scope, list(page.object_list)),
            "disagreement_count": len(disagreements),
            "tree": _tree(c.identity.hash),
        }
        if isinstance(c.metrics, ObjectiveScorerMetrics):
            section["cells"] = confusion_cells(c.metrics)
        elif isinstance(c.metrics, HarmScorerMetrics):
            section["bins"] = error_bins(c.pairs)
        sections.append(section)
    page_params = request.GET.copy()
    page_params.pop("page", None)
    context = {
        "eval_hash": eval_hash,
        "sections": sections,
        "published": published,
        "filters": _filter_values(request),
        "page_query": page_params.urlencode(),
    }
    return render(request, "scoring/scorer_detail.html", context)
