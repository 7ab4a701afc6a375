"""OpenAPI post-processing: document the error answers every operation can give.

drf-spectacular documents what a view declares; the answers that come from the framework
(401 without a key, 403 without the scope, 400 from a FilterSet or serializer, 404 for an
unknown id, 415 for a body of the wrong type) would otherwise be undocumented, and clients
(and the schemathesis fuzz test) could not rely on the schema for them.
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "`detail` says what is wrong; validation errors name each field.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def add_error_responses(result: dict[str, Any], **hook_arguments: Any) -> dict[str, Any]:
    """Add 400/401/403/404/415 to each operation where they can happen (never overriding).

    A drf-spectacular postprocessing hook: it is also passed generator, request and public.
    """
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            params = operation.get("parameters", [])
            extra = {
                "401": "Missing, unknown, expired or revoked API key.",
                "403": "The key lacks the scope this operation needs.",
            }
            if operation.get("requestBody") or any(p.get("in") == "query" for p in params):
                extra["400"] = "Invalid query parameters or body."
            if any(p.get("name") == "cursor" for p in params):
                extra["400"] = "Invalid query parameters, or a cursor this list did not hand out."
            if any(p.get("in") == "path" for p in params):
                extra["404"] = "No such object."
            if operation.get("requestBody"):
                extra["415"] = "The body's content type is not accepted."
            for code, description in extra.items():
                responses.setdefault(code, _error(description))
    return result
