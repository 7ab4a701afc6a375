"""Query plans of every read of the piece and conversation tables: the evidence behind their
index sets.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/explain.py

What it does, in one run:
1. (Re)creates the scratch database (its name must start with "bench"), migrates it and
   COPY-loads synthetic memory as bench/pages.py does (default 200k pieces), then makes it
   look like a mixed campaign: four operations, converter chains on user turns, a few
   system prompts, media pieces, 0.13 pieces carrying their own identifiers and copied
   conversations. ANALYZE.
2. Takes the schema back to before migration memory 0017 (the old index sets), EXPLAINs
   every read of memory/indexplans.py's catalogue, migrates forward (0017 trimmed the piece
   tables, 0020 the conversation table, 0021 indexed original_prompt_id for copies only) and
   EXPLAINs them again.
3. Writes docs/indexes.md: each index kept and the reads whose plans use it, each dropped
   index and what its reads use instead, and every plan. Exit status 1 when a read's plan
   does not use the index the catalogue names for it, or an index is kept that no plan uses.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from _common import ROOT, django_on_scratch_database

BEFORE = ("memory", "0016_revision")
OUT = ROOT / "docs" / "indexes.md"


def load(pieces: int) -> None:
    """COPY-load `pieces` pieces (bench/pages.py's generator), then mix the campaign."""
    from pages import PIECES_PER_CONVERSATION, Generator, _store_identifiers
    from pages import load as copy_load

    gen = Generator(seed=11, ids=_store_identifiers())
    seconds = copy_load(gen, pieces // PIECES_PER_CONVERSATION)
    print(f"  loaded {pieces:,} pieces in {seconds:.0f} s", flush=True)
    mix()


def mix() -> None:
    """Operations, converters, rare roles, media, 0.13 identifier uses and copies, then
    ANALYZE."""
    from django.db import connection

    from memory.models import ComponentIdentifier
    from redteam.common.models import Operation

    ops = [Operation.objects.get_or_create(name=f"bench-op{i}")[0].pk for i in range(4)]
    converter = ComponentIdentifier.objects.filter(kind="converter").first()
    scorer = ComponentIdentifier.objects.filter(kind="scorer").first()
    target = ComponentIdentifier.objects.filter(kind="target").first()
    any_identifier = ComponentIdentifier.objects.order_by("pk").first()
    assert any_identifier is not None
    conv_hash = (converter or any_identifier).hash
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE memory_conversation SET operation_id = (ARRAY[%s, %s, %s, %s])"
            "[1 + abs(hashtext(conversation_id)) %% 4]",
            ops,
        )
        cur.execute(
            "UPDATE memory_attackresult r SET operation_id = c.operation_id "
            "FROM memory_conversation c WHERE c.conversation_id = r.conversation_id"
        )
        cur.execute(
            "UPDATE memory_score s SET operation_id = r.operation_id FROM memory_attackresult r "
            "WHERE r.last_score_id = s.id"
        )
        # A converter on every other user turn, with its dump.
        cur.execute("SELECT digest FROM memory_identifierdump WHERE hash = %s LIMIT 1", [conv_hash])
        row = cur.fetchone()
        if row is None:
            cur.execute(
                "INSERT INTO memory_identifierdump (digest, hash, dump_json) VALUES (%s, %s, %s)",
                [conv_hash, conv_hash, "{}"],
            )
            dump = conv_hash
        else:
            dump = row[0]
        cur.execute(
            "INSERT INTO memory_piececonverter (piece_id, position, identifier_id, dump_id) "
            "SELECT id, 0, %s, %s FROM memory_messagepiece "
            "WHERE role = 'user' AND sequence %% 4 = 0",
            [conv_hash, dump],
        )
        # Rare roles and media: one piece in 500 is a system prompt, one in 300 an image.
        cur.execute(
            "UPDATE memory_messagepiece SET role = 'system' "
            "WHERE sequence = 0 AND abs(hashtext(id::text)) %% 50 = 0",
            [],
        )
        cur.execute(
            "UPDATE memory_messagepiece SET converted_value_data_type = 'image_path' "
            "WHERE role = 'assistant' AND abs(hashtext(id::text)) %% 150 = 0",
            [],
        )
        # One piece in 100 arrived in the 0.13 shape with its own identifiers.
        cur.execute(
            "UPDATE memory_messagepiece SET source_shape = '0.13', target_identifier_id = %s, "
            "attack_identifier_id = %s, scorer_identifier_id = %s "
            "WHERE abs(hashtext(id::text)) %% 100 = 1",
            [
                (target or any_identifier).hash,
                any_identifier.hash,
                (scorer or any_identifier).hash,
            ],
        )
        # One conversation in 50 is a copy (PyRIT's duplicated conversations): its pieces
        # name another piece, not stored here, as their original.
        cur.execute(
            "UPDATE memory_messagepiece SET original_prompt_id = gen_random_uuid() "
            "WHERE abs(hashtext(conversation_id)) %% 50 = 7",
            [],
        )
        cur.execute("ANALYZE")


def plans(label: str) -> dict[str, tuple[set[str], str]]:
    """Each catalogued read's indexes and text plan under the current schema."""
    from django.db import connection, transaction

    from memory.indexplans import (
        READS,
        explain,
        plan_indexes,
        reader_scope,
        sample_values,
        statement,
    )
    from redteam.common.access import Scope

    scope, sample = reader_scope(), sample_values()
    out: dict[str, tuple[set[str], str]] = {}
    for read in READS:
        qs = read.build(Scope.everything_scope() if read.everything else scope, sample)
        used = plan_indexes(explain(qs))
        sql, params = statement(qs)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            text = "\n".join(r[0] for r in cursor.fetchall())
        out[read.name] = (used, text)
        print(f"  [{label}] {read.name}: {', '.join(sorted(used)) or 'no index'}", flush=True)
    return out


def table_indexes() -> dict[str, dict[str, str]]:
    """{table: {index: definition}} of the tables the catalogue governs."""
    from django.db import connection

    from memory.indexplans import TABLES

    with connection.cursor() as cur:
        cur.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)",
            [list(TABLES)],
        )
        rows = cur.fetchall()
    out: dict[str, dict[str, str]] = {t: {} for t in TABLES}
    for table, name, definition in rows:
        # One line (PostgreSQL prints a CASE over several), so it fits a table cell.
        out[table][name] = " ".join(definition.split(" USING ", 1)[-1].split())
    return out


def write_doc(
    pieces: int,
    before: dict[str, tuple[set[str], str]],
    after: dict[str, tuple[set[str], str]],
    old_indexes: dict[str, dict[str, str]],
    new_indexes: dict[str, dict[str, str]],
) -> list[str]:
    """docs/indexes.md; returns the problems found (empty when the evidence holds)."""
    from django.db import connection

    from memory.indexplans import DROPPED, READS, TABLES

    problems: list[str] = []
    version = connection.cursor().connection.info.server_version
    lines = [
        "# Indexes of the piece and conversation tables, and the plans that need them",
        "",
        "Generated by `bench/explain.py` (do not edit by hand; re-run it after changing an index "
        "or a read). Every index on `memory_messagepiece` and `memory_piececonverter` is paid by "
        "every ingested piece, and every index on `memory_conversation` by every conversation a "
        "message creates or updates, so each one is kept only for reads whose PostgreSQL query "
        "plans use it. The reads are catalogued in `memory/indexplans.py`, built through the same "
        "FilterSets and querysets as the pages and the API, on a reviewer's scope; "
        "`tests/memory/test_index_plans.py` checks on PostgreSQL that each read can still use "
        "its index and that no index is added without an entry here.",
        "",
        f"Database: {pieces:,} pieces COPY-loaded as `bench/pages.py` does (10-piece "
        "conversations in four operations), one piece in 100 in the 0.13 shape with its own "
        "identifiers, one in 500 a system prompt, one in 300 an image, a converter on every other "
        "user turn, one conversation in 50 a copy (its pieces' `original_prompt_id` names "
        f"other pieces); ANALYZEd. PostgreSQL {version // 10000}.{version % 10000}, "
        f"{datetime.now(UTC):%Y-%m-%d}. *Before* is the schema of memory migration "
        "0016 (16 indexes on the piece table, 20 on the conversation table), *after* the "
        "current one (0017 trimmed the piece tables, 0020 the conversation table, 0021 indexed "
        "`original_prompt_id` for copies only).",
        "",
        "## Indexes kept",
        "",
        "| table | index | definition | reads whose plan uses it |",
        "|---|---|---|---|",
    ]
    for table, kept in TABLES.items():
        for name in kept:
            users = [r.name for r in READS if name in after[r.name][0]]
            if name not in new_indexes[table]:
                problems.append(f"{name} is listed but not on {table}")
            if not users and not name.endswith("_pkey"):
                problems.append(f"{name} is kept but no catalogued plan uses it")
            definition = new_indexes[table].get(name, "(missing)")
            lines.append(
                f"| {table} | `{name}` | `{definition}` | {'; '.join(users) or '(primary key)'} |"
            )
        for name in new_indexes[table]:
            if name not in kept:
                problems.append(f"{name} is on {table} without evidence in memory/indexplans.py")
    lines += [
        "",
        "## Indexes dropped (migrations 0017, 0020 and 0021)",
        "",
        "| index | definition before | why | reads whose plan used it before → index used now |",
        "|---|---|---|---|",
    ]
    for name, why in DROPPED.items():
        table = next((t for t, idx in old_indexes.items() if name in idx), "")
        definition = old_indexes.get(table, {}).get(name, "(absent)")
        users = [
            f"{r.name} → {', '.join(sorted(after[r.name][0])) or 'no index'}"
            for r in READS
            if name in before[r.name][0]
        ]
        lines.append(
            f"| `{name}` | `{definition}` | {why} | {'; '.join(users) or 'none: no plan used it'} |"
        )
    lines += [
        "",
        "## Every read",
        "",
        "| read | code | index it needs | before | after |",
        "|---|---|---|---|---|",
    ]
    for read in READS:
        used_before = ", ".join(f"`{i}`" for i in sorted(before[read.name][0])) or "none"
        used_after = ", ".join(f"`{i}`" for i in sorted(after[read.name][0])) or "none"
        if not read.uses_its_index(after[read.name][0]):
            problems.append(f"{read.name}: the plan does not use {read.index}")
        needed = " or ".join(f"`{i}`" for i in (read.index, *read.alternatives))
        lines.append(f"| {read.name} | `{read.where}` | {needed} | {used_before} | {used_after} |")
    lines += ["", "## Plans (after)", ""]
    for read in READS:
        lines += [f"### {read.name}", "", "```", after[read.name][1], "```", ""]
    if problems:
        lines += ["## Problems", "", *[f"- {p}" for p in problems], ""]
    OUT.write_text("\n".join(lines))
    return problems


def main(argv: list[str] | None = None) -> int:
    """Load, EXPLAIN before and after the index migration, write the doc."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pieces", type=int, default=200_000)
    args = parser.parse_args(argv)
    django_on_scratch_database("bench/explain.py")
    from django.core.management import call_command

    print(f"Loading {args.pieces:,} pieces ...", flush=True)
    load(args.pieces)
    latest = table_indexes()
    call_command("migrate", *BEFORE, verbosity=0)
    old = table_indexes()
    before = plans("before")
    call_command("migrate", verbosity=0)
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    after = plans("after")
    assert table_indexes() == latest
    problems = write_doc(args.pieces, before, after, old, latest)
    print(f"wrote {OUT.relative_to(ROOT)}")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
