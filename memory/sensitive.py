"""Reviewer safety: pieces of an operation's sensitive harm categories render collapsed (text
hidden, images and video blurred, audio folded away) until a reviewer reveals them, and every
reveal is written to the audit trail with who, when, which piece and why it was hidden.

A page builds one `SensitivePolicy` for everything it renders (`sensitive_policy`: one query
for the operations' settings, one more only when the URL asks to show pieces revealed) and
asks it about each piece. The reveal endpoint calls `record_reveal`; the page's script then
uncovers the piece in place, and without script the endpoint sends the browser back with
`?reveal=<piece id>`, which shows the piece only if this user's reveal of it is in the audit
trail, so the URL alone never skips the audit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memory.models import AttackResult, Conversation, MessagePiece
from redteam.common.audit import record_audit
from redteam.common.models import AuditEvent, Operation
from redteam.common.typing import User
from redteam.core.sensitivity import matching_categories, sensitive_categories

if TYPE_CHECKING:
    from django.http import HttpRequest

    from memory.presenters import PieceView

REVEAL_ACTION = "content.revealed"
REVEAL_OBJECT_TYPE = "message_piece"
# ?reveal=<piece id>, repeatable: the pieces to show revealed (each checked against the audit).
REVEAL_PARAM = "reveal"
# A page names at most this many revealed pieces in its URL (the oldest are dropped first).
MAX_REVEALED_IN_URL = 50


def sensitive_anchor(piece_id: str) -> str:
    """The element id of a piece's sensitive block on any page that renders it."""
    return f"sensitive-{piece_id}"


@dataclass(frozen=True)
class Sensitivity:
    """Why one rendered piece is collapsed, and whether this request shows it revealed."""

    piece_id: str
    conversation_id: str
    categories: tuple[str, ...]
    revealed: bool = False

    @property
    def label(self) -> str:
        """The matched categories, for the "Sensitive: ..." control."""
        return ", ".join(self.categories)

    @property
    def collapsed(self) -> bool:
        """Rendered hidden or blurred (not yet revealed by this user on this page)."""
        return not self.revealed

    @property
    def anchor(self) -> str:
        """The element id of the piece's sensitive block (where a reveal returns to)."""
        return sensitive_anchor(self.piece_id)


@dataclass(frozen=True)
class SensitivePolicy:
    """The sensitive categories of the operations a page shows, and the revealed pieces."""

    by_operation: dict[int, dict[str, str]] = field(default_factory=dict)
    revealed: frozenset[str] = frozenset()

    def check(
        self,
        *,
        piece_id: uuid.UUID | str,
        conversation_id: str,
        operation_ids: Iterable[int | None],
        categories: Iterable[Any],
    ) -> Sensitivity | None:
        """The piece's sensitivity: None unless one of the operations (the piece's
        conversation's, and the attack result's where it differs) lists one of its harm
        categories (each item of `categories` is one stored harm-category list)."""
        sensitive: dict[str, str] = {}
        for operation_id in operation_ids:
            if operation_id is not None:
                for key, spelling in self.by_operation.get(operation_id, {}).items():
                    sensitive.setdefault(key, spelling)
        found = matching_categories(sensitive, *categories)
        if not found:
            return None
        pid = str(piece_id)
        return Sensitivity(pid, str(conversation_id), found, revealed=pid in self.revealed)


def piece_id_or_none(value: Any) -> str | None:
    """A piece id as the canonical uuid string, None when it is not one."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def requested_reveals(request: HttpRequest) -> list[str]:
    """The well-formed piece ids the URL asks to show revealed (newest last, capped)."""
    parsed = (piece_id_or_none(raw) for raw in request.GET.getlist(REVEAL_PARAM))
    ids = list(dict.fromkeys(pid for pid in parsed if pid is not None))
    return ids[-MAX_REVEALED_IN_URL:]


def sensitive_policy(request: HttpRequest, operation_ids: Iterable[int | None]) -> SensitivePolicy:
    """The policy of one page that renders pieces of these operations.

    Queries: the operations' settings (none when no operation is named); this user's reveal
    events for the pieces the URL names (only when it names some and something is sensitive).
    """
    ids = sorted({op for op in operation_ids if op is not None})
    if not ids:
        return SensitivePolicy()
    by_operation = {
        pk: found
        for pk, configured in Operation.objects.filter(pk__in=ids).values_list(
            "pk", "sensitive_harm_categories"
        )
        if (found := sensitive_categories(configured))
    }
    wanted = requested_reveals(request) if by_operation else []
    user = getattr(request, "user", None)
    if not wanted or user is None or not user.is_authenticated:
        return SensitivePolicy(by_operation)
    revealed = AuditEvent.objects.filter(
        actor=user, action=REVEAL_ACTION, object_type=REVEAL_OBJECT_TYPE, object_id__in=wanted
    ).values_list("object_id", flat=True)
    return SensitivePolicy(by_operation, frozenset(revealed))


def mark_sensitive_pieces(
    policy: SensitivePolicy,
    piece_views: Iterable[PieceView],
    *,
    conversation: Conversation,
    result_categories: Iterable[Any] = (),
) -> None:
    """Set `sensitive` on the piece views of one conversation (no query).

    A piece matches by its own harm categories, the conversation's summary and those of the
    conversation's attack results (`result_categories`: one list per result).
    """
    shared = [conversation.harm_categories, *result_categories]
    for pv in piece_views:
        pv.sensitive = policy.check(
            piece_id=pv.piece.id,
            conversation_id=conversation.pk,
            operation_ids=[conversation.operation_id],
            categories=[pv.piece.targeted_harm_categories, *shared],
        )


def response_sensitivity(
    policy: SensitivePolicy, result: AttackResult, *, conversation: Conversation | None = None
) -> Sensitivity | None:
    """The sensitivity of an attack result's last response (no query: `last_response` and,
    when given, the result's `conversation` are loaded).

    Without the conversation (lists of attempts), the result's operation and harm categories
    stand in for it: a result belongs to its conversation's operation unless its own label
    names another, and the conversation's summary gathers its results' harm categories.
    """
    response = result.last_response
    if response is None:
        return None
    operation_ids = [result.operation_id]
    categories = [response.targeted_harm_categories, result.targeted_harm_categories]
    if conversation is not None:
        operation_ids.append(conversation.operation_id)
        categories.append(conversation.harm_categories)
    return policy.check(
        piece_id=response.id,
        conversation_id=response.conversation_id,
        operation_ids=operation_ids,
        categories=categories,
    )


def record_reveal(*, actor: User, conversation: Conversation, piece: MessagePiece) -> AuditEvent:
    """Audit that `actor` revealed a piece (the event's actor and time say who and when).

    The detail names the conversation, the piece, the operation and the sensitive categories
    that hid it (recomputed here, never taken from the client). `conversation.operation` is
    expected loaded (select_related). Queries: the conversation's attack results' harm
    categories (only when the operation lists sensitive categories); the audit row.
    """
    operation = conversation.operation
    sensitive = sensitive_categories(operation.sensitive_harm_categories) if operation else {}
    results: list[Any] = (
        list(
            AttackResult.objects.filter(conversation_id=conversation.pk).values_list(
                "targeted_harm_categories", flat=True
            )
        )
        if sensitive
        else []
    )
    categories = matching_categories(
        sensitive, piece.targeted_harm_categories, conversation.harm_categories, *results
    )
    return record_audit(
        actor=actor,
        action=REVEAL_ACTION,
        object_type=REVEAL_OBJECT_TYPE,
        object_id=piece.pk,
        detail={
            "conversation_id": str(conversation.pk),
            "piece_id": str(piece.pk),
            "operation_id": operation.pk if operation else None,
            "operation": str(operation.name) if operation else None,
            "categories": list(categories),
        },
    )


def revealed_url(page: str, piece_id: str) -> str:
    """`page` with `?reveal=<piece_id>` added (earlier reveals kept, capped) and the piece's
    sensitive block as the fragment: where the no-script reveal sends the browser back."""
    parts = urlsplit(page)
    query = parse_qsl(parts.query, keep_blank_values=True)
    others = [(k, v) for k, v in query if k != REVEAL_PARAM]
    reveals = [v for k, v in query if k == REVEAL_PARAM and v != piece_id]
    reveals = [*reveals, piece_id][-MAX_REVEALED_IN_URL:]
    new_query = urlencode([*others, *((REVEAL_PARAM, v) for v in reveals)])
    return urlunsplit(
        (parts.scheme, parts.netloc, parts.path, new_query, sensitive_anchor(piece_id))
    )
