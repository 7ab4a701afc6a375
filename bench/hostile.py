"""Hostile-input benchmark: the worst page per hostile class against the same page for
ordinary data, on PostgreSQL.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/hostile.py

What it does, in one run on one machine:
1. (Re)creates the scratch database (its name must start with "bench") and migrates it.
2. Ingests, through the API, ordinary data (a 10-piece conversation with a converter diff,
   labels, an attack result and its real identifier tree) and every hostile class of
   tests/security/hostile_payloads.py with its varied parameters (identifier trees that cycle
   or fan out 2..8 ways, repetitive diff tokens, 100k-character invisible runs, 10k labels,
   ids that are not URL-safe, identifiers without a usable hash).
3. Fetches every page and API read each case touches (median of --repeat rounds after a
   warm-up) and prints, per hostile class, the slowest page with its time and bytes next to
   the same kind of page for ordinary data, and the ratios. Exit status 1 when any answer is
   a 5xx, over MAX_RESPONSE_BYTES (or, for API reads that copy stored values, over what was
   ingested) or slower than MAX_SECONDS.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import statistics
import time
from dataclasses import dataclass
from typing import Any

from _common import ROOT, django_on_scratch_database

KINDS = (
    ("api identifier", r"^/api/v1/identifiers/"),
    ("api conversation", r"^/api/v1/conversations/[^?]"),
    ("api pieces", r"^/api/v1/message-pieces/"),
    ("api attack results", r"^/api/v1/attack-results/"),
    ("identifier diff", r"^/identifiers/diff/"),
    ("identifier page", r"^/identifiers/"),
    ("conversation page", r"^/conversations/[^?]"),
    ("conversation list", r"^/conversations/$"),
    ("attack result page", r"^/attack-results/[^?]"),
    ("attack result list", r"^/attack-results/$"),
    ("objective page", r"^/objectives/"),
    ("review queue", r"^/review/"),
    ("dashboard", r"^/dashboard/"),
)


SHARED_URLS = frozenset({"/conversations/", "/attack-results/", "/review/", "/dashboard/"})


def kind_of(url: str) -> str:
    """Which kind of page or read a URL is (hostile and ordinary pages compare by kind)."""
    for kind, pattern in KINDS:
        if re.match(pattern, url):
            return kind
    return url


@dataclass
class Fetch:
    """One URL's median time, size and status."""

    url: str
    kind: str
    seconds: float
    size: int
    status: int


def measure(clients: tuple[Any, Any], urls: list[str], repeat: int) -> list[Fetch]:
    """Median wall time of each URL over ``repeat`` rounds (after one warm-up round)."""
    api, browser = clients
    out: list[Fetch] = []
    for url in urls:
        client = api if url.startswith("/api/") else browser
        response = client.get(url)  # warm-up (and the size/status, identical each round)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            client.get(url)
            times.append(time.perf_counter() - started)
        out.append(
            Fetch(
                url,
                kind_of(url),
                statistics.median(times),
                len(response.content),
                response.status_code,
            )
        )
    return out


def named_operations(value: Any) -> set[str]:
    """Every operation named by a `labels` object anywhere in `value` (ingest bodies)."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            labels = item.get("labels")
            if isinstance(labels, dict) and isinstance(labels.get("operation"), str):
                found.add(labels["operation"])
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


def main(argv: list[str] | None = None) -> int:
    """Load, measure, print; non-zero exit when a bound is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    django_on_scratch_database("bench/hostile.py")

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from memory.models import ComponentIdentifier
    from tests.security import hostile_payloads as hp

    fixtures = ROOT / os.environ.get("REDTEAM_FIXTURES", "../shared/fixtures")
    user = User.objects.create_superuser("bench", "bench@example.invalid", "bench-pass-1")
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    ordinary = hp.ordinary_case(fixtures)
    cases = hp.all_cases(fixtures)
    # Every ingested row belongs to an operation: the key writes into `bench` by default and
    # into every operation the payloads' labels name.
    named = named_operations([c.bodies for c in [ordinary, *cases]])
    operations = ["bench", *sorted(named - {"bench"})]
    for operation in operations:
        call_command("create_operation", operation, stdout=io.StringIO())
    out = io.StringIO()
    call_command(
        "create_api_key",
        "--user=bench",
        "--scopes=ingest,read",
        f"--operations={','.join(operations)}",
        stdout=out,
        stderr=io.StringIO(),
    )
    key = out.getvalue().strip()
    api = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {key}")

    def load(case: Any) -> list[str]:
        known = set(ComponentIdentifier.objects.values_list("hash", flat=True))
        started = time.perf_counter()
        for body in case.bodies:
            response = api.post("/api/v1/ingest/", hp.encode_body(body), "application/json")
            if response.status_code != 200:
                raise SystemExit(
                    f"{case.name}: ingest answered {response.status_code}: "
                    f"{response.content[:2000]!r}"
                )
        print(
            f"  ingested {case.name:28} {case.body_bytes / 1024:8.0f} KiB in "
            f"{time.perf_counter() - started:5.2f} s"
        )
        new = ComponentIdentifier.objects.exclude(hash__in=known).values_list("hash", flat=True)
        return sorted(new)[:12]

    print("Loading ordinary data...")
    ordinary_urls = ordinary.urls(load(ordinary))
    # The baseline is measured before any hostile row exists (list pages show everything).
    baseline = {f.kind: f for f in measure((api, browser), ordinary_urls, args.repeat)}
    print("Loading every hostile class...")
    case_urls = [(case, case.urls(load(case))) for case in cases]
    # Everything stays in the database, so list reads may copy all of it back.
    ingested = sum(c.body_bytes for c in [ordinary, *cases])

    print(f"Measuring (median of {args.repeat} after a warm-up)...")
    worst: dict[str, tuple[Fetch, Any]] = {}
    shared: dict[str, Fetch] = {}
    failures: list[str] = []
    for case, urls in case_urls:
        for fetch in measure((api, browser), urls, args.repeat):
            limit = hp.size_limit(fetch.url, ingested)
            if fetch.status >= 500 or fetch.size > limit or fetch.seconds > hp.MAX_SECONDS:
                failures.append(
                    f"{case.name} {fetch.url[:80]}: {fetch.status}, "
                    f"{fetch.size:,} B, {fetch.seconds:.2f} s"
                )
            if fetch.url in SHARED_URLS or fetch.url.startswith("/api/v1/attack-results/"):
                # Lists show every class at once: reported once, below.
                shared[fetch.kind] = fetch
            elif case.klass not in worst or fetch.seconds > worst[case.klass][0].seconds:
                worst[case.klass] = (fetch, case)

    print()
    header = (
        f"{'class':10} {'worst page':20} {'case':30} {'ms':>7} {'KiB':>7} "
        f"{'ordinary ms':>11} {'KiB':>6} {'time x':>7} {'size x':>7}"
    )
    print(header)
    print("-" * len(header))
    for klass, (fetch, case) in sorted(worst.items()):
        base = baseline.get(fetch.kind)
        base_ms = base.seconds * 1000 if base else float("nan")
        base_kib = base.size / 1024 if base else float("nan")
        time_ratio = fetch.seconds / base.seconds if base else float("nan")
        size_ratio = fetch.size / base.size if base and base.size else float("nan")
        print(
            f"{klass:10} {fetch.kind:20} {case.name[:30]:30} {fetch.seconds * 1000:7.1f} "
            f"{fetch.size / 1024:7.0f} {base_ms:11.1f} {base_kib:6.0f} "
            f"{time_ratio:7.1f} {size_ratio:7.1f}  {fetch.url[:40]}"
        )
    print()
    print("List pages with every hostile class loaded, against the same pages before:")
    for kind, fetch in sorted(shared.items()):
        base = baseline.get(kind)
        if base is None:
            continue
        print(
            f"  {kind:20} {fetch.seconds * 1000:7.1f} ms {fetch.size / 1024:7.0f} KiB   "
            f"ordinary {base.seconds * 1000:7.1f} ms {base.size / 1024:6.0f} KiB   "
            f"x{fetch.seconds / base.seconds:5.1f} time, x{fetch.size / base.size:5.1f} size"
        )
    print()
    if failures:
        print("Bounds missed:")
        for line in failures:
            print("  " + line)
        return 1
    print(
        f"Every answer under {hp.MAX_SECONDS:.0f} s and {hp.MAX_RESPONSE_BYTES // 2**20} MiB "
        "(API copies of stored values: under what was ingested)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
