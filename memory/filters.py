"""FilterSets shared by the HTML list pages and the REST API (plain query parameters).

Conversation filters read the Conversation summary columns (never aggregating pieces);
attack-result filters read AttackResult's denormalised columns. Both accept:

    label=key:value (repeatable; AND across keys, OR within a key), operation=, operator=
    target=<identifier hash or class name>, attack=<class>, converter=<class> (repeatable, all)
    harm_category= (repeatable, any), outcome= (repeatable, any), after= / before= (date or
    ISO datetime, inclusive)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
from typing import Any

import django_filters as df
from django import forms
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from memory.lookups import JSONHasElement, JSONHasKeyValue, pieces_matching
from memory.models import AttackResult, Conversation, MessagePiece
from redteam.pyrit_enums import ATTACK_OUTCOMES, PROMPT_DATA_TYPES

# PyRIT's own rule for label keys (get_attack_results); values are free text.
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
HASH_RE = re.compile(r"^[0-9a-f]{64}$")
MAX_VALUES = 20
MAX_VALUE_CHARS = 300

OUTCOME_CHOICES = [(o, o) for o in ATTACK_OUTCOMES]
DATA_TYPE_CHOICES = [(t, t) for t in PROMPT_DATA_TYPES]


# ---------------------------------------------------------------------------------------------
# Form fields
# ---------------------------------------------------------------------------------------------


class MultiValueCharField(forms.Field):
    """A repeatable query parameter (``?x=a&x=b``) cleaned to a list of non-empty strings."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        """Strip values, drop empty ones, cap their number and length."""
        if value in (None, ""):
            return []
        values = [value] if isinstance(value, str) else list(value)
        cleaned = [str(v).strip() for v in values if str(v).strip()]
        if len(cleaned) > MAX_VALUES:
            raise ValidationError(f"At most {MAX_VALUES} values.", code="max_values")
        if any(len(v) > MAX_VALUE_CHARS for v in cleaned):
            raise ValidationError(f"Values are limited to {MAX_VALUE_CHARS} characters.")
        return cleaned


class LabelField(MultiValueCharField):
    """Repeatable ``key:value`` label pairs, parsed to (key, value) tuples."""

    def to_python(self, value: Any) -> list[tuple[str, str]]:  # type: ignore[override]
        """Split each pair at the first colon and check the key against PyRIT's pattern."""
        pairs = []
        for raw in super().to_python(value):
            key, sep, val = raw.partition(":")
            if not sep or not LABEL_KEY_RE.match(key.strip()):
                raise ValidationError(
                    "Labels are key:value with a key of letters, digits, '_', '.' or '-'.",
                    code="invalid_label",
                )
            pairs.append((key.strip(), val.strip()))
        return pairs


class MultiChoiceField(MultiValueCharField):
    """Repeatable parameter restricted to fixed choices."""

    def __init__(self, *, choices: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        kwargs.pop("null_label", None)
        super().__init__(**kwargs)
        self.allowed = {c for c, _ in choices}

    def to_python(self, value: Any) -> list[str]:
        """Reject values outside the choices, naming them."""
        values = super().to_python(value)
        bad = [v for v in values if v not in self.allowed]
        if bad:
            raise ValidationError(
                "Unknown value(s): %(bad)s. Expected one of: %(ok)s.",
                params={"bad": ", ".join(bad), "ok": ", ".join(sorted(self.allowed))},
                code="invalid_choice",
            )
        return values


class DateOrDateTimeField(forms.Field):
    """A date (``2026-11-22``) or an ISO datetime; naive datetimes are taken as UTC."""

    def __init__(self, *, end_of_day: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.end_of_day = end_of_day

    def to_python(self, value: Any) -> datetime | None:
        """Parse to an aware datetime; a bare date means the start (or end) of that day."""
        if value in (None, ""):
            return None
        text = str(value).strip()
        try:
            parsed_dt = parse_datetime(text)
            parsed_d = None if parsed_dt else parse_date(text)
        except ValueError:
            parsed_dt = parsed_d = None
        if parsed_dt is not None:
            if timezone.is_naive(parsed_dt):
                parsed_dt = timezone.make_aware(parsed_dt, UTC)
            return parsed_dt
        if parsed_d is not None:
            return _day_bound(parsed_d, self.end_of_day)
        raise ValidationError("Enter a date (YYYY-MM-DD) or an ISO 8601 datetime.", code="invalid")


def _day_bound(d: date, end: bool) -> datetime:
    return datetime.combine(d, time.max if end else time.min, tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------------


class MultiValueFilter(df.Filter):
    """Base for repeatable filters: skip when no value was given."""

    field_class = MultiValueCharField

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        """Apply ``self.method``-free filtering in subclasses; no values means no filter."""
        if not value:
            return qs
        return self.apply(qs, value)

    def apply(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        """Filter by the cleaned values."""
        raise NotImplementedError


class LabelFilter(MultiValueFilter):
    """``label=key:value`` repeated: AND across keys, OR among values of one key."""

    field_class = LabelField

    def apply(self, qs: QuerySet[Any], value: list[tuple[str, str]]) -> QuerySet[Any]:
        """One condition per key; values of the same key are alternatives."""
        by_key: dict[str, list[str]] = {}
        for key, val in value:
            by_key.setdefault(key, []).append(val)
        for key, vals in by_key.items():
            condition = Q()
            for val in vals:
                condition |= Q(JSONHasKeyValue(self.field_name, key, val))
            qs = qs.filter(condition)
        return qs


class FixedLabelFilter(df.CharFilter):
    """A single label key exposed as its own parameter (``operation=``, ``operator=``)."""

    def __init__(self, *, label_key: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.label_key = label_key

    def filter(self, qs: QuerySet[Any], value: str) -> QuerySet[Any]:
        """Match the label key exactly."""
        if not value:
            return qs
        return qs.filter(JSONHasKeyValue(self.field_name, self.label_key, value.strip()))


class ElementFilter(MultiValueFilter):
    """A JSON list column containing every value (``match="all"``) or any of the values."""

    def __init__(
        self,
        *,
        match: str = "any",
        choices: Sequence[tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.match = match
        if choices is not None:
            self.extra["choices"] = choices
            self.field_class = MultiChoiceField

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """All values for ``all``; any value for ``any``."""
        if self.match == "all":
            for v in value:
                qs = qs.filter(JSONHasElement(self.field_name, v))
            return qs
        condition = Q()
        for v in value:
            condition |= Q(JSONHasElement(self.field_name, v))
        return qs.filter(condition)


class ChoicesFilter(MultiValueFilter):
    """A plain column equal to any of the given choices."""

    def __init__(self, *, choices: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extra["choices"] = choices
        self.field_class = MultiChoiceField

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """Column IN values."""
        return qs.filter(**{f"{self.field_name}__in": value})


class DateBoundFilter(df.Filter):
    """Inclusive lower (``gte``) or upper (``lte``) bound on a timestamp column."""

    field_class = DateOrDateTimeField

    def __init__(self, *, bound: str, **kwargs: Any) -> None:
        if bound == "lte":
            kwargs["end_of_day"] = True
        super().__init__(lookup_expr=bound, **kwargs)


def _target_condition(value: str, hash_field: str, class_field: str) -> Q:
    """A 64-hex value names a target identifier by hash; anything else is a class name."""
    value = value.strip()
    if HASH_RE.match(value):
        return Q(**{hash_field: value})
    return Q(**{class_field: value})


# ---------------------------------------------------------------------------------------------
# FilterSets
# ---------------------------------------------------------------------------------------------


class ConversationFilterSet(df.FilterSet):
    """Filters for conversation lists (HTML page and /api/v1/conversations)."""

    q = df.CharFilter(method="filter_q", label="Search text", max_length=200)
    operation = FixedLabelFilter(field_name="labels", label_key="operation", max_length=300)
    operator = FixedLabelFilter(field_name="labels", label_key="operator", max_length=300)
    label = LabelFilter(field_name="labels")
    target = df.CharFilter(method="filter_target", max_length=300)
    attack = df.CharFilter(field_name="attack_class", max_length=255)
    converter = ElementFilter(field_name="converter_classes", match="all")
    harm_category = ElementFilter(field_name="harm_categories", match="any")
    outcome = ChoicesFilter(field_name="outcome", choices=OUTCOME_CHOICES)
    data_type = ElementFilter(field_name="data_types", match="any", choices=DATA_TYPE_CHOICES)
    has_error = df.BooleanFilter(field_name="has_error")
    score_value = df.CharFilter(method="filter_score_value", max_length=64)
    after = DateBoundFilter(field_name="last_timestamp", bound="gte")
    before = DateBoundFilter(field_name="last_timestamp", bound="lte")

    class Meta:
        model = Conversation
        fields: list[str] = []

    def filter_q(self, qs: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        """Conversations with a piece whose original or converted value matches."""
        if not value.strip():
            return qs
        matching = pieces_matching(value.strip(), connection.vendor)
        return qs.filter(conversation_id__in=matching.values("conversation_id"))

    def filter_target(
        self, qs: QuerySet[Conversation], name: str, value: str
    ) -> QuerySet[Conversation]:
        """The conversation's target identifier, by hash or class name."""
        if not value.strip():
            return qs
        return qs.filter(
            _target_condition(value, "target_identifier_id", "target_identifier__class_name")
        )

    def filter_score_value(
        self, qs: QuerySet[Conversation], name: str, value: str
    ) -> QuerySet[Conversation]:
        """Conversations with a score of this value (case-insensitive) on any of their pieces."""
        if not value.strip():
            return qs
        # Scores live in the scoring app, which depends on memory; resolving the model by name
        # keeps this module free of an import cycle.
        score_model = apps.get_model("scoring", "Score")
        scored = score_model.objects.filter(
            message_piece_id__in=MessagePiece.objects.filter(
                conversation_id=OuterRef(OuterRef("conversation_id"))
            ).values("original_prompt_id"),
            score_value__iexact=value.strip(),
        )
        return qs.filter(Exists(scored))


class AttackResultFilterSet(df.FilterSet):
    """Filters for attack-result lists (HTML page and /api/v1/attack-results)."""

    objective = df.CharFilter(field_name="objective", lookup_expr="icontains", max_length=300)
    objective_sha256 = df.CharFilter(field_name="objective_sha256", max_length=64)
    conversation_id = df.CharFilter(field_name="conversation_id", max_length=255)
    operation = FixedLabelFilter(field_name="labels", label_key="operation", max_length=300)
    operator = FixedLabelFilter(field_name="labels", label_key="operator", max_length=300)
    label = LabelFilter(field_name="labels")
    target = df.CharFilter(method="filter_target", max_length=300)
    attack = df.CharFilter(field_name="attack_class", max_length=255)
    converter = ElementFilter(field_name="converter_classes", match="all")
    has_converters = df.BooleanFilter(method="filter_has_converters")
    harm_category = ElementFilter(field_name="targeted_harm_categories", match="any")
    outcome = ChoicesFilter(field_name="outcome", choices=OUTCOME_CHOICES)
    min_turns = df.NumberFilter(field_name="executed_turns", lookup_expr="gte")
    max_turns = df.NumberFilter(field_name="executed_turns", lookup_expr="lte")
    after = DateBoundFilter(field_name="timestamp", bound="gte")
    before = DateBoundFilter(field_name="timestamp", bound="lte")

    class Meta:
        model = AttackResult
        fields: list[str] = []

    def filter_target(
        self, qs: QuerySet[AttackResult], name: str, value: str
    ) -> QuerySet[AttackResult]:
        """The objective target inside the atomic-attack identifier, by hash or class name."""
        if not value.strip():
            return qs
        return qs.filter(_target_condition(value, "target_hash", "target_class"))

    def filter_has_converters(
        self, qs: QuerySet[AttackResult], name: str, value: bool | None
    ) -> QuerySet[AttackResult]:
        """Results whose attack used at least one converter (or none)."""
        if value is None:
            return qs
        return qs.exclude(converter_classes=[]) if value else qs.filter(converter_classes=[])
