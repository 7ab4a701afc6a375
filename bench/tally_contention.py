"""Concurrent writers and the dashboard's tallies: do ingests queue on popular tally rows?

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_tallies .venv/bin/python \\
        bench/tally_contention.py

8 processes each push the same number of attack-result batches through the ingestion service
at once, every result in one operation with one attack class and one target, so every batch
increments the same popular cells. Three runs on one fresh database: tallies off (the
receiver disconnected: the ingest alone), tallies with one shard (every writer on the same
rows, as a plain counter table would be), and tallies as shipped (the lowest free of
SHARDS shards). Prints wall time, batches per second, and the time writers spent waiting for
a lock on a tally row (from pg_stat_activity samples), then checks the kept tallies against a
recount.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from _common import django_on_scratch_database

CLIENTS = 8
BATCHES = 20
BATCH = 50


def _result(rng: random.Random, atomic: dict[str, Any]) -> dict[str, Any]:
    return {
        "conversation_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "objective": "contend",
        "attack_result_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "atomic_attack_identifier": atomic,
        "last_response": None,
        "last_score": None,
        "executed_turns": 1,
        "execution_time_ms": 10,
        "outcome": rng.choice(("success", "failure")),
        "outcome_reason": None,
        "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "related_conversations": [],
        "metadata": {},
        "labels": {"operation": "contention"},
        "targeted_harm_categories": ["violence"],
        "error_message": None,
        "error_type": None,
        "error_traceback": None,
        "retry_events": [],
        "total_retries": 0,
        "attribution_parent_id": None,
        "attribution_data": None,
    }


def _atomic() -> dict[str, Any]:
    from redteam.core.identity import ComponentIdentifier as CI

    target = CI("OpenAIChatTarget", "pyrit.prompt_target", {"model_name": "gpt-4o"})
    strategy = CI(
        "PromptSendingAttack", "pyrit.executor.attack", children={"objective_target": target}
    )
    technique = CI(
        "AttackTechnique", "pyrit.scenario.core.attack_technique", children={"attack": strategy}
    )
    return CI(
        "AtomicAttack",
        "pyrit.scenario.core.atomic_attack",
        children={"attack_technique": technique, "seed_identifiers": []},
    ).model_dump()


def _writer(args: tuple[str, int, int, Any, Any]) -> float:
    """One client process: wait for the start, push its batches; seconds spent."""
    mode, seed, batches, start, done = args
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "redteam.settings")
    import django

    django.setup()
    from memory.hooks import results_changed
    from redteam.site.ingest import ingest_batch
    from scoring import signals, tallies

    if mode == "off":
        results_changed.disconnect(signals._retally)
    elif mode == "one shard":
        tallies.SHARDS = 1
    rng = random.Random(seed)
    atomic = _atomic()
    start.wait()
    began = time.perf_counter()
    for _ in range(batches):
        report = ingest_batch({"attack_results": [_result(rng, atomic) for _ in range(BATCH)]})
        assert all(o.status == "stored" for o in report.outcomes)
    done.wait()
    return time.perf_counter() - began


def _sample_waits(stop: Any, out: Any) -> None:
    """Count pg_stat_activity samples of backends waiting on a lock while on a tally row."""
    import psycopg

    waits = samples = 0
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        while not stop.is_set():
            rows = conn.execute(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()"
            ).fetchall()
            waits += sum(1 for (q,) in rows if "outcometally" in (q or ""))
            samples += 1
            time.sleep(0.01)
    out.put((waits, samples))


def run(mode: str, clients: int, batches: int) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    manager = ctx.Manager()
    start, done = manager.Barrier(clients + 1), manager.Barrier(clients + 1)
    stop, out = ctx.Event(), ctx.Queue()
    sampler = ctx.Process(target=_sample_waits, args=(stop, out))
    sampler.start()
    with ctx.Pool(clients) as pool:
        seeds = [random.randrange(2**32) for _ in range(clients)]
        pending = pool.map_async(_writer, [(mode, s, batches, start, done) for s in seeds])
        start.wait()
        began = time.perf_counter()
        done.wait()
        wall = time.perf_counter() - began
        pending.get()
    stop.set()
    waits, samples = out.get()
    sampler.join()
    manager.shutdown()
    return {
        "mode": mode,
        "wall_s": wall,
        "batches_per_s": clients * batches / wall,
        "results_per_s": clients * batches * BATCH / wall,
        "lock_wait_samples": waits,
        "samples": samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--batches", type=int, default=BATCHES)
    args = parser.parse_args()
    django_on_scratch_database("bench/tally_contention.py")
    from redteam.site.ingest import ingest_batch
    from scoring.models import OutcomeTally
    from scoring.tallies import SHARDS, rebuild_tallies, recounted_totals, tally_totals

    # Identifiers and the operation exist before the clients start (no first-insert queue).
    ingest_batch({"attack_results": [_result(random.Random(0), _atomic())]})
    rows = []
    for mode in ("off", "one shard", f"{SHARDS} shards"):
        rows.append(run(mode, args.clients, args.batches))
        r = rows[-1]
        print(
            f"{r['mode']:<12} {r['wall_s']:6.2f} s  {r['batches_per_s']:6.1f} batches/s  "
            f"{r['results_per_s']:7.0f} results/s  writers waiting on a tally row in "
            f"{r['lock_wait_samples']} of {r['samples']} samples",
            flush=True,
        )
        if mode == "off":
            rebuild_tallies()  # the "off" run's results, counted before the next runs
    shards = sorted(set(OutcomeTally.objects.values_list("shard", flat=True)))
    same = tally_totals() == recounted_totals()
    print(f"shards used: {shards}; kept tallies equal a recount: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
