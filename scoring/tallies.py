"""Dashboard counts: attack-result outcomes per harm category, attack, converter, target, label,
and per day of the result for "ASR over time".

The counts are kept, not recounted: every transaction that stores attack results, changes a
conversation's labels or records, corrects or withdraws a verdict calls `retally` with the
results it touched, which recomputes their cells and adds the difference to the tally tables
(scoring.models.OutcomeTally, DailyOutcomeTally) with set-based increments. A result therefore
appears in the counts in the same request that stored it, and the dashboard reads only the
tally rows of the viewer's operations, whatever the number of results or how recent they are.

Outcomes are effective outcomes: the latest deciding human verdict wins over the automated
outcome (scoring.review `human_scores()`; a category answer only marks a result reviewed).
`rebuild_tallies` recounts everything from scratch: a repair tool (`manage.py
refresh_dashboard`), which an incremental count always equals.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Field, Max, Model, Sum

from memory.bulk import insert_rows
from memory.models import AttackResult, ComponentIdentifier
from redteam.common.access import Scope
from redteam.core.enums import ATTACK_OUTCOMES
from redteam.core.outcomes import OutcomeCounts
from redteam.core.stats import Rate, percent
from scoring.models import DailyOutcomeTally, OutcomeTally, TalliedResult
from scoring.review import human_scores, human_verdicts, verdict_success

DIMENSIONS = ("harm_category", "attack", "converter", "target")
# Not charted: whether a human reviewed the result (keys REVIEWED / NOT_REVIEWED), for the
# headline's share reviewed (all-time counts only).
REVIEW_DIMENSION = "reviewed"
REVIEWED, NOT_REVIEWED = "yes", "no"
# Every result once, under one key: the headline's totals and the "all results" trend.
ALL_DIMENSION = ALL_KEY = "all"
NONE_KEY = "(none)"
LABEL_PREFIX = "label:"
MAX_BARS = 25
NAME_BATCH = 1000
MAX_LABEL_KEYS = 200
# Counter rows per cell: a writer adds to the lowest shard no concurrent transaction holds
# (a transaction-scoped advisory lock per shard), so up to SHARDS concurrent writers never
# wait on one another's tally rows. A single writer always uses shard 0.
SHARDS = 16
_SHARD_LOCK_CLASS = 0x7A11
# "ASR over time": how many periods are shown, and how many keys of the chosen dimension.
TREND_PERIODS = {"day": 30, "week": 13}
TREND_SERIES = 5
REBUILD_CHUNK = 5000
_FIELDS = (
    "pk",
    "operation_id",
    "outcome",
    "attack_class",
    "target_hash",
    "converter_classes",
    "targeted_harm_categories",
    "labels",
    "conversation__labels",
    "conversation__harm_categories",
    "timestamp",
    "ingested_at",
)

Key = tuple[str, str]  # (dimension, key)


def result_keys(row: Mapping[str, Any]) -> list[Key]:
    """Every (dimension, key) an attack result counts under, each once."""
    keys: list[Key] = []
    # 1.x results carry labels and harms; 0.13 ones left them on the pieces, which the
    # conversation summary collected.
    harms = list(row["targeted_harm_categories"] or row["conversation__harm_categories"] or [])
    for harm in dict.fromkeys(str(h) for h in harms) or [NONE_KEY]:
        keys.append(("harm_category", harm[:300]))
    keys.append(("attack", (row["attack_class"] or NONE_KEY)[:300]))
    for conv in dict.fromkeys(str(c) for c in row["converter_classes"] or []) or [NONE_KEY]:
        keys.append(("converter", conv[:300]))
    keys.append(("target", row["target_hash"] or NONE_KEY))
    labels = {**(row["conversation__labels"] or {}), **(row["labels"] or {})}
    for name, value in labels.items():
        keys.append((f"{LABEL_PREFIX}{name}"[:120], str(value)[:300]))
    return list(dict.fromkeys(keys))


def result_day(timestamp: datetime | None, ingested_at: datetime) -> date:
    """The UTC day a result counts on: its timestamp, or when it was ingested if it has none
    or a later one (a clock ahead of the server cannot put results in the future)."""
    moment = ingested_at if timestamp is None else min(timestamp, ingested_at)
    return moment.astimezone(UTC).date()


def _effective(outcome: str, human: tuple[str, str | None] | None) -> str:
    """The outcome counted: the deciding verdict's (scoring.review), else the automated."""
    if human is not None:
        success = verdict_success(*human)
        if success is not None:
            return "success" if success else "failure"
    return outcome


@dataclass(frozen=True)
class _State:
    """What the tallies count for one result."""

    operation_key: int
    day: date
    outcome: str
    reviewed: bool
    keys: tuple[Key, ...]

    @classmethod
    def of(
        cls, row: Mapping[str, Any], human: tuple[str, str | None] | None, reviewed: bool
    ) -> _State:
        return cls(
            operation_key=row["operation_id"] or 0,
            day=result_day(row["timestamp"], row["ingested_at"]),
            outcome=_effective(row["outcome"], human),
            reviewed=reviewed,
            keys=tuple(result_keys(row)),
        )

    @classmethod
    def stored(cls, ledger: TalliedResult) -> _State:
        return cls(
            operation_key=ledger.operation_key,
            day=ledger.day,
            outcome=ledger.outcome,
            reviewed=ledger.reviewed,
            keys=tuple((str(d), str(k)) for d, k in ledger.keys),
        )

    def cells(self) -> Iterator[tuple[int, str, str, str]]:
        """All-time cells: (operation, dimension, key, outcome)."""
        op, outcome = self.operation_key, self.outcome
        for dimension, key in self.keys:
            yield op, dimension, key, outcome
        yield op, REVIEW_DIMENSION, REVIEWED if self.reviewed else NOT_REVIEWED, outcome
        yield op, ALL_DIMENSION, ALL_KEY, outcome

    def day_cells(self) -> Iterator[tuple[int, str, str, date, str]]:
        """Daily cells: (operation, dimension, key, day, outcome)."""
        op, day, outcome = self.operation_key, self.day, self.outcome
        for dimension, key in self.keys:
            yield op, dimension, key, day, outcome
        yield op, ALL_DIMENSION, ALL_KEY, day, outcome

    def ledger(self, result_id: uuid.UUID) -> dict[str, Any]:
        return {
            "attack_result_id": result_id,
            "operation_key": self.operation_key,
            "day": self.day,
            "outcome": self.outcome,
            "reviewed": self.reviewed,
            "keys": [list(k) for k in self.keys],
        }


@dataclass
class _Delta:
    """Signed changes to the all-time and daily cells."""

    cells: Counter[tuple[int, str, str, str]] = field(default_factory=Counter)
    days: Counter[tuple[int, str, str, date, str]] = field(default_factory=Counter)

    def add(self, state: _State, sign: int) -> None:
        for cell in state.cells():
            self.cells[cell] += sign
        for day_cell in state.day_cells():
            self.days[day_cell] += sign


def _verdicts(ids: Sequence[uuid.UUID]) -> tuple[dict[Any, tuple[str, str | None]], set[Any]]:
    """The latest deciding verdict of each result and the results with any standing verdict
    (two queries; the rule is scoring.review's)."""
    humans: dict[Any, tuple[str, str | None]] = {}
    for result_id, score_type, value in (
        human_scores()
        .filter(attack_result_id__in=ids)
        .values_list("attack_result_id", "score_type", "score_value")
    ):
        humans.setdefault(result_id, (score_type, value))
    reviewed = set(
        human_verdicts()
        .filter(attack_result_id__in=ids)
        .order_by()
        .values_list("attack_result_id", flat=True)
        .distinct()
    )
    return humans, reviewed


@transaction.atomic(savepoint=False)
def retally(
    result_ids: Iterable[uuid.UUID] = (),
    *,
    conversation_ids: Collection[str] = (),
    fresh: bool = False,
) -> int:
    """Bring the tallies of these results (and of every result of these conversations) up to
    date, in the caller's transaction (its own when called outside one); the number of
    results whose cells moved.

    `fresh`: the results were inserted by this transaction (no verdict, no ledger row yet),
    which spares three reads. Queries: [SELECT the results of the conversations]; SELECT the
    ledger rows FOR UPDATE; SELECT the results; SELECT their deciding verdicts; SELECT their
    reviewed ids; then, when something moved, upsert the all-time and the daily cells (each
    picking its shard), INSERT (fresh) or upsert the ledger rows, [DELETE ledger rows of
    results gone].
    """
    ids = set(result_ids)
    if conversation_ids:
        stored = set(
            AttackResult.objects.filter(conversation_id__in=sorted(conversation_ids)).values_list(
                "pk", flat=True
            )
        )
        # Fresh results of fresh conversations (the usual first push) stay on the short path.
        fresh = fresh and stored <= ids
        ids |= stored
    wanted = sorted(ids)
    if not wanted:
        return 0
    old: dict[Any, TalliedResult] = {}
    humans: dict[Any, tuple[str, str | None]] = {}
    reviewed: set[Any] = set()
    if not fresh:
        # Locked in primary-key order: two writers moving the same results queue here, and
        # the second then reads the first one's verdicts and cells.
        old = {
            t.pk: t
            for t in TalliedResult.objects.select_for_update().filter(pk__in=wanted).order_by("pk")
        }
    rows = list(AttackResult.objects.filter(pk__in=wanted).values(*_FIELDS))
    if not fresh:
        humans, reviewed = _verdicts(wanted)
    delta = _Delta()
    ledger: list[dict[str, Any]] = []
    for row in rows:
        pk = row["pk"]
        state = _State.of(row, humans.get(pk), pk in reviewed)
        before = old.pop(pk, None)
        previous = _State.stored(before) if before is not None else None
        if previous == state:
            continue
        if previous is not None:
            delta.add(previous, -1)
        delta.add(state, +1)
        ledger.append(state.ledger(pk))
    # Ledger rows whose result is gone (deleted outside the services) leave the counts.
    for gone in old.values():
        delta.add(_State.stored(gone), -1)
    if not ledger and not old:
        return 0
    _increment(OutcomeTally, _CELL, delta.cells)
    _increment(DailyOutcomeTally, _DAY_CELL, delta.days)
    if fresh:
        insert_rows(TalliedResult, ledger)
    elif ledger:
        TalliedResult.objects.bulk_create(
            [TalliedResult(**row) for row in ledger],
            update_conflicts=True,
            unique_fields=["attack_result"],
            update_fields=["operation_key", "day", "outcome", "reviewed", "keys"],
        )
    if old:
        TalliedResult.objects.filter(pk__in=list(old)).delete()
    return len(ledger) + len(old)


def _connection(model: type[Model]) -> Any:
    return connections[router.db_for_write(model)]


# The shard an increment adds to (PostgreSQL): the lowest no concurrent transaction holds, now
# held by this one until it ends; when all are held, one by backend. An uncorrelated scalar
# subquery, so it runs once per statement. SQLite serialises writers: always shard 0.
_SHARD_SQL = (
    "(SELECT COALESCE((SELECT s FROM generate_series(0, %s) AS s "
    "WHERE pg_try_advisory_xact_lock(%s, s) LIMIT 1), pg_backend_pid() %% %s))"
)


# PostgreSQL array types of the cell columns, for the one-statement unnest() upsert.
_ARRAY_TYPES = {"operation_key": "bigint[]", "day": "date[]"}
_SQLITE_ROWS = 100
_CELL = ("operation_key", "dimension", "key", "outcome")
_DAY_CELL = ("operation_key", "dimension", "key", "day", "outcome")


def _increment(
    model: type[Model], columns: Sequence[str], delta: Mapping[tuple[Any, ...], int]
) -> None:
    """Add the non-zero `delta` counts to one shard's rows of their cells, creating missing
    rows: one INSERT ... ON CONFLICT DO UPDATE, in cell order so writers lock rows in one
    order (SQLite: one per _SQLITE_ROWS cells)."""
    cells = sorted((cell, n) for cell, n in delta.items() if n)
    if not cells:
        return
    connection = _connection(model)
    meta = model._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    fields: list[Field[Any, Any]] = []
    for name in columns:
        f = meta.get_field(name)
        assert isinstance(f, Field)
        fields.append(f)
    # Text goes through the fields' own stored form (redteam.common.fields), as ORM writes do.
    values = [
        [f.get_db_prep_value(v, connection) for f, v in zip(fields, cell, strict=True)] + [n]
        for cell, n in cells
    ]
    names = [quote(f.column) for f in fields]
    target = ", ".join([*names, quote("shard")])
    insert = (
        f"INSERT INTO {table} ({quote('operation_id')}, {', '.join(names)}, "
        f"{quote('shard')}, {quote('count')}) "
    )
    update = (
        f" ON CONFLICT ({target}) DO UPDATE SET {quote('count')} = "
        f"{table}.{quote('count')} + EXCLUDED.{quote('count')}"
    )
    operation = "NULLIF(c0, 0)"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = [_ARRAY_TYPES.get(name, "text[]") for name in columns]
            aliases = [f"c{i}" for i in range(len(columns))]
            unnest = ", ".join(f"%s::{t}" for t in [*arrays, "bigint[]"])
            sql = (
                f"{insert}SELECT {operation}, {', '.join(aliases)}, {_SHARD_SQL}, n "
                f"FROM unnest({unnest}) AS t({', '.join(aliases)}, n) "
                f"ORDER BY {', '.join(aliases)}{update}"
            )
            shard = [SHARDS - 1, _SHARD_LOCK_CLASS, SHARDS]
            cursor.execute(sql, [*shard, *map(list, zip(*values, strict=True))])
            return
        width = len(columns)
        row = "(" + ", ".join(["NULLIF(%s, 0)", *["%s"] * width, "%s", "%s"]) + ")"
        for start in range(0, len(values), _SQLITE_ROWS):
            chunk = values[start : start + _SQLITE_ROWS]
            params: list[Any] = []
            for v in chunk:
                params.extend([v[0], *v[:width], 0, v[width]])
            cursor.execute(f"{insert}VALUES {', '.join([row] * len(chunk))}{update}", params)


# --- repair --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rebuild:
    """What a rebuild counted."""

    results: int
    cells: int
    duration_ms: int


def _recount(using: str | None = None) -> Iterator[tuple[Any, _State]]:
    """Every result's state computed from the results and verdicts (rows read in chunks;
    the verdicts, which are few, at once)."""
    humans: dict[Any, tuple[str, str | None]] = {}
    for result_id, score_type, value in (
        human_scores()
        .using(using)
        .filter(attack_result__isnull=False)
        .values_list("attack_result_id", "score_type", "score_value")
        .iterator(chunk_size=REBUILD_CHUNK)
    ):
        humans.setdefault(result_id, (score_type, value))
    reviewed = set(
        human_verdicts()
        .using(using)
        .filter(attack_result__isnull=False)
        .order_by()
        .values_list("attack_result_id", flat=True)
        .distinct()
    )
    rows = AttackResult.objects.using(using).order_by().values(*_FIELDS)
    for row in rows.iterator(chunk_size=REBUILD_CHUNK):
        yield row["pk"], _State.of(row, humans.get(row["pk"]), row["pk"] in reviewed)


def recounted_totals(using: str | None = None) -> dict[tuple[Any, ...], int]:
    """What a rebuild would write, in `tally_totals`' form, without writing anything."""
    delta = _Delta()
    for _, state in _recount(using):
        delta.add(state, +1)
    totals: dict[tuple[Any, ...], int] = {("all", *c): n for c, n in delta.cells.items() if n}
    totals.update({("day", *c): n for c, n in delta.days.items() if n})
    return totals


@transaction.atomic
def rebuild_tallies() -> Rebuild:
    """Recount every operation's tallies and the ledger from the results and verdicts.

    A repair tool: the tallies are kept exact by `retally`; this is what they must equal.
    On PostgreSQL the tally tables are locked against writers (readers go on) for the
    duration, so no increment lands between the recount's read and its write.
    """
    started = time.monotonic()
    connection = _connection(OutcomeTally)
    tables = [m._meta.db_table for m in (TalliedResult, OutcomeTally, DailyOutcomeTally)]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            quoted = ", ".join(connection.ops.quote_name(t) for t in tables)
            cursor.execute(f"LOCK TABLE {quoted} IN EXCLUSIVE MODE")
    for model in (TalliedResult, OutcomeTally, DailyOutcomeTally):
        model._base_manager.all().delete()
    delta = _Delta()
    results = 0
    ledger: list[dict[str, Any]] = []
    for pk, state in _recount():
        results += 1
        delta.add(state, +1)
        ledger.append(state.ledger(pk))
        if len(ledger) >= REBUILD_CHUNK:
            insert_rows(TalliedResult, ledger)
            ledger = []
    insert_rows(TalliedResult, ledger)
    insert_rows(OutcomeTally, _tally_rows(_CELL, delta.cells))
    insert_rows(DailyOutcomeTally, _tally_rows(_DAY_CELL, delta.days))
    return Rebuild(
        results=results,
        cells=len(delta.cells),
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _tally_rows(
    columns: Sequence[str], counts: Mapping[tuple[Any, ...], int]
) -> list[dict[str, Any]]:
    return [
        {**dict(zip(columns, cell, strict=True)), "operation_id": cell[0] or None, "count": n}
        for cell, n in sorted(counts.items())
        if n
    ]


def tally_totals(using: str | None = None) -> dict[tuple[Any, ...], int]:
    """Every non-zero cell of both tables, shards summed: what a recount must reproduce
    (a check for `refresh_dashboard --check` and the tests; reads every cell)."""
    totals: dict[tuple[Any, ...], int] = {}
    cells = OutcomeTally.objects.using(using).values(*_CELL)
    for row in cells.annotate(n=Sum("count")).order_by():
        if row["n"]:
            totals[("all", *(row[c] for c in _CELL))] = row["n"]
    days = DailyOutcomeTally.objects.using(using).values(*_DAY_CELL)
    for row in days.annotate(n=Sum("count")).order_by():
        if row["n"]:
            totals[("day", *(row[c] for c in _DAY_CELL))] = row["n"]
    return totals


def tallies_missing(using: str | None = None) -> bool:
    """True when results exist that the ledger never counted (tallies never built: a
    database from before incremental tallies)."""
    return (
        AttackResult.objects.using(using).exists()
        and not TalliedResult.objects.using(using).exists()
    )


# --- reading -------------------------------------------------------------------------------


@dataclass(kw_only=True)
class Bar(OutcomeCounts):
    """One key of one dimension: counts per outcome, kept apart."""

    key: str
    display: str

    def segments(self) -> list[tuple[str, int, int]]:
        """(outcome, count, width percent) per non-empty outcome, for the stacked bar."""
        total = self.total or 1
        return [
            (o, self.counts[o], max(1, round(100 * self.counts[o] / total)))
            for o in ATTACK_OUTCOMES
            if self.counts[o]
        ]


@dataclass
class Chart:
    """The bars of one dimension, most results first."""

    dimension: str
    bars: list[Bar]
    hidden: int = 0

    @property
    def max_total(self) -> int:
        """The largest bar, which sets the scale."""
        return max((b.total for b in self.bars), default=0)


@dataclass(frozen=True)
class Headline:
    """The dashboard's headline numbers over the viewer's results (effective outcomes)."""

    results: int
    counts: Mapping[str, int]
    reviewed: int

    @property
    def rate(self) -> Rate:
        """Attack success rate: successes of all results (PyRIT's objective_achieved_rate),
        with n and its 95% Wilson interval."""
        return Rate(successes=self.counts.get("success", 0), n=self.results)

    @property
    def undetermined(self) -> int:
        """Results with no decided outcome."""
        return self.counts.get("undetermined", 0)

    @property
    def errors(self) -> int:
        """Results whose attack ended in an error."""
        return self.counts.get("error", 0)

    @property
    def reviewed_percent(self) -> int:
        """Share of results with a human verdict, in whole percent (rounded half up)."""
        return percent(self.reviewed, self.results)


@dataclass(frozen=True)
class Series:
    """One line of the trend: all results, or one key of the chosen dimension."""

    key: str
    display: str


@dataclass(frozen=True)
class TrendRow:
    """One period: its first day, and each series' counts in it (same order as the series)."""

    start: date
    end: date
    counts: list[OutcomeCounts]

    @property
    def rates(self) -> list[Rate]:
        """Each series' success rate in the period (successes of all its results)."""
        return [Rate(successes=c.counts.get("success", 0), n=c.total) for c in self.counts]


@dataclass
class Trend:
    """ASR over time: the last periods up to the latest day with results."""

    period: str
    dimension: str
    series: list[Series]
    rows: list[TrendRow]


@dataclass
class Dashboard:
    """Everything the dashboard page shows, over the viewer's operations."""

    charts: list[Chart]
    label_keys: list[str]
    more_label_keys: bool
    label_key: str | None
    headline: Headline
    trend: Trend


def build_dashboard(
    label_key: str | None,
    scope: Scope,
    *,
    trend_by: str = ALL_DIMENSION,
    period: str = "week",
) -> Dashboard:
    """Sum the tally rows of the scope's operations (at most six queries, whatever the
    number of results): the charted dimensions' cells; the label keys; the shown targets'
    names; the latest day and the trend's daily cells."""
    dimensions = [*DIMENSIONS]
    if label_key:
        dimensions.append(f"{LABEL_PREFIX}{label_key}")
    wanted = [*dimensions, REVIEW_DIMENSION, ALL_DIMENSION]
    counts: dict[str, dict[str, Bar]] = {d: {} for d in wanted}
    # One row per (dimension, key, outcome) whatever the number of operations and shards.
    for tally in (
        OutcomeTally.objects.visible_to(scope)
        .filter(dimension__in=wanted)
        .values("dimension", "key", "outcome")
        .annotate(total=Sum("count"))
        .order_by()
    ):
        if tally["total"]:
            bar = counts[tally["dimension"]].setdefault(
                tally["key"], Bar(key=tally["key"], display=tally["key"])
            )
            bar.add(tally["outcome"], tally["total"])
    # Label keys offered in the picker: a client may send thousands of distinct keys, so
    # only the first MAX_LABEL_KEYS (by name) are read and listed.
    label_keys = [
        d.removeprefix(LABEL_PREFIX)
        for d in OutcomeTally.objects.visible_to(scope)
        .filter(dimension__startswith=LABEL_PREFIX)
        .order_by("dimension")
        .values_list("dimension", flat=True)
        .distinct()[: MAX_LABEL_KEYS + 1]
    ]
    charts = [_chart(d, counts[d].values()) for d in dimensions]
    _name_targets(next(c for c in charts if c.dimension == "target").bars)
    if trend_by not in dimensions:
        trend_by = ALL_DIMENSION
    shown = next((c.bars for c in charts if c.dimension == trend_by), [])
    return Dashboard(
        charts=charts,
        label_keys=label_keys[:MAX_LABEL_KEYS],
        more_label_keys=len(label_keys) > MAX_LABEL_KEYS,
        label_key=label_key,
        headline=_headline(counts[ALL_DIMENSION], counts[REVIEW_DIMENSION]),
        trend=build_trend(scope, trend_by, shown[:TREND_SERIES], period),
    )


def _name_targets(bars: Sequence[Bar]) -> None:
    """Show targets by the name people know (redteam.core.identity.display), one query."""
    hashes = [b.key for b in bars if b.key != NONE_KEY]
    if not hashes:
        return
    names = dict(
        ComponentIdentifier.objects.filter(hash__in=hashes).values_list("hash", "display_name")
    )
    for bar in bars:
        if bar.key != NONE_KEY:
            bar.display = names.get(bar.key) or "target"


def period_start(day: date, period: str) -> date:
    """The first day of the period holding `day` (weeks start on Monday, ISO 8601)."""
    return day - timedelta(days=day.weekday()) if period == "week" else day


def build_trend(scope: Scope, dimension: str, keys: Sequence[Bar], period: str) -> Trend:
    """Success per period, for all results and for `keys` of `dimension`, over the last
    TREND_PERIODS periods up to the latest day with results (two queries)."""
    if period not in TREND_PERIODS:
        period = "week"
    series = [Series(ALL_KEY, "all results")]
    if dimension != ALL_DIMENSION:
        series += [Series(b.key, b.display) for b in keys]
    daily = DailyOutcomeTally.objects.visible_to(scope)
    latest = daily.filter(dimension=ALL_DIMENSION, key=ALL_KEY).aggregate(day=Max("day"))["day"]
    if latest is None:
        return Trend(period, dimension, series, [])
    step = 7 if period == "week" else 1
    last = period_start(latest, period)
    starts = [last - timedelta(days=step * i) for i in reversed(range(TREND_PERIODS[period]))]
    index = {s: i for i, s in enumerate(starts)}
    counts = [[OutcomeCounts() for _ in series] for _ in starts]
    column = {(ALL_DIMENSION, ALL_KEY): 0}
    column.update({(dimension, s.key): i for i, s in enumerate(series) if i})
    cells = daily.filter(day__gte=starts[0], day__lte=latest).filter(
        dimension__in=sorted({d for d, _ in column}), key__in=sorted({k for _, k in column})
    )
    for cell in (
        cells.values("dimension", "key", "day", "outcome").annotate(total=Sum("count")).order_by()
    ):
        col = column.get((cell["dimension"], cell["key"]))
        row = index.get(period_start(cell["day"], period))
        if col is not None and row is not None and cell["total"]:
            counts[row][col].add(cell["outcome"], cell["total"])
    rows = [
        TrendRow(start=s, end=s + timedelta(days=step - 1), counts=c)
        for s, c in zip(starts, counts, strict=True)
    ]
    return Trend(period, dimension, series, rows)


def _headline(totals: Mapping[str, Bar], reviews: Mapping[str, Bar]) -> Headline:
    """Totals by outcome over every result (each counts once under "all")."""
    counts = totals[ALL_KEY].counts if ALL_KEY in totals else {}
    reviewed = reviews[REVIEWED].total if REVIEWED in reviews else 0
    return Headline(results=sum(counts.values()), counts=dict(counts), reviewed=reviewed)


def _chart(dimension: str, bars: Iterable[Bar]) -> Chart:
    ordered: Sequence[Bar] = sorted(
        (b for b in bars if b.total > 0), key=lambda b: (-b.total, b.display)
    )
    return Chart(dimension, list(ordered[:MAX_BARS]), hidden=max(0, len(ordered) - MAX_BARS))
