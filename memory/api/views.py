"""Read API for memory rows that need nothing from other apps: conversations and identifiers.

Pieces, the conversation detail and attack results carry scores, so they live in
memory/api/reads.py. Both read through the caller's scope (`scope_for(request)`): a row
outside the caller's operations is a 404, as one that does not exist.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from memory.api.schema import ComponentIdentifierTree as _IDENTIFIER_TREE
from memory.api.schema import ConversationOut, IdentifierOut
from memory.export import export_conversation
from memory.filters import ConversationFilterSet, IdentifierFilterSet
from memory.models import ComponentIdentifier, Conversation
from memory.querysets import identifier_tree
from redteam.common.api_common import cursor_pagination, view_scope
from redteam.core.digests import SHA256_PATTERN
from redteam.core.trees import MAX_TREE_CHARS, MAX_TREE_DEPTH, MAX_TREE_NODES


@extend_schema_view(
    list=extend_schema(
        summary="List conversations (1.x Conversation dicts)",
        description="Newest activity first; filters as on the conversations page.",
        responses=ConversationOut,
    )
)
class ConversationViewSet(mixins.ListModelMixin, viewsets.GenericViewSet[Conversation]):
    """Conversations as PyRIT 1.x `Conversation` dicts."""

    filterset_class = ConversationFilterSet
    serializer_class = ConversationOut
    pagination_class = cursor_pagination("-last_timestamp", "-conversation_id")

    def get_queryset(self) -> QuerySet[Conversation]:
        """Visible conversations with pieces, with the target dump the export reads."""
        return (
            Conversation.objects.visible_to(view_scope(self))
            .filter(last_timestamp__isnull=False)
            .select_related("target_dump")
        )

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One page: 1 query for the rows (the target dump joined)."""
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        assert page is not None
        return self.get_paginated_response([export_conversation(c) for c in page])


def identifier_row_dict(row: ComponentIdentifier) -> dict[str, Any]:
    """One identifier row: its columns, children as hashes."""
    return {
        "hash": row.hash,
        "class_name": row.class_name,
        "class_module": row.class_module,
        "params": row.params,
        "children": row.children,
        "attributes": row.attributes,
        "pyrit_version": row.pyrit_version,
        "eval_hash": row.eval_hash,
        "hash_is_stored": row.hash_is_stored,
    }


@extend_schema_view(
    list=extend_schema(summary="List identifiers", responses=IdentifierOut),
    retrieve=extend_schema(summary="An identifier's full tree", responses=_IDENTIFIER_TREE),
)
class IdentifierViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[ComponentIdentifier]
):
    """Content-addressed identifiers (targets, attacks, scorers, converters, ...) used in the
    caller's operations; one used only elsewhere is a 404."""

    filterset_class = IdentifierFilterSet
    serializer_class = IdentifierOut
    pagination_class = cursor_pagination("-first_seen_at", "-hash")
    lookup_field = "hash"
    lookup_value_regex = SHA256_PATTERN

    def get_queryset(self) -> QuerySet[ComponentIdentifier]:
        """The identifiers some row of the caller's operations uses."""
        return ComponentIdentifier.objects.visible_to(view_scope(self))

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One page: 1 query."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response([identifier_row_dict(r) for r in page])

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The row plus its tree rebuilt from child rows (1 query + 1 per tree level, at most
        MAX_TREE_DEPTH), budgeted like every tree (redteam.core.trees)."""
        root = self.get_queryset().filter(hash=str(kwargs.get("hash", ""))).first()
        if root is None:
            raise Http404
        rebuilt = identifier_tree(root)
        return Response(
            {
                **identifier_row_dict(root),
                "tree": rebuilt.tree,
                "missing": rebuilt.missing,
                "cycles": rebuilt.cycles,
                "truncated": rebuilt.truncated,
                "node_count": rebuilt.nodes,
                "tree_budget": {
                    "max_depth": MAX_TREE_DEPTH,
                    "max_nodes": MAX_TREE_NODES,
                    "max_chars": MAX_TREE_CHARS,
                },
            }
        )
