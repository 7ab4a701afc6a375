"""Review pages that show scores: conversation, attack results, objective, dashboard, and
recording a verdict (the queue pages are scoring.queue_views; a conversation opened from a
queue shows its place in it and record-and-next stays inside it).

Every read starts from `visible_to(scope_for(request))` (redteam.common.access): a row of an
operation the viewer is not a member of is a 404, never a 403 that would confirm it exists,
and lists, counts and tallies only include the viewer's operations. Recording a verdict also
needs the reviewer role in the result's operation (a 403 only for a result the viewer sees).

Every page costs a constant number of queries whatever the conversation length or table size
(tests/scoring/test_*_page*.py check each at 3 and 30 rows); comments list the queries.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model, Q
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from memory.filters import AttackResultFilterSet
from memory.models import AttackResult, Conversation, IdentifierDump, MessagePiece, Score
from memory.presenters import ScoreView, TreesOnce, dump_tree, message_views
from memory.querysets import (
    MAX_RELATED_SHOWN,
    attack_results_for_detail,
    attack_results_for_list,
    conversation_for_detail,
    pieces_for_conversation,
    references_to_conversation,
    target_name,
)
from memory.sensitive import (
    Sensitivity,
    mark_sensitive_pieces,
    piece_id_or_none,
    record_reveal,
    response_sensitivity,
    revealed_url,
    sensitive_policy,
)
from memory.views import filter_form_context
from redteam.common.access import Scope, scope_for
from redteam.common.fields import stored_text_head, stored_text_length
from redteam.common.markdown import render_markdown
from redteam.common.pagination import BadCursor, request_page
from redteam.common.roles import viewer_required
from redteam.common.typing import User
from redteam.core.textview import MAX_DISPLAY_CHARS, display_text
from redteam.core.trees import TreeNode
from scoring.forms import VerdictForm
from scoring.human_label_views import download_links
from scoring.live import conversation_live, dashboard_live
from scoring.queue_views import step_to, walk_for, wrap_around
from scoring.queues import QueueWalk, queue_for
from scoring.review import (
    REVIEW_VIEWS,
    decides_outcome,
    deciding_verdict,
    disagrees,
    effective_outcome,
    for_review,
    latest_human_verdicts,
    result_summary,
)
from scoring.services import record_review
from scoring.tallies import (
    ALL_DIMENSION,
    LABEL_PREFIX,
    NONE_KEY,
    TREND_PERIODS,
    Chart,
    build_dashboard,
)
from scoring.trend_chart import trend_chart
from seeds.models import SeedDataset

if TYPE_CHECKING:
    pass

MAX_OBJECTIVE_ATTEMPTS = 24
# Characters of each attempt's last response the objective page shows.
RESPONSE_CHARS = 4000
# The "promote a piece to a seed" endpoint (POST piece_id, dataset_name, ...).
PROMOTE_URL_NAME = "memory:promote_piece"
PROMOTE_PERMISSION = "seeds.add_seed"
MAX_DATASET_SUGGESTIONS = 200

M = TypeVar("M", bound=Model)


# ---------------------------------------------------------------------------------------------
# Display models
# ---------------------------------------------------------------------------------------------


@dataclass
class ResultView:
    """An attack result with its verdicts, last score and identifier tree, and what the
    viewer may do with it: their role in its operation and whether they may record a verdict."""

    result: AttackResult
    human: Score | None
    verdicts: list[ScoreView]
    last_score: ScoreView | None
    tree: TreeNode | None
    effective: str = ""
    disagree: bool = False
    related: list[Any] = field(default_factory=list)
    role: str | None = None
    can_verdict: bool = False
    can_adjudicate: bool = False
    archived: bool = False


def _access(scope: Scope, result: AttackResult) -> dict[str, Any]:
    """The viewer's role in the result's operation, whether a verdict form is offered, and
    whether they may adjudicate it (when it is in adjudication)."""
    return {
        "role": scope.role(result.operation_id),
        "can_verdict": scope.may_record_verdicts(result.operation_id),
        "can_adjudicate": scope.may_adjudicate(result.operation_id),
        "archived": result.operation is not None and result.operation.archived,
    }


def _promote_context(user: User) -> dict[str, Any]:
    """The promote-a-piece form target and dataset names (one query), if allowed."""
    if not user.has_perm(PROMOTE_PERMISSION):
        return {}
    url = reverse(PROMOTE_URL_NAME)
    names = list(
        SeedDataset.objects.order_by("dataset_name").values_list("dataset_name", flat=True)[
            :MAX_DATASET_SUGGESTIONS
        ]
    )
    return {"promote_url": url, "seed_datasets": names}


# ---------------------------------------------------------------------------------------------
# Conversation page
# ---------------------------------------------------------------------------------------------


def _queue_context(
    walk: QueueWalk, conversation_id: str, views: list[ResultView]
) -> dict[str, Any]:
    """The queue header of a conversation opened from a queue; claims the item.

    The item is the conversation's first result in the queue; its view moves first (where
    the verdict form and the keys act). Queries: the item's place (1); the claim (an UPDATE,
    or an INSERT and, when refused, its holder; then the viewer's other claims released);
    the queue's counts (1) and the viewer's verdicts today (1).
    """
    key = walk.item_of_conversation(conversation_id)
    item = next((v for v in views if key is not None and v.result.pk == key[2]), None)
    hold = None
    if item is not None:
        views.remove(item)
        views.insert(0, item)
        # Only those who may judge the item hold it: a reader never blocks a reviewer.
        if item.can_verdict:
            hold = walk.claim(item.result.pk)
    around = item.result if item is not None else (views[0].result if views else None)
    return {
        "queue": walk.queue,
        "queue_item": item,
        "queue_from": around.pk if around is not None else None,
        "hold": hold,
        "progress": walk.progress(key),
        "queue_instructions": render_markdown(walk.queue.instructions)
        if walk.queue.instructions
        else "",
    }


@require_GET
@viewer_required
def conversation_detail(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """A conversation reassembled: messages, pieces by data type, diffs, scores, verdicts.

    404 unless the conversation is in one of the viewer's operations; results, references and
    scores shown beside it are the visible ones only. Opened from a queue (`?queue=<slug>`,
    404 for a queue the viewer cannot walk), the page claims the item and shows the place.
    """
    slug = request.GET.get("queue")
    walk = walk_for(request, queue_for(scope_for(request), slug)) if slug else None
    return _conversation_page(request, conversation_id, walk=walk)


def _conversation_page(
    request: HttpRequest,
    conversation_id: str,
    *,
    walk: QueueWalk | None = None,
    form: VerdictForm | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render the conversation page (with a rejected verdict's form kept, status 400)."""
    # Queries: session, user, memberships (3); conversation (+operation, target dump);
    # pieces (+media, identifiers); converter chains; attack results (+operation, dumps, last
    # response); their related conversations; references to this conversation; scores
    # (+scorer dumps, reviewer); the promote form's permission check (2, when not cached);
    # 0.13 piece-level target/attack dumps; the operation's sensitive categories (+ this
    # user's reveals named by ?reveal=). In queue mode: the queue, then _queue_context's.
    scope = scope_for(request)
    conversation = (
        conversation_for_detail(scope)
        .select_related("operation")
        .filter(pk=conversation_id)
        .first()
    )
    if conversation is None:
        raise Http404("No such conversation.")
    pieces = list(pieces_for_conversation(scope, conversation_id))
    messages_ = message_views(pieces)
    results = list(
        attack_results_for_detail(scope)
        .select_related("operation")
        .filter(conversation_id=conversation_id)
        .order_by("-timestamp", "-ingested_at")
    )
    inbound = list(references_to_conversation(scope, conversation_id)[:MAX_RELATED_SHOWN])
    result_ids = [r.pk for r in results]
    last_score_ids = [r.last_score_id for r in results if r.last_score_id]
    scores = list(
        Score.objects.visible_to(scope)
        .filter(
            Q(message_piece_id__in=[p.original_prompt_id for p in pieces])
            | Q(attack_result_id__in=result_ids)
            | Q(id__in=last_score_ids)
        )
        .select_related("scorer_identifier", "scorer_dump", "reviewer")
        .order_by("timestamp", "id")
        if pieces or results
        else Score.objects.none()
    )
    tree_once = TreesOnce()
    score_views = {s.id: ScoreView(s, tree_once(s.scorer_dump)) for s in scores}
    by_piece: dict[uuid.UUID, list[ScoreView]] = {}
    for s in scores:
        if s.message_piece_id is not None:
            by_piece.setdefault(s.message_piece_id, []).append(score_views[s.id])
    for message in messages_:
        for pv in message.pieces:
            pv.scores = by_piece.get(pv.piece.original_prompt_id, [])
    result_views = []
    for r in results:
        mine = [s for s in scores if s.attack_result_id == r.pk and s.source == "human"]
        verdicts = sorted(
            (score_views[s.id] for s in mine),
            key=lambda v: (v.score.timestamp, v.score.ingested_at),
            reverse=True,
        )
        human = deciding_verdict((v.score for v in verdicts), r.review_status)
        result_views.append(
            ResultView(
                result=r,
                human=human,
                verdicts=verdicts,
                last_score=score_views.get(r.last_score_id) if r.last_score_id else None,
                tree=tree_once(r.atomic_attack_dump),
                effective=effective_outcome(r.outcome, human),
                disagree=disagrees(r.outcome, human),
                # related_shown: the to_attr prefetch of attack_results_for_detail (first few only).
                related=list(getattr(r, "related_shown", [])),
                **_access(scope, r),
            )
        )
    mark_sensitive_pieces(
        sensitive_policy(request, [conversation.operation_id]),
        [pv for message in messages_ for pv in message.pieces],
        conversation=conversation,
        result_categories=[r.targeted_harm_categories for r in results],
    )
    target_tree, legacy_attack_tree = _conversation_trees(conversation, pieces)
    queue_context = _queue_context(walk, conversation_id, result_views) if walk else {}
    asked = (
        walk.queue.verdict_fields()
        if walk is not None and queue_context.get("queue_item") is not None
        else None
    )
    context = {
        "conversation": conversation,
        "conversation_messages": messages_,
        "results": result_views,
        "inbound": inbound,
        "target_tree": target_tree,
        "legacy_attack_tree": legacy_attack_tree,
        # The form is offered on the first (newest) result, where the keyboard keys act.
        "can_verdict": bool(result_views) and result_views[0].can_verdict,
        "verdict_form": form if form is not None else VerdictForm(asked=asked),
        "verdict_submission": uuid.uuid4(),
        **_promote_context(request.user),
        **queue_context,
        # Pieces and results arriving while the attack runs (static/js/live.js).
        "live": conversation_live(request, conversation, results),
    }
    return render(request, "scoring/conversation_detail.html", context, status=status)


def _conversation_trees(conversation: Any, pieces: list[Any]) -> tuple[TreeNode | None, Any]:
    """The target tree (1.x Conversation or 0.13 pieces) and a 0.13 piece-level attack tree."""
    target = dump_tree(conversation.target_dump)
    wanted: set[str] = set()
    if target is None:
        wanted.update(p.target_dump_id for p in pieces if p.target_dump_id)
    wanted.update(p.attack_dump_id for p in pieces if p.attack_dump_id)
    if not wanted:
        return target, None
    dumps = {d.digest: d for d in IdentifierDump.objects.filter(digest__in=wanted)}
    if target is None:
        first = next((p.target_dump_id for p in pieces if p.target_dump_id), None)
        target = dump_tree(dumps.get(first)) if first else None
    attack_digest = next((p.attack_dump_id for p in pieces if p.attack_dump_id), None)
    return target, dump_tree(dumps.get(attack_digest)) if attack_digest else None


@require_POST
@viewer_required
def reveal_piece(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Reveal one sensitive piece (POST `piece`): audit who and when, then answer the page's
    script (JSON) or, without script, send the browser back to `next` with the piece shown."""
    # Queries: session, user, scope; the conversation (+operation); the piece; its attack
    # results' harm categories; the audit row.
    conversation = (
        Conversation.objects.visible_to(scope_for(request))
        .select_related("operation")
        .filter(pk=conversation_id)
        .first()
    )
    if conversation is None:
        raise Http404("No such conversation.")
    piece_id = piece_id_or_none(request.POST.get("piece"))
    if piece_id is None:
        return HttpResponseBadRequest("Name the piece to reveal.")
    piece = (
        MessagePiece.objects.filter(conversation_id=conversation.pk, pk=piece_id)
        .only("id", "conversation_id", "targeted_harm_categories")
        .first()
    )
    if piece is None:
        raise Http404("No such piece in this conversation.")
    event = record_reveal(actor=request.user, conversation=conversation, piece=piece)
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse(
            {
                "piece": piece_id,
                "categories": event.detail["categories"],
                "revealed_by": event.actor_name,
                "revealed_at": event.at.isoformat(),
            }
        )
    back = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = reverse("scoring:conversation_detail", args=[conversation.pk])
    return redirect(revealed_url(back, piece_id))


@require_POST
@viewer_required
def verdict(request: HttpRequest, attack_result_id: uuid.UUID) -> HttpResponse:
    """Record a reviewer's verdict on an attack result, then go back to it or, from a queue,
    on to the queue's next item.

    404 for a result outside the viewer's operations (as for one that does not exist) or a
    queue the viewer cannot walk; 403 only for a visible result whose operation gives the
    viewer too low a role (or is archived), which reveals nothing the viewer could not
    already read. A rejected verdict re-renders the page (400) with everything typed kept.
    """
    scope = scope_for(request)
    result = AttackResult.objects.visible_to(scope).filter(pk=attack_result_id).first()
    if result is None:
        raise Http404("No such attack result.")
    if not scope.may_record_verdicts(result.operation_id):
        raise PermissionDenied("Recording verdicts needs the reviewer role in this operation.")
    slug = request.POST.get("queue") or ""
    walk = walk_for(request, queue_for(scope, slug)) if slug else None
    asked = walk.queue.verdict_fields() if walk is not None else None
    form = VerdictForm(request.POST, asked=asked)
    if not form.is_valid():
        return _rejected(request, result, walk, form)
    try:
        record_review(
            attack_result=result,
            reviewer=request.user,
            scope=scope,
            answers=form.answers(),
            submission=form.cleaned_data["submission"],
        )
    except ValidationError as exc:
        form.add_error(None, exc)
        return _rejected(request, result, walk, form)
    messages.success(request, "Verdict recorded.")
    page = reverse("scoring:conversation_detail", args=[result.conversation_id])
    if walk is None:
        return redirect(f"{page}#verdicts")
    if form.cleaned_data["stay"]:
        return redirect(f"{page}?{urlencode({'queue': walk.queue.slug})}#verdicts")
    walk.release(result.pk)
    return step_to(request, walk, walk.hand_out(walk.key_of(result)) or wrap_around(walk, result))


def _rejected(
    request: HttpRequest, result: AttackResult, walk: QueueWalk | None, form: VerdictForm
) -> HttpResponse:
    """The conversation page again, status 400, the form as it was posted and why."""
    messages.error(request, f"Verdict not recorded: {form.problems()}")
    return _conversation_page(request, result.conversation_id, walk=walk, form=form, status=400)


# ---------------------------------------------------------------------------------------------
# Attack results
# ---------------------------------------------------------------------------------------------


def _visible_results(request: HttpRequest) -> AttackResultFilterSet:
    """The URL's filters over the attack results of the viewer's operations."""
    visible = attack_results_for_list(scope_for(request))
    return AttackResultFilterSet(request.GET, queryset=visible, request=request)


def _result_rows(
    request: HttpRequest, review_view: str | None
) -> tuple[AttackResultFilterSet, list[dict[str, Any]], str | None, str | None]:
    """Filtered, keyset-paginated visible attack results with their latest human verdicts."""
    filterset = _visible_results(request)
    if not filterset.is_valid():
        return filterset, [], None, None
    qs = filterset.qs
    if review_view:
        qs = for_review(qs, review_view, scope_for(request).viewer_id)
    page = request_page(request, qs, ts_field="ingested_at", pk_field="attack_result_id")
    humans = latest_human_verdicts((r.pk for r in page.rows), scope_for(request))
    rows = [result_summary(r, humans.get(r.pk)) for r in page.rows]
    return filterset, rows, page.next_cursor, page.previous_cursor


@require_GET
@viewer_required
def attack_result_list(request: HttpRequest) -> HttpResponse:
    """The viewer's attack results filtered from the URL, newest ingested first."""
    # Queries: session, user, memberships, class names, one page, its human verdicts.
    review_view = request.GET.get("review") or None
    if review_view is not None and review_view not in REVIEW_VIEWS:
        return HttpResponseBadRequest("Unknown review view.")
    extra = {
        "review_view": review_view,
        "can_save_queue": scope_for(request).records_any_verdicts(),
        "label_downloads": download_links(request.GET),
    }
    return _render_result_page(request, review_view, "scoring/attackresult_list.html", extra)


def _render_result_page(
    request: HttpRequest, view: str | None, template: str, extra: dict[str, Any]
) -> HttpResponse:
    """One page of filtered attack results (400 for a bad cursor or invalid filters)."""
    cursor_error = None
    try:
        filterset, rows, next_cursor, previous_cursor = _result_rows(request, view)
    except BadCursor as exc:
        # The form and a link to the first page with the same filters, as a 400.
        cursor_error = str(exc)
        filterset = _visible_results(request)
        rows, next_cursor, previous_cursor = [], None, None
    context = {
        "filterset": filterset,
        "rows": rows,
        "next_cursor": next_cursor,
        "previous_cursor": previous_cursor,
        "cursor_error": cursor_error,
        "review_views": REVIEW_VIEWS,
        **extra,
        **filter_form_context(request),
    }
    status = 200 if filterset.is_valid() and cursor_error is None else 400
    return render(request, template, context, status=status)


@require_GET
@viewer_required
def attack_result_detail(request: HttpRequest, attack_result_id: uuid.UUID) -> HttpResponse:
    """One attack result: objective, outcome, verdicts, identifiers, errors, related (404
    unless it is in one of the viewer's operations)."""
    # Queries: session, user, memberships; result (+operation, dump, last response,
    # conversation); related conversations; scores (verdicts and last score, +scorer dumps);
    # the operations' sensitive categories (+ this user's reveals named by ?reveal=).
    scope = scope_for(request)
    result = (
        attack_results_for_detail(scope)
        .select_related("operation")
        .filter(pk=attack_result_id)
        .first()
    )
    if result is None:
        raise Http404("No such attack result.")
    scores = list(
        Score.objects.visible_to(scope)
        .filter(
            Q(attack_result_id=result.pk, source="human") | Q(id=result.last_score_id)
            if result.last_score_id
            else Q(attack_result_id=result.pk, source="human")
        )
        .select_related("scorer_identifier", "scorer_dump", "reviewer")
        .order_by("-timestamp", "-ingested_at")
    )
    tree_once = TreesOnce()
    verdicts = [ScoreView(s, tree_once(s.scorer_dump)) for s in scores if s.source == "human"]
    last = next((s for s in scores if s.id == result.last_score_id), None)
    human = deciding_verdict((v.score for v in verdicts), result.review_status)
    policy = sensitive_policy(request, [result.operation_id, result.conversation.operation_id])
    context = {
        "r": ResultView(
            result=result,
            human=human,
            verdicts=verdicts,
            last_score=ScoreView(last, tree_once(last.scorer_dump)) if last else None,
            tree=dump_tree(result.atomic_attack_dump),
            effective=effective_outcome(result.outcome, human),
            disagree=disagrees(result.outcome, human),
            related=list(getattr(result, "related_shown", [])),
            **_access(scope, result),
        ),
        "last_response": display_text(result.last_response.converted_value)
        if result.last_response
        else None,
        "last_response_sensitive": response_sensitivity(
            policy, result, conversation=result.conversation
        ),
    }
    return render(request, "scoring/attackresult_detail.html", context)


@dataclass
class Attempt:
    """One attempt at an objective, for the side-by-side page."""

    result: AttackResult
    human: Score | None
    last_score: Score | None
    effective: str
    response: Any
    response_sensitive: Sensitivity | None = None


@require_GET
@viewer_required
def objective_detail(request: HttpRequest, objective_sha256: str) -> HttpResponse:
    """Every attempt at one objective (same objective_sha256) in the viewer's operations,
    side by side; 404 when none is visible (the same text may be an objective elsewhere)."""
    # Queries: session, user, memberships; attempts (+operation, last response, identifier);
    # their scores (verdicts and last scores); the operations' sensitive categories (+ this
    # user's reveals named by ?reveal=).
    scope = scope_for(request)
    results = list(
        AttackResult.objects.visible_to(scope)
        .filter(objective_sha256=objective_sha256)
        .annotate(target_name=target_name())
        .select_related("operation", "last_response", "atomic_attack_identifier")
        # Every attempt holds the same objective and its own last response: the page reads
        # the start it shows of each, and their lengths, never the whole values.
        .defer(
            "error_traceback",
            "metadata",
            "retry_events",
            "attribution_data",
            "objective",
            "last_response__original_value",
            "last_response__converted_value",
        )
        .annotate(
            objective_head=stored_text_head("objective", MAX_DISPLAY_CHARS),
            objective_length=stored_text_length("objective"),
            response_head=stored_text_head("last_response__converted_value", RESPONSE_CHARS),
            response_length=stored_text_length("last_response__converted_value"),
        )
        .order_by("timestamp", "attack_result_id")[: MAX_OBJECTIVE_ATTEMPTS + 1]
    )
    if not results:
        raise Http404("No attempts at this objective.")
    more = len(results) > MAX_OBJECTIVE_ATTEMPTS
    results = results[:MAX_OBJECTIVE_ATTEMPTS]
    last_ids = [r.last_score_id for r in results if r.last_score_id]
    scores = list(
        Score.objects.visible_to(scope)
        .filter(
            Q(attack_result_id__in=[r.pk for r in results], source="human") | Q(id__in=last_ids)
        )
        .order_by("-timestamp", "-ingested_at")
    )
    humans: dict[uuid.UUID, Score] = {}
    statuses = {r.pk: r.review_status for r in results}
    for s in sorted(scores, key=lambda s: not s.final):
        if (
            s.source == "human"
            and s.attack_result_id is not None
            and decides_outcome(s, statuses.get(s.attack_result_id, ""))
        ):
            humans.setdefault(s.attack_result_id, s)
    by_id = {s.id: s for s in scores}
    policy = sensitive_policy(request, [r.operation_id for r in results])
    attempts = [
        Attempt(
            result=r,
            human=humans.get(r.pk),
            last_score=by_id.get(r.last_score_id) if r.last_score_id else None,
            effective=effective_outcome(r.outcome, humans.get(r.pk)),
            response=display_text(
                vars(r)["response_head"], limit=RESPONSE_CHARS, length=vars(r)["response_length"]
            )
            if r.last_response
            else None,
            response_sensitive=response_sensitivity(policy, r),
        )
        for r in results
    ]
    context = {
        "objective": display_text(
            vars(results[0])["objective_head"], length=vars(results[0])["objective_length"]
        ),
        "objective_sha256": objective_sha256,
        "attempts": attempts,
        "more": more,
        "first_attack_hash": results[0].atomic_attack_identifier_id,
    }
    return render(request, "scoring/objective_detail.html", context)


# ---------------------------------------------------------------------------------------------
# Dashboard
# ---------------------------------------------------------------------------------------------

FILTER_PARAMS = {
    "harm_category": "harm_category",
    "attack": "attack",
    "converter": "converter",
    "target": "target",
}


TREND_CHOICES = (ALL_DIMENSION, *FILTER_PARAMS, "label")


@require_GET
@viewer_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """Attack success by harm category, attack, converter, target and a chosen label, and
    over time by day or week, over the viewer's operations (every operation for a
    superuser)."""
    # Queries: session, user, memberships; the shown dimensions' tallies (summed over the
    # viewer's operations); label keys; the shown targets' names; the latest day; the trend's
    # daily tallies. None reads the attack results: the cost does not grow with them.
    scope = scope_for(request)
    label_key = (request.GET.get("label_key") or "").strip()[:100] or None
    trend_by = request.GET.get("trend_by") or ALL_DIMENSION
    if trend_by not in TREND_CHOICES or (trend_by == "label" and not label_key):
        trend_by = ALL_DIMENSION
    period = request.GET.get("period") or "week"
    if period not in TREND_PERIODS:
        period = "week"
    dimension = f"{LABEL_PREFIX}{label_key}" if trend_by == "label" else trend_by
    data = build_dashboard(label_key, scope, trend_by=dimension, period=period)
    charts = [_chart_context(chart) for chart in data.charts]
    context = {
        "data": data,
        "headline": data.headline,
        "charts": charts,
        "label_key": label_key,
        # Results ingested after the newest one counted here (static/js/live.js).
        "live": dashboard_live(scope),
        "trend": data.trend,
        "trend_by": trend_by,
        "trend_choices": [
            (c, _trend_title(c, label_key) if c != ALL_DIMENSION else "all results only")
            for c in TREND_CHOICES
            if c != "label" or label_key
        ],
        "trend_title": _trend_title(trend_by, label_key),
        "period": period,
        "trend_chart": trend_chart(data.trend),
    }
    return render(request, "scoring/dashboard.html", context)


def _trend_title(choice: str, label_key: str | None) -> str:
    """What a trend dimension is called on the page."""
    return f"label {label_key}" if choice == "label" else choice.replace("_", " ")


def _chart_context(chart: Chart) -> dict[str, Any]:
    """Bars with links to the conversation list filtered to each key (and outcome); target
    bars carry their identifier hash (shown short beside the name)."""
    base = reverse("memory:conversation_list")
    if chart.dimension.startswith(LABEL_PREFIX):
        label_key = chart.dimension.removeprefix(LABEL_PREFIX)
        title = f"label {label_key}"
    else:
        label_key, title = None, chart.dimension.replace("_", " ")
    scale = chart.max_total or 1
    bars = []
    for bar in chart.bars:
        if bar.key == NONE_KEY:
            params: dict[str, str] | None = None
        elif label_key is not None:
            params = {"label": f"{label_key}:{bar.key}"}
        else:
            params = {FILTER_PARAMS[chart.dimension]: bar.key}
        bars.append(
            {
                "bar": bar,
                "hash": bar.key if chart.dimension == "target" and bar.key != NONE_KEY else None,
                "href": f"{base}?{urlencode(params)}" if params else None,
                "width": max(1, round(100 * bar.total / scale)),
                "segments": [
                    {
                        "outcome": outcome,
                        "count": count,
                        "width": width,
                        "href": f"{base}?{urlencode({**params, 'outcome': outcome})}"
                        if params
                        else None,
                    }
                    for outcome, count, width in bar.segments()
                ],
            }
        )
    return {"chart": chart, "title": title, "bars": bars}
