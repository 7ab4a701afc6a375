"""Which conversations a list page's filters select: the slice a PyRIT memory export holds.

One definition for the download button of the list pages and ``manage.py
export_pyrit_memory``: the conversation list's filters (``ConversationFilterSet``) or the
attack-results list's (``AttackResultFilterSet``, with its ``review`` view), read from the
page's query string, within the caller's `Scope`. The run around those conversations (their
related conversations, scores, results, scenarios, seeds) is ``run_export.select_conversations``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import QueryDict

from memory.filters import AttackResultFilterSet, ConversationFilterSet
from memory.models import AttackResult, Conversation
from redteam.common.access import Scope
from redteam.site.run_export import RunSelection, select_conversations
from scoring.review import REVIEW_VIEWS, for_review

__all__ = [
    "LIST_PAGES",
    "PAGE_PARAMETERS",
    "SliceError",
    "filter_names",
    "select_slice",
]

LIST_PAGES = ("conversations", "attack-results")
# Query parameters of the pages that are not filters (paging, the export's own).
PAGE_PARAMETERS = frozenset({"cursor", "size", "shape"})


class SliceError(ValueError):
    """The filters are invalid; the message names each problem."""


def filter_names(page: str) -> set[str]:
    """The filter parameters a list page accepts."""
    if page == "conversations":
        return set(ConversationFilterSet.base_filters)
    return {*AttackResultFilterSet.base_filters, "review"}


def _problems(errors: Mapping[str, Any]) -> str:
    return "; ".join(
        f"{name}: {' '.join(str(e) for e in problems)}" for name, problems in errors.items()
    )


def select_slice(
    page: str,
    data: QueryDict,
    *,
    scope: Scope,
    conversation_ids: Iterable[str] = (),
    strict: bool = False,
) -> RunSelection:
    """The run the page's filters select (every visible row when there is no filter).

    ``strict`` refuses parameters the page does not know (a command's typo), where a page's
    own links may carry paging parameters, which are ignored.
    """
    if page not in LIST_PAGES:
        raise SliceError(f"unknown list {page!r}: use one of {', '.join(LIST_PAGES)}")
    known = filter_names(page)
    given = {key for key in data if key not in PAGE_PARAMETERS}
    unknown = sorted(given - known)
    if strict and unknown:
        raise SliceError(f"the {page} list has no filter {', '.join(unknown)}")
    filters = QueryDict(mutable=True)
    for key in sorted(given & known):
        values = [v for v in data.getlist(key) if v != ""]
        if values:
            filters.setlist(key, values)
    ids = list(dict.fromkeys(str(i) for i in conversation_ids if str(i)))
    if not filters and not ids:
        return select_conversations(None, scope=scope)
    selected: QuerySet[Any]
    if page == "conversations":
        conversations = ConversationFilterSet(
            filters, queryset=Conversation.objects.all(), scope=scope
        )
        if not conversations.is_valid():
            raise SliceError(_problems(conversations.errors))
        selected = conversations.qs
    else:
        review = filters.pop("review", [None])[-1]
        results = AttackResultFilterSet(filters, queryset=AttackResult.objects.all(), scope=scope)
        if not results.is_valid():
            raise SliceError(_problems(results.errors))
        selected = results.qs
        if review:
            if review not in REVIEW_VIEWS:
                raise SliceError(f"review: unknown review view {review!r}")
            selected = for_review(selected, review)
    if ids:
        selected = selected.filter(conversation_id__in=ids)
    chosen = selected.order_by().values_list("conversation_id", flat=True).distinct()
    return select_conversations(chosen, scope=scope)
