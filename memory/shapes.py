"""PyRIT's serialized shapes as data: the keys of each kind, in PyRIT's serialization order.

Shared by parsing (allowed keys), the services (fields compared on replay) and export (key
order). PYRIT-MODEL.md sections 2.2, 3.3, 5.2 and 6.1 are the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# The value columns of a piece, in PyRIT's order: shared by the shapes, the replay comparison
# (memory/store_pieces.py) and the COPY baseline of bench/ingest.py.
PIECE_VALUE_KEYS: Final = (
    "original_value",
    "original_value_data_type",
    "original_value_sha256",
    "converted_value",
    "converted_value_data_type",
    "converted_value_sha256",
    "response_error",
    "original_prompt_id",
    "prompt_metadata",
)
PIECE_KEYS_1X: Final = (
    "id",
    "role",
    "conversation_id",
    "sequence",
    "timestamp",
    *PIECE_VALUE_KEYS,
    "converter_identifiers",
)
PIECE_KEYS_013: Final = (
    "id",
    "role",
    "conversation_id",
    "sequence",
    "timestamp",
    "labels",
    "targeted_harm_categories",
    "prompt_metadata",
    "converter_identifiers",
    "prompt_target_identifier",
    "attack_identifier",
    "scorer_identifier",
    "original_value_data_type",
    "original_value",
    "original_value_sha256",
    "converted_value_data_type",
    "converted_value",
    "converted_value_sha256",
    "response_error",
    "originator",
    "original_prompt_id",
    "scores",
)
LEGACY_PIECE_ONLY: Final = frozenset(PIECE_KEYS_013) - frozenset(PIECE_KEYS_1X)

SCORE_KEYS_1X: Final = (
    "id",
    "score_value",
    "status",
    "score_value_description",
    "score_type",
    "score_category",
    "score_rationale",
    "score_metadata",
    "scorer_class_identifier",
    "message_piece_id",
    "scorable",
    "timestamp",
    "objective",
)
SCORE_KEYS_ENTRY: Final = (
    "id",
    "score_value",
    "score_value_description",
    "status",
    "score_type",
    "score_category",
    "score_rationale",
    "score_metadata",
    "scorer_class_identifier",
    "scorable",
    "scorable_content_id",
    "prompt_request_response_id",
    "timestamp",
    "objective",
)
SCORE_KEYS_013: Final = (
    "id",
    "score_value",
    "score_value_description",
    "score_type",
    "score_category",
    "score_rationale",
    "score_metadata",
    "scorer_class_identifier",
    "message_piece_id",
    "timestamp",
    "objective",
)
# 0.13's ScoreEntries table also had a `task` column (a copy of objective); the SQLite
# importer passes it so nothing in the file is dropped. It is not part of to_dict().
SCORE_EXTRA_013: Final = frozenset({"task"})

# The keys both lines share at the start of an attack result, and the 1.x-only ones at its end.
_ATTACK_RESULT_HEAD: Final = (
    "conversation_id",
    "objective",
    "attack_result_id",
    "atomic_attack_identifier",
    "last_response",
    "last_score",
    "executed_turns",
    "execution_time_ms",
    "outcome",
    "outcome_reason",
)
ATTACK_RESULT_TAIL_1X: Final = (
    "labels",
    "targeted_harm_categories",
    "error_message",
    "error_type",
    "error_traceback",
    "retry_events",
    "total_retries",
    "attribution_parent_id",
    "attribution_data",
)
ATTACK_RESULT_KEYS_1X: Final = (
    *_ATTACK_RESULT_HEAD,
    "timestamp",
    "related_conversations",
    "metadata",
    *ATTACK_RESULT_TAIL_1X,
)
ATTACK_RESULT_KEYS_013: Final = (*_ATTACK_RESULT_HEAD, "related_conversations", "metadata")
ATTACK_RESULT_1X_ONLY: Final = frozenset(ATTACK_RESULT_KEYS_1X) - frozenset(ATTACK_RESULT_KEYS_013)
# 0.13's AttackResultEntries table had a timestamp its to_dict() lacked; the SQLite importer
# passes it (with the row's pyrit_version) so the newest result per conversation is known.
ATTACK_RESULT_EXTRA_013: Final = frozenset({"timestamp"})
CONVERSATION_KEYS: Final = ("conversation_id", "target_identifier", "retries")
RETRY_EVENT_KEYS: Final = (
    "timestamp",
    "attempt_number",
    "function_name",
    "exception_type",
    "exception_message",
    "component_role",
    "component_name",
    "endpoint",
    "elapsed_seconds",
)
SCORABLE_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "message": frozenset({"scorable_type", "message_piece_ids"}),
    "content": frozenset({"scorable_type", "value", "data_type"}),
    "content_entry": frozenset({"scorable_type", "content_id", "data_type"}),
}


# An extension key on 1.x and ScoreEntry scores: the ScorableContentEntries row a
# ``content_entry`` scorable names ({"id", "value", "value_sha256", "data_type",
# "timestamp"}), sent beside the score so the scored loose text is stored (never exported).
LOOSE_CONTENT_KEY: Final = "scorable_content"
LOOSE_CONTENT_KEYS: Final = frozenset({"id", "value", "value_sha256", "data_type", "timestamp"})

# Fields compared when a score id is already stored, per incoming shape. `scorable` (and
# `scorable_content_id`, which PyRIT derives from it) are compared apart, by what they name
# (scoring.services), so the inline and stored forms of one loose-content score agree.
SCORE_COMPARE_1X: Final = (
    "score_value",
    "status",
    "score_value_description",
    "score_type",
    "score_category",
    "score_rationale",
    "score_metadata",
    "scorer_class_identifier",
    "message_piece_id",
    "timestamp",
    "objective",
)
SCORE_COMPARE_ENTRY: Final = SCORE_COMPARE_1X
SCORE_COMPARE_013: Final = (
    "score_value",
    "score_value_description",
    "score_type",
    "score_category",
    "score_rationale",
    "score_metadata",
    "scorer_class_identifier",
    "message_piece_id",
    "timestamp",
    "objective",
)
