"""How far a scorer agrees with people: PyRIT 1.1's scorer-evaluation metrics, in pure Python.

Framework-free. The formulas are those of PyRIT 1.1.0 ``pyrit/score/scorer_evaluation``
(``ObjectiveScorerEvaluator._compute_metrics``, ``HarmScorerEvaluator._compute_metrics`` and
``krippendorff.krippendorff_alpha``), rewritten without numpy or scipy:

* Objective (true_false) scorers. The gold label of a response is the median of its human
  ratings rounded half to even, so a split vote (one yes, one no) is False; the scorer's label
  is the same rule over its trials. Precision, recall and F1 are 0.0 when their denominator is
  0; accuracy is NaN for an empty set.
* Harm (float_scale) scorers. The gold score is the **median** of the human ratings (not the
  mean); differences under 1e-10 count as 0. The t-test is scipy's one-sample two-sided
  ``ttest_1samp(diff, 0)``; when every difference is (numpy ``allclose``) the first one, it is
  t=0, p=1 if that difference is (numpy ``isclose``) 0 and NaN otherwise. Krippendorff's alpha
  is PyRIT's **ordinal** alpha (its distance is the squared difference of mid-ranks), computed
  here in O(n log n) instead of PyRIT's categories-squared matrices; missing ratings are allowed.
  ``krippendorff_alpha_humans`` / ``_model`` are None with a single rater / trial.

``metrics_jsonl_line`` writes the results as a line of PyRIT's ``*_metrics.jsonl`` registry
(the scorer identifier's flat dump, ``eval_hash``, then ``metrics``), byte for byte as PyRIT's
``add_evaluation_results`` does.

Work is linear in the number of ratings apart from one sort of the distinct values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

# numpy's allclose / isclose defaults, as PyRIT calls them.
_RTOL: Final = 1e-5
_ATOL: Final = 1e-8
# PyRIT zeroes |diff| below this.
_DIFF_NOISE: Final = 1e-10
# PyRIT's Krippendorff thresholds.
_ALPHA_ZERO: Final = 1e-15
_ALPHA_CLIP: Final = 1e-10
# The incomplete-beta continued fraction converges in O(sqrt(max(a, b))) steps; this bounds it.
_BETA_MAX_STEPS: Final = 100_000
_BETA_EPS: Final = 1e-16
_TINY: Final = 1e-300

NAN: Final = float("nan")


@dataclass(frozen=True, slots=True)
class Confusion:
    """Scorer label against human gold label; n counts every response, also ones outside 0/1."""

    tp: int
    fp: int
    tn: int
    fn: int
    n: int


@dataclass(frozen=True, slots=True)
class ObjectiveScorerMetrics:
    """PyRIT's ``ObjectiveScorerMetrics`` fields, plus the confusion matrix and Cohen's kappa."""

    num_responses: int
    num_human_raters: int
    accuracy: float
    accuracy_standard_error: float
    f1_score: float
    precision: float
    recall: float
    num_scorer_trials: int
    confusion: Confusion
    cohen_kappa: float

    def pyrit_metrics(self) -> dict[str, Any]:
        """The ``metrics`` object of a PyRIT ``*_metrics.jsonl`` line (None values dropped)."""
        return {
            "num_responses": self.num_responses,
            "num_human_raters": self.num_human_raters,
            "num_scorer_trials": self.num_scorer_trials,
            "accuracy": self.accuracy,
            "accuracy_standard_error": self.accuracy_standard_error,
            "f1_score": self.f1_score,
            "precision": self.precision,
            "recall": self.recall,
        }


@dataclass(frozen=True, slots=True)
class HarmScorerMetrics:
    """PyRIT's ``HarmScorerMetrics`` numeric fields."""

    num_responses: int
    num_human_raters: int
    mean_absolute_error: float
    mae_standard_error: float
    t_statistic: float
    p_value: float
    krippendorff_alpha_combined: float
    krippendorff_alpha_humans: float | None
    krippendorff_alpha_model: float | None
    num_scorer_trials: int

    def pyrit_metrics(self) -> dict[str, Any]:
        """The ``metrics`` object of a PyRIT ``*_metrics.jsonl`` line (None values dropped)."""
        out: dict[str, Any] = {
            "num_responses": self.num_responses,
            "num_human_raters": self.num_human_raters,
            "num_scorer_trials": self.num_scorer_trials,
            "mean_absolute_error": self.mean_absolute_error,
            "mae_standard_error": self.mae_standard_error,
            "t_statistic": self.t_statistic,
            "p_value": self.p_value,
            "krippendorff_alpha_combined": self.krippendorff_alpha_combined,
        }
        if self.krippendorff_alpha_humans is not None:
            out["krippendorff_alpha_humans"] = self.krippendorff_alpha_humans
        if self.krippendorff_alpha_model is not None:
            out["krippendorff_alpha_model"] = self.krippendorff_alpha_model
        return out


# One response: its human ratings and the scorer's trials (a bare value is one trial).
Rated = tuple[Sequence[float], Sequence[float] | float]


def _trials(model: Sequence[float] | float) -> list[float]:
    if isinstance(model, int | float):
        return [float(model)]
    return [float(v) for v in model]


def median(values: Sequence[float]) -> float:
    """numpy's median: the middle value, or the mean of the two middle ones; NaN when empty."""
    if not values:
        return NAN
    ordered = sorted(float(v) for v in values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2.0


def majority(values: Sequence[float]) -> float:
    """PyRIT's majority vote: the median rounded half to even (a split vote is 0, False)."""
    m = median(values)
    return m if math.isnan(m) else float(round(m))


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters over the same items, in any labels.

    NaN when there are no items or chance agreement is total (both raters always gave the one
    same label), as sklearn's ``cohen_kappa_score`` gives.
    """
    if len(first) != len(second):
        raise ValueError("both raters must rate the same items")
    n = len(first)
    if n == 0:
        return NAN
    agree = sum(1 for a, b in zip(first, second, strict=True) if a == b)
    count_a: dict[Hashable, int] = {}
    count_b: dict[Hashable, int] = {}
    for a, b in zip(first, second, strict=True):
        count_a[a] = count_a.get(a, 0) + 1
        count_b[b] = count_b.get(b, 0) + 1
    expected = sum(c * count_b.get(label, 0) for label, c in count_a.items()) / (n * n)
    observed = agree / n
    if expected >= 1.0:
        return NAN
    return (observed - expected) / (1.0 - expected)


def kappa_from_confusion(confusion: Confusion) -> float:
    """Cohen's kappa of the 2x2 table (responses labelled neither 0 nor 1 left out)."""
    tp, fp, tn, fn = confusion.tp, confusion.fp, confusion.tn, confusion.fn
    n = tp + fp + tn + fn
    if n == 0:
        return NAN
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
    if expected >= 1.0:
        return NAN
    return ((tp + tn) / n - expected) / (1.0 - expected)


def objective_metrics(pairs: Iterable[Rated]) -> ObjectiveScorerMetrics:
    """PyRIT's objective metrics over (human ratings, scorer trials) per response.

    Ratings are 0/1 (or booleans). Raters may differ per response; ``num_human_raters`` and
    ``num_scorer_trials`` are then the largest counts seen.
    """
    tp = fp = tn = fn = n = 0
    raters = trials = 0
    for humans, model in pairs:
        model_trials = _trials(model)
        gold = majority([float(h) for h in humans])
        label = majority(model_trials)
        raters = max(raters, len(humans))
        trials = max(trials, len(model_trials))
        n += 1
        if gold == 1 and label == 1:
            tp += 1
        elif gold == 0 and label == 1:
            fp += 1
        elif gold == 0 and label == 0:
            tn += 1
        elif gold == 1 and label == 0:
            fn += 1
    confusion = Confusion(tp=tp, fp=fp, tn=tn, fn=fn, n=n)
    accuracy = (tp + tn) / n if n else NAN
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return ObjectiveScorerMetrics(
        num_responses=n,
        num_human_raters=raters,
        accuracy=accuracy,
        accuracy_standard_error=math.sqrt(accuracy * (1 - accuracy) / n) if n else NAN,
        f1_score=f1,
        precision=precision,
        recall=recall,
        num_scorer_trials=trials,
        confusion=confusion,
        cohen_kappa=kappa_from_confusion(confusion),
    )


def harm_metrics(items: Iterable[Rated]) -> HarmScorerMetrics:
    """PyRIT's harm metrics over (human ratings, scorer trials) per response, on the 0..1 scale."""
    humans_rows: list[list[float]] = []
    model_rows: list[list[float]] = []
    diffs: list[float] = []
    for humans, model in items:
        h = [float(v) for v in humans]
        m = _trials(model)
        humans_rows.append(h)
        model_rows.append(m)
        diff = median(m) - median(h)
        diffs.append(0.0 if abs(diff) < _DIFF_NOISE else diff)
    n = len(diffs)
    raters = max((len(h) for h in humans_rows), default=0)
    trials = max((len(m) for m in model_rows), default=0)
    abs_err = [abs(d) for d in diffs]
    if n:
        mae = math.fsum(abs_err) / n
        mae_se = math.sqrt(math.fsum((e - mae) ** 2 for e in abs_err) / n) / math.sqrt(n)
    else:
        mae = mae_se = NAN
    t_statistic, p_value = _paired_t(diffs)
    return HarmScorerMetrics(
        num_responses=n,
        num_human_raters=raters,
        mean_absolute_error=mae,
        mae_standard_error=mae_se,
        t_statistic=t_statistic,
        p_value=p_value,
        krippendorff_alpha_combined=krippendorff_alpha(
            h + m for h, m in zip(humans_rows, model_rows, strict=True)
        ),
        krippendorff_alpha_humans=krippendorff_alpha(humans_rows) if raters > 1 else None,
        krippendorff_alpha_model=krippendorff_alpha(model_rows) if trials > 1 else None,
        num_scorer_trials=trials,
    )


def _paired_t(diffs: Sequence[float]) -> tuple[float, float]:
    """PyRIT's t-test of the differences against 0, with its degenerate cases."""
    n = len(diffs)
    if n == 0:
        return NAN, NAN
    first = diffs[0]
    if all(abs(d - first) <= _ATOL + _RTOL * abs(first) for d in diffs):
        return (0.0, 1.0) if abs(first) <= _ATOL else (NAN, NAN)
    mean = math.fsum(diffs) / n
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    t = mean / math.sqrt(var / n)
    return t, student_t_two_sided_p(t, n - 1)


def student_t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with df degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    if math.isnan(t) or df <= 0:
        return NAN
    if math.isinf(t):
        return 0.0
    return regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5)


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) by Lentz's continued fraction, using the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _BETA_MAX_STEPS + 1):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _TINY else _TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _BETA_EPS:
            return h
    return h


def krippendorff_alpha(units: Iterable[Sequence[float]]) -> float:
    """PyRIT's ordinal Krippendorff's alpha; each unit is the ratings one item received.

    A unit may hold any number of ratings (missing ones are simply absent; NaN is dropped).
    NaN when fewer than 2 ratings exist or nothing is pairable, 1.0 when every rating is the
    same value. The ordinal distance between values c < k is
    (sum of marginals from c to k - (n_c + n_k) / 2)^2, the squared difference of the values'
    mid-ranks z, so disagreement is an interval-style sum over z, computed per unit.
    """
    # One float conversion per rating; NaN (missing) is the value unequal to itself.
    rows = [[f for v in unit if (f := float(v)) == f] for unit in units]
    total_ratings = sum(len(r) for r in rows)
    if total_ratings < 2:
        return NAN
    # Marginal counts over units with at least two ratings (single ratings pair with nothing).
    marginals: dict[float, int] = {}
    first = next(r[0] for r in rows if r)
    varied = False
    for row in rows:
        if not varied and any(v != first for v in row):
            varied = True
        if len(row) >= 2:
            for v in row:
                marginals[v] = marginals.get(v, 0) + 1
    if not varied:
        return 1.0
    total = sum(marginals.values())
    if total == 0:
        return NAN
    # Mid-rank of each value: the count below it plus half its own count.
    rank: dict[float, float] = {}
    below = 0
    for value in sorted(marginals):
        count = marginals[value]
        rank[value] = below + count / 2.0
        below += count
    observed = 0.0
    for row in rows:
        if len(row) >= 2:
            z = [rank[v] for v in row]
            observed += _pair_spread(z) / (len(row) - 1)
    expected_pairs = _pair_spread_weighted(rank, marginals)
    expected = expected_pairs / (total - 1) if total > 1 else expected_pairs
    if abs(expected) < _ALPHA_ZERO:
        return 1.0 if abs(observed) < _ALPHA_ZERO else NAN
    alpha = 1.0 - observed / expected
    if -_ALPHA_CLIP < alpha < 0:
        alpha = 0.0
    return alpha


def _pair_spread(z: Sequence[float]) -> float:
    """Sum over ordered pairs (i, j) of (z_i - z_j)^2 = 2 m sum (z_i - mean)^2."""
    m = len(z)
    mean = math.fsum(z) / m
    return 2.0 * m * math.fsum((v - mean) ** 2 for v in z)


def _pair_spread_weighted(rank: dict[float, float], counts: dict[float, int]) -> float:
    total = sum(counts.values())
    mean = math.fsum(rank[v] * c for v, c in counts.items()) / total
    return 2.0 * total * math.fsum(c * (rank[v] - mean) ** 2 for v, c in counts.items())


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """What PyRIT records beside the numbers in a metrics line (all optional)."""

    dataset_name: str | None = None
    dataset_version: str | None = None
    average_score_time_seconds: float = 0.0
    harm_category: str | None = None
    harm_definition: str | None = None
    harm_definition_version: str | None = None


def registry_metrics(
    metrics: ObjectiveScorerMetrics | HarmScorerMetrics, info: DatasetInfo | None = None
) -> dict[str, Any]:
    """The ``metrics`` object of a ``*_metrics.jsonl`` line, keys in PyRIT's dataclass order.

    PyRIT writes ``asdict(metrics)`` without ``trial_scores``, ``_``-fields and None values.
    """
    info = info or DatasetInfo()
    numbers = metrics.pyrit_metrics()
    out: dict[str, Any] = {
        "num_responses": numbers.pop("num_responses"),
        "num_human_raters": numbers.pop("num_human_raters"),
        "num_scorer_trials": numbers.pop("num_scorer_trials"),
        "dataset_name": info.dataset_name,
        "dataset_version": info.dataset_version,
        "average_score_time_seconds": info.average_score_time_seconds,
    }
    if isinstance(metrics, HarmScorerMetrics):
        humans = numbers.pop("krippendorff_alpha_humans", None)
        model = numbers.pop("krippendorff_alpha_model", None)
        out |= numbers
        out["harm_category"] = info.harm_category
        out["harm_definition"] = info.harm_definition
        out["harm_definition_version"] = info.harm_definition_version
        out["krippendorff_alpha_humans"] = humans
        out["krippendorff_alpha_model"] = model
    else:
        out |= numbers
    return {k: v for k, v in out.items() if v is not None}


def metrics_jsonl_line(
    scorer_identifier: dict[str, Any],
    eval_hash: str,
    metrics: ObjectiveScorerMetrics | HarmScorerMetrics,
    info: DatasetInfo | None = None,
) -> str:
    """One line of PyRIT's ``*_metrics.jsonl`` (no newline), as ``add_evaluation_results`` writes.

    ``scorer_identifier`` is the identifier's flat dump (``model_dump()``); PyRIT sets
    ``eval_hash`` and ``metrics`` after its keys and serializes with ``json.dumps`` defaults
    (NaN is written as ``NaN``, which PyRIT's reader accepts).
    """
    entry = dict(scorer_identifier)
    entry["eval_hash"] = eval_hash
    entry["metrics"] = registry_metrics(metrics, info)
    return json.dumps(entry)
