"""Ingestion benchmark on PostgreSQL: HTTP batch ingest vs raw COPY, and single-message rates,
at a small and a large number of stored pieces.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/ingest.py

What it does, in one run on one machine:
1. (Re)creates the scratch database (its name must start with "bench"), migrates it, makes a
   user and an ingest API key, and starts gunicorn on 127.0.0.1 (DEBUG off).
2. Stores `--small` (10k) pieces over HTTP, then measures at that size:
   - single-message requests/s: one message (one piece) per request, as an attack loop
     sends them, from a few concurrent clients; the best of a few short bursts, since other
     load on the machine can only slow a burst down;
   - batch ingest: `--pieces` pieces through POST /api/v1/ingest/ in batches (bodies encoded
     beforehand, so the client's own JSON work is not timed), in pieces/s. Alternating with
     it, in rounds, the same rows are COPYed (already encoded as COPY text) into
     memory_messagepiece itself and rolled back (its indexes at its current size, no app
     logic): the raw COPY rate of this machine at this size, measured under the same load;
   - the busy core time of the whole machine (/proc/stat) during both, per piece and per
     request: what ingestion costs in cores, for docs/sizing.md; for batches also the part
     of it spent by PostgreSQL's processes and by gunicorn's (/proc/<pid>/stat), since the
     app tier scales out onto other machines and the primary database does not.
3. Fills the database up to `--large` (10M) stored pieces with COPY (bench/pages.py's loader:
   conversations, pieces, attack results, scores; VACUUM ANALYZE), and measures both again; with
   `--large-from DB` (what `make bench` does) it measures on a file copy of DB instead, the
   database bench/pages.py has just loaded with the same loader. Then both sizes exist at
   once, each served by its own gunicorn, and the single-message bursts of the two sizes take
   turns, so that a passing load on the machine weighs on both alike.
4. Prints the rates and the ratios: batch ingest vs raw COPY and vs PyRIT's own SQLite bulk
   insert (PYRIT_SQLITE_PIECES_PER_S, measured for issue 15 on this machine class), large vs
   small.

Budgets (DESIGN.md): batch ingest >= 40% of COPY; single-message and batch rates at the large
size within 20% of the rates at the small size. The exit status is 1 when a budget is missed
(after printing everything). Issue 15's targets (3x PyRIT: batch >= 18k pieces/s, single
messages >= 300 requests/s) are printed as met or not; they depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import io
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from _common import (
    DEFAULT_URL,
    ROOT,
    WORDS,
    describe_server,
    recreate_database,
    shared_buffers_bytes,
)

from memory.shapes import PIECE_VALUE_KEYS

PYTHON = sys.executable
ROT13 = {
    "class_name": "ROT13Converter",
    "class_module": "pyrit.converter.rot13_converter",
    "hash": "edd5b3f9a6739c78ea52ce7da50cb7d4094f3fc57b85a809da0c1da4ae82a073",
    "pyrit_version": "1.1.0",
    "word_selection_strategy": "AllWordsSelectionStrategy",
    "word_split_separator": " ",
    "supported_input_types": ["text"],
    "supported_output_types": ["text"],
}
PIECES_PER_CONVERSATION = 10
# PyRIT 1.x's own bulk insert of message pieces into its SQLite memory, measured for issue 15
# on this machine class (6.1k-6.7k pieces/s), and issue 15's targets: three times that.
PYRIT_SQLITE_PIECES_PER_S = 6_400
TARGET_BATCH_PIECES_PER_S = 18_000
TARGET_SINGLE_REQUESTS_PER_S = 300


# --- data --------------------------------------------------------------------------------


class PieceFactory:
    """Deterministic, realistic 1.x MessagePiece dicts: 10-piece user/assistant conversations."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = datetime(2026, 11, 22, tzinfo=UTC)

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(20, 60)))

    def piece(self, conversation_id: str, sequence: int) -> dict[str, Any]:
        """One piece; user turns went through a ROT13 converter."""
        role = "user" if sequence % 2 == 0 else "assistant"
        self.clock += timedelta(microseconds=self.rng.randint(500, 5000))
        original = self._text()
        converted = original.translate(_ROT13_TABLE) if role == "user" else original
        piece_id = self._uuid()
        return {
            "id": piece_id,
            "role": role,
            "conversation_id": conversation_id,
            "sequence": sequence,
            "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "original_value": original,
            "original_value_data_type": "text",
            "original_value_sha256": hashlib.sha256(original.encode()).hexdigest(),
            "converted_value": converted,
            "converted_value_data_type": "text",
            "converted_value_sha256": hashlib.sha256(converted.encode()).hexdigest(),
            "response_error": "none",
            "original_prompt_id": piece_id,
            "prompt_metadata": {"turn": sequence // 2 + 1} if role == "user" else {},
            "converter_identifiers": [ROT13] if role == "user" else [],
        }

    def pieces(self, n: int) -> list[dict[str, Any]]:
        """n pieces in whole conversations (n is rounded up to a multiple of 10)."""
        out: list[dict[str, Any]] = []
        while len(out) < n:
            conversation_id = self._uuid()
            out.extend(self.piece(conversation_id, s) for s in range(PIECES_PER_CONVERSATION))
        return out


_ROT13_TABLE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
    "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm",
)


def batches(items: Sequence[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Consecutive slices of `size` (pieces of one message always share a slice here)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


# --- environment -------------------------------------------------------------------------


def database_url() -> str:
    """DATABASE_URL, defaulting to the local bench database."""
    return os.environ.get("DATABASE_URL") or DEFAULT_URL


def server_env(url: str) -> dict[str, str]:
    """The environment of the Django processes: production-like settings on plain HTTP."""
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": url,
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-" + "x" * 40,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "LOG_LEVEL": "ERROR",
            "CONN_MAX_AGE": "600",
        }
    )
    return env


def manage(env: dict[str, str], *args: str) -> str:
    """Run manage.py and return its stdout."""
    done = subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class Server:
    """A gunicorn process serving the project on 127.0.0.1:port."""

    process: subprocess.Popen[bytes]
    port: int

    def stop(self) -> None:
        """Terminate gunicorn (the process this script started) and wait for it."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_server(env: dict[str, str], port: int, workers: int) -> Server:
    """Start gunicorn and wait until /health/ answers (bounded: 60 s)."""
    gunicorn = str(Path(PYTHON).parent / "gunicorn")
    process = subprocess.Popen(
        [
            gunicorn,
            "redteam.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--timeout",
            "300",
            "--log-level",
            "warning",
        ],
        env=env,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("gunicorn exited during startup")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health/")
            if conn.getresponse().status == 200:
                return Server(process, port)
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("gunicorn did not answer /health/ within 60 s")


# --- HTTP load ---------------------------------------------------------------------------


def busy_cpu_seconds() -> float:
    """CPU time this machine has spent busy (every process, every core) since boot, from
    /proc/stat: what a measured phase costs in core-seconds, whoever spent it (gunicorn,
    PostgreSQL, the load generator)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(app_pid: int) -> tuple[dict[int, float], dict[int, float]]:
    """CPU seconds so far of each PostgreSQL process on this machine and of each process of
    the gunicorn whose master is `app_pid` (the master and its workers), from /proc/<pid>/stat.

    Empty for PostgreSQL when the server runs elsewhere. A process that ends between two
    readings loses its time, one that starts counts from zero: connections here last the run.
    """
    database: dict[int, float] = {}
    app: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                line = stat.read()
        except OSError:  # ended while listed
            continue
        comm = line[line.index("(") + 1 : line.rindex(")")]
        # After the command: state, ppid, ... utime and stime are fields 14 and 15 of stat(5).
        rest = line[line.rindex(")") + 2 :].split()
        seconds = (int(rest[11]) + int(rest[12])) / tick
        if comm == "postgres":
            database[int(name)] = seconds
        elif int(name) == app_pid or int(rest[1]) == app_pid:
            app[int(name)] = seconds
    return database, app


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


@dataclass
class Posted:
    """What one post_all call did: wall seconds, items stored, busy core-seconds of the
    machine, and of those the core-seconds of PostgreSQL and of the app (gunicorn)."""

    seconds: float
    stored: int
    cpu: float
    database_cpu: float
    app_cpu: float


def post_all(site: Site, bodies: Sequence[bytes], clients: int) -> Posted:
    """POST every body to the site's /api/v1/ingest/ from `clients` keep-alive connections.

    Any non-200 answer or rejected item aborts the run.
    """
    work: queue.Queue[bytes] = queue.Queue()
    for body in bodies:
        work.put(body)
    stored = [0] * clients
    errors: list[str] = []
    port, app_pid = site.server.port, site.server.process.pid
    headers = {"Authorization": f"Bearer {site.key}", "Content-Type": "application/json"}

    def worker(slot: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        while not errors:
            try:
                body = work.get_nowait()
            except queue.Empty:
                break
            conn.request("POST", "/api/v1/ingest/", body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            if response.status != 200:
                errors.append(f"HTTP {response.status}: {data[:500]!r}")
                break
            stored[slot] += json.loads(data)["stored"]
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    database, app = process_cpu_seconds(app_pid)
    start, start_cpu = time.perf_counter(), busy_cpu_seconds()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - start, busy_cpu_seconds() - start_cpu
    database_after, app_after = process_cpu_seconds(app_pid)
    if errors:
        raise SystemExit(f"ingest failed: {errors[0]}")
    return Posted(
        elapsed, sum(stored), cpu, _spent(database, database_after), _spent(app, app_after)
    )


def single_message_bodies(factory: PieceFactory, n: int) -> list[bytes]:
    """n request bodies holding one message each, conversation after conversation."""
    return [
        json.dumps({"message_pieces": [p]}, separators=(",", ":")).encode()
        for p in factory.pieces(n)[:n]
    ]


def batch_bodies(pieces: Sequence[dict[str, Any]], size: int) -> list[bytes]:
    """Pre-encoded batch bodies (the client's JSON work is not part of the measurement)."""
    return [
        json.dumps({"message_pieces": b}, separators=(",", ":")).encode()
        for b in batches(pieces, size)
    ]


@dataclass
class Site:
    """One database being measured: its URL, the bench key and the gunicorn serving it."""

    url: str
    key: str
    server: Server


def single_rates(
    args: argparse.Namespace, sites: Sequence[Site], bodies: Sequence[Sequence[bytes]]
) -> list[tuple[float, float]]:
    """(requests/s, core-ms per request) of one-message requests at each site: the best of
    several short bursts, the sites' bursts taking turns.

    Other processes on the machine only ever slow a burst down, so the best burst is the
    closest estimate of what the server itself can do at this table size; taking turns puts
    the sizes compared under the same passing load (as the batch rounds do with COPY).
    """
    bursts = max(1, args.bursts)
    best = [(0.0, 0.0) for _ in sites]
    for b in range(bursts):
        for i, (site, requests) in enumerate(zip(sites, bodies, strict=True)):
            size = max(1, len(requests) // bursts)
            chunk = requests[b * size : (b + 1) * size]
            posted = post_all(site, chunk, args.clients)
            if posted.stored != len(chunk):
                raise SystemExit(f"single-message requests stored {posted.stored} of {len(chunk)}")
            rate = posted.stored / posted.seconds
            if rate > best[i][0]:
                best[i] = (rate, posted.cpu * 1000 / posted.stored)
    return best


# --- COPY baseline -----------------------------------------------------------------------


def _copy_text(value: Any) -> str:
    if value is None:
        return "\\N"
    text = value if isinstance(value, str) else json.dumps(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


COPY_COLUMNS = (
    "id",
    "conversation_id",
    "sequence",
    "role",
    "timestamp",
    *PIECE_VALUE_KEYS,
    "pyrit_version",
    "source_shape",
    "ingested_at",
    "position",
)


def copy_buffer(pieces: Sequence[dict[str, Any]]) -> bytes:
    """The pieces as PostgreSQL COPY text for COPY_COLUMNS, built before timing."""
    now = datetime.now(UTC).isoformat()
    lines = io.StringIO()
    for p in pieces:
        # Every benchmark message has one piece, so each is first in its message.
        row = [p[c] for c in COPY_COLUMNS[:14]] + [None, "1.x", now, 0]
        lines.write("\t".join(_copy_text(v) for v in row))
        lines.write("\n")
    return lines.getvalue().encode()


class CopyBaseline:
    """Raw COPY of the same rows into memory_messagepiece itself, rolled back: the table's own
    indexes at its current size and the same server state, no app logic."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url)

    def copy(self, pieces: Sequence[dict[str, Any]]) -> tuple[float, int]:
        """COPY the rows (encoded before timing), then roll back; (seconds, rows copied)."""
        data = copy_buffer(pieces)
        start = time.perf_counter()
        with self.conn.cursor() as cur:
            columns = ", ".join(COPY_COLUMNS)
            with cur.copy(f"COPY memory_messagepiece ({columns}) FROM STDIN") as copy:
                for offset in range(0, len(data), 1 << 20):
                    copy.write(data[offset : offset + (1 << 20)])
            elapsed = time.perf_counter() - start
            copied = cur.rowcount
        self.conn.rollback()
        return elapsed, copied

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def stored_pieces(url: str) -> int:
    """Rows in memory_messagepiece (after an ANALYZE, so plans see the current size)."""
    with psycopg.connect(url) as conn:
        conn.execute("ANALYZE")
        row = conn.execute("SELECT count(*) FROM memory_messagepiece").fetchone()
    return int(row[0]) if row else 0


FILL_SCRIPT = """
import django
django.setup()
from pages import PIECES_PER_CONVERSATION, Generator, _store_identifiers, load
load(Generator(seed=31, ids=_store_identifiers()), {n} // PIECES_PER_CONVERSATION)
"""


def copy_fill(env: dict[str, str], pieces: int) -> None:
    """COPY-load `pieces` more pieces with bench/pages.py's loader (in a child process)."""
    if pieces <= 0:
        return
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    child = {**env, "DJANGO_SETTINGS_MODULE": "redteam.settings", "PYTHONPATH": path}
    done = subprocess.run(
        [PYTHON, "-c", FILL_SCRIPT.format(n=pieces)],
        env=child,
        cwd=ROOT / "bench",
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"COPY fill failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def warn_if_undersized(url: str) -> None:
    """Say so when shared_buffers cannot hold the piece and conversation tables' indexes: every
    insert then reads and rewrites index pages through the OS, and the large size measures a
    server sized below docs/sizing.md rather than the app."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT pg_indexes_size('memory_messagepiece') + pg_indexes_size('memory_conversation')"
        ).fetchone()
    indexes = int(row[0]) if row else 0
    buffers = shared_buffers_bytes(url)
    if buffers < indexes:
        print(
            f"  note: shared_buffers ({buffers / 1024**2:,.0f} MB) is smaller than the piece and "
            f"conversation indexes ({indexes / 1024**2:,.0f} MB); see docs/sizing.md",
            flush=True,
        )


def prewarm_indexes(url: str) -> None:
    """Read the big tables' indexes into shared_buffers (pg_prewarm, when the server has it):
    a file copy starts with a cold cache, a server in use has them in memory."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        except psycopg.Error as error:
            print(f"  no pg_prewarm ({error.diag.message_primary}); measuring from a cold cache")
            return
        conn.execute(
            "SELECT pg_prewarm(i.indexrelid) FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname IN ('memory_messagepiece', 'memory_conversation')"
        )


# The user whose key pushes at both sizes: an ordinary member of `bench`, not the superuser
# bench/pages.py signs in as (the large size is a copy of its database), so that both sizes
# authenticate and scope their requests alike.
WRITER = "bench-writer"


def bench_writer(env: dict[str, str]) -> str:
    """A user, the `bench` operation and an ingest API key for it; returns the key.

    The measured pieces name no operation: they land in the key's default, `bench`.
    """
    manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        f"User.objects.get_or_create(username={WRITER!r})",
    )
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        named = conn.execute("SELECT 1 FROM redteam_operation WHERE name = 'bench'").fetchone()
    if named is None:  # a copied database may hold it already
        manage(env, "create_operation", "bench")
    manage(env, "grant", "--user", WRITER, "--operation", "bench", "--role", "reviewer")
    return manage(
        env, "create_api_key", "--user", WRITER, "--scopes", "ingest", "--operations", "bench"
    ).strip()


def clone_database(url: str, source: str) -> str:
    """Copy database `source` to `<url's database>_large` (replaced if present; file copy,
    so a 10M-piece database takes a minute, not a reload) and return the copy's URL."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/") + "_large"
    copy_url = urlunsplit(parts._replace(path="/" + name))
    print(f"copying database {source} to {name} ...", flush=True)
    recreate_database(copy_url, template=source)
    return copy_url


@dataclass
class BatchRate:
    """What the batch rounds measured at one size: HTTP pieces/s, raw COPY rows/s, and the busy
    core-µs per batch-ingested piece of the whole machine and, of those, of PostgreSQL's
    processes and of gunicorn's."""

    pieces_per_s: float
    copy_rows_per_s: float
    core_us: float
    database_us: float
    app_us: float


def batch_rate(args: argparse.Namespace, site: Site, pieces: Sequence[dict[str, Any]]) -> BatchRate:
    """The batch rates over the same rows, HTTP and raw COPY alternating in rounds so that
    load from anything else on the machine weighs on both alike."""
    baseline = CopyBaseline(site.url)
    http_seconds = copy_seconds = cpu = database_cpu = app_cpu = 0.0
    stored = copied = 0
    rounds = max(1, args.rounds)
    per_round = -(-len(pieces) // rounds)
    for r in range(rounds):
        chunk = pieces[r * per_round : (r + 1) * per_round]
        seconds, rows = baseline.copy(chunk)
        copy_seconds += seconds
        copied += rows
        posted = post_all(site, batch_bodies(chunk, args.batch_size), args.clients)
        http_seconds += posted.seconds
        stored += posted.stored
        cpu += posted.cpu
        database_cpu += posted.database_cpu
        app_cpu += posted.app_cpu
    baseline.close()
    if stored != len(pieces) or copied != len(pieces):
        raise SystemExit(f"stored {stored} and copied {copied} of {len(pieces)} pieces")
    return BatchRate(
        stored / http_seconds,
        copied / copy_seconds,
        cpu * 1e6 / stored,
        database_cpu * 1e6 / stored,
        app_cpu * 1e6 / stored,
    )


# --- main ----------------------------------------------------------------------------------


@dataclass
class Rates:
    """What one size measured: stored pieces, single-message requests/s and core-ms per
    request, and the batch rates."""

    at: int
    single: float
    single_cpu: float
    batch: BatchRate


def main(argv: Sequence[str] | None = None) -> int:
    """Run every phase and print the table; exit 1 if a budget is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pieces", type=int, default=50_000, help="batch pieces per size")
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 2))
    parser.add_argument("--clients", type=int, default=(os.cpu_count() or 2))
    parser.add_argument("--small", type=int, default=10_000, help="first size (stored pieces)")
    parser.add_argument("--large", type=int, default=10_000_000, help="second size")
    parser.add_argument("--single-requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5, help="COPY/HTTP alternations")
    parser.add_argument("--bursts", type=int, default=5, help="single-message bursts (best)")
    parser.add_argument("--port", type=int, default=8195)
    parser.add_argument(
        "--large-from",
        metavar="DATABASE",
        help="measure the large size on a copy of this database (e.g. the one bench/pages.py "
        "just loaded) instead of COPY-loading up to --large",
    )
    args = parser.parse_args(argv)

    url = database_url()
    print(f"database: {urlsplit(url)._replace(netloc=urlsplit(url).hostname or '').geturl()}")
    recreate_database(url)
    print(f"server: {describe_server(url)}")
    env = server_env(url)
    manage(env, "migrate", "--noinput", "-v0")
    key = bench_writer(env)

    factory = PieceFactory(seed=20261122)
    print("generating pieces ...", flush=True)
    filler_small = factory.pieces(args.small)
    measured = {size: factory.pieces(args.pieces) for size in ("small", "large")}
    single = {size: single_message_bodies(factory, args.single_requests) for size in measured}
    bodies_small = batch_bodies(filler_small, args.batch_size)

    results: dict[str, Rates] = {}
    servers: list[Server] = []
    try:
        servers.append(start_server(env, args.port, args.workers))
        small_site = Site(url, key, servers[-1])
        post_all(small_site, bodies_small, args.clients)
        at_small = stored_pieces(url)
        if args.large_from:
            # Both sizes exist at once (the large one a copy of another database): their
            # single-message bursts take turns, each size on its own server.
            large_url = clone_database(url, args.large_from)
            prewarm_indexes(large_url)
            large_env = server_env(large_url)
            manage(large_env, "migrate", "--noinput", "-v0")
            large_key = bench_writer(large_env)
            servers.append(start_server(large_env, args.port + 1, args.workers))
            large_site = Site(large_url, large_key, servers[-1])
            at_large = stored_pieces(large_url)
            print(f"measuring at {at_small:,} and {at_large:,} stored pieces ...", flush=True)
            warn_if_undersized(large_url)
            singles = single_rates(
                args, [small_site, large_site], [single["small"], single["large"]]
            )
        else:
            print(f"measuring at {at_small:,} stored pieces ...", flush=True)
            singles = single_rates(args, [small_site], [single["small"]])
        batch = batch_rate(args, small_site, measured["small"])
        results["small"] = Rates(at_small, *singles[0], batch)
        if not args.large_from:
            servers.pop().stop()
            target = args.large - stored_pieces(url) - args.pieces - args.single_requests
            print(f"COPY-loading {max(0, target):,} pieces ...", flush=True)
            copy_fill(env, target)
            servers.append(start_server(env, args.port, args.workers))
            large_site = Site(url, key, servers[-1])
            at_large = stored_pieces(url)
            print(f"measuring at {at_large:,} stored pieces ...", flush=True)
            warn_if_undersized(url)
            singles.extend(single_rates(args, [large_site], [single["large"]]))
        batch = batch_rate(args, large_site, measured["large"])
        results["large"] = Rates(at_large, *singles[-1], batch)
    finally:
        for server in servers:
            server.stop()

    small, large = results["small"], results["large"]
    ratio = min(r.batch.pieces_per_s / r.batch.copy_rows_per_s for r in (small, large))
    single_flat = large.single / small.single
    batch_flat = large.batch.pieces_per_s / small.batch.pieces_per_s
    worst_batch = min(small.batch.pieces_per_s, large.batch.pieces_per_s)
    worst_single = min(small.single, large.single)

    def line(label: str, value: str) -> None:
        print(f"{label:<62} {value:>12}")

    print()
    line("measure", "value")
    print("-" * 75)
    for r in (small, large):
        copy_rate, http_rate = r.batch.copy_rows_per_s, r.batch.pieces_per_s
        line(f"raw COPY into memory_messagepiece at {r.at:,} pieces", f"{copy_rate:,.0f} /s")
        line(f"HTTP batch ingest at {r.at:,} stored pieces", f"{http_rate:,.0f} /s")
    print(
        f"  ({args.batch_size} pieces per request, {args.clients} clients, {args.workers} workers)"
    )
    line("batch ingest / COPY at the same size, worst (budget >= 40%)", f"{ratio:.1%}")
    line("batch ingest, large / small (budget >= 80%)", f"{batch_flat:.1%}")
    line(
        f"batch ingest / PyRIT SQLite bulk insert ({PYRIT_SQLITE_PIECES_PER_S:,}/s)",
        f"{worst_batch / PYRIT_SQLITE_PIECES_PER_S:.2f}x",
    )
    for r in (small, large):
        line(f"single-message requests at {r.at:,} stored pieces", f"{r.single:,.0f} /s")
    print(f"  (one message per request, {args.clients} clients; best of {args.bursts} bursts)")
    line("single-message rate, large / small (budget >= 80%)", f"{single_flat:.1%}")
    # Sizing (docs/sizing.md): what a piece costs in busy core time, every process counted.
    costly = max(small, large, key=lambda r: r.batch.core_us).batch
    batch_cpu = costly.core_us
    single_cpu = max(small.single_cpu, large.single_cpu)
    line("batch ingest: core-µs per piece (server + database)", f"{batch_cpu:,.0f}")
    line("  pieces/s per busy core", f"{1e6 / batch_cpu:,.0f}")
    # Where a piece's core time goes: the app tier scales out onto more machines, the primary
    # database does not, so its share sets what one database machine can take.
    line(
        "  of which PostgreSQL / gunicorn (core-µs)",
        f"{costly.database_us:,.0f} / {costly.app_us:,.0f}",
    )
    if costly.database_us > 0:
        line(
            "  pieces/s per busy database core (gunicorn elsewhere)",
            f"{1e6 / costly.database_us:,.0f}",
        )
    line("single messages: core-ms per request", f"{single_cpu:,.2f}")
    line("  requests/s per busy core", f"{1000 / single_cpu:,.0f}")
    cores = TARGET_BATCH_PIECES_PER_S * batch_cpu / 1e6
    line(f"  cores for {TARGET_BATCH_PIECES_PER_S:,} batch pieces/s at this cost", f"{cores:.1f}")
    met = worst_batch >= TARGET_BATCH_PIECES_PER_S
    line(
        f"target: batch >= {TARGET_BATCH_PIECES_PER_S:,}/s (3x PyRIT)", "met" if met else "not met"
    )
    met = worst_single >= TARGET_SINGLE_REQUESTS_PER_S
    line(
        f"target: single messages >= {TARGET_SINGLE_REQUESTS_PER_S}/s", "met" if met else "not met"
    )
    ok = ratio >= 0.40 and single_flat >= 0.80 and batch_flat >= 0.80
    print("budgets: " + ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
