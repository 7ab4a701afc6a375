"""Read API for memory rows that need nothing from other apps: conversations and identifiers.

Pieces, the conversation detail and attack results carry scores (scoring app), so they live
in redteam/api_reads.py, which may import every app.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from memory.export import export_conversation
from memory.filters import HASH_RE, ConversationFilterSet, IdentifierFilterSet
from memory.models import ComponentIdentifier, Conversation
from redteam.api_common import cursor_pagination

# A hostile identifier could nest deeply or fan out widely; the tree stops here.
MAX_TREE_DEPTH = 12
MAX_TREE_NODES = 2000


class ConversationOut(serializers.Serializer):  # type: ignore[type-arg]
    """Documents the output: a PyRIT 1.x Conversation dict."""

    conversation_id = serializers.CharField()
    target_identifier = serializers.DictField(allow_null=True)
    retries = serializers.ListField(child=serializers.DictField())


class IdentifierOut(serializers.Serializer):  # type: ignore[type-arg]
    """Documents the output: one identifier row (children as hashes)."""

    hash = serializers.CharField()
    class_name = serializers.CharField()
    class_module = serializers.CharField()
    params = serializers.DictField()
    children = serializers.DictField()
    attributes = serializers.DictField()
    pyrit_version = serializers.CharField(allow_null=True)
    eval_hash = serializers.CharField(allow_null=True)
    hash_is_stored = serializers.BooleanField()


_IDENTIFIER_TREE = inline_serializer(
    "ComponentIdentifierTree",
    {
        "hash": serializers.CharField(),
        "class_name": serializers.CharField(),
        "eval_hash": serializers.CharField(allow_null=True),
        "tree": serializers.DictField(help_text="PyRIT's flat nested form, rebuilt from rows."),
        "missing": serializers.ListField(child=serializers.CharField()),
    },
)


@extend_schema_view(
    list=extend_schema(
        summary="List conversations (1.x Conversation dicts)",
        description="Newest activity first; filters as on the conversations page.",
        responses=ConversationOut,
    )
)
class ConversationViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Conversations as PyRIT 1.x `Conversation` dicts."""

    filterset_class = ConversationFilterSet
    serializer_class = ConversationOut
    pagination_class = cursor_pagination("-last_timestamp", "-conversation_id")

    def get_queryset(self) -> QuerySet[Conversation]:
        """Conversations with pieces, with the target dump the export reads."""
        return Conversation.objects.filter(last_timestamp__isnull=False).select_related(
            "target_dump"
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


def _child_hashes(children: Any) -> list[str]:
    hashes: list[str] = []
    if not isinstance(children, dict):
        return hashes
    for value in children.values():
        for h in value if isinstance(value, list) else [value]:
            if isinstance(h, str):
                hashes.append(h)
    return hashes


def identifier_tree(root: ComponentIdentifier) -> tuple[dict[str, Any], list[str]]:
    """Rebuild the flat nested PyRIT form from rows, one query per tree level.

    Returns the tree and the child hashes referenced but not stored.
    """
    rows: dict[str, ComponentIdentifier] = {root.hash: root}
    frontier = _child_hashes(root.children)
    depth = 0
    while frontier and depth < MAX_TREE_DEPTH and len(rows) < MAX_TREE_NODES:
        wanted = [h for h in dict.fromkeys(frontier) if h not in rows]
        fetched = ComponentIdentifier.objects.in_bulk(wanted[:MAX_TREE_NODES]) if wanted else {}
        rows.update(fetched)
        frontier = [h for row in fetched.values() for h in _child_hashes(row.children)]
        depth += 1
    missing: list[str] = []

    def node(row: ComponentIdentifier, level: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "class_name": row.class_name,
            "class_module": row.class_module,
            "hash": row.hash,
            "pyrit_version": row.pyrit_version,
        }
        if row.eval_hash is not None:
            out["eval_hash"] = row.eval_hash
        if isinstance(row.params, dict):
            out.update({k: v for k, v in row.params.items() if k not in out})
        if isinstance(row.children, dict) and row.children:
            children: dict[str, Any] = {}
            for name, value in row.children.items():
                if isinstance(value, list):
                    children[name] = [child(h, level) for h in value]
                else:
                    children[name] = child(value, level)
            out["children"] = children
        if row.attributes:
            out["attributes"] = row.attributes
        return out

    def child(h: Any, level: int) -> Any:
        row = rows.get(h) if isinstance(h, str) else None
        if row is None or level + 1 > MAX_TREE_DEPTH:
            if isinstance(h, str) and row is None:
                missing.append(h)
            return {"hash": h}
        return node(row, level + 1)

    return node(root, 0), sorted(set(missing))


@extend_schema_view(
    list=extend_schema(summary="List identifiers", responses=IdentifierOut),
    retrieve=extend_schema(summary="An identifier's full tree", responses=_IDENTIFIER_TREE),
)
class IdentifierViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Content-addressed identifiers (targets, attacks, scorers, converters, ...)."""

    filterset_class = IdentifierFilterSet
    serializer_class = IdentifierOut
    pagination_class = cursor_pagination("-first_seen_at", "-hash")
    lookup_field = "hash"
    lookup_value_regex = "[0-9a-f]{64}"

    def get_queryset(self) -> QuerySet[ComponentIdentifier]:
        """All identifier rows."""
        return ComponentIdentifier.objects.all()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One page: 1 query."""
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response([identifier_row_dict(r) for r in page])

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The row plus its tree rebuilt from child rows (1 query + 1 per tree level)."""
        digest = str(kwargs.get("hash", ""))
        if not HASH_RE.match(digest):
            raise Http404
        root = ComponentIdentifier.objects.filter(hash=digest).first()
        if root is None:
            raise Http404
        tree, missing = identifier_tree(root)
        return Response({**identifier_row_dict(root), "tree": tree, "missing": missing})
