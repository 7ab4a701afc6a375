"""Validating a review queue's settings, shared by the admin and "save as queue".

A queue's filter is the attack-results list's query parameters as {name: [values]}: only
names memory.filters.AttackResultFilterSet knows, with values it accepts. Categories are
edited one per line. Both are bounded, so no stored queue makes a request costly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.utils.text import slugify

from memory.filters import AttackResultFilterSet
from memory.models import AttackResult
from redteam.common.access import Scope
from scoring.models import ReviewQueue
from scoring.review import REVIEW_VIEWS
from scoring.verdict_fields import MAX_CATEGORIES, MAX_CATEGORY_CHARS

# The results list's own parameters, not filters: the page position, the review tab.
LIST_PARAMS = ("cursor", "size", "review", "view")
MAX_INSTRUCTIONS_CHARS = 20_000
MAX_FILTER_VALUES = 20
MAX_FILTER_CHARS = 4000
# Paths under /review/ that are pages, never a queue's slug.
RESERVED_SLUGS = frozenset({"adjudication", "mine", "new", "queues", "reviewers", "save"})
MAX_SLUG_CHARS = 70
REVIEW_CHOICES = [("", "every result"), *((v, v) for v in REVIEW_VIEWS)]


def filter_names() -> tuple[str, ...]:
    """The parameters a queue's filter may hold (the results list's filters)."""
    return tuple(AttackResultFilterSet.base_filters)


def filters_from_params(params: QueryDict) -> dict[str, list[str]]:
    """The filter part of a results-list query: list parameters and empty values dropped."""
    return {
        name: values
        for name in params
        if name not in LIST_PARAMS and (values := [v for v in params.getlist(name) if v.strip()])
    }


def filters_from_text(text: str) -> dict[str, list[str]]:
    """A query string (or a results-list URL) as {name: [values]}, empty values dropped."""
    text = (text or "").strip()
    if "?" in text:
        text = urlsplit(text).query
    if len(text) > MAX_FILTER_CHARS:
        raise ValidationError(
            f"The filter is limited to {MAX_FILTER_CHARS} characters.", code="max_length"
        )
    return filters_from_params(QueryDict(text))


def filters_as_text(filters: Mapping[str, Sequence[str]] | None) -> str:
    """A stored filter as the results list's query string."""
    return urlencode([(k, v) for k, values in (filters or {}).items() for v in values])


def clean_filters(filters: Mapping[str, Sequence[str]], scope: Scope) -> dict[str, list[str]]:
    """The filter, checked by the results list's FilterSet: a ValidationError naming unknown
    parameters and invalid values."""
    known = set(filter_names())
    unknown = sorted(name for name in filters if name not in known)
    if unknown:
        raise ValidationError(
            "Unknown filter parameter(s): "
            + ", ".join(unknown)
            + ". Known: "
            + ", ".join(sorted(known))
            + ".",
            code="unknown_filter",
        )
    cleaned = {str(k): [str(v) for v in values] for k, values in filters.items()}
    if any(len(values) > MAX_FILTER_VALUES for values in cleaned.values()):
        raise ValidationError(
            f"A filter parameter takes at most {MAX_FILTER_VALUES} values.", code="too_many"
        )
    if len(filters_as_text(cleaned)) > MAX_FILTER_CHARS:
        raise ValidationError(
            f"The filter is limited to {MAX_FILTER_CHARS} characters.", code="max_length"
        )
    data = QueryDict(mutable=True)
    for name, values in cleaned.items():
        data.setlist(name, values)
    filterset = AttackResultFilterSet(data, queryset=AttackResult.objects.none(), scope=scope)
    if not filterset.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(str(e) for e in errs)}" for name, errs in filterset.errors.items()
        )
        raise ValidationError(f"Invalid filter: {problems}", code="invalid_filter")
    return cleaned


def parse_categories(text: str) -> list[str]:
    """One category per line (blank lines ignored): at most MAX_CATEGORIES, each at most
    MAX_CATEGORY_CHARS, no repeats."""
    categories = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = []
    if len(categories) > MAX_CATEGORIES:
        errors.append(f"At most {MAX_CATEGORIES} categories (keys 1..{MAX_CATEGORIES}).")
    long = [c[:20] for c in categories if len(c) > MAX_CATEGORY_CHARS]
    if long:
        errors.append(f"A category is at most {MAX_CATEGORY_CHARS} characters: {', '.join(long)}…")
    repeated = sorted({c for c in categories if categories.count(c) > 1})
    if repeated:
        errors.append(f"Categories must be unique: {', '.join(repeated)}.")
    if errors:
        raise ValidationError(" ".join(errors), code="invalid_categories")
    return categories


def require_a_verdict_field(data: Mapping[str, Any], categories_field: str) -> None:
    """A queue asks for at least one verdict: true/false, the 0..1 scale or a category (the
    admin and save-as-queue forms name their categories field differently)."""
    if not (data.get("ask_true_false") or data.get("ask_scale") or data.get(categories_field)):
        raise ValidationError(
            "Ask for at least one verdict: true/false, the 0..1 scale or a category.",
            code="no_field",
        )


def categories_as_text(categories: Sequence[str] | None) -> str:
    """A stored category list, one per line."""
    return "\n".join(str(c) for c in categories or [])


def check_slug(slug: str) -> None:
    """Refuse the slugs of the pages under /review/."""
    if slug in RESERVED_SLUGS:
        raise ValidationError(
            f"“{slug}” names a page under /review/; choose another slug.", code="reserved"
        )


def unique_slug(name: str) -> str:
    """A free slug for a new queue named `name` (one query)."""
    base = slugify(name)[:MAX_SLUG_CHARS].strip("-") or "queue"
    taken = set(
        ReviewQueue.objects.filter(slug__startswith=base).values_list("slug", flat=True)
    ) | set(RESERVED_SLUGS)
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug
