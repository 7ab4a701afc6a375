"""OpenAPI output schemas of the memory read API: every key of PyRIT's dicts, in both shapes.

Message pieces, conversations (with their messages), scores, attack results and scenario
results come back as PyRIT serializes them (memory/export.py): the 1.x
``model_dump(mode="json")`` or the 0.13 ``to_dict()``, per ``?shape=`` or per row. Each shape
is a closed component here (every key listed and required, ``additionalProperties: false``);
an endpoint answers the ``oneOf`` of its shapes, whose key sets differ, so a dict matches
exactly one. Values free-form by PyRIT's design (labels, metadata, identifier params) are
open objects, and identifiers come back verbatim as they were sent (``PyritIdentifier``).

The closed shapes are built from the key lists export itself uses (memory/shapes.py), in
PyRIT's key order; a key added there must be typed here, or the schema fails to build.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import get_doc
from rest_framework import serializers

from memory.parsing_scenarios import SCENARIO_RESULT_KEYS_013, SCENARIO_RESULT_KEYS_1X
from memory.shapes import (
    ATTACK_RESULT_KEYS_013,
    ATTACK_RESULT_KEYS_1X,
    CONVERSATION_KEYS,
    PIECE_KEYS_013,
    PIECE_KEYS_1X,
    RETRY_EVENT_KEYS,
    SCORE_KEYS_013,
    SCORE_KEYS_1X,
    SCORE_KEYS_ENTRY,
)
from redteam.common.api_schema import (
    OPTIONAL_SHA256_PATTERN,
    SHA256_PATTERN,
    ClosedSerializer,
    EnumField,
    RawField,
    ShapeUnion,
    closed,
    component_ref,
    timestamp_field,
)
from redteam.core.enums import (
    ATTACK_OUTCOMES,
    CHAT_MESSAGE_ROLES,
    CONVERSATION_RETRY_REASONS,
    CONVERSATION_TYPES,
    ORIGINATORS,
    PROMPT_DATA_TYPES,
    PROMPT_RESPONSE_ERRORS,
    SCENARIO_RUN_STATES,
    SCORE_STATUSES,
    SCORE_TYPES,
)

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction

__all__ = [
    "AttackResult013",
    "AttackResult1x",
    "AttackResultOut",
    "ComponentIdentifierTree",
    "ConversationMessages",
    "ConversationOut",
    "ConversationPiece",
    "IdentifierOut",
    "MessagePiece013",
    "MessagePiece1x",
    "MessagePieceOut",
    "PyritIdentifier",
    "ScenarioResult013",
    "ScenarioResult1x",
    "ScenarioResultOut",
    "Score013",
    "Score1x",
    "ScoreEntry",
    "ScoreOut",
    "ScoredMessagePiece1x",
]


def _text(help_text: str = "", **kwargs: Any) -> serializers.CharField:
    """A string that may be empty (PyRIT keeps "" apart from null)."""
    return serializers.CharField(allow_blank=True, help_text=help_text, **kwargs)


def _optional_text(help_text: str = "", **kwargs: Any) -> serializers.CharField:
    return _text(help_text, allow_null=True, **kwargs)


def _strings(help_text: str = "", **kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=_text(), help_text=help_text, **kwargs)


def _sha256(help_text: str) -> RawField:
    return RawField(
        {"type": "string", "pattern": SHA256_PATTERN}, allow_null=True, help_text=help_text
    )


def _free_object(help_text: str, **kwargs: Any) -> serializers.DictField:
    """An object whose keys and values are free-form by PyRIT's design."""
    return serializers.DictField(help_text=help_text, **kwargs)


def _labels(help_text: str) -> serializers.DictField:
    return serializers.DictField(child=_text(), help_text=help_text)


def _role(**kwargs: Any) -> EnumField:
    return EnumField("ChatMessageRole", CHAT_MESSAGE_ROLES, **kwargs)


def _data_type(help_text: str = "", **kwargs: Any) -> EnumField:
    return EnumField("PromptDataType", PROMPT_DATA_TYPES, help_text=help_text, **kwargs)


def _conversation_id(
    help_text: str = "The conversation's id (any non-empty string).",
) -> serializers.CharField:
    return serializers.CharField(min_length=1, max_length=255, help_text=help_text)


# --- identifiers ----------------------------------------------------------------------------


class PyritIdentifier(serializers.Serializer):  # type: ignore[type-arg]
    """A PyRIT ComponentIdentifier in its flat form (1.x model_dump, 0.13 to_dict), exactly as
    it was sent: class_name, class_module, hash, pyrit_version, eval_hash (when set), every
    param inlined at the top level (free-form: any key, any JSON value), then `children` and
    `attributes` when present. 0.12-0.14 dumps may be truncated, carry an empty or null hash,
    or be pre-0.12 `{"__type__", "__module__", ...}` dicts; none of these keys is required."""


class PyritIdentifierSchema(OpenApiSerializerExtension):
    """PyritIdentifier's schema: open (params are inlined), children recursive."""

    target_class = PyritIdentifier

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        """The flat form, typed as far as ingestion checks it."""
        itself = component_ref("PyritIdentifier")
        return {
            "type": "object",
            "description": get_doc(PyritIdentifier),
            "properties": {
                "class_name": {"type": "string", "maxLength": 255, "nullable": True},
                "class_module": {"type": "string", "maxLength": 512, "nullable": True},
                "hash": {
                    "description": (
                        "PyRIT's content hash: 64 lowercase hex digits in what PyRIT writes. "
                        "Kept as sent; 1.x PyRIT ignores an incoming hash, so a 1.x dump's "
                        "hash is not checked on ingestion."
                    ),
                },
                "pyrit_version": {"type": "string", "maxLength": 32, "nullable": True},
                "eval_hash": {
                    "type": "string",
                    "pattern": OPTIONAL_SHA256_PATTERN,
                    "nullable": True,
                },
                "children": {
                    "type": "object",
                    "nullable": True,
                    "description": "Child name to one identifier or an ordered list of them.",
                    "additionalProperties": {
                        "oneOf": [itself, {"type": "array", "items": itself}],
                    },
                },
                "attributes": {
                    "type": "object",
                    "nullable": True,
                    "description": "1.1's attributes bucket (free-form).",
                    "additionalProperties": {},
                },
            },
            "additionalProperties": {"description": "A param (free-form JSON value)."},
        }


_CHILD_HASHES = {
    "type": "object",
    "description": "Child name to a child hash, or an ordered list of them ([] kept).",
    "additionalProperties": {
        "oneOf": [
            {"type": "string", "pattern": SHA256_PATTERN},
            {"type": "array", "items": {"type": "string", "pattern": SHA256_PATTERN}},
        ]
    },
}


def _identifier_row_fields() -> dict[str, Any]:
    return {
        "hash": RawField(
            {"type": "string", "pattern": SHA256_PATTERN},
            help_text="PyRIT's content hash (a 0.12-0.14 row keeps the hash it arrived with).",
        ),
        "class_name": serializers.CharField(max_length=255, allow_blank=True),
        "class_module": serializers.CharField(max_length=512, allow_blank=True),
        "params": _free_object("The node's params (free-form JSON values)."),
        "children": RawField(_CHILD_HASHES),
        "attributes": _free_object("1.1's attributes bucket (free-form)."),
        "pyrit_version": _optional_text(max_length=32),
        "eval_hash": RawField(
            {"type": "string", "pattern": OPTIONAL_SHA256_PATTERN},
            allow_null=True,
            help_text="The eval hash stamped on the first dump seen.",
        ),
        "hash_is_stored": serializers.BooleanField(
            help_text="True when the hash could not be recomputed (a truncated legacy row)."
        ),
    }


IDENTIFIER_ROW_KEYS = tuple(_identifier_row_fields())
IdentifierOut = closed(
    "IdentifierOut",
    "One stored identifier node: its columns, children as hashes.",
    IDENTIFIER_ROW_KEYS,
    _identifier_row_fields(),
)


class IdentifierTreeMarker(ClosedSerializer):
    """A child not expanded in a rebuilt tree: not stored, its own ancestor, or over budget."""

    hash = RawField(
        {"type": "string"},
        allow_null=True,
        help_text="The child's hash (null for a marker standing for every slot left).",
    )
    __tree__ = EnumField("TreeMarker", ("missing", "cycle", "truncated"), label="__tree__")


class IdentifierTreeNode(serializers.Serializer):  # type: ignore[type-arg]
    """One node of a tree rebuilt from stored rows, in PyRIT's flat nested form: class_name,
    class_module, hash, pyrit_version, eval_hash (when set), its params inlined (free-form),
    then `children` (each a node, a marker, or a list of them) and `attributes` when present."""


class IdentifierTreeNodeSchema(OpenApiSerializerExtension):
    """IdentifierTreeNode's schema: open (params are inlined), children recursive."""

    target_class = IdentifierTreeNode

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        """A node: its columns, params, and children that are nodes or markers."""
        child = {
            "oneOf": [
                component_ref("IdentifierTreeNode"),
                auto_schema.resolve_serializer(IdentifierTreeMarker, direction).ref,
            ]
        }
        return {
            "type": "object",
            "description": get_doc(IdentifierTreeNode),
            "required": ["class_name", "class_module", "hash", "pyrit_version"],
            "properties": {
                "class_name": {"type": "string"},
                "class_module": {"type": "string"},
                "hash": {"type": "string", "pattern": SHA256_PATTERN},
                "pyrit_version": {"type": "string", "nullable": True},
                "eval_hash": {"type": "string"},
                "children": {
                    "type": "object",
                    "additionalProperties": {"oneOf": [child, {"type": "array", "items": child}]},
                },
                "attributes": {"type": "object", "additionalProperties": {}},
            },
            "additionalProperties": {"description": "A param (free-form JSON value)."},
        }


class TreeBudget(ClosedSerializer):
    """The limits every rebuilt tree is cut to."""

    max_depth = serializers.IntegerField()
    max_nodes = serializers.IntegerField()
    max_chars = serializers.IntegerField()


def _identifier_tree_fields() -> dict[str, Any]:
    return {
        **_identifier_row_fields(),
        "tree": IdentifierTreeNode(help_text="PyRIT's flat nested form, rebuilt from rows."),
        "missing": _strings("Child hashes named but not stored."),
        "cycles": _strings("Hashes that are their own ancestor."),
        "truncated": serializers.BooleanField(
            help_text="True when the depth or node budget cut the tree (see tree_budget)."
        ),
        "node_count": serializers.IntegerField(),
        "tree_budget": TreeBudget(),
    }


ComponentIdentifierTree = closed(
    "ComponentIdentifierTree",
    "An identifier row with its whole tree rebuilt from stored rows, budgeted.",
    tuple(_identifier_tree_fields()),
    _identifier_tree_fields(),
)


# --- scores ---------------------------------------------------------------------------------


class MessageScorable(ClosedSerializer):
    """The scored message pieces."""

    scorable_type = EnumField("MessageScorableType", ("message",))
    message_piece_ids = serializers.ListField(child=serializers.UUIDField(), min_length=1)


class ContentScorable(ClosedSerializer):
    """Scored content that is not a conversation turn, inline."""

    scorable_type = EnumField("ContentScorableType", ("content",))
    value = _text()
    data_type = _data_type()


class ContentEntryScorable(ClosedSerializer):
    """Scored content stored as a ScorableContentEntries row."""

    scorable_type = EnumField("ContentEntryScorableType", ("content_entry",))
    content_id = serializers.CharField(help_text="The row's id, a UUID as it was sent.")
    data_type = _data_type()


class Scorable(ShapeUnion):
    """What a 1.1 score scored, tagged by `scorable_type`."""

    shapes = (MessageScorable, ContentScorable, ContentEntryScorable)


def _score_fields(shape: str) -> dict[str, Any]:
    """Score keys; ``shape`` is 1.x, 0.13 or entry (1.1's ScoreEntry.to_dict())."""
    return {
        "id": serializers.UUIDField(),
        "score_value": _optional_text(
            "A string: 'true'/'false' (any case) for true_false, '0'..'1' for float_scale. "
            "Null only for an undetermined (1.1) score."
        ),
        "status": EnumField("ScoreStatus", SCORE_STATUSES),
        "score_value_description": _optional_text(),
        "score_type": EnumField("ScoreType", SCORE_TYPES),
        "score_category": serializers.ListField(child=_text(), allow_null=True),
        "score_rationale": _optional_text(),
        "score_metadata": RawField(
            {
                "type": "object",
                "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            },
            help_text="Free-form keys; string or number values.",
        ),
        "scorer_class_identifier": PyritIdentifier(allow_null=True),
        "message_piece_id": serializers.UUIDField(
            allow_null=True, help_text="The scored piece's original_prompt_id."
        ),
        "prompt_request_response_id": serializers.UUIDField(
            allow_null=True, help_text="ScoreEntry's name for message_piece_id."
        ),
        "scorable": Scorable(allow_null=True),
        "scorable_content_id": serializers.UUIDField(
            allow_null=True, help_text="The content_id of a content_entry scorable."
        ),
        "timestamp": timestamp_field("1.x" if shape == "1.x" else "0.13"),
        "objective": _optional_text(),
    }


Score1x = closed("Score1x", "A PyRIT 1.x Score (model_dump).", SCORE_KEYS_1X, _score_fields("1.x"))
Score013 = closed(
    "Score013",
    "A PyRIT 0.13 Score (to_dict). A score stored undetermined (1.1) read in this shape "
    "has a null score_value.",
    SCORE_KEYS_013,
    _score_fields("0.13"),
)
ScoreEntry = closed(
    "ScoreEntry",
    "A PyRIT 1.1 ScoreEntry row view (ScoreEntry.to_dict()).",
    SCORE_KEYS_ENTRY,
    _score_fields("entry"),
)


class ScoreOut(ShapeUnion):
    """A PyRIT Score: 1.x model_dump, 0.13 to_dict or 1.1's ScoreEntry row view (`shape`)."""

    shapes = (Score1x, Score013, ScoreEntry)


# --- message pieces -------------------------------------------------------------------------

_PROMPT_METADATA = {
    "type": "object",
    "description": "Free-form; PyRIT's reserved keys have fixed types.",
    "properties": {
        "structured_refusal": {"type": "string"},
        "truncated": {"type": "boolean"},
        "adversarial_placeholder": {"type": "boolean"},
    },
    "additionalProperties": {},
}


def _piece_fields(shape: str, scores: type[serializers.Serializer] | None) -> dict[str, Any]:  # type: ignore[type-arg]
    fields: dict[str, Any] = {
        "id": serializers.UUIDField(),
        "role": _role(),
        "conversation_id": _conversation_id(),
        "sequence": serializers.IntegerField(
            help_text="The message's place in its conversation; its pieces share it."
        ),
        "timestamp": timestamp_field(shape),
        "original_value": _text("Text, or a file path or URL for media types."),
        "original_value_data_type": _data_type(),
        "original_value_sha256": _sha256("SHA-256 of the text or of the media file's bytes."),
        "converted_value": _text("The value after the converters ran."),
        "converted_value_data_type": _data_type(),
        "converted_value_sha256": _sha256("SHA-256 of the converted value."),
        "response_error": EnumField("PromptResponseError", PROMPT_RESPONSE_ERRORS),
        "original_prompt_id": serializers.UUIDField(
            help_text="The piece's own id unless it is a duplicate; scores join through it."
        ),
        "prompt_metadata": RawField(_PROMPT_METADATA),
        "converter_identifiers": PyritIdentifier(many=True),
        "labels": _labels("Memory labels (a 1.x piece takes its conversation's)."),
        "targeted_harm_categories": serializers.ListField(
            child=_text(), allow_null=True, min_length=1, help_text="Null when empty."
        ),
        "prompt_target_identifier": PyritIdentifier(allow_null=True),
        "attack_identifier": PyritIdentifier(allow_null=True),
        "scorer_identifier": PyritIdentifier(allow_null=True),
        "originator": EnumField("Originator", ORIGINATORS),
    }
    if scores is not None:
        fields["scores"] = scores(many=True, help_text="The scores of the piece.")
    return fields


MessagePiece1x = closed(
    "MessagePiece1x",
    "A PyRIT 1.x MessagePiece (model_dump).",
    PIECE_KEYS_1X,
    _piece_fields("1.x", None),
)
MessagePiece013 = closed(
    "MessagePiece013",
    "A PyRIT 0.13 MessagePiece (to_dict), with its scores as PyRIT's memory hydrates them "
    "(joined through original_prompt_id; an undetermined score has no place in 0.13).",
    PIECE_KEYS_013,
    _piece_fields("0.13", Score013),
)
ScoredMessagePiece1x = closed(
    "ScoredMessagePiece1x",
    "A PyRIT 1.x MessagePiece (model_dump) plus `scores`, its 1.x scores (as 0.13 pieces "
    "carry theirs).",
    (*PIECE_KEYS_1X, "scores"),
    _piece_fields("1.x", Score1x),
)


class MessagePieceOut(ShapeUnion):
    """A PyRIT MessagePiece: 1.x model_dump (15 keys) or 0.13 to_dict (22 keys), per `shape`."""

    shapes = (MessagePiece1x, MessagePiece013)


class ConversationPiece(ShapeUnion):
    """A piece of a conversation's message, with its scores: 1.x plus `scores`, or 0.13."""

    shapes = (ScoredMessagePiece1x, MessagePiece013)


# --- conversations --------------------------------------------------------------------------


class ConversationRetry(ClosedSerializer):
    """A turn that was rolled back and resent."""

    sequence = serializers.IntegerField()
    reason = EnumField("ConversationRetryReason", CONVERSATION_RETRY_REASONS)


class ConversationMessage(ClosedSerializer):
    """The pieces sharing one sequence, in their stored order."""

    sequence = serializers.IntegerField()
    role = _role()
    pieces = ConversationPiece(many=True)


def _conversation_fields() -> dict[str, Any]:
    return {
        "conversation_id": _conversation_id(),
        "target_identifier": PyritIdentifier(allow_null=True),
        "retries": ConversationRetry(many=True),
        "messages": ConversationMessage(many=True),
    }


ConversationOut = closed(
    "ConversationOut",
    "A PyRIT 1.x Conversation (model_dump).",
    CONVERSATION_KEYS,
    _conversation_fields(),
)
ConversationMessages = closed(
    "ConversationMessages",
    "A PyRIT 1.x Conversation plus its messages, each piece with its scores.",
    (*CONVERSATION_KEYS, "messages"),
    _conversation_fields(),
)


# --- attack results -------------------------------------------------------------------------


class ConversationReference(ClosedSerializer):
    """A conversation related to an attack result."""

    conversation_id = _conversation_id()
    conversation_type = EnumField("ConversationType", CONVERSATION_TYPES)
    description = _optional_text()


def _retry_event_fields() -> dict[str, Any]:
    text = {k: _optional_text(required=False) for k in RETRY_EVENT_KEYS[2:-1]}
    return {
        "timestamp": serializers.CharField(required=False, help_text="ISO-8601, as sent."),
        "attempt_number": serializers.IntegerField(required=False),
        **text,
        "elapsed_seconds": serializers.FloatField(required=False, allow_null=True),
    }


RetryEvent = closed(
    "RetryEvent",
    "One retried call of an attack, as it was sent (PyRIT writes every key).",
    RETRY_EVENT_KEYS,
    _retry_event_fields(),
)


def _attack_result_fields(shape: str) -> dict[str, Any]:
    piece, score = (MessagePiece1x, Score1x) if shape == "1.x" else (MessagePiece013, Score013)
    return {
        "conversation_id": _conversation_id("The main conversation."),
        "objective": _text(),
        "attack_result_id": serializers.UUIDField(),
        "atomic_attack_identifier": PyritIdentifier(allow_null=True),
        "last_response": piece(allow_null=True, help_text="Null when the piece is not stored."),
        "last_score": score(allow_null=True),
        "executed_turns": serializers.IntegerField(),
        "execution_time_ms": RawField({"type": "integer", "format": "int64"}),
        "outcome": EnumField("AttackOutcome", ATTACK_OUTCOMES),
        "outcome_reason": _optional_text(),
        "timestamp": timestamp_field(
            shape, allow_null=True, help_text="Null for a result that came from 0.13."
        ),
        "related_conversations": ConversationReference(
            many=True, help_text="In 1.x sorted by (conversation_id, type, description)."
        ),
        "metadata": _free_object("Free-form."),
        "labels": _labels("Memory labels."),
        "targeted_harm_categories": _strings(),
        "error_message": _optional_text(),
        "error_type": _optional_text(max_length=255),
        "error_traceback": _optional_text(),
        "retry_events": RetryEvent(many=True),
        "total_retries": serializers.IntegerField(),
        "attribution_parent_id": _optional_text(
            max_length=64, help_text="The scenario result the attack ran in."
        ),
        "attribution_data": _free_object("Free-form.", allow_null=True),
    }


AttackResult1x = closed(
    "AttackResult1x",
    "A PyRIT 1.x AttackResult (model_dump), its last response and last score in 1.x.",
    ATTACK_RESULT_KEYS_1X,
    _attack_result_fields("1.x"),
)
AttackResult013 = closed(
    "AttackResult013",
    "A PyRIT 0.13 AttackResult (to_dict), its last response and last score in 0.13.",
    ATTACK_RESULT_KEYS_013,
    _attack_result_fields("0.13"),
)


class AttackResultOut(ShapeUnion):
    """A PyRIT AttackResult: 1.x model_dump (22 keys) or 0.13 to_dict (12 keys), per `shape`."""

    shapes = (AttackResult1x, AttackResult013)


# --- scenario results -----------------------------------------------------------------------


def _scenario_fields(shape: str) -> dict[str, Any]:
    legacy = shape == "0.13"
    return {
        "id": serializers.UUIDField(),
        "scenario_identifier": PyritIdentifier(
            allow_null=True, help_text="Null for a scenario that came from 0.13."
        ),
        "scenario_description": _optional_text(),
        "attack_results": serializers.DictField(
            child=serializers.ListField(child=AttackResult1x()),
            help_text="Atomic attack name to its attack results (those stored), in order.",
        ),
        "scenario_run_state": EnumField("ScenarioRunState", SCENARIO_RUN_STATES),
        "labels": _labels("Memory labels."),
        "creation_time": timestamp_field(shape, allow_null=True),
        "completion_time": timestamp_field(shape, allow_null=True),
        "timestamp": timestamp_field(shape, allow_null=True, help_text="The creation time."),
        "number_tries": serializers.IntegerField(),
        "display_group_map": serializers.DictField(child=_text()),
        "error_message": _optional_text(),
        "error_type": _optional_text(max_length=255),
        "error_attack_result_ids": _strings(),
        "metadata": _free_object("Free-form."),
        "scenario_name": _text(max_length=255),
        "scenario_version": serializers.IntegerField(),
        "pyrit_version": _optional_text(max_length=32),
        "objective_target_identifier": PyritIdentifier(
            allow_null=not legacy, help_text="{} when none (0.13)." if legacy else ""
        ),
        "objective_scorer_identifier": PyritIdentifier(allow_null=True),
        "scenario_init_data": _free_object("Free-form.", allow_null=True),
        "attack_results_json": _text("Atomic attack name to attack result ids, as JSON text."),
    }


ScenarioResult1x = closed(
    "ScenarioResult1x",
    "A PyRIT 1.x ScenarioResult (model_dump), its attack results embedded in 1.x.",
    SCENARIO_RESULT_KEYS_1X,
    _scenario_fields("1.x"),
)
ScenarioResult013 = closed(
    "ScenarioResult013",
    "A PyRIT 0.13 ScenarioResultEntries row (0.13 had no dict form).",
    SCENARIO_RESULT_KEYS_013,
    _scenario_fields("0.13"),
)


class ScenarioResultOut(ShapeUnion):
    """A PyRIT ScenarioResult: 1.x model_dump or the 0.13 table row, per `shape`."""

    shapes = (ScenarioResult1x, ScenarioResult013)
