"""Django choices built from PyRIT's enumerations, so models and validators share one source."""

from __future__ import annotations

from redteam.core import enums as e


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


ROLE_CHOICES = _choices(e.CHAT_MESSAGE_ROLES)
DATA_TYPE_CHOICES = _choices(e.PROMPT_DATA_TYPES)
RESPONSE_ERROR_CHOICES = _choices(e.PROMPT_RESPONSE_ERRORS)
SCORE_TYPE_CHOICES = _choices(e.SCORE_TYPES)
SCORE_STATUS_CHOICES = _choices(e.SCORE_STATUSES)
OUTCOME_CHOICES = _choices(e.ATTACK_OUTCOMES)
CONVERSATION_TYPE_CHOICES = _choices(e.CONVERSATION_TYPES)
SCENARIO_RUN_STATE_CHOICES = _choices(e.SCENARIO_RUN_STATES)
SEED_TYPE_CHOICES = _choices(e.SEED_TYPES)
IDENTIFIER_TYPE_CHOICES = _choices(e.IDENTIFIER_TYPES)
ORIGINATOR_CHOICES = _choices(e.ORIGINATORS)
