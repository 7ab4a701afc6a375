"""Push PyRIT memory to a redteam server, and read it back. Standard library only.

    from redteam.client import RedteamClient

    client = RedteamClient("https://redteam.example", api_key="abcd1234.secret")
    client.push(pieces=memory.get_message_pieces(), scores=memory.get_scores(...),
                attack_results=memory.get_attack_results(), conversations=[...], seeds=[...])

Accepts PyRIT objects (1.x pydantic models: ``model_dump(mode="json")``; 0.13 objects:
``to_dict()``; dataclasses) or plain dicts. Items are sent in batches in dependency order
(conversations, pieces, scores, attack results, seeds), never splitting a message across two
batches. Ingestion is idempotent, so a batch that failed on a network error or a 5xx is
simply sent again. Media pieces (image/audio/video/binary paths) whose files exist locally are
uploaded first, once per distinct content. Rejected items raise RedteamPushError, after every
other item has been sent.

This module must stay importable without Django (attack code does not install it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import http.client
import json
import mimetypes
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

__all__ = [
    "KINDS",
    "PushResult",
    "RedteamClient",
    "RedteamError",
    "RedteamHTTPError",
    "RedteamPushError",
    "to_jsonable",
]

# Payload keys, in the order the server stores them (and the client sends them).
KINDS: tuple[str, ...] = ("conversations", "message_pieces", "scores", "attack_results", "seeds")
MEDIA_PATH_DATA_TYPES = frozenset({"image_path", "audio_path", "video_path", "binary_path"})
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "redteam-client/1"
# One request's items: kind -> [(index in the caller's list, item)].
Batch = dict[str, list[tuple[int, dict[str, Any]]]]


class RedteamError(Exception):
    """Base class for client errors."""


class RedteamHTTPError(RedteamError):
    """The server answered with an error status (after retries, for retryable ones)."""

    def __init__(self, status: int, body: Any, method: str, path: str) -> None:
        detail = body.get("detail") if isinstance(body, dict) else body
        super().__init__(f"{method} {path} -> HTTP {status}: {detail}")
        self.status = status
        self.body = body


class RedteamPushError(RedteamError):
    """Some items were rejected. `rejected` lists them with the caller's own indexes."""

    def __init__(self, rejected: list[dict[str, Any]], result: PushResult) -> None:
        lines = [f"{len(rejected)} item(s) rejected by the server:"]
        for item in rejected[:50]:
            for error in item.get("errors") or [{}]:
                lines.append(
                    f"  {item['kind']}[{item['index']}] id={item.get('id')} "
                    f"field={error.get('field')} [{error.get('code')}]: {error.get('message')}"
                )
        if len(rejected) > 50:
            lines.append(f"  ... and {len(rejected) - 50} more (see .rejected)")
        super().__init__("\n".join(lines))
        self.rejected = rejected
        self.result = result


@dataclasses.dataclass
class PushResult:
    """Totals over every batch of one push()."""

    stored: int = 0
    unchanged: int = 0
    errors: int = 0
    batches: int = 0
    media_uploaded: int = 0
    rejected: list[dict[str, Any]] = dataclasses.field(default_factory=list)


# --- turning PyRIT objects into JSON-ready dicts -------------------------------------------


def to_jsonable(value: Any) -> Any:
    """A JSON-ready copy: PyRIT models, dataclasses, enums, UUIDs, datetimes, sets, paths."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # PyRIT 1.x / 0.14 pydantic models
        return to_jsonable(model_dump(mode="json"))
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # PyRIT 0.12-0.13 objects
        return to_jsonable(to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    raise TypeError(f"Cannot send a {type(value).__name__} to redteam: not JSON-serialisable.")


def _as_item(obj: Any) -> dict[str, Any]:
    item = to_jsonable(obj)
    if not isinstance(item, dict):
        raise TypeError(f"Expected a PyRIT object or dict, got {type(obj).__name__}.")
    return item


def _flatten_pieces(objs: Iterable[Any]) -> Iterator[Any]:
    """Messages (anything with `message_pieces`) are expanded into their pieces."""
    for obj in objs:
        pieces = getattr(obj, "message_pieces", None)
        if pieces is None and isinstance(obj, Mapping) and "message_pieces" in obj:
            pieces = obj["message_pieces"]
        if pieces is not None:
            yield from pieces
        else:
            yield obj


# --- the client ----------------------------------------------------------------------------


class RedteamClient:
    """A connection to one redteam server, authenticated with one API key."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        batch_size: int = 1000,
        max_batch_bytes: int = 16 * 1024 * 1024,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        upload_media: bool = True,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], got {base_url!r}")
        if not api_key or any(c.isspace() for c in api_key):
            raise ValueError("api_key must be a key from `manage.py create_api_key`.")
        self.base_url = base_url.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._api_key = api_key
        self.batch_size = max(1, batch_size)
        self.max_batch_bytes = max_batch_bytes
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.upload_media_files = upload_media
        self._sleep = sleep
        self._conn: http.client.HTTPConnection | None = None

    # -- HTTP plumbing ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the kept-alive connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> RedteamClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._scheme == "https"
                else http.client.HTTPConnection
            )
            self._conn = cls(self._host, self._port, timeout=self.timeout)
        return self._conn

    def _request_once(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes, str]:
        conn = self._connection()
        try:
            conn.request(method, self._prefix + path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except BaseException:
            # The connection state is unknown after any failure: start afresh next time.
            self.close()
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, data, response.getheader("Content-Type", "")

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
        params: Mapping[str, Any] | None = None,
        ok: Sequence[int] = (200,),
    ) -> tuple[int, Any]:
        """Send one request, retrying network errors and 429/5xx with exponential backoff.

        Only safe because every endpoint is idempotent (ingest and media uploads included).
        Returns (status, parsed JSON or raw bytes); raises RedteamHTTPError otherwise.
        """
        if params:
            path = f"{path}?{urlencode(params, doseq=True)}"
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if content_type:
            headers["Content-Type"] = content_type
        attempt = 0
        while True:
            try:
                status, data, response_type = self._request_once(method, path, body, headers)
            except (OSError, http.client.HTTPException) as exc:
                if attempt >= self.max_retries:
                    raise RedteamError(
                        f"{method} {path} failed after {attempt + 1} attempts: {exc}"
                    ) from exc
            else:
                parsed: Any = data
                if response_type.startswith("application/json"):
                    try:
                        parsed = json.loads(data)
                    except ValueError:
                        parsed = data
                if status in ok:
                    return status, parsed
                if status not in RETRY_STATUSES or attempt >= self.max_retries:
                    raise RedteamHTTPError(status, parsed, method, path)
            attempt += 1
            delay = self.backoff * (2 ** (attempt - 1))
            self._sleep(delay * (0.5 + random.random()))  # jitter: retries do not stampede

    def get(self, path: str, **params: Any) -> Any:
        """GET a JSON endpoint under /api/v1/ (e.g. ``get("scores/", score_type="true_false")``)."""
        return self.request("GET", f"/api/v1/{path.lstrip('/')}", params=params or None)[1]

    def iter_list(self, resource: str, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every row of a list endpoint, following the cursor (e.g. ``iter_list("scores")``)."""
        page = self.get(f"{resource.strip('/')}/", **filters)
        while True:
            yield from page["results"]
            next_url = page.get("next")
            if not next_url:
                return
            parts = urlsplit(next_url)
            path = parts.path[len(self._prefix) :] if self._prefix else parts.path
            page = self.request("GET", f"{path}?{parts.query}")[1]

    def conversation(self, conversation_id: str, **params: Any) -> dict[str, Any]:
        """A conversation's messages with their pieces and scores."""
        result: dict[str, Any] = self.get(f"conversations/{conversation_id}/", **params)
        return result

    # -- media ------------------------------------------------------------------------------

    def missing_media(self, digests: Iterable[str]) -> list[str]:
        """Which of these sha256 digests the server does not hold yet."""
        digests = list(dict.fromkeys(digests))
        missing: list[str] = []
        for start in range(0, len(digests), 1000):
            body = json.dumps({"sha256": digests[start : start + 1000]}).encode()
            _, answer = self.request(
                "POST", "/api/v1/media/missing/", body=body, content_type="application/json"
            )
            missing.extend(answer["missing"])
        return missing

    def upload_media(
        self, path: str | os.PathLike[str], *, sha256: str | None = None
    ) -> dict[str, Any]:
        """Upload one file's bytes (multipart); returns the server's blob description."""
        data = Path(path).read_bytes()
        digest = sha256 or hashlib.sha256(data).hexdigest()
        boundary = f"redteam-{uuid.uuid4().hex}"
        filename = Path(path).name.replace('"', "_").replace("\r", "_").replace("\n", "_")
        mime = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        body = b"".join(
            [
                f'--{boundary}\r\nContent-Disposition: form-data; name="sha256"\r\n\r\n'.encode(),
                digest.encode(),
                b"\r\n",
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{filename}"\r\nContent-Type: {mime}\r\n\r\n'.encode(),
                data,
                f"\r\n--{boundary}--\r\n".encode(),
            ]
        )
        _, answer = self.request(
            "POST",
            "/api/v1/media/",
            body=body,
            content_type=f"multipart/form-data; boundary={boundary}",
            ok=(200, 201),
        )
        result: dict[str, Any] = answer
        return result

    def _upload_referenced_media(self, items: Iterable[Mapping[str, Any]]) -> int:
        """Upload the local files media pieces/seeds point at, skipping what the server has."""
        files: dict[str, str] = {}  # sha256 -> path
        seen: set[str] = set()
        for item in items:
            for value_key, type_key in (
                ("original_value", "original_value_data_type"),
                ("converted_value", "converted_value_data_type"),
                ("value", "data_type"),
            ):
                value = item.get(value_key)
                if item.get(type_key) not in MEDIA_PATH_DATA_TYPES or not isinstance(value, str):
                    continue
                if value in seen or not os.path.isfile(value):
                    continue
                seen.add(value)
                files[_file_sha256(value)] = value
        if not files:
            return 0
        missing = self.missing_media(files)
        for digest in missing:
            self.upload_media(files[digest], sha256=digest)
        return len(missing)

    # -- push -------------------------------------------------------------------------------

    def push(
        self,
        *,
        pieces: Iterable[Any] = (),
        scores: Iterable[Any] = (),
        attack_results: Iterable[Any] = (),
        seeds: Iterable[Any] = (),
        conversations: Iterable[Any] = (),
        messages: Iterable[Any] = (),
        atomic: bool = False,
        raise_on_rejected: bool = True,
    ) -> PushResult:
        """Send everything, in batches; raise RedteamPushError if any item was rejected.

        `pieces` may hold MessagePieces or Messages (expanded); `messages` is an alias.
        With `atomic=True` everything must fit in one batch, stored all or nothing.
        """
        lists: dict[str, list[dict[str, Any]]] = {
            "conversations": [_as_item(o) for o in conversations],
            "message_pieces": [
                _as_item(o) for o in _flatten_pieces([*list(pieces), *list(messages)])
            ],
            "scores": [_as_item(o) for o in scores],
            "attack_results": [_as_item(o) for o in attack_results],
            "seeds": [_as_item(o) for o in seeds],
        }
        result = PushResult()
        if self.upload_media_files:
            result.media_uploaded = self._upload_referenced_media(
                [*lists["message_pieces"], *lists["seeds"]]
            )
        batches = list(self._batches(lists))
        if atomic and len(batches) > 1:
            raise ValueError(
                f"atomic=True needs everything in one batch; this push needs {len(batches)} "
                f"(raise batch_size/max_batch_bytes or push without atomic)."
            )
        for batch in batches:
            self._send_batch(batch, atomic, result)
        if result.rejected and raise_on_rejected:
            raise RedteamPushError(result.rejected, result)
        return result

    def _batches(self, lists: Mapping[str, list[dict[str, Any]]]) -> Iterator[Batch]:
        """Group (original index, item) pairs into batches, keeping each message together."""
        batch: Batch = {}
        count = 0
        size = 0
        for kind in KINDS:
            for group in _groups(kind, lists[kind]):
                group_size = sum(len(json.dumps(item)) + 1 for _, item in group)
                if count and (
                    count + len(group) > self.batch_size or size + group_size > self.max_batch_bytes
                ):
                    yield batch
                    batch, count, size = {}, 0, 0
                batch.setdefault(kind, []).extend(group)
                count += len(group)
                size += group_size
        if count:
            yield batch

    def _send_batch(self, batch: Batch, atomic: bool, result: PushResult) -> None:
        payload = {kind: [item for _, item in entries] for kind, entries in batch.items()}
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode()
        try:
            _, answer = self.request(
                "POST",
                "/api/v1/ingest/",
                body=body,
                content_type="application/json",
                params={"atomic": "1"} if atomic else None,
                ok=(200, 207),
            )
        except RedteamHTTPError as exc:
            if exc.status == 413 and not atomic and len(_units(batch)) > 1:
                # Over the server's limits: halve the batch and try again.
                first, second = _split(batch)
                self._send_batch(first, atomic, result)
                self._send_batch(second, atomic, result)
                return
            raise
        result.batches += 1
        result.stored += int(answer.get("stored", 0))
        result.unchanged += int(answer.get("unchanged", 0))
        result.errors += int(answer.get("errors", 0))
        for item in answer.get("items", []):
            if item.get("status") not in ("stored", "unchanged"):
                # Map the batch index back to the caller's index in its own list.
                entries = batch.get(item["kind"], [])
                local = item.get("index")
                if isinstance(local, int) and 0 <= local < len(entries):
                    item = {**item, "index": entries[local][0], "batch_index": local}
                result.rejected.append(item)


def _file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _groups(kind: str, items: list[dict[str, Any]]) -> Iterator[list[tuple[int, dict[str, Any]]]]:
    """Pieces of one message (conversation_id, sequence) form one group; others are alone."""
    if kind != "message_pieces":
        for index, item in enumerate(items):
            yield [(index, item)]
        return
    groups: dict[tuple[Any, Any], list[tuple[int, dict[str, Any]]]] = {}
    for index, item in enumerate(items):
        key = (item.get("conversation_id"), item.get("sequence"))
        groups.setdefault(key, []).append((index, item))
    yield from groups.values()


def _units(batch: Batch) -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
    """The batch's indivisible units, in order: single items, or all pieces of one message."""
    units: list[tuple[str, list[tuple[int, dict[str, Any]]]]] = []
    for kind in KINDS:
        originals = batch.get(kind, [])
        for group in _groups(kind, [item for _, item in originals]):
            units.append((kind, [originals[i] for i, _ in group]))
    return units


def _split(batch: Batch) -> tuple[Batch, Batch]:
    """Two halves of a batch (of at least two units), in order, without splitting a message."""
    flat = _units(batch)
    half = len(flat) // 2
    first: Batch = {}
    second: Batch = {}
    for position, (kind, group) in enumerate(flat):
        (first if position < half else second).setdefault(kind, []).extend(group)
    return first, second
