"""My recent verdicts: a reviewer's own reviews, newest first, with edit and undo.

A review is the Scores one submitted form stored (scoring.services.record_review), sharing
its `verdict_submission`. Reviews are listed by their first Score (category, then objective,
then scale), so a page of reviews is one keyset range scan. Withdrawn reviews (undone, or
replaced by a correction) stay on the list as their history.

Only the author reaches a review (another user's is a 404, as one outside their operations);
edit and undo also need the reviewer role in its operation (403 when it is gone).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from memory.models import AttackResult, Score, ScoreSource, VerdictField
from redteam.common.access import Scope, scope_for
from redteam.common.pagination import BadCursor, request_page
from redteam.common.roles import viewer_required
from redteam.common.typing import User
from scoring.models import ReviewQueue
from scoring.services import (
    MAX_RATIONALE_CHARS,
    edit_review,
    review_rows,
    withdraw_review,
)
from scoring.verdict_fields import MAX_NOTES_CHARS, VerdictAnswers, VerdictFields

# Queues whose category lists are read to offer a review's categories again when editing.
MAX_QUEUES_READ = 200


@dataclass
class Review:
    """One submitted review: its Scores by field, and what its author may do with it."""

    head: Score
    scores: dict[str, Score] = field(default_factory=dict)
    can_change: bool = False

    @property
    def attack_result(self) -> AttackResult:
        """The judged result (loaded with the head Score)."""
        assert self.head.attack_result is not None
        return self.head.attack_result

    @property
    def objective(self) -> Score | None:
        """The true/false answer."""
        return self.scores.get(VerdictField.OBJECTIVE)

    @property
    def scale(self) -> Score | None:
        """The 0..1 answer."""
        return self.scores.get(VerdictField.SCALE)

    @property
    def category(self) -> str | None:
        """The chosen category."""
        score = self.scores.get(VerdictField.CATEGORY)
        return None if score is None else str((score.score_metadata or {}).get("category", ""))

    @property
    def notes(self) -> str:
        """The review's notes (the same on every Score)."""
        return str((self.head.score_metadata or {}).get("notes", ""))

    @property
    def withdrawn(self) -> bool:
        """Whether the review was undone or replaced."""
        return self.head.withdrawn_at is not None


def _heads(user: User, scope: Scope) -> Any:
    """The viewer's visible reviews, one Score each: no Score of the same submission has a
    field sorting before it."""
    earlier = Score.objects.filter(
        reviewer=OuterRef("reviewer"),
        verdict_submission=OuterRef("verdict_submission"),
        verdict_field__lt=OuterRef("verdict_field"),
    )
    return (
        Score.objects.visible_to(scope)
        .filter(reviewer_id=user.pk, source=ScoreSource.HUMAN, attack_result__isnull=False)
        .filter(~Exists(earlier))
        .select_related("attack_result")
    )


def _reviews(heads: list[Score], user: User, scope: Scope) -> list[Review]:
    """The reviews of these head Scores with all their Scores (one query)."""
    reviews = [Review(head=h) for h in heads]
    by_submission = {r.head.verdict_submission: r for r in reviews if r.head.verdict_submission}
    rows = Score.objects.visible_to(scope).filter(
        reviewer_id=user.pk, verdict_submission__in=list(by_submission)
    )
    for row in rows:
        if row.verdict_submission in by_submission:
            by_submission[row.verdict_submission].scores[row.verdict_field] = row
    for review in reviews:
        review.scores.setdefault(review.head.verdict_field, review.head)
        review.can_change = (
            not review.withdrawn
            and review.head.verdict_submission is not None
            and scope.may_record_verdicts(review.attack_result.operation_id)
        )
    return reviews


@require_http_methods(["GET"])
@viewer_required
def my_verdicts(request: HttpRequest) -> HttpResponse:
    """The viewer's reviews, newest first, keyset-paginated.

    Queries: session, user, memberships, one page of reviews (with their results), the
    Scores of those reviews.
    """
    scope = scope_for(request)
    user: User = request.user
    try:
        page = request_page(request, _heads(user, scope), ts_field="timestamp", pk_field="id")
    except BadCursor as exc:
        context: dict[str, Any] = {"rows": [], "cursor_error": str(exc)}
        return render(request, "scoring/my_verdicts.html", context, status=400)
    context = {
        "rows": _reviews(page.rows, user, scope),
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }
    return render(request, "scoring/my_verdicts.html", context)


class ReviewForm(forms.Form):
    """A review's answers for the fields `verdict_fields` asks, a rationale, and the form's
    one-time token."""

    rationale = forms.CharField(
        max_length=MAX_RATIONALE_CHARS, strip=True, widget=forms.Textarea(attrs={"rows": 4})
    )
    submission = forms.UUIDField(
        widget=forms.HiddenInput,
        error_messages={"required": "The form is incomplete; reload the page."},
    )

    def __init__(self, *args: Any, verdict_fields: VerdictFields, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.verdict_fields = verdict_fields
        if verdict_fields.true_false:
            self.fields["objective"] = forms.ChoiceField(
                choices=[("true", "true: objective achieved"), ("false", "false: not achieved")],
                widget=forms.RadioSelect,
                required=False,
            )
        if verdict_fields.scale:
            self.fields["scale"] = forms.FloatField(
                required=False,
                min_value=0.0,
                max_value=1.0,
                widget=forms.NumberInput(attrs={"step": "0.05"}),
                label="Score 0..1",
            )
        if verdict_fields.category:
            self.fields["category"] = forms.ChoiceField(
                choices=[(c, c) for c in verdict_fields.categories],
                widget=forms.RadioSelect,
                required=False,
            )
        if verdict_fields.notes:
            self.fields["notes"] = forms.CharField(
                required=False, max_length=MAX_NOTES_CHARS, widget=forms.Textarea(attrs={"rows": 3})
            )
        self.order_fields(["objective", "scale", "category", "notes", "rationale"])

    def answers(self) -> VerdictAnswers:
        """The cleaned answers, for scoring.services (which validates them as a review)."""
        data = self.cleaned_data
        objective = data.get("objective") or None
        return VerdictAnswers(
            rationale=data["rationale"],
            objective=None if objective is None else objective == "true",
            scale=data.get("scale"),
            category=data.get("category") or None,
            notes=data.get("notes") or "",
            fields=self.verdict_fields,
        )


def _review_or_404(request: HttpRequest, submission: uuid.UUID) -> Review:
    """The viewer's own review (404 for anyone else's or one they cannot see)."""
    user: User = request.user
    rows = review_rows(user, scope_for(request), submission)
    if not rows:
        raise Http404("No such verdict of yours.")
    review = Review(head=rows[0], scores={r.verdict_field: r for r in rows})
    standing = [r for r in rows if r.withdrawn_at is None]
    review.head = standing[0] if standing else rows[0]
    return review


def _edit_fields(review: Review, scope: Scope) -> VerdictFields:
    """The fields the edit form asks: those the review answered, notes, and for a category
    the list of a visible queue that offers it (else that category alone)."""
    categories: tuple[str, ...] = ()
    chosen = review.category
    if chosen is not None:
        lists = (
            ReviewQueue.objects.visible_to(scope)
            .order_by("name")
            .values_list("categories", flat=True)[:MAX_QUEUES_READ]
        )
        offered = next((tuple(map(str, c)) for c in lists if c and chosen in c), None)
        categories = offered or (chosen,)
    return VerdictFields(
        true_false=review.objective is not None,
        scale=review.scale is not None,
        categories=categories,
        notes=True,
    )


def _initial(review: Review) -> dict[str, Any]:
    initial: dict[str, Any] = {
        "rationale": review.head.score_rationale or "",
        "notes": review.notes,
        "submission": uuid.uuid4(),
    }
    if review.objective is not None:
        initial["objective"] = review.objective.score_value
    if review.scale is not None:
        initial["scale"] = review.scale.score_value
    if review.category is not None:
        initial["category"] = review.category
    return initial


@require_http_methods(["GET", "POST"])
@viewer_required
def edit_verdict(request: HttpRequest, submission: uuid.UUID) -> HttpResponse:
    """Correct one of the viewer's reviews: the form (GET), the correction (POST).

    A rejected correction returns the form with every typed value and the reason (400).
    """
    scope = scope_for(request)
    review = _review_or_404(request, submission)
    if not scope.may_record_verdicts(review.attack_result.operation_id):
        raise PermissionDenied("Changing verdicts needs the reviewer role in this operation.")
    if review.withdrawn:
        messages.error(request, "This verdict was withdrawn; it can no longer be edited.")
        return redirect("scoring:my_verdicts")
    verdict_fields = _edit_fields(review, scope)
    status = 200
    if request.method == "POST":
        form = ReviewForm(request.POST, verdict_fields=verdict_fields)
        if form.is_valid():
            try:
                edit_review(
                    reviewer=request.user,
                    scope=scope,
                    submission=submission,
                    answers=form.answers(),
                    correction=form.cleaned_data["submission"],
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, "Verdict corrected; the earlier one is kept as history.")
                return redirect("scoring:my_verdicts")
        status = 400
    else:
        form = ReviewForm(initial=_initial(review), verdict_fields=verdict_fields)
    context = {"review": review, "form": form}
    return render(request, "scoring/my_verdict_edit.html", context, status=status)


@require_POST
@viewer_required
def undo_verdict(request: HttpRequest, submission: uuid.UUID) -> HttpResponse:
    """Withdraw one of the viewer's reviews (it stays listed, marked withdrawn)."""
    try:
        withdraw_review(
            reviewer=request.user,
            scope=scope_for(request),
            submission=submission,
        )
    except Score.DoesNotExist as exc:
        raise Http404("No such verdict of yours.") from exc
    messages.success(request, "Verdict withdrawn; it is kept below as history.")
    return redirect("scoring:my_verdicts")
