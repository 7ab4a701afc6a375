"""Concurrency without loss: 8 client processes push overlapping batches at a real gunicorn.

Every client sends the whole corpus in its own random order and batch sizes, so each message
arrives several times at once through different workers; one request in five is cut off
(half the body sent, or the answer never read) and retried. Afterwards the database must hold
exactly the distinct pieces, scores and attack results sent: none missing, none twice, no
message missing a piece, conversation summaries matching their pieces, the dashboard's tallies
equal to a recount (each result counted once), and no 5xx answer along the way.

Bounded: at most RELIABILITY_SECONDS (default 20 s) of sending and a fixed number of batches.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from django.db.models import Count

from memory.models import AttackResult, Conversation, MessagePiece, Score
from scoring.models import OutcomeTally
from scoring.tallies import recounted_totals, tally_totals
from tests.reliability.conftest import ServedApp
from tests.reliability.loadclient import ClientConfig, ClientReport, run_client
from tests.reliability.payloads import Message, batch_body, make_corpus, scorer_template

pytestmark = [pytest.mark.reliability, pytest.mark.django_db(transaction=True)]

CLIENTS = 8
SECONDS = float(os.environ.get("RELIABILITY_SECONDS", "20"))
MAX_BATCHES = 60


def _client_batches(
    corpus: list[Message], hot: list[Message], seed: int
) -> tuple[list[bytes], list[int], list[list[str]]]:
    """For one client: first the hot batch (every client sends it at once), then the rest of
    the corpus, shuffled and cut into batches of 2-10 whole messages."""
    rng = random.Random(seed)
    order = [m for m in corpus if m not in hot]
    rng.shuffle(order)
    chunks = [hot]
    i = 0
    while i < len(order):
        chunks.append(order[i : i + rng.randint(2, 10)])
        i += len(chunks[-1])
    bodies: list[bytes] = []
    sizes: list[int] = []
    ids: list[list[str]] = []
    for chunk in chunks:
        bodies.append(batch_body(chunk))
        item_ids = (
            [p["id"] for m in chunk for p in m.pieces]
            + [s["id"] for m in chunk for s in m.scores]
            + [r["attack_result_id"] for m in chunk for r in m.results]
        )
        sizes.append(len(item_ids))
        ids.append(item_ids)
    return bodies, sizes, ids


def test_concurrent_overlapping_batches_with_cut_connections_lose_and_duplicate_nothing(
    served: ServedApp, fixtures_dir: Path
) -> None:
    seed = random.SystemRandom().randrange(2**32)
    corpus = make_corpus(
        scorer_template(fixtures_dir), conversations=40, turns=6, seed=seed, results=True
    )
    # Eight messages that every client sends first, all at the same moment: guaranteed overlap
    # (the rest overlaps by chance, as each client pushes the whole corpus in its own order).
    hot = corpus[:8]
    hot_items = sum(len(m.pieces) + len(m.scores) + len(m.results) for m in hot)
    _, key = served.make_key("ingest", "read")
    log_start = len(served.log)
    deadline = time.monotonic() + SECONDS
    configs = []
    for index in range(CLIENTS):
        bodies, sizes, ids = _client_batches(corpus, hot, seed + index + 1)
        configs.append(
            ClientConfig(
                index=index,
                host=served.host,
                port=served.port,
                key=key,
                seed=seed + 100 + index,
                deadline=deadline,
                max_batches=MAX_BATCHES,
                batches=bodies,
                batch_items=sizes,
                batch_ids=ids,
            )
        )
    # spawn: the clients are plain stdlib processes, sharing nothing with this Django process.
    pushed_at = time.monotonic()
    with multiprocessing.get_context("spawn").Pool(CLIENTS) as pool:
        reports: list[ClientReport] = pool.map_async(run_client, configs).get(timeout=SECONDS + 120)
    push_seconds = round(time.monotonic() - pushed_at, 2)

    sent = set().union(*(r.sent_ids for r in reports))
    piece_by_id = {p["id"]: (m, p) for m in corpus for p in m.pieces}
    sent_pieces = {i for i in sent if i in piece_by_id}
    result_ids = {r["attack_result_id"] for m in corpus for r in m.results}
    sent_results = sent & result_ids
    sent_scores = sent - sent_pieces - sent_results

    alias = served.alias
    stored_piece_rows = list(
        MessagePiece.objects.using(alias).values_list("id", "conversation_id", "sequence")
    )
    stored_score_rows = list(Score.objects.using(alias).values_list("id", flat=True))
    stored_result_ids = [
        str(r) for r in AttackResult.objects.using(alias).values_list("pk", flat=True)
    ]
    # The dashboard's tallies, kept by each ingest under concurrent batches and retries,
    # equal a recount: no result lost or counted twice (the "all" cells count each once).
    kept = tally_totals(using=alias)
    recounted = recounted_totals(using=alias)
    tallied_results = sum(n for k, n in kept.items() if k[0] == "all" and k[2] == "all")
    shards_used = len(set(OutcomeTally.objects.using(alias).values_list("shard", flat=True)))
    stored_piece_ids = [str(row[0]) for row in stored_piece_rows]
    stored_score_ids = [str(s) for s in stored_score_rows]
    duplicates = (len(stored_piece_ids) - len(set(stored_piece_ids))) + (
        len(stored_score_ids) - len(set(stored_score_ids))
    )

    # Whole messages only: every stored (conversation, sequence) has exactly its pieces.
    stored_by_message: dict[tuple[str, int], set[str]] = defaultdict(set)
    for piece_id, conversation_id, sequence in stored_piece_rows:
        stored_by_message[(str(conversation_id), sequence)].add(str(piece_id))
    expected_by_message = {
        (m.conversation_id, m.sequence): {p["id"] for p in m.pieces}
        for m in corpus
        if m.pieces[0]["id"] in sent
    }
    half_written = [k for k, v in stored_by_message.items() if v != expected_by_message.get(k)]

    # Summary columns, kept by the ingestion service under concurrent batches, match the rows.
    actual_counts = {
        row["conversation_id"]: (row["pieces"], row["messages"])
        for row in MessagePiece.objects.using(alias)
        .values("conversation_id")
        .annotate(pieces=Count("id"), messages=Count("sequence", distinct=True))
    }
    summaries = {
        c.conversation_id: (c.piece_count, c.message_count)
        for c in Conversation.objects.using(alias).only(
            "conversation_id", "piece_count", "message_count"
        )
    }

    statuses: Counter[int] = Counter()
    for r in reports:
        statuses.update(r.statuses)
    figures: dict[str, Any] = {
        "clients": CLIENTS,
        "gunicorn_workers": served.workers,
        "database": served.vendor,
        "requests_sent": sum(r.requests for r in reports),
        "batches_acknowledged": sum(r.batches_done for r in reports),
        "items_pushed": sum(r.items_acknowledged for r in reports),
        "cut_half_body": sum(r.cut_half_body for r in reports),
        "cut_before_response": sum(r.cut_before_response for r in reports),
        "statuses": dict(statuses),
        "distinct_items_sent": len(sent),
        "items_stored": len(stored_piece_ids) + len(stored_score_ids),
        "pieces_stored": len(stored_piece_ids),
        "scores_stored": len(stored_score_ids),
        "duplicates": duplicates,
        "server_errors_5xx": sum(r.server_errors for r in reports),
        "half_written_messages": len(half_written),
        "results_stored": len(stored_result_ids),
        "results_tallied": tallied_results,
        "tally_shards_used": shards_used,
        "push_seconds": push_seconds,
    }
    print("\nreliability figures:", json.dumps(figures, sort_keys=True))

    bad = [a for r in reports for a in r.bad_answers]
    assert figures["server_errors_5xx"] == 0, bad[:5]
    assert bad == [], bad[:5]
    assert sum(r.gave_up for r in reports) == 0
    assert served.alive(), "".join(served.log[-50:])
    assert figures["cut_half_body"] > 0
    assert figures["cut_before_response"] > 0
    # Overlap really happened: every client had the hot batch acknowledged.
    assert all(r.batches_done >= 1 for r in reports)
    assert figures["items_pushed"] >= len(sent) + (CLIENTS - 1) * hot_items
    assert set(stored_piece_ids) == sent_pieces
    assert set(stored_score_ids) == sent_scores
    assert sorted(stored_result_ids) == sorted(sent_results)
    assert kept == recounted
    assert tallied_results == len(sent_results)
    assert duplicates == 0
    assert half_written == []
    assert set(summaries) == {m.conversation_id for m in corpus if m.pieces[0]["id"] in sent}
    assert summaries == actual_counts
    new_log = served.log[log_start:]
    worker_crashes = [line for line in new_log if "Traceback" in line or "TIMEOUT" in line]
    assert worker_crashes == []
