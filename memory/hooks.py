"""What the ingestion services announce, inside the transaction that stored the rows.

The layers contract keeps memory below scoring, so counts that scoring derives from attack
results (the dashboard's tallies) follow ingestion through this signal rather than through an
import: a receiver runs in the storing transaction, so what it writes commits or rolls back
with the rows, and an exception in it rejects the request.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from django.dispatch import Signal

from memory.models import AttackResult, Conversation

# Sent with `result_ids` (attack results just inserted) and `conversation_ids` (conversations
# whose labels or harm categories changed: their stored results now count under new keys).
results_changed = Signal()


def announce(
    *,
    result_ids: Collection[object] = (),
    conversation_ids: Collection[str] = (),
) -> None:
    """Send `results_changed` when there is something to announce (nothing otherwise)."""
    if result_ids or conversation_ids:
        results_changed.send(
            sender=AttackResult,
            result_ids=list(result_ids),
            conversation_ids=sorted(conversation_ids),
        )


def relabelled(
    conversations: Mapping[str, Conversation], before: Mapping[str, tuple[object, object]]
) -> list[str]:
    """The conversations whose labels or harm categories differ from `before`
    ({id: (labels, harm_categories)} read when they were locked)."""
    return [
        cid
        for cid, conv in conversations.items()
        if cid in before and before[cid] != (conv.labels or {}, conv.harm_categories or [])
    ]


def summary_keys(conversations: Mapping[str, Conversation]) -> dict[str, tuple[object, object]]:
    """{id: (labels, harm_categories)} of locked conversations, for `relabelled`."""
    return {
        cid: (dict(conv.labels or {}), list(conv.harm_categories or []))
        for cid, conv in conversations.items()
    }
