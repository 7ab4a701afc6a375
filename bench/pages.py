"""Review-page benchmark on PostgreSQL: server time and queries at 10k and at 10M pieces.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/pages.py

What it does, in one run on one machine:
1. (Re)creates the scratch database (its name must start with "bench") and migrates it.
2. Bulk-loads synthetic memory with COPY (10-piece user/assistant conversations, one attack
   result and one score per conversation, a few dozen identifiers, labels and harm
   categories), filling every summary column the ingestion service maintains, then VACUUM
   ANALYZE (the load's seconds are timed before it).
   The larger scale loads from one process per CPU (`--jobs`).
3. At 10k pieces and again at 10M pieces, recounts the dashboard tallies of what COPY loaded
   (ingestion keeps them; COPY bypasses it), pushes a large batch of attack results through
   the ingestion service, prints the database's size per piece, and right after the push
   times every page a reviewer or API client reads (lists, filters, full-text search,
   conversation, attack results, objective, review queues, dashboard, scorer pages, live
   polls, API reads) through Django's test Client, in interleaved rounds after a warm-up:
   median server wall time and CPU time, database time (sum over the queries, client round
   trips included) and query count. Every scale opens the same conversation.
4. Prints a table and the 10M/10k ratios. Budget (DESIGN.md): for every page, the same
   query count at both scales, HTTP 200, and a ratio under 2; exit status 1 when missed.
The database is left in place: `make bench` measures bench/ingest.py's large size on a copy.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import WORDS as BASE_WORDS
from _common import describe_server, django_on_scratch_database

PIECES_PER_CONVERSATION = 10
SCALES = (10_000, 10_000_000)
BUDGET_RATIO = 2.0
# Every timed page carries the budget; the list: list, filtered list, full-text
# search, conversation, attack results, review queue, dashboard, scorer and objective pages,
# API reads (and the live polls, home and the review pages besides).
# Results pushed through the ingestion service right before the timings: the dashboard must
# stay flat right after a large push (its counts are kept by each ingest, not recounted).
PUSH_RESULTS = 5_000
WORDS = [
    *BASE_WORDS,
    "safe",
    "vault",
    "combination",
    "dial",
    "wheel",
    "pack",
    "gate",
    "fence",
    "lever",
    "latch",
    "bolt",
    "strike",
    "plate",
    "novel",
    "character",
    "story",
    "thriller",
    "heist",
    "guard",
    "alarm",
    "camera",
    "sensor",
    "badge",
    "card",
    "reader",
    "sorry",
    "cannot",
    "help",
    "with",
    "that",
    "request",
    "instead",
    "here",
    "is",
    "general",
    "information",
    "about",
    "history",
    "mechanism",
    "design",
    "manufacturer",
    "standard",
    "grade",
    "tolerance",
    "tool",
    "kit",
    "practice",
]
HARMS = ("violence", "illegal", "physical_security", "cybercrime", "hate", "self_harm")
OUTCOMES = ("success", "failure", "failure", "failure", "undetermined", "error")
# Human verdicts (scorer calibration pages read them): half the results get one to three
# reviewers' verdicts until REVIEWED_RESULTS are reviewed, all in the small scale's data, so
# the larger scale measures the pages against a bigger table with the same review work done.
# Their cost is linear in the verdicts (the queries are index lookups driven by them).
REVIEWED_SHARE = 0.5
REVIEWED_RESULTS = 300


# --- synthetic data ------------------------------------------------------------------------------


@dataclass
class Identifiers:
    """Stored identifier rows the synthetic memory points at: (hash, dump digest, class)."""

    targets: list[tuple[str, str, str]] = field(default_factory=list)
    atomics: list[tuple[str, str, str, str, str, str, list[str]]] = field(default_factory=list)
    converters: list[tuple[str, str, str]] = field(default_factory=list)
    scorers: list[tuple[str, str, str]] = field(default_factory=list)
    # The atomic attacks' dumps, for results pushed through the ingestion service.
    atomic_dumps: list[dict[str, Any]] = field(default_factory=list)


def _store_identifiers() -> Identifiers:
    """A realistic handful of targets, converters, scorers and atomic attacks."""
    from memory.bulk import store_identifier_uses
    from memory.parsing import parse_identifier
    from redteam.core.identity import ComponentIdentifier as CI

    def store(ci: CI) -> tuple[str, str]:
        errors: list[Any] = []
        parsed = parse_identifier(ci.model_dump(), "bench", legacy=False, errors=errors)
        assert parsed is not None, errors
        store_identifier_uses([(parsed, None)])
        return parsed.hash, parsed.digest

    ids = Identifiers()
    targets = [
        CI(
            cls,
            "pyrit.prompt_target",
            {"endpoint": f"https://t{i}.example.invalid", "model_name": m},
        )
        for i, (cls, m) in enumerate(
            [
                ("OpenAIChatTarget", "gpt-4o"),
                ("OpenAIChatTarget", "gpt-4o-mini"),
                ("AzureMLChatTarget", "phi-3"),
                ("OllamaChatTarget", "llama3"),
                ("OpenAIResponseTarget", "o3"),
                ("HuggingFaceChatTarget", "mistral"),
            ]
        )
    ]
    converters = [
        CI(cls, "pyrit.prompt_converter", {"seed": i})
        for i, cls in enumerate(
            [
                "ROT13Converter",
                "Base64Converter",
                "LeetspeakConverter",
                "UnicodeConfusableConverter",
                "TranslationConverter",
            ]
        )
    ]
    scorers = [
        CI(cls, "pyrit.score", {"scorer_type": "true_false"})
        for cls in ["SubStringScorer", "SelfAskRefusalScorer", "SelfAskTrueFalseScorer"]
    ]
    for ci in targets:
        ids.targets.append((*store(ci), ci.class_name))
    for ci in converters:
        ids.converters.append((*store(ci), ci.class_name))
    for ci in scorers:
        ids.scorers.append((*store(ci), ci.class_name))
    attacks = [
        "PromptSendingAttack",
        "RedTeamingAttack",
        "CrescendoAttack",
        "TreeOfAttacksWithPruningAttack",
    ]
    for a, attack in enumerate(attacks):
        for t, target in enumerate(targets):
            convs = [converters[(a + t + k) % len(converters)] for k in range((a + t) % 3)]
            strategy = CI(
                attack,
                "pyrit.executor.attack",
                children={
                    "objective_target": target,
                    "objective_scorer": scorers[a % len(scorers)],
                    "request_converters": convs,
                },
            )
            technique = CI(
                "AttackTechnique",
                "pyrit.scenario.core.attack_technique",
                children={"attack": strategy},
            )
            atomic = CI(
                "AtomicAttack",
                "pyrit.scenario.core.atomic_attack",
                children={"attack_technique": technique, "seed_identifiers": []},
            )
            h, d = store(atomic)
            ids.atomic_dumps.append(atomic.model_dump())
            ids.atomics.append(
                (
                    h,
                    d,
                    attack,
                    target.hash,
                    target.class_name,
                    ids.targets[t][1],
                    [c.class_name for c in convs],
                )
            )
    return ids


class Generator:
    """Deterministic rows for COPY: conversations, pieces, attack results, scores, and human
    verdicts by `reviewers` on the first REVIEWED_RESULTS results picked."""

    def __init__(self, seed: int, ids: Identifiers, reviewers: Sequence[int] = ()) -> None:
        self.seed = seed
        self.forks = 0  # parallel loads started from this generator (seeds their children)
        self.rng = random.Random(seed)
        # Its own stream, so adding verdicts leaves every other generated row as it was.
        self.review_rng = random.Random(seed + 1)
        self.reviewers = list(reviewers)
        self.reviewed = 0
        self.ids = ids
        self.t0 = datetime(2026, 9, 1, tzinfo=UTC)
        self.texts = [
            " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(8, 60)))
            for _ in range(4000)
        ]
        self.text_sha = [hashlib.sha256(t.encode()).hexdigest() for t in self.texts]
        self.objectives = [
            f"Objective {i}: " + " ".join(self.rng.choice(WORDS) for _ in range(8))
            for i in range(500)
        ]

    def _uuid(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def conversations(self, count: int, ingested_at: datetime) -> Iterator[dict[str, list[Any]]]:
        """Yield, per conversation, the row dicts of every table."""
        for _ in range(count):
            cid = str(self._uuid())
            start = self.t0 + timedelta(seconds=self.rng.randint(0, 60 * 86400))
            atomic = self.rng.choice(self.ids.atomics)
            a_hash, a_digest, attack, target_hash, target_class, target_digest, convs = atomic
            harms = self.rng.sample(HARMS, self.rng.randint(0, 2))
            labels = {
                "operation": f"op{self.rng.randint(1, 20)}",
                "operator": f"user{self.rng.randint(1, 10)}",
            }
            outcome = self.rng.choice(OUTCOMES)
            error_piece = self.rng.random() < 0.01
            pieces: list[dict[str, Any]] = []
            for seq in range(PIECES_PER_CONVERSATION):
                k = self.rng.randrange(len(self.texts))
                pid = self._uuid()
                is_last = seq == PIECES_PER_CONVERSATION - 1
                pieces.append(
                    {
                        "id": pid,
                        "conversation_id": cid,
                        "sequence": seq,
                        "role": "user" if seq % 2 == 0 else "assistant",
                        "timestamp": start + timedelta(seconds=2 * seq),
                        "original_value": self.texts[k],
                        "original_value_data_type": "text",
                        "original_value_sha256": self.text_sha[k],
                        "converted_value": self.texts[k],
                        "converted_value_data_type": "error" if error_piece and is_last else "text",
                        "converted_value_sha256": self.text_sha[k],
                        "response_error": "processing" if error_piece and is_last else "none",
                        "original_prompt_id": pid,
                        "prompt_metadata": "{}",
                        "pyrit_version": "1.1.0",
                        "source_shape": "1.x",
                        "ingested_at": ingested_at,
                    }
                )
            last = pieces[-1]
            score_id = self._uuid()
            score = {
                "id": score_id,
                "score_value": "true" if outcome == "success" else "false",
                "status": "complete",
                "score_value_description": "",
                "score_type": "true_false",
                "score_category": json.dumps(harms),
                "score_rationale": "synthetic rationale",
                "score_metadata": "{}",
                "scorer_identifier_id": self.ids.scorers[0][0],
                "scorer_dump_id": self.ids.scorers[0][1],
                "scorer_class": self.ids.scorers[0][2],
                "message_piece_id": last["id"],
                "timestamp": last["timestamp"],
                "pyrit_version": "1.1.0",
                "source_shape": "1.x",
                "source": "automated",
                "ingested_at": ingested_at,
            }
            result = {
                "attack_result_id": self._uuid(),
                "conversation_id": cid,
                "objective": (objective := self.rng.choice(self.objectives)),
                "objective_sha256": hashlib.sha256(objective.encode()).hexdigest(),
                "atomic_attack_identifier_id": a_hash,
                "atomic_attack_dump_id": a_digest,
                "attack_class": attack,
                "target_hash": target_hash,
                "target_class": target_class,
                "converter_classes": json.dumps(convs),
                "last_response_id": last["id"],
                "last_score_id": score_id,
                "executed_turns": PIECES_PER_CONVERSATION // 2,
                "execution_time_ms": self.rng.randint(500, 90_000),
                "outcome": outcome,
                "outcome_reason": "synthetic",
                "timestamp": last["timestamp"],
                "metadata": "{}",
                "labels": json.dumps(labels),
                "targeted_harm_categories": json.dumps(harms),
                "retry_events": "[]",
                "total_retries": 0,
                "pyrit_version": "1.1.0",
                "source_shape": "1.x",
                "ingested_at": ingested_at,
            }
            conversation = {
                "conversation_id": cid,
                "target_identifier_id": target_hash,
                "target_dump_id": target_digest,
                "retries": "[]",
                "pyrit_version": "1.1.0",
                "declared": True,
                "first_timestamp": pieces[0]["timestamp"],
                "last_timestamp": last["timestamp"],
                "message_count": PIECES_PER_CONVERSATION,
                "piece_count": PIECES_PER_CONVERSATION,
                "labels": json.dumps(labels),
                "harm_categories": json.dumps(harms),
                "data_types": json.dumps(["error", "text"] if error_piece else ["text"]),
                "converter_classes": json.dumps(sorted(convs)),
                "has_error": error_piece,
                "attack_class": attack,
                "outcome": outcome,
                "preview": pieces[0]["original_value"][:300],
                "updated_at": ingested_at,
            }
            yield {
                "conversation": [conversation],
                "piece": pieces,
                "result": [result],
                "score": [score, *self._verdicts(result, last, ingested_at)],
            }

    def _verdicts(
        self, result: dict[str, Any], last: dict[str, Any], ingested_at: datetime
    ) -> list[dict[str, Any]]:
        """Objective verdicts by one to three reviewers on a share of the results."""
        if self.reviewed >= REVIEWED_RESULTS or not self.reviewers:
            return []
        if self.review_rng.random() >= REVIEWED_SHARE:
            return []
        self.reviewed += 1
        raters = self.review_rng.sample(self.reviewers, self.review_rng.randint(1, 3))
        return [
            {
                "id": uuid.UUID(int=self.review_rng.getrandbits(128), version=4),
                "score_value": self.review_rng.choice(("true", "false")),
                "status": "complete",
                "score_value_description": "Human reviewer verdict",
                "score_type": "true_false",
                "score_rationale": "synthetic verdict",
                "score_metadata": "{}",
                "scorer_class": "HumanReviewScorer",
                "message_piece_id": last["id"],
                "timestamp": last["timestamp"] + timedelta(minutes=5 + i),
                "pyrit_version": "1.1.0",
                "source_shape": "1.x",
                "source": "human",
                "attack_result_id": result["attack_result_id"],
                "reviewer_id": reviewer,
                "verdict_submission": uuid.UUID(int=self.review_rng.getrandbits(128), version=4),
                "verdict_field": "objective",
                "ingested_at": ingested_at,
            }
            for i, reviewer in enumerate(raters)
        ]


def _copy(tables: dict[str, Any], batches: Iterator[dict[str, list[Any]]]) -> dict[str, int]:
    """COPY every row into its table; columns not generated get their model default."""
    from django.db import connection

    counts = dict.fromkeys(tables, 0)
    columns = {
        key: [(f.column, f) for f in model._meta.concrete_fields] for key, model in tables.items()
    }
    rows: dict[str, list[dict[str, Any]]] = {key: [] for key in tables}
    for batch in batches:
        for key, items in batch.items():
            rows[key].extend(items)
    with connection.cursor() as cursor:
        raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
        for key, model in tables.items():
            cols = columns[key]
            names = ", ".join(f'"{c}"' for c, _ in cols)
            with raw.copy(f'COPY "{model._meta.db_table}" ({names}) FROM STDIN') as copy:
                for item in rows[key]:
                    copy.write_row([_value(item, c, f) for c, f in cols])
            counts[key] = len(rows[key])
    return counts


def _value(item: dict[str, Any], column: str, model_field: Any) -> Any:
    if column in item:
        return item[column]
    name = model_field.name
    if name in item:
        return item[name]
    if model_field.has_default():
        default = model_field.get_default()
        return json.dumps(default) if isinstance(default, dict | list) else default
    return None


def load(gen: Generator, conversations: int, chunk: int = 5_000, jobs: int = 1) -> float:
    """Load `conversations` conversations (10 pieces each) with COPY; seconds taken.

    With `jobs` > 1 and at least a chunk per job, the conversations are split between that
    many forked processes, each with its own generator (seeded from `gen`'s) and connection:
    PostgreSQL then builds the rows and their indexes on every core, which is what bounds a
    single COPY stream. The small scale always loads in this process, so its data is the
    same whatever `jobs` is.
    """
    from django.db import connection, connections

    started = time.perf_counter()
    now = datetime.now(UTC) - timedelta(hours=1)
    if jobs <= 1 or conversations < jobs * chunk:
        _load_chunks(gen, conversations, chunk, now)
    else:
        connections.close_all()  # each child opens its own
        context = multiprocessing.get_context("fork")
        share = -(-conversations // jobs)
        children = []
        for job in range(jobs):
            n = min(share, conversations - job * share)
            child_gen = Generator(seed=gen.seed * 1000 + gen.forks * jobs + job, ids=gen.ids)
            children.append(context.Process(target=_load_child, args=(child_gen, n, chunk, now)))
        gen.forks += 1
        for child in children:
            child.start()
        for child in children:
            child.join()
        if any(child.exitcode != 0 for child in children):
            raise SystemExit("a loading process failed")
    elapsed = time.perf_counter() - started
    with connection.cursor() as cursor:
        # The tables as autovacuum leaves a server that took these inserts (visibility map
        # set, statistics fresh), whether or not this server runs autovacuum; and no vacuum
        # of the loaded rows left to start in the background while a later script measures.
        cursor.execute("VACUUM (ANALYZE)")
    return elapsed


def _load_child(gen: Generator, conversations: int, chunk: int, now: datetime) -> None:
    """A forked loader's work (its own database connection, opened on first use)."""
    _load_chunks(gen, conversations, chunk, now)
    from django.db import connections

    connections.close_all()


def _load_chunks(gen: Generator, conversations: int, chunk: int, now: datetime) -> None:
    """COPY the conversations in transactions of `chunk`, reporting progress."""
    from django.db import transaction

    from memory.models import AttackResult, Conversation, MessagePiece, Score

    tables = {
        "conversation": Conversation,
        "piece": MessagePiece,
        "result": AttackResult,
        "score": Score,
    }
    done = 0
    while done < conversations:
        n = min(chunk, conversations - done)
        with transaction.atomic():
            _copy(tables, gen.conversations(n, now))
        done += n
        if done % (chunk * 20) == 0 or done == conversations:
            print(f"  loaded {done * PIECES_PER_CONVERSATION:,} pieces", flush=True)


def push_results(ids: Identifiers, count: int, seed: int, batch: int = 500) -> float:
    """Push `count` new attack results through the ingestion service (the API's path, so
    the dashboard's tallies are kept as they are in production); seconds taken."""
    from redteam.site.ingest import ingest_batch

    rng = random.Random(seed)
    now = datetime.now(UTC)
    started = time.perf_counter()
    for start in range(0, count, batch):
        items = []
        for _ in range(min(batch, count - start)):
            when = now - timedelta(days=rng.randrange(60), seconds=rng.randrange(86400))
            items.append(
                {
                    "conversation_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "objective": rng.choice(WORDS) + " " + rng.choice(WORDS),
                    "attack_result_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "atomic_attack_identifier": rng.choice(ids.atomic_dumps),
                    "last_response": None,
                    "last_score": None,
                    "executed_turns": rng.randint(1, 5),
                    "execution_time_ms": rng.randrange(100, 30_000),
                    "outcome": rng.choice(OUTCOMES),
                    "outcome_reason": None,
                    "timestamp": when.isoformat().replace("+00:00", "Z"),
                    "related_conversations": [],
                    "metadata": {},
                    "labels": {"operation": f"op{rng.randrange(8)}"},
                    "targeted_harm_categories": rng.sample(HARMS, rng.randint(0, 2)),
                    "error_message": None,
                    "error_type": None,
                    "error_traceback": None,
                    "retry_events": [],
                    "total_retries": 0,
                    "attribution_parent_id": None,
                    "attribution_data": None,
                }
            )
        report = ingest_batch({"attack_results": items})
        assert all(o.status == "stored" for o in report.outcomes), report.outcomes[:3]
    return time.perf_counter() - started


# --- measurement ---------------------------------------------------------------------------------


@dataclass
class Measurement:
    """One page at one scale."""

    page: str
    scale: int
    median_ms: float
    cpu_ms: float
    db_ms: float
    queries: int
    status: int


def measure_all(
    client: Any, urls: list[tuple[str, str]], scale: int, repeat: int
) -> list[Measurement]:
    """Median wall and CPU time per page over `repeat` interleaved rounds, after a warm-up.

    Rounds visit every page in turn, so a burst of load from elsewhere on the machine hits
    all pages alike instead of skewing one of them.
    """
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _, url in urls:
        for _ in range(3):
            client.get(url)
    wall: dict[str, list[float]] = {name: [] for name, _ in urls}
    cpu: dict[str, list[float]] = {name: [] for name, _ in urls}
    for _ in range(repeat):
        for name, url in urls:
            start, start_cpu = time.perf_counter(), time.process_time()
            client.get(url)
            wall[name].append((time.perf_counter() - start) * 1000)
            cpu[name].append((time.process_time() - start_cpu) * 1000)
    out = []
    for name, url in urls:
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(url)
        db_ms = sum(float(q["time"]) for q in ctx.captured_queries) * 1000
        out.append(
            Measurement(
                name,
                scale,
                statistics.median(wall[name]),
                statistics.median(cpu[name]),
                db_ms,
                len(ctx.captured_queries),
                response.status_code,
            )
        )
    return out


def pages(sample: dict[str, str]) -> list[tuple[str, str]]:
    """(name, url) of every timed page."""
    conversation = sample["conversation"]
    return [
        ("conversation list", "/conversations/"),
        ("conversation page", f"/conversations/{conversation}/"),
        ("dashboard", "/dashboard/?label_key=operation"),
        ("dashboard, trend per day", "/dashboard/?trend_by=target&period=day"),
        # Filters that fill a page at every scale (a part-filled page renders less, which
        # would make the small scale's time the wrong reference).
        ("list, label filter", "/conversations/?label=operator:user3"),
        ("list, harm+outcome filter", "/conversations/?harm_category=violence&outcome=failure"),
        ("list, full-text search", "/conversations/?q=tumbler+wrench"),
        ("list, page 2", f"/conversations/?cursor={sample['cursor']}"),
        ("attack results", "/attack-results/"),
        ("attack results, filtered", "/attack-results/?outcome=success&attack=CrescendoAttack"),
        ("attack result page", f"/attack-results/{sample['attack_result']}/"),
        ("objective page", f"/objectives/{sample['objective']}/"),
        ("home", "/"),
        ("review queues", "/review/"),
        ("unreviewed queue", "/review/unreviewed/"),
        ("conversation in a queue", f"/conversations/{conversation}/?queue=unreviewed"),
        ("identifier index", "/identifiers/"),
        # Live pages' polls (redteam/common/live.py): nothing new since the page, and a page
        # that showed nothing (the count stops at its bound).
        ("live: conversation list", f"/live/conversations/?since={sample['list_marker']}"),
        (
            "live: list, label filter",
            f"/live/conversations/?label=operation:op3&since={sample['list_marker']}",
        ),
        ("live: list, none seen", "/live/conversations/"),
        ("live: conversation", sample["conversation_live"]),
        ("live: unreviewed queue", f"/live/review/unreviewed/?since={sample['result_marker']}"),
        ("live: dashboard", f"/live/dashboard/?since={sample['result_marker']}"),
        ("scorers", "/scorers/"),
        ("scorer page", f"/scorers/{sample['eval_hash']}/"),
        ("adjudication queue", "/review/adjudication/"),
        ("reviewers' agreement", "/review/reviewers/"),
        # API reads (the session's user; the same scoping as the pages).
        ("API: conversations", "/api/v1/conversations/"),
        ("API: conversations, label", "/api/v1/conversations/?label=operator:user3"),
        ("API: conversation", f"/api/v1/conversations/{conversation}/"),
        ("API: message pieces", f"/api/v1/message-pieces/?conversation_id={conversation}"),
        ("API: attack results", "/api/v1/attack-results/"),
        ("API: scores", "/api/v1/scores/"),
        ("API: scorer metrics", "/api/v1/scorer-metrics/"),
    ]


def sample_conversation() -> str:
    """A conversation from the middle of the small scale's table: the one every scale opens,
    so its pages render the same content at each size."""
    from memory.models import Conversation

    total = Conversation.objects.count()
    return str(Conversation.objects.order_by("conversation_id")[total // 2].conversation_id)


def sample_urls(conversation_id: str) -> dict[str, str]:
    """The sample conversation and its attack result and objective, the list's second-page
    cursor, and the markers the live pages render (the newest conversation and result)."""
    from memory.live import list_marker
    from memory.models import AttackResult, Conversation
    from memory.querysets import conversations_for_list
    from redteam.common.access import Scope
    from redteam.common.live import Marker
    from redteam.common.pagination import DEFAULT_PAGE_SIZE, encode_cursor
    from scoring.calibration import calibrations_for
    from scoring.live import conversation_live

    middle = Conversation.objects.get(conversation_id=conversation_id)
    result = middle.attack_results.order_by("attack_result_id").first()
    assert result is not None
    first_page = list(conversations_for_list(Scope.everything_scope())[:DEFAULT_PAGE_SIZE])
    last = first_page[-1]
    assert last.last_timestamp is not None
    cursor = encode_cursor("n", last.last_timestamp, last.conversation_id)
    calibrated = calibrations_for(Scope.everything_scope(), {})
    eval_hash = calibrated[0].eval_hash if calibrated else "0" * 64
    list_marker_ = list_marker(first_page)
    assert list_marker_ is not None
    newest = AttackResult.objects.order_by("-ingested_at", "-attack_result_id").first()
    assert newest is not None
    request = type("Get", (), {"method": "GET"})()
    middle.updated_at = datetime.now(UTC)  # as a running conversation's
    live = conversation_live(request, middle, list(middle.attack_results.all()))
    assert live is not None
    return {
        "conversation": middle.conversation_id,
        "attack_result": str(result.attack_result_id),
        "objective": result.objective_sha256,
        "cursor": cursor,
        "list_marker": list_marker_.token(),
        "result_marker": Marker(newest.ingested_at, newest.pk).token(),
        "conversation_live": live.url,
        "eval_hash": eval_hash,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 1 when a budget is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed requests per page")
    parser.add_argument("--scales", type=int, nargs=2, default=SCALES, metavar=("SMALL", "LARGE"))
    parser.add_argument(
        "--push",
        type=int,
        default=PUSH_RESULTS,
        help="attack results pushed through ingestion right before each scale's timings",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="parallel loading processes for the larger scale",
    )
    args = parser.parse_args(argv)
    django_on_scratch_database("bench/pages.py")
    print(f"server: {describe_server(os.environ['DATABASE_URL'])}")

    from django.contrib.auth.models import User
    from django.test import Client

    from scoring.tallies import rebuild_tallies

    user = User.objects.create_superuser("bench", "bench@example.invalid", "bench-pass-1")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    reviewers = [
        User.objects.create_user(f"reviewer{i}", f"reviewer{i}@example.invalid").pk
        for i in range(3)
    ]
    gen_ids = _store_identifiers()
    gen = Generator(seed=7, ids=gen_ids, reviewers=reviewers)

    results: list[Measurement] = []
    loaded = 0
    conversation = ""
    for scale in args.scales:
        conversations = scale // PIECES_PER_CONVERSATION - loaded
        print(f"Loading up to {scale:,} pieces ({conversations:,} more conversations)...")
        seconds = load(gen, conversations, jobs=args.jobs if loaded else 1)
        loaded += conversations
        print(f"  {conversations * PIECES_PER_CONVERSATION / seconds:,.0f} pieces/s with COPY")
        # COPY bypasses the ingestion service: count what it loaded as ingestion would have
        # (the repair tool), then push a batch through the service itself.
        rebuild = rebuild_tallies()
        print(
            f"  dashboard tallies recounted over {rebuild.results:,} results in "
            f"{rebuild.duration_ms / 1000:.1f} s (repair tool; ingestion keeps them)"
        )
        pushed = push_results(gen_ids, args.push, seed=scale)
        print(
            f"  pushed {args.push:,} attack results through ingestion in {pushed:.1f} s "
            f"({args.push / pushed:,.0f}/s); every page below is timed right after the push"
        )
        storage(scale)
        conversation = conversation or sample_conversation()
        for m in measure_all(client, pages(sample_urls(conversation)), scale, args.repeat):
            results.append(m)
            print(
                f"  {m.page:<26} {m.median_ms:7.1f} ms  cpu {m.cpu_ms:6.1f} ms  "
                f"db {m.db_ms:6.1f} ms  {m.queries:3d} queries  HTTP {m.status}",
                flush=True,
            )
    return report(results, args.scales)


def storage(pieces: int) -> None:
    """Print the database's size and its biggest tables (with their indexes and TOAST), and
    what that makes per stored piece: the sizing figures of docs/sizing.md."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        (total,) = cursor.fetchone()
        cursor.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid), pg_indexes_size(c.oid) "
            "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind = 'r' AND n.nspname = 'public' "
            "ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 5"
        )
        tables = cursor.fetchall()
    gb = 1024**3
    print(
        f"  storage at {pieces:,} pieces: {total / gb:.2f} GB, {total / pieces:,.0f} bytes "
        f"per piece ({gb / (total / pieces):,.0f} pieces per GB), all tables and indexes"
    )
    for name, size, indexes in tables:
        print(f"    {name:<32} {size / gb:6.2f} GB (indexes {indexes / gb:.2f} GB)")


def _label(pieces: int) -> str:
    return f"{pieces // 1_000_000}M" if pieces % 1_000_000 == 0 else f"{pieces // 1000}k"


def report(results: list[Measurement], scales: Sequence[int]) -> int:
    """Print the table and ratios; 1 when a budgeted page misses its ratio or query budget."""
    small, large = scales
    by = {(m.page, m.scale): m for m in results}
    names = list(dict.fromkeys(m.page for m in results))
    print()
    lo, hi = _label(small), _label(large)
    print(
        f"{'page':<26} {lo + ' ms':>7} {hi + ' ms':>7} {'ratio':>6} {'cpu ' + lo:>8} "
        f"{'cpu ' + hi:>7} {'db ' + lo:>7} {'db ' + hi:>6} {'queries':>9}"
    )
    failed = False
    for name in names:
        a, b = by[(name, small)], by[(name, large)]
        ratio = b.median_ms / a.median_ms if a.median_ms else float("inf")
        ok = ratio < BUDGET_RATIO and a.queries == b.queries and a.status == b.status == 200
        failed |= not ok
        mark = "ok" if ok else "MISSED"
        print(
            f"{name:<26} {a.median_ms:7.1f} {b.median_ms:7.1f} {ratio:6.2f} {a.cpu_ms:8.1f} "
            f"{b.cpu_ms:7.1f} {a.db_ms:7.1f} {b.db_ms:6.1f} {a.queries:>4}/{b.queries:<4} {mark}"
        )
    print(
        f"\nBudget: ratio {hi}/{lo} < {BUDGET_RATIO}, equal query counts and HTTP 200 for "
        f"every page: {'MISSED' if failed else 'met'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
