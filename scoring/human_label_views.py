"""The human-labels download: PyRIT's human-labeled CSV for the attack-results list's filters.

The list page and a review queue link here with their filters; the file is what
`manage.py export_human_labels` writes for the same filters (scoring.human_labels). Reads go
through the viewer's scope (redteam.common.access): results of other operations are never in
the file, and a filter aimed at them selects nothing.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from redteam.common.access import scope_for
from redteam.common.roles import viewer_required
from scoring.human_labels import PAGE_PARAMS, ExportRefused, export_human_labels, parse_request

LEFT_OUT_HEADER = "X-Human-Labels-Left-Out"


@require_GET
@viewer_required
def human_labels(request: HttpRequest) -> HttpResponse:
    """The CSV as an attachment (400 in plain text for bad options, filters or too many
    results). Queries: session, user, memberships; the results; their verdicts."""
    scope = scope_for(request)
    try:
        labels = export_human_labels(parse_request(request.GET, scope), scope)
    except ExportRefused as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    response = HttpResponse(labels.text.encode("utf-8"), content_type="text/csv; charset=utf-8")
    disposition = content_disposition_header(as_attachment=True, filename=labels.filename)
    assert disposition is not None
    response["Content-Disposition"] = disposition
    response[LEFT_OUT_HEADER] = str(len(labels.left_out))
    return response


def download_links(data: QueryDict) -> list[tuple[str, str]]:
    """(label, url) of the downloads for a results-list query: the objective file, and the
    harm file when exactly one harm category is filtered."""
    query = data.copy()
    for name in (*PAGE_PARAMS, "kind"):
        query.pop(name, None)
    url = reverse("scoring:human_labels")
    links = [("Objective labels (PyRIT CSV)", _with(url, query, {}))]
    categories = list(dict.fromkeys(c.strip() for c in query.getlist("harm_category") if c.strip()))
    if len(categories) == 1:
        links.append(
            (f"Harm labels: {categories[0]} (PyRIT CSV)", _with(url, query, {"kind": "harm"}))
        )
    return links


def _with(url: str, query: QueryDict, extra: dict[str, str]) -> str:
    pairs = [(k, v) for k, values in query.lists() for v in values if v != ""]
    pairs += list(extra.items())
    return f"{url}?{urlencode(pairs)}" if pairs else url
