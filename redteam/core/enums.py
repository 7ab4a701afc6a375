"""PyRIT's enumerations, exactly (PYRIT-MODEL.md section 1). Framework-free."""

from __future__ import annotations

CHAT_MESSAGE_ROLES: tuple[str, ...] = (
    "system",
    "user",
    "assistant",
    "simulated_assistant",
    "tool",
    "developer",
)
PROMPT_DATA_TYPES: tuple[str, ...] = (
    "text",
    "image_path",
    "audio_path",
    "video_path",
    "binary_path",
    "url",
    "reasoning",
    "error",
    "function_call",
    "tool_call",
    "function_call_output",
)
# Values of these types are file paths on the attacker's machine; their bytes come separately.
MEDIA_PATH_DATA_TYPES: frozenset[str] = frozenset(
    {"image_path", "audio_path", "video_path", "binary_path"}
)
# Data types whose sha256 is the hash of the UTF-8 value string.
TEXT_HASHED_DATA_TYPES: frozenset[str] = frozenset(
    {"text", "reasoning", "function_call", "tool_call", "function_call_output", "error"}
)
PROMPT_RESPONSE_ERRORS: tuple[str, ...] = ("blocked", "none", "processing", "empty", "unknown")
SCORE_TYPES: tuple[str, ...] = ("true_false", "float_scale", "unknown")
SCORE_STATUSES: tuple[str, ...] = ("complete", "undetermined")
ATTACK_OUTCOMES: tuple[str, ...] = ("success", "failure", "error", "undetermined")
# 0.13 had only the first four (a Literal); 0.14 added CANCELLED.
SCENARIO_RUN_STATES: tuple[str, ...] = (
    "CREATED",
    "IN_PROGRESS",
    "COMPLETED",
    "FAILED",
    "CANCELLED",
)
CONVERSATION_TYPES: tuple[str, ...] = ("adversarial", "pruned", "score", "converter")
CONVERSATION_RETRY_REASONS: tuple[str, ...] = ("json_parsing",)
SEED_TYPES: tuple[str, ...] = ("prompt", "objective", "simulated_conversation")
ORIGINATORS: tuple[str, ...] = ("attack", "converter", "undefined", "scorer")
IDENTIFIER_TYPES: tuple[str, ...] = ("attack", "target", "scorer", "converter")
