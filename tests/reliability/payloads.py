"""Synthetic PyRIT 1.x memory for load and fault tests: whole messages plus their scores, and
(optionally) each conversation's attack result on its last message."""

from __future__ import annotations

import copy
import json
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROLES = ("user", "assistant")


@dataclass(frozen=True)
class Message:
    """The pieces sharing (conversation_id, sequence), and the scores of its pieces."""

    conversation_id: str
    sequence: int
    pieces: tuple[dict[str, Any], ...]
    scores: tuple[dict[str, Any], ...]
    results: tuple[dict[str, Any], ...] = ()


def scorer_template(fixtures_dir: Path) -> dict[str, Any]:
    """A real PyRIT 1.1 score row (its scorer identifier hash is PyRIT's own)."""
    with (fixtures_dir / "pyrit-1.1" / "scores.jsonl").open(encoding="utf-8") as fh:
        return dict(json.loads(fh.readline()))


def make_piece(
    conversation_id: str, sequence: int, role: str, value: str, ts: datetime
) -> dict[str, Any]:
    """One text MessagePiece in PyRIT 1.x model_dump(mode="json") shape."""
    piece_id = str(uuid.uuid4())
    return {
        "id": piece_id,
        "role": role,
        "conversation_id": conversation_id,
        "sequence": sequence,
        "timestamp": ts.isoformat().replace("+00:00", "Z"),
        "original_value": value,
        "original_value_data_type": "text",
        "original_value_sha256": None,
        "converted_value": value,
        "converted_value_data_type": "text",
        "converted_value_sha256": None,
        "response_error": "none",
        "original_prompt_id": piece_id,
        "prompt_metadata": {},
        "converter_identifiers": [],
    }


def make_score(template: dict[str, Any], piece: dict[str, Any], ts: datetime) -> dict[str, Any]:
    """A true/false score of `piece`, from the real template."""
    score = copy.deepcopy(template)
    score["id"] = str(uuid.uuid4())
    score["message_piece_id"] = piece["id"]
    score["scorable"] = {"scorable_type": "message", "message_piece_ids": [piece["id"]]}
    score["timestamp"] = ts.isoformat().replace("+00:00", "Z")
    return score


OUTCOMES = ("success", "failure", "undetermined", "error")
HARMS = ("fraud", "hate", "cyber")


def make_result(conversation_id: str, rng: random.Random, ts: datetime) -> dict[str, Any]:
    """A 1.x AttackResult of the conversation (no embedded piece or score), with a random
    outcome, harm categories and label: what the dashboard's tallies count."""
    return {
        "conversation_id": conversation_id,
        "objective": "load the dashboard",
        "attack_result_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "atomic_attack_identifier": None,
        "last_response": None,
        "last_score": None,
        "executed_turns": 1,
        "execution_time_ms": 10,
        "outcome": rng.choice(OUTCOMES),
        "outcome_reason": None,
        "timestamp": ts.isoformat().replace("+00:00", "Z"),
        "related_conversations": [],
        "metadata": {},
        "labels": {"team": f"t{rng.randrange(3)}"},
        "targeted_harm_categories": rng.sample(HARMS, rng.randint(0, 2)),
        "error_message": None,
        "error_type": None,
        "error_traceback": None,
        "retry_events": [],
        "total_retries": 0,
        "attribution_parent_id": None,
        "attribution_data": None,
    }


def make_corpus(
    template: dict[str, Any],
    *,
    conversations: int,
    turns: int,
    seed: int,
    max_pieces: int = 3,
    value_size: int = 200,
    results: bool = False,
) -> list[Message]:
    """`conversations` x `turns` messages, 1..max_pieces pieces each, assistant turns scored;
    with `results`, each conversation's last message carries its attack result."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(10**6))
    messages: list[Message] = []
    for c in range(conversations):
        conversation_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        for seq in range(turns):
            role = ROLES[seq % 2]
            ts = start + timedelta(minutes=c, seconds=seq)
            pieces = tuple(
                make_piece(
                    conversation_id,
                    seq,
                    role,
                    f"c{c} t{seq} p{p} " + "x" * rng.randrange(value_size),
                    ts,
                )
                for p in range(rng.randint(1, max_pieces))
            )
            scores: tuple[dict[str, Any], ...] = ()
            if role == "assistant":
                scores = (make_score(template, pieces[0], ts),)
            last = results and seq == turns - 1
            result = (make_result(conversation_id, rng, ts),) if last else ()
            messages.append(Message(conversation_id, seq, pieces, scores, result))
    return messages


def batch_body(messages: list[Message]) -> bytes:
    """The JSON body of one ingest request carrying these whole messages and their scores."""
    pieces = [p for m in messages for p in m.pieces]
    scores = [s for m in messages for s in m.scores]
    payload: dict[str, Any] = {"message_pieces": pieces}
    if scores:
        payload["scores"] = scores
    results = [r for m in messages for r in m.results]
    if results:
        payload["attack_results"] = results
    return json.dumps(payload).encode()
