"""A load-test client process: stdlib only (http.client), run under multiprocessing (spawn).

Each client pushes the whole corpus, in its own random order and batch sizes, so every message
is sent by several clients at once. Some requests are cut off on purpose (half the body sent,
or the response never read) and then retried, as a real client with a flaky network would.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

INGEST_PATH = "/api/v1/ingest/"
MAX_ATTEMPTS = 6


@dataclass
class ClientConfig:
    """What one client process does."""

    index: int
    host: str
    port: int
    key: str
    seed: int
    deadline: float  # time.monotonic() value after which no new batch is started
    max_batches: int
    batches: list[bytes]  # bodies in sending order, each holding whole messages (payloads.py)
    batch_items: list[int]  # items in each body
    batch_ids: list[list[str]]  # piece and score ids in each body
    cut_probability: float = 0.2


@dataclass
class ClientReport:
    """What one client saw; the test adds these up."""

    index: int
    requests: int = 0
    batches_done: int = 0
    items_acknowledged: int = 0  # items in acknowledged batches, repeats included
    cut_half_body: int = 0
    cut_before_response: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: int = 0
    bad_answers: list[str] = field(default_factory=list)
    sent_ids: set[str] = field(default_factory=set)
    gave_up: int = 0


def _headers(key: str, length: int) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Content-Type": "application/json",
        "Content-Length": str(length),
        # What the TLS-terminating proxy in front of gunicorn adds.
        "X-Forwarded-Proto": "https",
    }


def _send_cut(cfg: ClientConfig, body: bytes, half: bool) -> None:
    """Send a request and drop the connection: mid-body, or before reading the answer."""
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=60)
    try:
        conn.putrequest("POST", INGEST_PATH, skip_host=False, skip_accept_encoding=True)
        for name, value in _headers(cfg.key, len(body)).items():
            conn.putheader(name, value)
        conn.endheaders()
        conn.send(body[: len(body) // 2] if half else body)
        # Abortive close (RST) for the half-body case, like a killed process.
        if half and conn.sock is not None:
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00" * 2)
    finally:
        conn.close()


def _send(cfg: ClientConfig, body: bytes) -> tuple[int, dict[str, Any] | None]:
    conn = http.client.HTTPConnection(cfg.host, cfg.port, timeout=60)
    try:
        conn.request("POST", INGEST_PATH, body=body, headers=_headers(cfg.key, len(body)))
        response = conn.getresponse()
        raw = response.read()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, None
    finally:
        conn.close()


def run_client(cfg: ClientConfig) -> ClientReport:
    """Push batches until the deadline or max_batches; every started batch ends acknowledged."""
    rng = random.Random(cfg.seed)
    report = ClientReport(cfg.index)
    # The batches are already in this client's own random order (see test_concurrency.py).
    for n, batch_index in enumerate(range(len(cfg.batches))):
        if n >= cfg.max_batches or time.monotonic() >= cfg.deadline:
            break
        body = cfg.batches[batch_index]
        report.sent_ids.update(cfg.batch_ids[batch_index])
        cut = rng.random() < cfg.cut_probability
        acknowledged = False
        for attempt in range(MAX_ATTEMPTS):
            report.requests += 1
            if cut and attempt == 0:
                half = rng.random() < 0.5
                # The server may answer or reset first; the retry follows either way.
                with contextlib.suppress(OSError):
                    _send_cut(cfg, body, half)
                if half:
                    report.cut_half_body += 1
                else:
                    report.cut_before_response += 1
                continue
            try:
                status, answer = _send(cfg, body)
            except OSError as exc:
                report.bad_answers.append(f"connection error: {exc!r}")
                continue
            report.statuses[status] += 1
            if status >= 500:
                report.server_errors += 1
                continue
            expected = cfg.batch_items[batch_index]
            if (
                status != 200
                or answer is None
                or answer.get("errors") != 0
                or answer.get("stored", 0) + answer.get("unchanged", 0) != expected
            ):
                report.bad_answers.append(f"{status}: {json.dumps(answer)[:500]}")
                continue
            acknowledged = True
            break
        if acknowledged:
            report.batches_done += 1
            report.items_acknowledged += cfg.batch_items[batch_index]
        else:
            report.gave_up += 1
    return report
