"""redteam/client.py against a live server: batching, replays, retries, errors, media."""

from __future__ import annotations

import hashlib
import http.client
import http.server
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memory.models import MessagePiece
from redteam.client import RedteamClient, RedteamError, RedteamHTTPError, RedteamPushError
from redteam.common.models import MediaBlob
from tests.api import factories
from tests.api.conftest import KeyFactory
from tests.api.pyrit_fixtures import field_differences, fixture_payload, without_annotations

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server: Any, make_key: KeyFactory) -> RedteamClient:
    """A client with an ingest+read key, small batches, and no real sleeping."""
    slept: list[float] = []
    c = RedteamClient(live_server.url, make_key("ingest", "read"), batch_size=7, sleep=slept.append)
    c.slept = slept  # type: ignore[attr-defined]
    return c


class Model:
    """Stands in for a PyRIT 1.x pydantic model."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        assert mode == "json"
        return dict(self.data)


class LegacyModel:
    """Stands in for a PyRIT 0.13 object."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        return dict(self.data)


class FakeMessage:
    """Stands in for a PyRIT Message: its pieces are sent one by one."""

    def __init__(self, pieces: list[Any]) -> None:
        self.message_pieces = pieces


@pytest.mark.parametrize("line", ["pyrit-1.1", "pyrit-0.13"])
def test_push_fixture_rows_in_batches_and_read_them_back(
    client: RedteamClient, fixtures_dir: Path, line: str
) -> None:
    payload = fixture_payload(fixtures_dir, line)
    total = sum(len(v) for v in payload.values())
    result = client.push(
        conversations=payload.get("conversations", []),
        pieces=payload["message_pieces"],
        scores=payload["scores"],
        attack_results=payload["attack_results"],
        seeds=payload["seeds"],
    )
    assert result.batches >= total // 7
    assert result.stored + result.unchanged == total
    assert result.errors == 0
    back = {p["id"]: p for p in client.iter_list("message-pieces", page_size=5)}
    for row in payload["message_pieces"]:
        assert not field_differences(without_annotations(row), back[row["id"]])
    assert len(list(client.iter_list("scores"))) == len(payload["scores"])

    again = client.push(pieces=payload["message_pieces"], scores=payload["scores"])
    assert again.stored == 0
    assert again.unchanged == len(payload["message_pieces"]) + len(payload["scores"])


def test_push_accepts_pyrit_objects_and_messages(client: RedteamClient) -> None:
    rows = factories.conversation_pieces(4)
    message = FakeMessage([Model(rows[0]), Model(rows[1])])
    result = client.push(
        pieces=[message, LegacyModel(rows[2])],
        messages=[FakeMessage([rows[3]])],
        scores=[Model(factories.score(rows[1]))],
    )
    assert result.stored == 5
    assert MessagePiece.objects.count() == 4


def test_batches_never_split_a_message(client: RedteamClient) -> None:
    client.batch_size = 2
    cid = str(uuid.uuid4())
    # One user message of three pieces (same conversation and sequence), then a reply.
    pieces = [factories.piece(cid, 0, "user", f"part {i}") for i in range(3)]
    pieces.append(factories.piece(cid, 1, "assistant", "reply"))
    result = client.push(pieces=pieces)
    assert result.stored == 4
    assert result.batches == 2
    conversation = client.conversation(cid)
    assert [len(m["pieces"]) for m in conversation["messages"]] == [3, 1]


def test_rejected_items_raise_with_the_callers_indexes(client: RedteamClient) -> None:
    rows = factories.conversation_pieces(10)
    rows[8]["role"] = "wizard"
    with pytest.raises(RedteamPushError) as excinfo:
        client.push(pieces=rows)
    error = excinfo.value
    assert [r["index"] for r in error.rejected] == [8]
    assert error.rejected[0]["id"] == rows[8]["id"]
    assert error.rejected[0]["errors"][0]["field"] == "role"
    assert "message_pieces[8]" in str(error)
    assert "role" in str(error)
    assert error.result.stored == 9  # everything else went in
    assert MessagePiece.objects.count() == 9


def test_network_errors_and_5xx_are_retried_idempotently(
    client: RedteamClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = client._request_once
    failures = iter(["reset", "503", "after-commit"])

    def flaky(method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Any:
        failure = next(failures, None)
        if failure == "reset":
            raise ConnectionResetError("connection reset by peer")
        if failure == "503":
            return 503, b'{"detail": "busy"}', "application/json", ""
        if failure == "after-commit":
            # The server stored the batch but the answer was lost: the retry must be a no-op.
            real(method, path, body, headers)
            raise http.client.RemoteDisconnected("lost the response")
        return real(method, path, body, headers)

    monkeypatch.setattr(client, "_request_once", flaky)
    rows = factories.conversation_pieces(3)
    result = client.push(pieces=rows)
    assert result.stored + result.unchanged == 3
    assert result.errors == 0
    assert MessagePiece.objects.count() == 3
    assert len(client.slept) == 3  # type: ignore[attr-defined]
    assert client.slept[1] > client.slept[0] / 2  # type: ignore[attr-defined]


def test_retries_give_up_with_a_clear_error(
    client: RedteamClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.max_retries = 2

    def down(*args: Any) -> Any:
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(client, "_request_once", down)
    with pytest.raises(RedteamError, match="after 3 attempts"):
        client.push(pieces=factories.conversation_pieces(1))


def test_client_errors_are_not_retried(live_server: Any) -> None:
    slept: list[float] = []
    bad = RedteamClient(live_server.url, "aaaaaaaa.wrong", sleep=slept.append)
    with pytest.raises(RedteamHTTPError) as excinfo:
        bad.push(pieces=factories.conversation_pieces(1))
    assert excinfo.value.status == 401
    assert slept == []


class Redirecting(http.server.BaseHTTPRequestHandler):
    """A server that sends every request elsewhere, as one behind an http-to-https rule does."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self.rfile.read(length)
        type(self).seen.append(self.path)
        self.send_response(301)
        self.send_header("Location", f"https://redteam.example{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def redirecting() -> Iterator[str]:
    """The URL of a server that answers 301 to https://redteam.example."""
    Redirecting.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_redirect_is_named_and_neither_followed_nor_retried(redirecting: str) -> None:
    slept: list[float] = []
    with (
        RedteamClient(redirecting, "abcd1234.secret", sleep=slept.append) as client,
        pytest.raises(RedteamHTTPError) as excinfo,
    ):
        client.push(pieces=factories.conversation_pieces(2))
    assert excinfo.value.status == 301
    assert "redirects to https://redteam.example/api/v1/ingest/" in str(excinfo.value)
    # One request, to the URL given: the key went nowhere else.
    assert Redirecting.seen == ["/api/v1/ingest/"]
    assert slept == []


def test_oversized_batches_are_split_on_413(client: RedteamClient, settings: Any) -> None:
    settings.REDTEAM_MAX_ITEMS = 3
    client.batch_size = 100
    result = client.push(pieces=factories.conversation_pieces(10))
    assert result.stored == 10
    assert result.batches >= 4


def test_atomic_push_must_fit_one_batch(client: RedteamClient) -> None:
    client.batch_size = 2
    with pytest.raises(ValueError, match="one batch"):
        client.push(pieces=factories.conversation_pieces(4), atomic=True)


def test_push_uploads_local_media_once_and_links_it(
    client: RedteamClient, tmp_path: Path, fixtures_dir: Path
) -> None:
    image = tmp_path / "attack.png"
    data = (fixtures_dir / "pyrit-1.1" / "media" / "fixture_checkerboard.png").read_bytes()
    image.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    cid = str(uuid.uuid4())
    rows = [
        factories.piece(
            cid,
            0,
            "user",
            str(image),
            original_value_data_type="image_path",
            converted_value_data_type="image_path",
            original_value_sha256=digest,
            converted_value_sha256=digest,
        ),
        factories.piece(cid, 0, "user", "describe this image"),
    ]
    result = client.push(pieces=rows)
    assert result.media_uploaded == 1
    assert result.stored == 2
    blob = MediaBlob.objects.get(sha256=digest)
    piece = MessagePiece.objects.get(id=rows[0]["id"])
    assert piece.original_media_id == blob.sha256
    assert piece.original_value == str(image)
    # A second push finds the bytes on the server and uploads nothing.
    assert client.push(pieces=rows).media_uploaded == 0


def test_client_is_importable_without_django() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['django'] = None; sys.modules['rest_framework'] = None\n"
        "import redteam.client as c; print(c.RedteamClient.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "RedteamClient"


def test_an_oversize_string_rejects_only_its_item_and_the_rest_is_sent(
    client: RedteamClient, settings: Any
) -> None:
    settings.REDTEAM_MAX_STRING_CHARS = 2 * 1024 * 1024
    client.batch_size = 100
    cid = str(uuid.uuid4())
    rows = factories.conversation_pieces(10, cid)
    rows[7]["converted_value"] = "A" * 2_200_000  # an assistant response, its own message
    other = factories.conversation_pieces(2)
    scores = [factories.score(rows[1]), factories.score(other[1])]
    result_row = factories.attack_result(other[0]["conversation_id"])
    with pytest.raises(RedteamPushError) as excinfo:
        client.push(pieces=rows + other, scores=scores, attack_results=[result_row])
    error = excinfo.value
    assert [(r["kind"], r["index"], r["id"]) for r in error.rejected] == [
        ("message_pieces", 7, rows[7]["id"])
    ]
    assert "converted_value" in str(error.rejected[0]["errors"][0]["field"])
    # Everything else went in: 11 pieces, both scores and the attack result.
    assert error.result.stored == 14
    assert MessagePiece.objects.count() == 11
    assert client.get(f"attack-results/{result_row['attack_result_id']}/")


def test_split_batches_report_the_callers_indexes_in_every_list(
    client: RedteamClient, settings: Any
) -> None:
    settings.REDTEAM_MAX_ITEMS = 3  # every batch of 100 is refused whole (413) and split
    client.batch_size = 100
    rows = factories.conversation_pieces(6)
    rows[4]["role"] = "wizard"
    scores = [factories.score(rows[i]) for i in (1, 3, 5)]
    scores[2]["score_type"] = "wizard"
    with pytest.raises(RedteamPushError) as excinfo:
        client.push(pieces=rows, scores=scores)
    rejected = {(r["kind"], r["index"]) for r in excinfo.value.rejected}
    assert rejected == {("message_pieces", 4), ("scores", 2)}
    assert "message_pieces[4]" in str(excinfo.value)
    assert "scores[2]" in str(excinfo.value)
    assert excinfo.value.result.stored == 5 + 2


def test_an_item_over_the_body_limit_alone_is_reported_by_the_callers_index(
    client: RedteamClient, settings: Any
) -> None:
    settings.REDTEAM_MAX_BODY_BYTES = 6000
    client.batch_size = 100
    rows = factories.conversation_pieces(6)
    rows[3]["converted_value"] = "x" * 10_000  # its own message; no body can carry it
    with pytest.raises(RedteamPushError) as excinfo:
        client.push(pieces=rows)
    [rejected] = excinfo.value.rejected
    assert (rejected["kind"], rejected["index"], rejected["id"]) == (
        "message_pieces",
        3,
        rows[3]["id"],
    )
    assert rejected["errors"][0]["code"] == "too_large"
    assert MessagePiece.objects.count() == 5


def test_an_unserialisable_object_is_reported_after_the_rest_is_sent(
    client: RedteamClient,
) -> None:
    rows = factories.conversation_pieces(3)
    with pytest.raises(RedteamPushError) as excinfo:
        client.push(pieces=rows, scores=[object()])
    assert [(r["kind"], r["index"]) for r in excinfo.value.rejected] == [("scores", 0)]
    assert MessagePiece.objects.count() == 3


def test_nan_and_infinity_in_metadata_are_sent_as_pyrit_writes_them(
    client: RedteamClient,
) -> None:
    rows = factories.conversation_pieces(2)
    rows[1]["prompt_metadata"] = {"entropy": float("inf"), "floor": float("-inf")}
    score = factories.score(rows[1], score_metadata={"ratio": float("nan")})
    sent: list[bytes] = []
    real = client._request_once

    def spy(method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Any:
        if body and path.startswith("/api/v1/ingest/"):
            sent.append(body)
        return real(method, path, body, headers)

    client._request_once = spy  # type: ignore[method-assign]
    result = client.push(pieces=rows, scores=[score])
    assert b'"ratio":NaN' in sent[0]
    assert b'"entropy":Infinity' in sent[0]
    assert result.stored == 3
    back = client.get(f"scores/{score['id']}/")
    assert back["score_metadata"]["ratio"] != back["score_metadata"]["ratio"]  # NaN
    piece = client.get(f"message-pieces/{rows[1]['id']}/")
    assert piece["prompt_metadata"] == {"entropy": float("inf"), "floor": float("-inf")}


def test_nul_in_a_response_is_sent_as_it_is_and_stored(client: RedteamClient) -> None:
    rows = factories.conversation_pieces(4)
    rows[3]["converted_value"] = "before\x00after"
    result = client.push(pieces=rows)
    assert result.stored == 4
    assert client.get(f"message-pieces/{rows[3]['id']}/")["converted_value"] == "before\x00after"


def test_a_prepended_image_without_sha256_is_attached_after_push(
    client: RedteamClient, tmp_path: Path, fixtures_dir: Path
) -> None:
    data = (fixtures_dir / "pyrit-1.1" / "media" / "fixture_checkerboard.png").read_bytes()
    image = tmp_path / "history.png"
    image.write_bytes(data)
    cid = str(uuid.uuid4())
    rows = [
        factories.piece(
            cid,
            0,
            "user",
            str(image),
            original_value_data_type="image_path",
            converted_value_data_type="image_path",
            original_value_sha256=None,
            converted_value_sha256=None,
        ),
        factories.piece(cid, 1, "assistant", "a checkerboard"),
    ]
    result = client.push(pieces=rows)
    # one upload per side
    assert result.stored == 2
    assert result.media_uploaded == 2
    piece = MessagePiece.objects.get(id=rows[0]["id"])
    digest = hashlib.sha256(data).hexdigest()
    assert piece.original_media_id == digest
    assert piece.converted_media_id == digest
    assert piece.converted_value_sha256 is None  # PyRIT's row is kept as it was
    # A second push changes nothing.
    again = client.push(pieces=rows)
    assert again.unchanged == 2
    assert MessagePiece.objects.get(id=rows[0]["id"]).converted_media_id == digest
