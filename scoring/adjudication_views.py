"""Adjudication pages: the queue of disputed blind reviews, deciding one, and the reviewers'
agreement (scoring.adjudication).

Adjudicators and leads only: a viewer who may adjudicate in no operation gets a 403 on every
page here; a result outside the viewer's operations is a 404, one of an operation where they
may read but not adjudicate a 403 (it reveals nothing they could not already read). Every
page costs a constant number of queries whatever the number of items or verdicts.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from memory.models import AttackResult
from redteam.common.access import Scope, scope_for
from redteam.common.roles import viewer_required
from scoring.adjudication import (
    ADJUDICATION_FIELDS,
    MIN_SHARED_ITEMS,
    adjudicable_operation_ids,
    adjudicate,
    disputed_results,
    may_adjudicate_somewhere,
    reviewer_stats,
    standing_verdicts,
)
from scoring.forms import VerdictForm

ADJUDICATION_PAGE_SIZE = 50
MAX_ADJUDICATION_PAGES = 1000


def _adjudicator_scope(request: HttpRequest) -> Scope:
    """The viewer's scope, when they may adjudicate somewhere (else 403)."""
    scope = scope_for(request)
    if not may_adjudicate_somewhere(scope):
        raise PermissionDenied("The adjudication pages are for adjudicators and leads.")
    return scope


def _page_number(request: HttpRequest) -> int | None:
    try:
        return max(1, min(int(request.GET.get("page") or 1), MAX_ADJUDICATION_PAGES))
    except ValueError:
        return None


@require_GET
@viewer_required
def adjudication_queue(request: HttpRequest) -> HttpResponse:
    """Results whose independent verdicts disagree, oldest first, with their verdicts."""
    # Queries: session, user, memberships; one page of results (+operation); their verdicts
    # (+reviewer); the count.
    scope = _adjudicator_scope(request)
    number = _page_number(request)
    if number is None:
        return HttpResponseBadRequest("Unknown page.")
    start = (number - 1) * ADJUDICATION_PAGE_SIZE
    qs = disputed_results(scope)
    rows = list(qs.select_related("operation")[start : start + ADJUDICATION_PAGE_SIZE + 1])
    more = len(rows) > ADJUDICATION_PAGE_SIZE
    rows = rows[:ADJUDICATION_PAGE_SIZE]
    verdicts = standing_verdicts([r.pk for r in rows])
    context = {
        "items": [{"result": r, "verdicts": verdicts.get(r.pk, [])} for r in rows],
        "total": qs.count(),
        "page_number": number,
        "next_page": number + 1 if more and number < MAX_ADJUDICATION_PAGES else None,
        "previous_page": number - 1 if number > 1 else None,
    }
    return render(request, "scoring/adjudication_queue.html", context)


def _item(scope: Scope, attack_result_id: uuid.UUID) -> AttackResult:
    result = (
        AttackResult.objects.visible_to(scope)
        .select_related("operation")
        .filter(pk=attack_result_id)
        .first()
    )
    if result is None:
        raise Http404("No such attack result.")
    if not scope.may_adjudicate(result.operation_id):
        raise PermissionDenied("Adjudicating needs the adjudicator role in this operation.")
    return result


@require_http_methods(["GET", "POST"])
@viewer_required
def adjudication_item(request: HttpRequest, attack_result_id: uuid.UUID) -> HttpResponse:
    """One disputed result: its verdicts side by side and the final-verdict form (POST
    records it and goes back to the queue)."""
    # Queries: session, user, memberships; the result (+operation); its verdicts (+reviewer).
    scope = _adjudicator_scope(request)
    result = _item(scope, attack_result_id)
    form = VerdictForm(request.POST or None, asked=ADJUDICATION_FIELDS)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                adjudicate(
                    attack_result=result,
                    adjudicator=request.user,
                    scope=scope,
                    answers=form.answers(),
                    submission=form.cleaned_data["submission"],
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, "Final verdict recorded.")
                return redirect("scoring:adjudication_queue")
        messages.error(request, f"Final verdict not recorded: {form.problems()}")
        status = 400
    verdicts = standing_verdicts([result.pk]).get(result.pk, [])
    context = {
        "result": result,
        "verdicts": verdicts,
        "form": form,
        "submission": uuid.uuid4(),
        "own": any(v.reviewer_id == request.user.pk for v in verdicts),
    }
    return render(request, "scoring/adjudication_item.html", context, status=status)


@require_GET
@viewer_required
def reviewers(request: HttpRequest) -> HttpResponse:
    """Per reviewer of one operation (`?operation=<id>`, default the first the viewer may
    adjudicate): items reviewed, agreement with the final verdict, pairwise Cohen's kappa."""
    # Queries: session, user, memberships; the operations offered; the verdicts (one).
    scope = _adjudicator_scope(request)
    allowed = adjudicable_operation_ids(scope)
    operations = scope.operations().order_by("name")
    if allowed is not None:
        operations = operations.filter(pk__in=sorted(allowed))
    choices = list(operations.values_list("pk", "name")[:500])
    wanted = request.GET.get("operation")
    chosen: Any = None
    if wanted:
        try:
            chosen = int(wanted)
        except ValueError:
            return HttpResponseBadRequest("Unknown operation.")
        if chosen not in {pk for pk, _ in choices}:
            raise Http404("No such operation of yours.")
    elif choices:
        chosen = choices[0][0]
    stats = reviewer_stats(chosen) if chosen is not None else None
    context = {
        "operations": choices,
        "chosen": chosen,
        "stats": stats,
        "min_shared": MIN_SHARED_ITEMS,
    }
    return render(request, "scoring/reviewers.html", context)
