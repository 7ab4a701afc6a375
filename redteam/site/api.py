"""The ingestion and media endpoints (they span every app, so they live in the project).

POST /api/v1/ingest/          a batch of PyRIT-shaped items (see IngestView)
POST /api/v1/media/           upload media bytes (multipart field `file`)
POST /api/v1/media/missing/   which of these sha256s are not stored yet (for the client)
GET  /api/v1/media/<sha256>/  download stored bytes

Media is content-addressed and shared, so what a caller may learn of it goes through its
scope: bytes count as stored (and are served) only when a piece or scored content of the
caller's operations, or a seed, refers to them (memory.querysets.media_visible_to); an
upload links the pieces it names only in operations the key may write.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.conf import settings
from django.http import FileResponse, HttpRequest
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.querysets import media_visible_to
from redteam.common.access import Writer, scope_for
from redteam.common.api_auth import HasIngestScope, HasReadScope
from redteam.common.media import media_response
from redteam.common.models import MediaBlob
from redteam.core.digests import is_sha256
from redteam.core.flags import parse_flag
from redteam.core.jsonguard import parse_json
from redteam.site.ingest import (
    INGEST_KINDS,
    PayloadError,
    count_items,
    ingest_batch,
    validate_payload,
)

MAX_MISSING_QUERY = 1000


def _problem(message: str, code: int, **extra: Any) -> Response:
    """A JSON error body with a readable `detail`."""
    return Response({"detail": message, **extra}, status=code)


def _flag(request: Request, name: str) -> bool:
    """A yes/no query parameter (redteam.core.flags); absent or empty means no."""
    raw = request.query_params.get(name, "")
    try:
        return bool(parse_flag(raw))
    except ValueError:
        raise ValueError(f"?{name}= must be 1 or 0, got {str(raw).strip().lower()!r}.") from None


MAX_STAMP = 2**63 - 1


def _stamp(request: Request, name: str) -> int | None:
    """A positive integer query parameter (a sender's version stamp); absent or 0 means none."""
    raw = request.query_params.get(name, "").strip()
    if raw in ("", "0"):
        return None
    if not raw.isdigit() or int(raw) > MAX_STAMP:
        raise ValueError(f"?{name}= must be a positive integer below 2**63, got {raw[:40]!r}.")
    return int(raw)


class BodyTooLarge(Exception):
    """The request body exceeds the configured limit."""


def read_body_capped(request: Request, limit: int) -> bytes:
    """The raw body, refusing (before reading it) anything larger than `limit` bytes."""
    django_request: HttpRequest = request._request
    try:
        declared = int(django_request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise BodyTooLarge
    if getattr(django_request, "_body", None) is not None:  # already read by a middleware
        data: bytes = django_request._body
    else:
        # HttpRequest.read() streams from the socket without Django's own in-memory cap, which
        # would answer 400 rather than a 413 naming our limit.
        data = django_request.read(limit + 1)
    if len(data) > limit:
        raise BodyTooLarge
    return data


_INGEST_REQUEST = inline_serializer(
    "IngestRequest",
    {
        "message_pieces": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="MessagePiece dicts: 1.x model_dump(mode='json') or 0.13 to_dict().",
        ),
        "conversations": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="1.x Conversation dicts: conversation_id, target_identifier, retries.",
        ),
        "scores": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text=(
                "Score dicts (either line, or PyRIT's ScoreEntry row view). A 1.1 score whose "
                "scorable is a `content_entry` may carry the ScorableContentEntries row it "
                "names as `scorable_content` ({id, value, value_sha256, data_type, timestamp}) "
                "so the scored loose text is stored."
            ),
        ),
        "attack_results": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="AttackResult dicts (either line).",
        ),
        "scenario_results": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text=(
                "ScenarioResult dicts: 1.x model_dump(mode='json') (attack results embedded by "
                "atomic attack name) or a 0.13 ScenarioResultEntries row."
            ),
        ),
        "seeds": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text="SeedPrompt / SeedObjective / SeedSimulatedConversation dicts.",
        ),
    },
)
_INGEST_RESPONSE = inline_serializer(
    "IngestResponse",
    {
        "stored": serializers.IntegerField(help_text="Items newly written."),
        "unchanged": serializers.IntegerField(help_text="Items already stored, identical."),
        "errors": serializers.IntegerField(help_text="Items rejected (invalid or conflicting)."),
        "atomic": serializers.BooleanField(required=False),
        "rolled_back": serializers.BooleanField(
            required=False, help_text="atomic=1 only: true when nothing was stored."
        ),
        "items": inline_serializer(
            "IngestItemOutcome",
            {
                "kind": serializers.ChoiceField(choices=list(INGEST_KINDS)),
                "index": serializers.IntegerField(help_text="Position in its list."),
                "id": serializers.CharField(allow_null=True),
                "status": serializers.ChoiceField(
                    choices=["stored", "unchanged", "rejected", "rolled_back"]
                ),
                "errors": inline_serializer(
                    "IngestFieldError",
                    {
                        "field": serializers.CharField(allow_null=True),
                        "message": serializers.CharField(),
                        "code": serializers.ChoiceField(choices=["invalid", "conflict"]),
                    },
                    many=True,
                ),
            },
            many=True,
        ),
    },
)
_DETAIL = inline_serializer("ErrorDetail", {"detail": serializers.CharField()})


class IngestView(APIView):
    """Store a batch of PyRIT memory items; idempotent, validated per item."""

    permission_classes = [HasIngestScope]
    # Documented for the schema; the view parses the body itself to enforce the size limit
    # first and to answer malformed JSON with a precise 400.
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="ingest_batch",
        summary="Ingest a batch of PyRIT memory items",
        description=(
            "Send any of `message_pieces`, `conversations`, `scores`, `attack_results`, "
            "`scenario_results`, `seeds`"
            " as arrays of PyRIT-shaped dicts (0.13 `to_dict()` or 1.x "
            '`model_dump(mode="json")`). Lists are stored in dependency order (conversations,'
            " pieces, scores, attack results, scenario results, seeds) in one transaction, "
            "committed before the response.\n\n"
            "* **200**: every item was stored or was already stored identically (a replay).\n"
            "* **207**: some items were rejected; each rejected item names its list, index, id "
            "and field. A conflict (same id, different content) is a rejection with code "
            "`conflict`; nothing is overwritten (unless `?revise=`, below).\n"
            "* `?atomic=1`: store all or nothing. If any item is rejected, nothing is stored "
            "(`stored` = 0, `rolled_back` = true, valid items have status `rolled_back`).\n"
            "* `?revise=STAMP`: a changed item of a kind PyRIT's memory updates in place is "
            "stored as the newer version (status `stored`): an attack result's fields (not its "
            "conversation, nor the operation its labels name), a scenario result's, a 1.x "
            "conversation's retries and target, a piece's labels and prompt metadata. A "
            "stored version with a larger stamp is kept (the item is `unchanged`); copies "
            "embedded in other items (a result's last response, a scenario's results) never "
            "replace a stored row. Other differences stay conflicts.\n"
            "* Values are read as Python's json reads them: NUL characters, `NaN`, `Infinity` "
            "and `-Infinity` are stored and returned exactly.\n"
            "* A problem with one item's content (a string longer than "
            "`REDTEAM_MAX_STRING_CHARS`, nesting deeper than `REDTEAM_MAX_JSON_DEPTH` inside "
            "the item, an unpaired surrogate, a timestamp out of range, a bad value or "
            "reference) rejects that item alone (207), naming its field.\n"
            "* **400**: malformed JSON or wrong top-level types (nothing stored).\n"
            "* **413**: body over `REDTEAM_MAX_BODY_BYTES` (default 64 MiB) or more than "
            "`REDTEAM_MAX_ITEMS` items (default 20,000) in total.\n\n"
            "* **Operations**: an item whose labels name an operation (`operation`, or "
            "`op_name` in older runs) is stored there if the key may write it, else "
            "rejected (field `labels.operation`). Items naming none join their "
            "conversation's operation, else `?operation=` or the key's default operation.\n\n"
            "Needs an API key with the `ingest` scope (or a staff session)."
        ),
        request=_INGEST_REQUEST,
        parameters=[
            OpenApiParameter(
                "atomic", OpenApiTypes.BOOL, description="1: store all items or none."
            ),
            OpenApiParameter(
                "operation",
                OpenApiTypes.STR,
                description="Operation for items whose labels name none (default: the key's).",
            ),
            OpenApiParameter(
                "revise",
                OpenApiTypes.INT,
                description=(
                    "The sender's stamp for this batch (a positive integer that grows with "
                    "each batch, e.g. nanoseconds since the epoch): an item stored with other "
                    "content is the newer version of a row PyRIT updates in place (attack "
                    "results, scenario results, conversations' retries and target, pieces' "
                    "labels and prompt metadata) and replaces it, unless the stored version "
                    "carries a larger stamp."
                ),
            ),
        ],
        responses={
            200: _INGEST_RESPONSE,
            207: _INGEST_RESPONSE,
            400: _DETAIL,
            401: _DETAIL,
            403: _DETAIL,
            413: _DETAIL,
            415: _DETAIL,
        },
    )
    def post(self, request: Request) -> Response:
        """Check limits and shape, then hand the batch to redteam.site.ingest.ingest_batch."""
        try:
            atomic = _flag(request, "atomic")
            revise = _stamp(request, "revise")
        except ValueError as exc:
            return _problem(str(exc), status.HTTP_400_BAD_REQUEST)
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            return _problem(
                f"Send the batch as application/json (got {content_type or 'no content type'}).",
                status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            )
        max_bytes: int = settings.REDTEAM_MAX_BODY_BYTES
        try:
            body = read_body_capped(request, max_bytes)
        except BodyTooLarge:
            return _problem(
                f"The request body is larger than the limit of {max_bytes} bytes; "
                "split the batch into smaller requests.",
                status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                limit_bytes=max_bytes,
            )
        try:
            payload = parse_json(body)
        except UnicodeDecodeError:
            return _problem("The body is not UTF-8.", status.HTTP_400_BAD_REQUEST)
        except RecursionError:
            return _problem("Malformed JSON: nested too deeply.", status.HTTP_400_BAD_REQUEST)
        except ValueError as exc:
            return _problem(f"Malformed JSON: {exc}", status.HTTP_400_BAD_REQUEST)
        try:
            lists = validate_payload(payload)
        except PayloadError as exc:
            return _problem(str(exc), status.HTTP_400_BAD_REQUEST)
        max_items: int = settings.REDTEAM_MAX_ITEMS
        total = count_items(lists)
        if total > max_items:
            return _problem(
                f"The batch holds {total} items; the limit is {max_items} per request. "
                "Split it into smaller batches.",
                status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                limit_items=max_items,
            )
        # Each item's content (size, nesting, surrogates, values) is checked per item from
        # here on: a problem rejects that item alone (207), never the batch.
        default = request.query_params.get("operation") or None
        writer = Writer.for_request(request, default_name=default)
        writer.revise = revise
        report = ingest_batch(lists, atomic=atomic, writer=writer)
        return Response(report.as_dict(), status=report.status_code)


def _piece_ids(request: Request) -> dict[str, list[str]]:
    """The `original_piece_id` / `converted_piece_id` form fields, checked as UUIDs."""
    out: dict[str, list[str]] = {}
    for side in ("original", "converted"):
        values = (
            request.data.getlist(f"{side}_piece_id") if hasattr(request.data, "getlist") else []
        )
        if len(values) > MAX_MISSING_QUERY:
            raise ValueError(f"At most {MAX_MISSING_QUERY} {side}_piece_id values per upload.")
        try:
            out[side] = [str(uuid.UUID(str(v))) for v in values]
        except ValueError:
            raise ValueError(f"Every {side}_piece_id must be a UUID.") from None
    return out


def _blob_dict(blob: MediaBlob) -> dict[str, Any]:
    return {"sha256": blob.sha256, "size": blob.size, "content_type": blob.content_type}


_MEDIA_RESPONSE = inline_serializer(
    "MediaBlob",
    {
        "sha256": serializers.CharField(),
        "size": serializers.IntegerField(),
        "content_type": serializers.CharField(),
        "created": serializers.BooleanField(),
    },
)


class MediaUploadView(APIView):
    """Upload the bytes of an image/audio/video/binary piece; stored by sha256."""

    permission_classes = [HasIngestScope]
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="media_upload",
        summary="Upload media bytes",
        description=(
            "Multipart form with the field `file` and, optionally, `sha256` (the hex digest the"
            " client computed; it is verified). Bytes are stored once, addressed by sha256, "
            "and linked to every piece whose sha256 refers to them, and to the pieces named "
            "by `original_piece_id` / `converted_piece_id` in operations the key may write "
            "(other ids are ignored). Limit: `REDTEAM_MAX_MEDIA_BYTES` (default 256 MiB), "
            "answered with 413. Returns 201 when new, 200 when the bytes were already stored "
            "and visible to the key (referred to by its operations' pieces, or a seed)."
        ),
        request={
            "multipart/form-data": inline_serializer(
                "MediaUpload",
                {
                    "file": serializers.FileField(),
                    "sha256": serializers.CharField(required=False),
                    "original_piece_id": serializers.ListField(
                        child=serializers.UUIDField(), required=False
                    ),
                    "converted_piece_id": serializers.ListField(
                        child=serializers.UUIDField(), required=False
                    ),
                },
            )
        },
        responses={200: _MEDIA_RESPONSE, 201: _MEDIA_RESPONSE, 400: _DETAIL, 413: _DETAIL},
    )
    def post(self, request: Request) -> Response:
        """Verify size and claimed digest, store the bytes, link the pieces that refer to them."""
        max_bytes: int = settings.REDTEAM_MAX_MEDIA_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _problem("Invalid Content-Length.", status.HTTP_400_BAD_REQUEST)
        # The multipart envelope adds a little; anything beyond that is refused unread.
        if declared > max_bytes + 64 * 1024:
            return _problem(
                f"The upload is larger than the limit of {max_bytes} bytes.",
                status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                limit_bytes=max_bytes,
            )
        upload = request.FILES.get("file")
        if upload is None:
            return _problem("Send the bytes in the multipart field 'file'.", 400)
        if upload.size is not None and upload.size > max_bytes:
            return _problem(
                f"The file is larger than the limit of {max_bytes} bytes.",
                status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                limit_bytes=max_bytes,
            )
        data = upload.read()
        digest = hashlib.sha256(data).hexdigest()
        fields = request.data if isinstance(request.data, dict) else {}
        claimed = str(fields.get("sha256") or "").strip().lower()
        if claimed and claimed != digest:
            return _problem(
                f"The sha256 sent ({claimed[:64]}) does not match the bytes ({digest}).", 400
            )
        try:
            piece_ids = _piece_ids(request)
        except ValueError as exc:
            return _problem(str(exc), status.HTTP_400_BAD_REQUEST)
        # Resolved late: memory.services is app-level code this project-level view composes.
        from memory.services import store_media

        # "Already stored" only for bytes the key could fetch: bytes of another operation
        # count as new, so the answer confirms nothing about what others uploaded.
        existed = media_visible_to(scope_for(request), [digest]).exists()
        blob = store_media(
            data,
            filename=upload.name or "",
            user=request.user,
            original_piece_ids=piece_ids["original"],
            converted_piece_ids=piece_ids["converted"],
            writer=Writer.for_request(request),
        )
        body = {**_blob_dict(blob), "created": not existed}
        return Response(body, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)


class MediaMissingView(APIView):
    """Which of the given sha256s the caller cannot fetch yet (lets a client skip re-uploads).

    A hash counts as stored only when its bytes are stored and visible to the caller
    (memory.querysets.media_visible_to): the endpoint is no oracle for other operations'
    media. Uploading such bytes again costs nothing (they are stored once) and links them.
    """

    permission_classes = [HasIngestScope]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="media_missing",
        summary="Which media hashes are not stored yet",
        request=inline_serializer(
            "MediaMissingRequest",
            {"sha256": serializers.ListField(child=serializers.CharField(), max_length=1000)},
        ),
        responses={
            200: inline_serializer(
                "MediaMissingResponse",
                {"missing": serializers.ListField(child=serializers.CharField())},
            ),
            400: _DETAIL,
        },
    )
    def post(self, request: Request) -> Response:
        """Answer with the subset of `sha256` that has no stored blob visible to the caller."""
        hashes = request.data.get("sha256") if isinstance(request.data, dict) else None
        if not isinstance(hashes, list) or len(hashes) > MAX_MISSING_QUERY:
            return _problem(f"Send {{'sha256': [up to {MAX_MISSING_QUERY} hex digests]}}.", 400)
        bad = [h for h in hashes if not is_sha256(h)]
        if bad:
            return _problem("Every sha256 must be 64 lowercase hex characters.", 400)
        visible = media_visible_to(scope_for(request), hashes)
        present = set(visible.values_list("sha256", flat=True))
        missing = [h for h in dict.fromkeys(hashes) if h not in present]
        return Response({"missing": missing})


class MediaDetailView(APIView):
    """Serve stored media bytes with a safe content type."""

    permission_classes = [HasReadScope]

    @extend_schema(
        operation_id="media_download",
        summary="Download media bytes",
        description=(
            "Bytes of a stored blob that a piece or scored content of the key's operations, or "
            "a seed, refers to (404 otherwise, as for unknown bytes). Images, audio and video "
            "of common formats are served inline; anything else (SVG, HTML, unknown) as an "
            "`application/octet-stream` attachment. Always with `X-Content-Type-Options: "
            "nosniff`, a sandboxing Content-Security-Policy and "
            "`Cross-Origin-Resource-Policy: same-origin`."
        ),
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, 404: _DETAIL},
    )
    def get(self, request: Request, sha256: str) -> FileResponse:
        """Stream the blob (the page's response, redteam.common.media); 404 when unknown or
        not visible to the key."""
        return media_response(sha256, blobs=media_visible_to(scope_for(request), [sha256]))
