"""Save as queue: turn the attack-results list's current filter into a named review queue.

A reviewer (or higher) in some operation may save a queue; one tied to an operation needs
that role there (the operations offered are those). The filter is the list's query string,
checked by its FilterSet; the new queue opens at /review/<slug>/.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods

from redteam.common.access import Scope, scope_for
from redteam.common.audit import record_audit
from redteam.common.models import Operation
from redteam.common.roles import viewer_required
from scoring.models import ReviewQueue
from scoring.queue_forms import (
    MAX_FILTER_CHARS,
    MAX_INSTRUCTIONS_CHARS,
    REVIEW_CHOICES,
    clean_filters,
    filters_as_text,
    filters_from_params,
    filters_from_text,
    parse_categories,
    require_a_verdict_field,
    unique_slug,
)
from scoring.review import REVIEW_VIEWS
from scoring.verdict_fields import MAX_CATEGORIES, MAX_CATEGORY_CHARS

MAX_NAME_CHARS = 120


def _verdict_operations(scope: Scope) -> Any:
    """The live operations where the viewer may record verdicts, by name."""
    allowed = scope.verdict_operation_ids()
    rows = Operation.objects.filter(archived=False).order_by("name")
    return rows if allowed is None else rows.filter(pk__in=sorted(allowed))


class SaveQueueForm(forms.Form):
    """A new queue over the given filter: its name, instructions and verdict fields."""

    name = forms.CharField(max_length=MAX_NAME_CHARS, strip=True)
    instructions = forms.CharField(
        required=False,
        max_length=MAX_INSTRUCTIONS_CHARS,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Markdown, shown above the queue and its items.",
    )
    review = forms.ChoiceField(
        choices=REVIEW_CHOICES,
        required=False,
        initial="unreviewed",
        label="Items",
        help_text="Which results of the filter the queue holds.",
    )
    ask_true_false = forms.BooleanField(required=False, initial=True, label="Ask true/false")
    ask_scale = forms.BooleanField(required=False, label="Ask a 0..1 score")
    categories = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=(
            f"Ask for one of these categories: one per line, at most {MAX_CATEGORIES}, each "
            f"at most {MAX_CATEGORY_CHARS} characters. Empty: no category."
        ),
    )
    ask_notes = forms.BooleanField(required=False, label="Offer free-text notes")
    operation = forms.ModelChoiceField(
        queryset=Operation.objects.none(),
        required=False,
        empty_label="every operation (team-wide)",
        help_text="Tie the queue to one operation: only its members see it.",
    )
    filters = forms.CharField(required=False, max_length=MAX_FILTER_CHARS, widget=forms.HiddenInput)

    def __init__(self, *args: Any, scope: Scope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope = scope
        operation_field = self.fields["operation"]
        assert isinstance(operation_field, forms.ModelChoiceField)
        operation_field.queryset = _verdict_operations(scope)

    def clean_name(self) -> str:
        """A name no other queue has."""
        name = str(self.cleaned_data["name"])
        if ReviewQueue.objects.filter(name=name).exists():
            raise ValidationError("A queue with this name exists; choose another.", code="taken")
        return name

    def clean_filters(self) -> dict[str, list[str]]:
        """The list's filter, checked by its FilterSet."""
        return clean_filters(filters_from_text(self.cleaned_data.get("filters", "")), self.scope)

    def clean_categories(self) -> list[str]:
        """One category per line, bounded and unique."""
        return parse_categories(self.cleaned_data.get("categories", ""))

    def clean(self) -> dict[str, Any]:
        """At least one verdict field is asked."""
        data = super().clean() or {}
        require_a_verdict_field(data, "categories")
        return data


def queue_url(slug: str) -> str:
    """Where a queue opens: /review/<slug>/ (scoring:queue_detail)."""
    try:
        return reverse("scoring:queue_detail", kwargs={"slug": slug})
    except NoReverseMatch:  # the queue page's route is not installed in this build
        return f"{reverse('scoring:review_queue')}{slug}/"


def _initial(request: HttpRequest) -> dict[str, Any]:
    """The form's start: the list's filter and review tab from the URL."""
    review = request.GET.get("review")
    return {
        "filters": filters_as_text(filters_from_params(request.GET)),
        "review": review if review in REVIEW_VIEWS else "",
    }


@require_http_methods(["GET", "POST"])
@viewer_required
def save_queue(request: HttpRequest) -> HttpResponse:
    """The save-as-queue form (GET, from the results list's URL) and the new queue (POST).

    403 for a viewer who may record verdicts nowhere. An invalid form (unknown filter
    parameters, bad values, a taken name) comes back with every typed value (400).
    Queries (GET): session, user, memberships, the operations offered.
    """
    scope = scope_for(request)
    if not scope.records_any_verdicts():
        raise PermissionDenied("Saving a queue needs the reviewer role in an operation.")
    if request.method != "POST":
        form = SaveQueueForm(initial=_initial(request), scope=scope)
        filter_error = None
        try:
            clean_filters(filters_from_params(request.GET), scope)
        except ValidationError as exc:
            filter_error = " ".join(exc.messages)
        context = {
            "form": form,
            "filters": _pairs(filters_from_params(request.GET)),
            "filter_error": filter_error,
        }
        return render(
            request, "scoring/queue_form.html", context, status=400 if filter_error else 200
        )
    form = SaveQueueForm(request.POST, scope=scope)
    if form.is_valid():
        queue = _create(request, form)
        if queue is not None:
            messages.success(request, f"Queue “{queue.name}” saved.")
            return redirect(queue_url(queue.slug))
    try:
        posted = filters_from_text(str(form.data.get("filters", "")))
    except ValidationError:
        posted = {}
    context = {"form": form, "filters": _pairs(posted), "filter_error": None}
    return render(request, "scoring/queue_form.html", context, status=400)


def _pairs(filters: dict[str, list[str]]) -> list[tuple[str, str]]:
    """The filter as (name, value) pairs, to show what the queue will hold."""
    return [(k, v) for k, values in filters.items() for v in values]


def _create(request: HttpRequest, form: SaveQueueForm) -> ReviewQueue | None:
    """Store the queue (audited); None, with a form error, when its name was just taken."""
    data = form.cleaned_data
    try:
        with transaction.atomic():
            queue = ReviewQueue.objects.create(
                name=data["name"],
                slug=unique_slug(data["name"]),
                operation=data.get("operation"),
                instructions=data.get("instructions", ""),
                filters=data["filters"],
                review=data.get("review") or "",
                ask_true_false=bool(data.get("ask_true_false")),
                ask_scale=bool(data.get("ask_scale")),
                categories=data["categories"],
                ask_notes=bool(data.get("ask_notes")),
                created_by=request.user if request.user.is_authenticated else None,
            )
            record_audit(
                actor=request.user,
                action="review_queue.created",
                object_type="review_queue",
                object_id=queue.pk,
                detail={
                    "name": queue.name,
                    "slug": queue.slug,
                    "operation": queue.operation_id,
                    "filters": queue.filters,
                },
            )
    except IntegrityError:
        form.add_error("name", "A queue with this name was just saved; choose another.")
        return None
    return queue
