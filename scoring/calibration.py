"""Scorer calibration: how far each automated scorer configuration agrees with people.

For every scorer configuration (grouped by PyRIT's eval hash, with the classes and identifier
hashes under it) the automated scores are paired with the human verdicts on the same scored
object, and only objects that have both count. The formulas are PyRIT 1.1's
(redteam.core.calibration); this module only reads the rows and builds the pairs:

* A scored object is an attack result's last response (a piece, by its original_prompt_id),
  or the attack result itself when its last response is unknown. Human ratings of it are the
  reviewers' standing objective/scale verdicts on the result (the latest standing one per
  reviewer and answer counts, one rater each) and human scores ingested on the piece
  (PyRIT's Human* scorers; each such score is one rater).
* Its automated scores are the scores on that piece plus the result's ``last_score_id``.
  Several scores of one eval hash on one object are PyRIT's trials.
* true_false scorers pair with objective verdicts (true/false), float_scale scorers with
  scale verdicts (0..1). Several raters: PyRIT's rule (majority vote, median).

Every read is scoped (redteam.common.access): another operation's verdicts and scores never
count. Metrics are computed on request, so they move as verdicts arrive; the queries are a
fixed handful whatever the table sizes, and the work is linear in the human verdicts.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from django.db.models import QuerySet
from django.http import QueryDict

from memory.filters import AttackResultFilterSet, MessagePieceFilterSet
from memory.models import (
    AttackResult,
    ComponentIdentifier,
    IdentifierDump,
    MessagePiece,
    Score,
    ScoreSource,
    VerdictField,
)
from redteam.common.access import Scope
from redteam.core.calibration import (
    DatasetInfo,
    HarmScorerMetrics,
    ObjectiveScorerMetrics,
    harm_metrics,
    majority,
    median,
    metrics_jsonl_line,
    objective_metrics,
)
from redteam.core.identity import ComponentIdentifier as CoreIdentifier
from redteam.core.identity import ScorerEvaluationIdentifier
from scoring.blind import settled_q
from scoring.filters import ScorerSideFilterSet

TRUE_FALSE: Final = "true_false"
FLOAT_SCALE: Final = "float_scale"
# Which human answer a scorer type is compared with.
ANSWER_OF_TYPE: Final = {TRUE_FALSE: VerdictField.OBJECTIVE, FLOAT_SCALE: VerdictField.SCALE}
# Query parameters: those describing the scored objects go to the results' and pieces'
# FilterSets (memory.filters), those naming the scorer to the scores' one below.
OBJECT_FILTERS: Final = ("label", "harm_category", "after", "before")
SCORER_FILTERS: Final = ("eval_hash", "scorer")
# PyRIT zeroes differences below this (redteam.core.calibration).
_NOISE: Final = 1e-10
DATASET_NAME: Final = "redteam human verdicts"

ObjectKey = str
Rater = tuple[str, object]


class CalibrationFilterError(ValueError):
    """The query parameters are not valid filters; `errors` maps parameter -> messages."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class CalibrationQuery:
    """Validated filters: the automated scores that count and the scored objects allowed."""

    scope: Scope
    scores: QuerySet[Score]
    # None: every object (no object filter was given).
    results: QuerySet[AttackResult] | None = None
    pieces: QuerySet[MessagePiece] | None = None
    eval_hash: str = ""
    harm_categories: tuple[str, ...] = ()


def _subset(params: Mapping[str, Any], names: Sequence[str]) -> QueryDict:
    data = QueryDict(mutable=True)
    getlist = getattr(params, "getlist", None)
    for name in names:
        values = getlist(name) if getlist else params.get(name, [])
        if isinstance(values, str):
            values = [values]
        for value in values or []:
            data.appendlist(name, str(value))
    return data


def calibration_query(scope: Scope, params: Mapping[str, Any]) -> CalibrationQuery:
    """Parse `eval_hash`, `scorer`, `label`, `harm_category`, `after`, `before` with the
    project's FilterSets; CalibrationFilterError naming each bad parameter."""
    errors: dict[str, list[str]] = {}
    scorer_data = _subset(params, SCORER_FILTERS)
    scores = automated_scores(scope)
    scorer_side = ScorerSideFilterSet(scorer_data, scores, scope=scope)
    if not scorer_side.is_valid():
        errors.update({k: [str(m) for m in v] for k, v in scorer_side.errors.items()})
    object_data = _subset(params, OBJECT_FILTERS)
    results: QuerySet[AttackResult] | None = None
    pieces: QuerySet[MessagePiece] | None = None
    if object_data:
        result_side = AttackResultFilterSet(object_data, scope=scope)
        piece_side = MessagePieceFilterSet(object_data, scope=scope)
        for side in (result_side, piece_side):
            if not side.is_valid():
                for k, v in side.errors.items():
                    errors.setdefault(k, [str(m) for m in v])
        if not errors:
            results, pieces = result_side.qs, piece_side.qs
    if errors:
        raise CalibrationFilterError(errors)
    return CalibrationQuery(
        scope=scope,
        scores=scorer_side.qs,
        results=results,
        pieces=pieces,
        eval_hash=scorer_side.form.cleaned_data.get("eval_hash") or "",
        harm_categories=tuple(object_data.getlist("harm_category")),
    )


def automated_scores(scope: Scope) -> QuerySet[Score]:
    """Visible, determined automated scores of the two types calibration compares."""
    return Score.objects.visible_to(scope).filter(
        source=ScoreSource.AUTOMATED, status="complete", score_type__in=[TRUE_FALSE, FLOAT_SCALE]
    )


# ---------------------------------------------------------------------------------------------
# Human ratings
# ---------------------------------------------------------------------------------------------


@dataclass
class ScoredObject:
    """A response people and scorers judged: a piece (by original_prompt_id) or a result."""

    key: ObjectKey
    piece_prompt_id: uuid.UUID | None = None
    attack_result_id: uuid.UUID | None = None
    conversation_id: str | None = None
    last_score_ids: set[uuid.UUID] = field(default_factory=set)
    # answer ("objective" / "scale") -> rater -> value (0/1 or 0..1)
    ratings: dict[str, dict[Rater, float]] = field(default_factory=dict)
    latest: datetime | None = None

    def rate(self, answer: str, rater: Rater, value: float, when: datetime) -> None:
        """Keep a rater's first (newest) rating of an answer; callers go newest first."""
        self.ratings.setdefault(answer, {}).setdefault(rater, value)
        if self.latest is None or when > self.latest:
            self.latest = when


def _human_value(answer: str, score_value: str | None) -> float | None:
    """A human rating as a number: 1/0 for true/false, the 0..1 value for the scale."""
    if score_value is None:
        return None
    if answer == VerdictField.OBJECTIVE:
        text = score_value.strip().lower()
        return 1.0 if text == "true" else 0.0 if text == "false" else None
    try:
        number = float(score_value)
    except ValueError:
        return None
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None


def _review_verdicts(scope: Scope, query: CalibrationQuery) -> QuerySet[Score]:
    """Standing objective/scale review verdicts on visible (and filtered) attack results
    (read only through `_human_ratings`)."""
    verdicts = (
        Score.objects.visible_to(scope)
        .standing()
        .filter(
            source=ScoreSource.HUMAN,
            attack_result__isnull=False,
            verdict_field__in=[VerdictField.OBJECTIVE, VerdictField.SCALE],
        )
        # Blind double review: nothing still pending or disputed counts, and on an
        # adjudicated result only the final verdict does.
        .filter(settled_q())
    )
    if query.results is not None:
        verdicts = verdicts.filter(attack_result__in=query.results.values("pk"))
    return verdicts


def _piece_human_scores(scope: Scope, query: CalibrationQuery) -> QuerySet[Score]:
    """Standing human scores ingested on pieces, not review verdicts on a result (read only
    through `_human_ratings`)."""
    scores = (
        Score.objects.visible_to(scope)
        .standing()
        .filter(
            source=ScoreSource.HUMAN,
            attack_result__isnull=True,
            message_piece_id__isnull=False,
            status="complete",
            score_type__in=[TRUE_FALSE, FLOAT_SCALE],
        )
    )
    if query.pieces is not None:
        scores = scores.filter(message_piece_id__in=query.pieces.values("original_prompt_id"))
    return scores


@dataclass
class HumanRatings:
    """What `_human_ratings` read: the rated objects, and the two querysets of human scores
    it read them from (the automated side finds the objects' scores through these)."""

    objects: dict[ObjectKey, ScoredObject]
    review_verdicts: QuerySet[Score]
    piece_scores: QuerySet[Score]


def _human_ratings(scope: Scope, query: CalibrationQuery) -> HumanRatings:
    """Every human rating calibration counts, by scored object: THE one read of human
    verdicts here. Filtering that decides which human verdicts count for calibration (blind
    double review, adjudication winning over the reviewers it settles, ...) belongs in this
    function and nowhere else: the querysets it returns are the only ones any other step
    (the automated scores' lookup, pairs, pages, API, exports) reads human verdicts through.

    Queries: 2 (review verdicts with their result's last response and last score; human
    scores ingested on pieces). The latest standing verdict per reviewer and answer counts;
    a verdict whose reviewer account is gone counts as its own rater.
    """
    objects: dict[ObjectKey, ScoredObject] = {}
    review_verdicts = _review_verdicts(scope, query)
    piece_scores = _piece_human_scores(scope, query)
    reviews = review_verdicts.order_by("-timestamp", "verdict_field", "-ingested_at").values_list(
        "id",
        "attack_result_id",
        "attack_result__conversation_id",
        "attack_result__last_response__original_prompt_id",
        "attack_result__last_score_id",
        "reviewer_id",
        "verdict_field",
        "score_value",
        "timestamp",
    )
    for (
        sid,
        result_id,
        conversation_id,
        prompt_id,
        last_score,
        reviewer,
        answer,
        raw,
        when,
    ) in reviews:
        value = _human_value(answer, raw)
        if value is None:
            continue
        key = f"piece:{prompt_id}" if prompt_id else f"result:{result_id}"
        obj = objects.get(key)
        if obj is None:
            obj = objects[key] = ScoredObject(key=key, piece_prompt_id=prompt_id)
        # The newest result judged keeps its link (rows come newest first).
        if obj.attack_result_id is None:
            obj.attack_result_id, obj.conversation_id = result_id, conversation_id
        if last_score:
            obj.last_score_ids.add(last_score)
        rater: Rater = ("reviewer", reviewer) if reviewer is not None else ("score", sid)
        obj.rate(answer, rater, value, when)
    ingested = piece_scores.order_by("-timestamp", "-id").values_list(
        "id", "message_piece_id", "score_type", "score_value", "timestamp"
    )
    for sid, piece_prompt_id, score_type, raw, when in ingested:
        answer = ANSWER_OF_TYPE[score_type]
        value = _human_value(answer, raw)
        if value is None:
            continue
        key = f"piece:{piece_prompt_id}"
        obj = objects.get(key)
        if obj is None:
            obj = objects[key] = ScoredObject(key=key, piece_prompt_id=piece_prompt_id)
        obj.rate(answer, ("score", sid), value, when)
    return HumanRatings(objects, review_verdicts, piece_scores)


# ---------------------------------------------------------------------------------------------
# Automated scores and scorer configurations
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    """One automated score of an object."""

    score_id: uuid.UUID
    identifier_hash: str
    value: float


def _automated_value(score_type: str, raw: str | None) -> float | None:
    if raw is None:
        return None
    if score_type == TRUE_FALSE:
        text = raw.strip().lower()
        return 1.0 if text == "true" else 0.0 if text == "false" else None
    try:
        number = float(raw)
    except ValueError:
        return None
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None


_SCORE_FIELDS: Final = (
    "id",
    "message_piece_id",
    "score_type",
    "score_value",
    "scorer_identifier_id",
    "scorer_dump_id",
)


def _automated_trials(
    query: CalibrationQuery, ratings: HumanRatings
) -> tuple[dict[ObjectKey, dict[str, list[tuple[str, Trial]]]], dict[str, str | None]]:
    """The automated scores on the rated objects: object -> score type -> (identifier,
    trial); and the scorer dump digest of each identifier seen.

    Queries: 3, each driven by the human side through an index (scores on reviewed results'
    last responses, on pieces with ingested human scores, and reviewed results' last scores).
    """
    objects = ratings.objects
    reviews = ratings.review_verdicts
    by_piece = reviews.values("attack_result__last_response__original_prompt_id")
    by_human_piece = ratings.piece_scores.values("message_piece_id")
    by_last = reviews.values("attack_result__last_score_id")
    last_owner: dict[uuid.UUID, ObjectKey] = {
        sid: obj.key for obj in objects.values() for sid in obj.last_score_ids
    }
    seen: set[tuple[ObjectKey, uuid.UUID]] = set()
    trials: dict[ObjectKey, dict[str, list[tuple[str, Trial]]]] = {}
    dumps: dict[str, str | None] = {}
    rows: list[tuple[Any, ...]] = []
    if objects:
        for condition in (
            {"message_piece_id__in": by_piece},
            {"message_piece_id__in": by_human_piece},
            {"id__in": by_last},
        ):
            rows.extend(query.scores.filter(**condition).values_list(*_SCORE_FIELDS))
    for sid, prompt_id, score_type, raw, identifier, dump in rows:
        if identifier is None:
            continue
        value = _automated_value(score_type, raw)
        if value is None:
            continue
        keys = {last_owner[sid]} if sid in last_owner else set()
        if prompt_id is not None and f"piece:{prompt_id}" in objects:
            keys.add(f"piece:{prompt_id}")
        for key in keys:
            if (key, sid) in seen:
                continue
            seen.add((key, sid))
            trials.setdefault(key, {}).setdefault(score_type, []).append(
                (identifier, Trial(sid, identifier, value))
            )
        dumps.setdefault(identifier, dump)
    return trials, dumps


def computed_eval_hash(dump: Mapping[str, Any]) -> str | None:
    """PyRIT's scorer eval hash of a stored dump (1.x rules, legacy rules for 0.x dumps), or
    None when the dump cannot be read as an identifier."""
    version = str(dump.get("pyrit_version") or "")
    legacy = version.startswith("0.")
    line = version[:4] if legacy and version[:4] in ("0.12", "0.13", "0.14") else "1.1"
    if legacy and line == "1.1":
        line = "0.13"
    try:
        core = CoreIdentifier.from_dict(dump) if legacy else CoreIdentifier.model_validate(dump)
        return ScorerEvaluationIdentifier(core, line).eval_hash
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return None


@dataclass(frozen=True)
class ScorerIdentity:
    """One scorer identifier under an eval hash."""

    hash: str
    class_name: str
    display_name: str
    eval_hash: str
    # True when the eval hash was computed here (the stored dump carried none).
    eval_hash_computed: bool
    dump: dict[str, Any] | None


def _identities(dumps: Mapping[str, str | None]) -> dict[str, ScorerIdentity]:
    """Identifier rows and their dumps (2 queries, bounded by the distinct scorers)."""
    if not dumps:
        return {}
    rows = {
        row.hash: row
        for row in ComponentIdentifier.objects.filter(hash__in=sorted(dumps)).only(
            "hash", "class_name", "display_name", "eval_hash"
        )
    }
    digests = sorted({d for d in dumps.values() if d})
    dump_rows = {d.digest: d.dump for d in IdentifierDump.objects.filter(digest__in=digests)}
    out: dict[str, ScorerIdentity] = {}
    for identifier, digest in dumps.items():
        row = rows.get(identifier)
        dump = dump_rows.get(digest) if digest else None
        stored = row.eval_hash if row is not None else None
        computed = computed_eval_hash(dump) if not stored and dump is not None else None
        out[identifier] = ScorerIdentity(
            hash=identifier,
            class_name=row.class_name if row is not None else "",
            display_name=(row.display_name or row.class_name) if row is not None else "",
            eval_hash=stored or computed or identifier,
            eval_hash_computed=not stored,
            dump=dump,
        )
    return out


# ---------------------------------------------------------------------------------------------
# Pairs and metrics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One object rated by people and scored by the configuration: PyRIT's response row."""

    obj: ScoredObject
    humans: tuple[float, ...]
    trials: tuple[Trial, ...]

    @property
    def human_label(self) -> float:
        """Gold label (true_false: majority vote) or gold score (float_scale: median)."""
        return median(self.humans)

    @property
    def scorer_value(self) -> float:
        """The scorer's value over its trials (median)."""
        return median([t.value for t in self.trials])

    def disagrees(self, score_type: str) -> bool:
        """true_false: labels differ after PyRIT's majority rule; float_scale: any error."""
        if score_type == TRUE_FALSE:
            return majority(self.humans) != majority([t.value for t in self.trials])
        return self.error >= _NOISE

    @property
    def error(self) -> float:
        """Absolute difference of the scorer's and the people's median."""
        return abs(self.scorer_value - self.human_label)


Metrics = ObjectiveScorerMetrics | HarmScorerMetrics


def compute_metrics(
    score_type: str, pairs: Sequence[Pair], hashes: set[str] | None = None
) -> Metrics:
    """PyRIT's metrics over the pairs (only trials of `hashes` when given)."""
    rows = [
        (p.humans, [t.value for t in p.trials if hashes is None or t.identifier_hash in hashes])
        for p in pairs
    ]
    rows = [(h, m) for h, m in rows if m]
    if score_type == TRUE_FALSE:
        return objective_metrics(rows)
    return harm_metrics(rows)


@dataclass
class MemberCalibration:
    """One identifier (class + hash) under an eval hash, with metrics over its own scores."""

    identity: ScorerIdentity
    num_responses: int
    metrics: Metrics


@dataclass
class ScorerCalibration:
    """One scorer configuration (eval hash, score type) against human verdicts."""

    eval_hash: str
    score_type: str
    pairs: list[Pair]
    members: list[MemberCalibration]
    metrics: Metrics
    # Filled by callers that show them (published_for).
    published: list[Any] = field(default_factory=list)

    @property
    def identity(self) -> ScorerIdentity:
        """The configuration's most used identifier (what its JSONL line is written with)."""
        return self.members[0].identity

    @property
    def kind(self) -> str:
        """PyRIT's name for the metrics: objective (true_false) or harm (float_scale)."""
        return "objective" if self.score_type == TRUE_FALSE else "harm"

    @property
    def class_names(self) -> list[str]:
        """Distinct classes under the eval hash, most used first."""
        return list(dict.fromkeys(m.identity.class_name for m in self.members))

    def disagreements(self) -> list[Pair]:
        """Every pair where the scorer and the people disagree: largest error first, then the
        most recently rated."""
        found = [p for p in self.pairs if p.disagrees(self.score_type)]
        found.sort(key=lambda p: (p.obj.latest or datetime.min).timestamp(), reverse=True)
        found.sort(key=lambda p: p.error, reverse=True)
        return found

    def metric(self, name: str) -> float | None:
        """A metric by PyRIT's field name (or cohen_kappa), None when absent or NaN."""
        value = getattr(self.metrics, name, None)
        if isinstance(value, float) and math.isnan(value):
            return None
        return value if isinstance(value, int | float) else None

    def scorer_identifier(self) -> dict[str, Any]:
        """The most used identifier's flat dump without its eval hash (PyRIT's identity dict)."""
        dump = self.identity.dump
        if dump is None:
            return {"class_name": self.identity.class_name, "hash": self.identity.hash}
        return {k: v for k, v in dump.items() if k not in ("eval_hash", "metrics")}

    def api_dict(self) -> dict[str, Any]:
        """The /api/v1/scorer-metrics/ object (NaN as null)."""
        out: dict[str, Any] = {
            "eval_hash": self.eval_hash,
            "scorer_type": self.score_type,
            "scorer_identifier": self.scorer_identifier(),
            "num_responses": self.metrics.num_responses,
            "num_human_raters": self.metrics.num_human_raters,
            "metrics": finite(self.metrics.pyrit_metrics()),
        }
        if isinstance(self.metrics, ObjectiveScorerMetrics):
            out["metrics"]["cohen_kappa"] = finite_number(self.metrics.cohen_kappa)
            c = self.metrics.confusion
            out["confusion"] = {"tp": c.tp, "fp": c.fp, "tn": c.tn, "fn": c.fn}
        out["identifiers"] = [
            {
                "class_name": m.identity.class_name,
                "hash": m.identity.hash,
                "num_responses": m.num_responses,
            }
            for m in self.members
        ]
        return out

    def jsonl_line(self, harm_category: str | None = None) -> str:
        """This configuration as a line of PyRIT's ``*_metrics.jsonl``."""
        info = DatasetInfo(
            dataset_name=DATASET_NAME,
            harm_category=harm_category if self.score_type == FLOAT_SCALE else None,
        )
        return metrics_jsonl_line(self.scorer_identifier(), self.eval_hash, self.metrics, info)


def finite_number(value: Any) -> Any:
    """NaN and infinities as None (JSON null); everything else unchanged."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def finite(values: Mapping[str, Any]) -> dict[str, Any]:
    """A metrics dict with non-finite numbers as None."""
    return {k: finite_number(v) for k, v in values.items()}


def _build(
    objects: Mapping[ObjectKey, ScoredObject],
    trials: Mapping[ObjectKey, Mapping[str, list[tuple[str, Trial]]]],
    identities: Mapping[str, ScorerIdentity],
) -> list[ScorerCalibration]:
    """Pair every rated object with each configuration's trials on it."""
    groups: dict[tuple[str, str], list[Pair]] = {}
    for key, by_type in trials.items():
        obj = objects[key]
        for score_type, scored in by_type.items():
            ratings = obj.ratings.get(ANSWER_OF_TYPE[score_type])
            if not ratings:
                continue
            humans = tuple(ratings.values())
            per_config: dict[str, list[Trial]] = {}
            for identifier, trial in scored:
                identity = identities.get(identifier)
                if identity is None:
                    continue
                per_config.setdefault(identity.eval_hash, []).append(trial)
            for eval_hash, config_trials in per_config.items():
                groups.setdefault((eval_hash, score_type), []).append(
                    Pair(obj=obj, humans=humans, trials=tuple(config_trials))
                )
    out = []
    for (eval_hash, score_type), pairs in groups.items():
        pairs.sort(key=lambda p: p.obj.key)
        counts: dict[str, int] = {}
        for pair in pairs:
            for h in {t.identifier_hash for t in pair.trials}:
                counts[h] = counts.get(h, 0) + 1
        members = [
            MemberCalibration(
                identity=identities[h],
                num_responses=n,
                metrics=compute_metrics(score_type, pairs, {h}),
            )
            for h, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        ]
        out.append(
            ScorerCalibration(
                eval_hash=eval_hash,
                score_type=score_type,
                pairs=pairs,
                members=members,
                metrics=compute_metrics(score_type, pairs),
            )
        )
    out.sort(key=lambda c: (c.eval_hash, c.score_type))
    return out


def scorer_calibrations(query: CalibrationQuery) -> list[ScorerCalibration]:
    """Every scorer configuration the query's scope and filters see, with its pairs and
    PyRIT metrics, by eval hash. Queries: 2 (human ratings) + 3 (automated scores) + 2
    (identifiers and their dumps), whatever the number of rows."""
    ratings = _human_ratings(query.scope, query)
    trials, dumps = _automated_trials(query, ratings)
    calibrations = _build(ratings.objects, trials, _identities(dumps))
    if query.eval_hash:
        calibrations = [c for c in calibrations if c.eval_hash == query.eval_hash]
    return calibrations


def calibrations_for(scope: Scope, params: Mapping[str, Any]) -> list[ScorerCalibration]:
    """`scorer_calibrations` of validated query parameters (CalibrationFilterError)."""
    return scorer_calibrations(calibration_query(scope, params))


def jsonl_lines(calibrations: Iterable[ScorerCalibration], query: CalibrationQuery) -> list[str]:
    """PyRIT ``*_metrics.jsonl`` lines for the calibrations (harm category from the filter
    when exactly one was given)."""
    harm = query.harm_categories[0] if len(query.harm_categories) == 1 else None
    return [c.jsonl_line(harm) for c in calibrations]
