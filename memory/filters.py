"""FilterSets shared by the HTML list pages and the REST API (plain query parameters).

Conversation filters read the Conversation summary columns (never aggregating pieces);
attack-result filters read AttackResult's denormalised columns. Both accept:

    label=key:value or key=value (repeatable; AND across keys, OR within a key), operation=,
    operator=
    target=<identifier hash or class name>, attack=<class>, converter=<class> (repeatable, all)
    scorer=<identifier hash or class name> (attack results: the scorer of the last score)
    harm_category= (repeatable, any), outcome= (repeatable, any), after= / before= (date or
    ISO datetime, inclusive)

The repeatable, choice, flag and UUID filters are redteam.common.filters' (seeds uses them too).

Every FilterSet here is a ScopedFilterSet: it needs the caller's scope (from `request=` or
`scope=`), narrows its queryset to the rows of the caller's operations, and the filters that
look at other rows (scores, references, identifier uses) look only at visible ones, so a
filter never answers a question about an operation the caller may not read.
"""

from __future__ import annotations

import re
from typing import Any

import django_filters as df
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast, Left
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from memory.lookups import pieces_matching
from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    MessagePiece,
    PieceConverter,
    ScenarioResult,
    Score,
    ScoreSource,
    original_prompt_in,
)
from redteam.common.access import Scope, ScopedQuerySet, scope_for
from redteam.common.choices import (
    DATA_TYPE_CHOICES,
    IDENTIFIER_TYPE_CHOICES,
    OUTCOME_CHOICES,
    RESPONSE_ERROR_CHOICES,
    ROLE_CHOICES,
    SCENARIO_RUN_STATE_CHOICES,
    SCORE_STATUS_CHOICES,
    SCORE_TYPE_CHOICES,
)
from redteam.common.datebounds import DateBoundFilter
from redteam.common.filters import (
    ChoicesFilter,
    ElementFilter,
    InFilter,
    MultiValueCharField,
    MultiValueFilter,
    StrictBooleanFilter,
    UUIDInFilter,
)
from redteam.common.lookups import JSONHasElement, JSONHasKeyValue
from redteam.core.digests import is_sha256
from redteam.core.identity.display import KINDS

# PyRIT's own rule for label keys (get_attack_results); values are free text.
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
LABEL_SEPARATOR_RE = re.compile(r"[:=]")


# ---------------------------------------------------------------------------------------------
# Form fields
# ---------------------------------------------------------------------------------------------


class LabelField(MultiValueCharField):
    """Repeatable ``key:value`` label pairs, parsed to (key, value) tuples."""

    def to_python(self, value: Any) -> list[tuple[str, str]]:  # type: ignore[override]
        """Split each pair at the first colon and check the key against PyRIT's pattern."""
        pairs = []
        for raw in super().to_python(value):
            # key:value or key=value (the API's documented spelling). Keys never contain either
            # character, so the first one found always ends the key.
            match = LABEL_SEPARATOR_RE.search(raw)
            if match:
                key, sep, val = raw[: match.start()], match.group(), raw[match.end() :]
            else:
                key, sep, val = raw, "", ""
            if not sep or not LABEL_KEY_RE.match(key.strip()):
                raise ValidationError(
                    "Labels are key:value (or key=value) with a key of letters, digits, '_', "
                    "'.' or '-'.",
                    code="invalid_label",
                )
            pairs.append((key.strip(), val.strip()))
        return pairs


# ---------------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------------


class LabelFilter(MultiValueFilter):
    """``label=key:value`` repeated: AND across keys, OR among values of one key."""

    field_class = LabelField
    # The FilterSet this filter belongs to (django-filter sets it; see filter_scope).
    parent: Any

    def condition(self, key: str, val: str) -> Q:
        """The rows that carry the label."""
        return Q(JSONHasKeyValue(self.column, key, val))

    def apply(self, qs: QuerySet[Any], value: list[tuple[str, str]]) -> QuerySet[Any]:
        """One condition per key; values of the same key are alternatives."""
        by_key: dict[str, list[str]] = {}
        for key, val in value:
            by_key.setdefault(key, []).append(val)
        for key, vals in by_key.items():
            condition = Q()
            for val in vals:
                condition |= self.condition(key, val)
            qs = qs.filter(condition)
        return qs


def referenced_by_label(scope: Scope, key: str, val: str) -> QuerySet[Any]:
    """Ids of the conversations a visible result references (pruned, adversarial, scorer,
    converter chats) where the result's own conversation carries the label.

    PyRIT 1.x keeps labels on attack results only, so a related conversation has none of its
    own; it is found through the result that references it, and its stored labels stay as
    they are. One hop: a chat referenced only by another related conversation's result is
    found by that result's labels.
    """
    return (
        ConversationReference.objects.visible_to(scope)
        .filter(JSONHasKeyValue("attack_result__conversation__labels", key, val))
        .values("conversation_id")
    )


class ConversationLabelFilter(LabelFilter):
    """Labels of a conversation: its own, or those of a visible result that references it."""

    def condition(self, key: str, val: str) -> Q:
        """Carries the label, or is referenced by a visible result whose conversation does."""
        return Q(JSONHasKeyValue("labels", key, val)) | Q(
            conversation_id__in=referenced_by_label(filter_scope(self), key, val)
        )


class FixedLabelFilter(df.CharFilter):
    """A single label key exposed as its own parameter (``operation=``, ``operator=``)."""

    parent: Any

    def __init__(
        self, *, label_key: str, labels: type[LabelFilter] = LabelFilter, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.label_key = label_key
        self.labels = labels

    def filter(self, qs: QuerySet[Any], value: str) -> QuerySet[Any]:
        """Match the label key exactly, as ``label=key:value`` would."""
        if not value:
            return qs
        labels = self.labels(field_name=self.field_name)
        labels.parent = self.parent
        return labels.apply(qs, [(self.label_key, value.strip())])


def hash_or_class(value: str, hash_field: str, class_field: str) -> Q:
    """A sha256 digest names an identifier by hash; anything else is a class name."""
    value = value.strip()
    return Q(**{hash_field if is_sha256(value) else class_field: value})


def _identifier_condition(value: str, prefix: str) -> Q:
    """`prefix` is an identifier FK path: the identifier by hash or class (hash_or_class)."""
    return hash_or_class(value, f"{prefix}_id", f"{prefix}__class_name")


class HashOrClassFilter(df.CharFilter):
    """One identifier (a target), given by hash or class name (hash_or_class)."""

    def __init__(self, *, hash_field: str, class_field: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hash_field = hash_field
        self.class_field = class_field

    def filter(self, qs: QuerySet[Any], value: str) -> QuerySet[Any]:
        """No (or a blank) value means no filter."""
        if not value or not value.strip():
            return qs
        return qs.filter(hash_or_class(value, self.hash_field, self.class_field))


# ---------------------------------------------------------------------------------------------
# FilterSets
# ---------------------------------------------------------------------------------------------


class ScopedFilterSet(df.FilterSet):
    """A FilterSet over the rows of the caller's operations (redteam.common.access).

    The scope comes from `scope=`, else from `request=` (`scope_for`); a FilterSet given
    neither raises TypeError, so a page or command that forgets the scope fails loudly
    instead of listing every operation. Whatever queryset it is handed is narrowed with
    `visible_to(scope)` (a scoped read shape passes through unchanged in meaning).
    """

    scope: Scope
    _meta: Any  # django-filter's FilterSetOptions (model, fields)

    def __init__(
        self,
        data: Any = None,
        queryset: QuerySet[Any] | None = None,
        *,
        request: Any = None,
        prefix: str | None = None,
        scope: Scope | None = None,
    ) -> None:
        if scope is None:
            if request is None:
                raise TypeError(
                    f"{type(self).__name__} needs the caller's scope: pass request= or scope=."
                )
            scope = scope_for(request)
        model = self._meta.model
        if queryset is None:
            queryset = model._default_manager.all()
        if not isinstance(queryset, ScopedQuerySet):
            raise TypeError(f"{model.__name__} rows are not scoped to operations.")
        self.scope = scope
        super().__init__(data, queryset.visible_to(scope), request=request, prefix=prefix)


def filter_scope(flt: df.Filter) -> Scope:
    """The scope of the FilterSet a filter belongs to (a filter used alone sees nothing)."""
    parent = getattr(flt, "parent", None)
    return parent.scope if isinstance(parent, ScopedFilterSet) else Scope.nothing()


class ConversationFilterSet(ScopedFilterSet):
    """Filters for conversation lists (HTML page and /api/v1/conversations)."""

    q = df.CharFilter(method="filter_q", label="Search text", max_length=200)
    operation = FixedLabelFilter(
        field_name="labels",
        label_key="operation",
        labels=ConversationLabelFilter,
        max_length=300,
    )
    operator = FixedLabelFilter(
        field_name="labels", label_key="operator", labels=ConversationLabelFilter, max_length=300
    )
    label = ConversationLabelFilter(field_name="labels")
    # The conversation's target identifier.
    target = HashOrClassFilter(
        hash_field="target_identifier_id",
        class_field="target_identifier__class_name",
        max_length=300,
    )
    attack = df.CharFilter(field_name="attack_class", max_length=255)
    converter = ElementFilter(field_name="converter_classes", match="all")
    harm_category = ElementFilter(field_name="harm_categories", match="any")
    outcome = ChoicesFilter(field_name="outcome", choices=OUTCOME_CHOICES)
    data_type = ElementFilter(field_name="data_types", match="any", choices=DATA_TYPE_CHOICES)
    has_error = StrictBooleanFilter(field_name="has_error")
    score_value = df.CharFilter(method="filter_score_value", max_length=64)
    after = DateBoundFilter(field_name="last_timestamp", bound="gte")
    before = DateBoundFilter(field_name="last_timestamp", bound="lte")

    class Meta:
        model = Conversation
        fields: list[str] = []

    def filter_q(self, qs: QuerySet[Conversation], name: str, value: str) -> QuerySet[Conversation]:
        """Conversations with a piece whose original or converted value matches.

        The rows searched are already visible ones; a piece is visible with its conversation,
        so the piece search itself needs no second scope (which would cost it a join).
        """
        if not value.strip():
            return qs
        matching = pieces_matching(value.strip(), connection.vendor)
        return qs.filter(conversation_id__in=matching.values("conversation_id"))

    def filter_score_value(
        self, qs: QuerySet[Conversation], name: str, value: str
    ) -> QuerySet[Conversation]:
        """Conversations with a visible score of this value (case-insensitive) on any of their
        pieces."""
        if not value.strip():
            return qs
        scored = Score.objects.visible_to(self.scope).filter(
            message_piece_id__in=MessagePiece.objects.filter(
                conversation_id=OuterRef(OuterRef("conversation_id"))
            ).values("original_prompt_id"),
            score_value__iexact=value.strip(),
        )
        return qs.filter(Exists(scored))


class AttackResultFilterSet(ScopedFilterSet):
    """Filters for attack-result lists (HTML page and /api/v1/attack-results)."""

    objective = df.CharFilter(field_name="objective", lookup_expr="icontains", max_length=300)
    objective_sha256 = df.CharFilter(field_name="objective_sha256", max_length=64)
    conversation_id = df.CharFilter(field_name="conversation_id", max_length=255)
    # PyRIT's get_attack_results(scenario_result_id=...): the scenario a result belongs to.
    scenario_result_id = df.CharFilter(field_name="attribution_parent_id", max_length=64)
    operation = FixedLabelFilter(field_name="labels", label_key="operation", max_length=300)
    operator = FixedLabelFilter(field_name="labels", label_key="operator", max_length=300)
    label = LabelFilter(field_name="labels")
    # The objective target inside the atomic-attack identifier.
    target = HashOrClassFilter(hash_field="target_hash", class_field="target_class", max_length=300)
    # The scorer of the result's last score (PyRIT's last_score), by hash or class name.
    scorer = df.CharFilter(method="filter_scorer", max_length=300)
    attack = df.CharFilter(field_name="attack_class", max_length=255)
    converter = ElementFilter(field_name="converter_classes", match="all")
    has_converters = StrictBooleanFilter(method="filter_has_converters")
    harm_category = ElementFilter(field_name="targeted_harm_categories", match="any")
    outcome = ChoicesFilter(field_name="outcome", choices=OUTCOME_CHOICES)
    min_turns = df.NumberFilter(field_name="executed_turns", lookup_expr="gte")
    max_turns = df.NumberFilter(field_name="executed_turns", lookup_expr="lte")
    after = DateBoundFilter(field_name="timestamp", bound="gte")
    before = DateBoundFilter(field_name="timestamp", bound="lte")

    class Meta:
        model = AttackResult
        fields: list[str] = []

    def filter_scorer(
        self, qs: QuerySet[AttackResult], name: str, value: str
    ) -> QuerySet[AttackResult]:
        """Results whose last score is a visible score by this scorer (hash or class name)."""
        if not value.strip():
            return qs
        last = Score.objects.visible_to(self.scope).filter(
            hash_or_class(value, "scorer_identifier_id", "scorer_class"),
            id=OuterRef("last_score_id"),
        )
        return qs.filter(Exists(last))

    def filter_has_converters(
        self, qs: QuerySet[AttackResult], name: str, value: bool | None
    ) -> QuerySet[AttackResult]:
        """Results whose attack used at least one converter (or none)."""
        if value is None:
            return qs
        return qs.exclude(converter_classes=[]) if value else qs.filter(converter_classes=[])


class ScenarioResultFilterSet(ScopedFilterSet):
    """Filters for scenario lists (HTML page and /api/v1/scenario-results), after PyRIT's
    get_scenario_results."""

    scenario_name = df.CharFilter(
        field_name="scenario_name", lookup_expr="icontains", max_length=255
    )
    scenario_version = df.NumberFilter(field_name="scenario_version")
    run_state = ChoicesFilter(field_name="scenario_run_state", choices=SCENARIO_RUN_STATE_CHOICES)
    label = LabelFilter(field_name="labels")
    # The scenario's objective target.
    target = HashOrClassFilter(hash_field="target_hash", class_field="target_class", max_length=300)
    pyrit_version = df.CharFilter(field_name="pyrit_version", max_length=32)
    after = DateBoundFilter(field_name="completion_time", bound="gte")
    before = DateBoundFilter(field_name="completion_time", bound="lte")

    class Meta:
        model = ScenarioResult
        fields: list[str] = []


# ---------------------------------------------------------------------------------------------
# Message pieces and identifiers (the REST API's /api/v1/message-pieces and /identifiers)
# ---------------------------------------------------------------------------------------------


class PieceLabelFilter(LabelFilter):
    """Labels of a piece: its own (0.13 pieces carry labels) or its conversation's (1.x),
    including the labels of a visible result that references its conversation."""

    def condition(self, key: str, val: str) -> Q:
        """On the piece, on its conversation, or on a visible result referencing its
        conversation."""
        return (
            Q(JSONHasKeyValue("conversation__labels", key, val))
            | Q(JSONHasKeyValue("labels", key, val))
            | Q(conversation_id__in=referenced_by_label(filter_scope(self), key, val))
        )


class OriginalPromptFilter(UUIDInFilter):
    """Pieces whose original_prompt_id is any of the given UUIDs: the originals by primary
    key, the copies by their own index (memory.models.original_prompt_in)."""

    def apply(self, qs: QuerySet[Any], value: list[Any]) -> QuerySet[Any]:
        """original_prompt_id IN values, in the form the piece indexes serve."""
        return qs.filter(original_prompt_in(value))


class MessagePieceFilterSet(ScopedFilterSet):
    """Filters for /api/v1/message-pieces, after PyRIT's get_message_pieces (section 9).

    Labels, harm categories, target and outcome are conversation-scoped in 1.x, so they are
    matched on the piece's own 0.13 columns OR on its conversation's summary columns.
    """

    conversation_id = InFilter(field_name="conversation_id")
    id = UUIDInFilter(field_name="id")
    original_prompt_id = OriginalPromptFilter(field_name="original_prompt_id")
    role = ChoicesFilter(field_name="role", choices=ROLE_CHOICES)
    # PyRIT's data_type / not_data_type test the converted value's type.
    data_type = ChoicesFilter(field_name="converted_value_data_type", choices=DATA_TYPE_CHOICES)
    not_data_type = df.ChoiceFilter(
        field_name="converted_value_data_type", choices=DATA_TYPE_CHOICES, exclude=True
    )
    original_data_type = ChoicesFilter(
        field_name="original_value_data_type", choices=DATA_TYPE_CHOICES
    )
    response_error = ChoicesFilter(field_name="response_error", choices=RESPONSE_ERROR_CHOICES)
    converted_value_sha256 = InFilter(field_name="converted_value_sha256")
    label = PieceLabelFilter(field_name="labels")
    operation = df.CharFilter(method="filter_fixed_label", max_length=300)
    operator = df.CharFilter(method="filter_fixed_label", max_length=300)
    harm_category = MultiValueFilter(field_name="targeted_harm_categories", method="filter_harm")
    target = df.CharFilter(method="filter_target", max_length=300)
    attack = df.CharFilter(method="filter_attack", max_length=300)
    converter = MultiValueFilter(field_name="converters", method="filter_converter")
    outcome = ChoicesFilter(field_name="conversation__outcome", choices=OUTCOME_CHOICES)
    score_type = df.ChoiceFilter(choices=SCORE_TYPE_CHOICES, method="filter_score_type")
    score_value = df.CharFilter(method="filter_score_value", max_length=64)
    after = DateBoundFilter(field_name="timestamp", bound="gte")
    before = DateBoundFilter(field_name="timestamp", bound="lte")

    class Meta:
        model = MessagePiece
        fields: list[str] = []

    def filter_fixed_label(
        self, qs: QuerySet[MessagePiece], name: str, value: str
    ) -> QuerySet[Any]:
        """``operation=`` / ``operator=``: the label of that name."""
        if not value.strip():
            return qs
        labels = PieceLabelFilter(field_name="labels")
        labels.parent = self
        return labels.apply(qs, [(name, value.strip())])

    def filter_harm(self, qs: QuerySet[MessagePiece], name: str, value: list[str]) -> QuerySet[Any]:
        """Any of the harm categories, on the piece (0.13) or its conversation."""
        condition = Q()
        for v in value:
            condition |= Q(JSONHasElement("conversation__harm_categories", v))
            condition |= Q(JSONHasElement("targeted_harm_categories", v))
        return qs.filter(condition)

    def filter_target(self, qs: QuerySet[MessagePiece], name: str, value: str) -> QuerySet[Any]:
        """Target identifier (hash or class): the piece's own (0.13) or its conversation's."""
        if not value.strip():
            return qs
        return qs.filter(
            _identifier_condition(value, "target_identifier")
            | _identifier_condition(value, "conversation__target_identifier")
        )

    def filter_attack(self, qs: QuerySet[MessagePiece], name: str, value: str) -> QuerySet[Any]:
        """Attack identifier (hash or class) on the piece (0.13), or the conversation's attack."""
        if not value.strip():
            return qs
        value = value.strip()
        condition = _identifier_condition(value, "attack_identifier")
        if not is_sha256(value):
            condition |= Q(conversation__attack_class=value)
        return qs.filter(condition)

    def filter_converter(
        self, qs: QuerySet[MessagePiece], name: str, value: list[str]
    ) -> QuerySet[Any]:
        """Pieces converted by every given converter (hash or class name)."""
        for v in value:
            uses = PieceConverter.objects.filter(piece_id=OuterRef("pk")).filter(
                _identifier_condition(v, "identifier")
            )
            qs = qs.filter(Exists(uses))
        return qs

    def _scored(self, **conditions: Any) -> Exists:
        # Scores attach through original_prompt_id (PyRIT's prompt_request_response_id);
        # only visible ones count.
        scores = Score.objects.visible_to(self.scope).filter(
            message_piece_id=OuterRef("original_prompt_id")
        )
        return Exists(scores.filter(**conditions))

    def filter_score_type(self, qs: QuerySet[MessagePiece], name: str, value: str) -> QuerySet[Any]:
        """Pieces with a score of this type."""
        return qs.filter(self._scored(score_type=value)) if value else qs

    def filter_score_value(
        self, qs: QuerySet[MessagePiece], name: str, value: str
    ) -> QuerySet[Any]:
        """Pieces with a score of this value (case-insensitive: PyRIT stores "False" too)."""
        if not value.strip():
            return qs
        return qs.filter(self._scored(score_value__iexact=value.strip()))


class IdentifierFilterSet(ScopedFilterSet):
    """Filters for /api/v1/identifiers: by class, module, eval hash, and what uses it (in the
    caller's operations)."""

    class_name = InFilter(field_name="class_name")
    class_module = df.CharFilter(field_name="class_module", max_length=512)
    eval_hash = df.CharFilter(field_name="eval_hash", max_length=64)
    hash_prefix = df.CharFilter(
        field_name="hash",
        lookup_expr="startswith",
        max_length=64,
        validators=[RegexValidator(r"^[0-9a-f]+$", "Lowercase hex digits only.")],
    )
    pyrit_version = df.CharFilter(field_name="pyrit_version", max_length=32)
    used_as = df.ChoiceFilter(choices=IDENTIFIER_TYPE_CHOICES, method="filter_used_as")

    class Meta:
        model = ComponentIdentifier
        fields: list[str] = []

    def filter_used_as(
        self, qs: QuerySet[ComponentIdentifier], name: str, value: str
    ) -> QuerySet[Any]:
        """Identifiers used directly as a target, attack, scorer or converter by a visible row
        (a use in another operation says nothing here)."""
        if not value:
            return qs
        ref = OuterRef("hash")
        scope = self.scope
        pieces = MessagePiece.objects.visible_to(scope)
        used: Exists | Q
        if value == "converter":
            used = Exists(PieceConverter.objects.visible_to(scope).filter(identifier_id=ref))
        elif value == "target":
            used = Exists(
                Conversation.objects.visible_to(scope).filter(target_identifier_id=ref)
            ) | Exists(pieces.filter(target_identifier_id=ref))
        elif value == "attack":
            used = Exists(
                AttackResult.objects.visible_to(scope).filter(atomic_attack_identifier_id=ref)
            ) | Exists(pieces.filter(attack_identifier_id=ref))
        else:
            used = Exists(
                Score.objects.visible_to(scope).filter(scorer_identifier_id=ref)
            ) | Exists(pieces.filter(scorer_identifier_id=ref))
        return qs.filter(used)


# Characters of an identifier's params JSON a search reads: a hostile dump may carry a
# megabyte-long system prompt, and a search must not read it all for every identifier.
MAX_PARAMS_SEARCH_CHARS = 4000
HASH_PREFIX_RE = re.compile(r"^[0-9a-f]{4,64}$")


class IdentifierIndexFilterSet(ScopedFilterSet):
    """The identifier index page: ``q`` searches the class name, the display name (model
    names), a hash prefix (4+ lowercase hex digits) and the first MAX_PARAMS_SEARCH_CHARS
    characters of the params JSON; ``kind`` is the stored kind (redteam.core.identity.display)."""

    q = df.CharFilter(method="filter_q", label="Search", max_length=200)
    kind = df.ChoiceFilter(choices=[(k, k) for k in KINDS], field_name="kind")

    class Meta:
        model = ComponentIdentifier
        fields: list[str] = []

    def filter_q(
        self, qs: QuerySet[ComponentIdentifier], name: str, value: str
    ) -> QuerySet[ComponentIdentifier]:
        """Any of: class name, display name or params text contains it; hash starts with it."""
        value = value.strip()
        if not value:
            return qs
        params_text = Left(Cast("params", TextField()), MAX_PARAMS_SEARCH_CHARS)
        condition = (
            Q(class_name__icontains=value)
            | Q(display_name__icontains=value)
            | Q(params_text__icontains=value)
        )
        if HASH_PREFIX_RE.match(value.lower()):
            condition |= Q(hash__startswith=value.lower())
        return qs.alias(params_text=params_text).filter(condition)


class ScorerFilter(MultiValueFilter):
    """Scorer identifier by hash, or by class name; any of the given values."""

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """Any of the scorers, each by hash or class name (hash_or_class)."""
        condition = Q()
        for v in value:
            condition |= hash_or_class(v, "scorer_identifier_id", "scorer_class")
        return qs.filter(condition)


@extend_schema_field(OpenApiTypes.STR)
class ConversationScoresFilter(InFilter):
    """Scores of the pieces of these conversations (joined through original_prompt_id)."""

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """Scores whose message_piece_id is an original_prompt_id in the (visible)
        conversations."""
        pieces = MessagePiece.objects.visible_to(filter_scope(self)).filter(
            conversation_id__in=value
        )
        return qs.filter(message_piece_id__in=pieces.values("original_prompt_id"))


class ScoreFilterSet(ScopedFilterSet):
    """Filters for score lists: type, value, status, category, scorer, piece, time range."""

    id = UUIDInFilter(field_name="id")
    score_type = ChoicesFilter(field_name="score_type", choices=SCORE_TYPE_CHOICES)
    # PyRIT's true_false values are case-insensitive ("False" is stored by composite scorers).
    score_value = df.CharFilter(field_name="score_value", lookup_expr="iexact", max_length=64)
    status = ChoicesFilter(field_name="status", choices=SCORE_STATUS_CHOICES)
    score_category = ElementFilter(field_name="score_category", match="any")
    # `harm_category` is the name the other lists use for the same idea.
    harm_category = ElementFilter(field_name="score_category", match="any")
    scorer = ScorerFilter(field_name="scorer_identifier")
    source = ChoicesFilter(field_name="source", choices=ScoreSource.choices)
    message_piece_id = UUIDInFilter(field_name="message_piece_id")
    conversation_id = ConversationScoresFilter(field_name="conversation_id")
    attack_result_id = UUIDInFilter(field_name="attack_result_id")
    objective = df.CharFilter(field_name="objective", lookup_expr="icontains", max_length=300)
    after = DateBoundFilter(field_name="timestamp", bound="gte")
    before = DateBoundFilter(field_name="timestamp", bound="lte")

    class Meta:
        model = Score
        fields: list[str] = []
