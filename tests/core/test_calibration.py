"""Scorer calibration equals PyRIT 1.1's own numbers (tests/fixtures/pyrit_scorer_metrics.json)."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from redteam.core.calibration import (
    Confusion,
    DatasetInfo,
    cohen_kappa,
    harm_metrics,
    kappa_from_confusion,
    krippendorff_alpha,
    majority,
    metrics_jsonl_line,
    objective_metrics,
    student_t_two_sided_p,
)
from redteam.core.pyrit_csv import LabeledRow, harm_csv, objective_csv, pandas_reads

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "pyrit_scorer_metrics.json").read_text(
        encoding="utf-8"
    )
)
TOL = 1e-9


def _items(case: dict[str, Any]) -> list[tuple[list[float], list[float]]]:
    """PyRIT's (raters x responses) arrays as (human ratings, scorer trials) per response."""
    humans, model = case["humans"], case["model"]
    return [([row[j] for row in humans], [row[j] for row in model]) for j in range(len(humans[0]))]


def _same(got: Any, want: Any) -> bool:
    if want is None:
        return got is None
    if want == "nan":
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, int) and not isinstance(want, bool):
        return bool(got == want)
    return got is not None and not math.isnan(got) and bool(abs(got - want) <= TOL)


def test_fixture_came_from_pyrit_1_1() -> None:
    assert GOLDEN["generated_with"] == "pyrit 1.1.0"
    assert len(GOLDEN["objective"]) >= 8
    assert len(GOLDEN["harm"]) >= 8


@pytest.mark.parametrize("case", GOLDEN["objective"], ids=lambda c: c["name"])
def test_objective_metrics_equal_pyrit(case: dict[str, Any]) -> None:
    got = objective_metrics(_items(case)).pyrit_metrics()
    assert set(got) == set(case["pyrit"])
    for field, want in case["pyrit"].items():
        assert _same(got[field], want), (field, got[field], want)


@pytest.mark.parametrize("case", GOLDEN["harm"], ids=lambda c: c["name"])
def test_harm_metrics_equal_pyrit(case: dict[str, Any]) -> None:
    metrics = harm_metrics(_items(case))
    got = metrics.pyrit_metrics()
    for field, want in case["pyrit"].items():
        value = getattr(metrics, field)
        assert _same(value, want), (field, value, want)
        assert (field in got) == (want is not None)


@pytest.mark.parametrize("case", GOLDEN["krippendorff"])
def test_krippendorff_with_missing_ratings_equals_pyrit(case: dict[str, Any]) -> None:
    data = case["raters_by_items"]
    units = [[row[j] for row in data if row[j] is not None] for j in range(len(data[0]))]
    assert _same(krippendorff_alpha(units), case["pyrit"])
    # NaN stands for a missing rating just as an absent one does.
    padded = [[math.nan if row[j] is None else row[j] for row in data] for j in range(len(data[0]))]
    assert _same(krippendorff_alpha(padded), case["pyrit"])


@pytest.mark.parametrize("case", GOLDEN["student_t"], ids=lambda c: f"t{c['t']}_df{c['df']}")
def test_student_t_p_value_equals_scipy(case: dict[str, Any]) -> None:
    assert abs(student_t_two_sided_p(case["t"], case["df"]) - case["p"]) <= 1e-12


def test_split_votes_are_false_and_majorities_win() -> None:
    assert majority([1, 0]) == 0.0
    assert majority([1, 1, 0, 0]) == 0.0
    assert majority([1, 1, 0]) == 1.0
    assert majority([True]) == 1.0
    assert math.isnan(majority([]))


def test_confusion_counts_and_zero_divisions() -> None:
    m = objective_metrics([([1], [1]), ([1], [0]), ([0], [1]), ([0], [0]), ([0], [0])])
    assert m.confusion == Confusion(tp=1, fp=1, tn=2, fn=1, n=5)
    assert m.accuracy == pytest.approx(3 / 5)
    none = objective_metrics([([0], [0]), ([0], 0.0)])
    assert (none.precision, none.recall, none.f1_score, none.accuracy) == (0.0, 0.0, 0.0, 1.0)
    empty = objective_metrics([])
    assert empty.num_responses == 0
    assert math.isnan(empty.accuracy)
    assert math.isnan(empty.accuracy_standard_error)
    assert math.isnan(empty.cohen_kappa)


def test_empty_harm_set_is_nan_not_an_error() -> None:
    m = harm_metrics([])
    assert m.num_responses == 0
    assert all(math.isnan(v) for v in (m.mean_absolute_error, m.t_statistic, m.p_value))
    assert math.isnan(m.krippendorff_alpha_combined)
    assert m.krippendorff_alpha_humans is None


def test_cohen_kappa_by_hand() -> None:
    # 50 items: both yes 20, both no 15, a yes b no 5, a no b yes 10.
    a = ["y"] * 20 + ["n"] * 15 + ["y"] * 5 + ["n"] * 10
    b = ["y"] * 20 + ["n"] * 15 + ["n"] * 5 + ["y"] * 10
    po, pe = 35 / 50, (25 * 30 + 25 * 20) / 2500
    assert cohen_kappa(a, b) == pytest.approx((po - pe) / (1 - pe), abs=1e-15)
    assert kappa_from_confusion(Confusion(tp=20, fp=10, tn=15, fn=5, n=50)) == pytest.approx(
        cohen_kappa(a, b), abs=1e-15
    )
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    assert math.isnan(cohen_kappa(["x", "x"], ["x", "x"]))
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1], [1, 2])
    m = objective_metrics([([1], [1]), ([1], [0]), ([0], [0]), ([0], [1]), ([1], [1])])
    assert m.cohen_kappa == pytest.approx(cohen_kappa([1, 1, 0, 0, 1], [1, 0, 0, 1, 1]))


class Counted(float):
    """A rating that counts how often the code reads it."""

    reads = 0

    def __float__(self) -> float:
        Counted.reads += 1
        return float.__float__(self)


def test_work_is_linear_on_100000_items() -> None:
    rng = random.Random(7)
    n = 100_000
    items = [
        (
            [Counted(rng.randrange(1001) / 1000) for _ in range(3)],
            [Counted(rng.randrange(1001) / 1000) for _ in range(2)],
        )
        for _ in range(n)
    ]
    Counted.reads = 0
    m = harm_metrics(items)
    assert m.num_responses == n
    # Each rating is read once; everything after works on plain floats.
    assert Counted.reads == 5 * n
    # Independent random ratings agree no better than chance.
    assert abs(m.krippendorff_alpha_combined) < 0.02
    assert 0.0 <= m.p_value <= 1.0
    binary = [
        ([Counted(rng.randrange(2)) for _ in range(3)], [Counted(rng.randrange(2))])
        for _ in range(n)
    ]
    Counted.reads = 0
    o = objective_metrics(binary)
    assert Counted.reads == 4 * n
    assert o.confusion.n == n
    # 200,000 distinct values, one sort: PyRIT's category matrices would hold 4e10 cells.
    assert abs(krippendorff_alpha([rng.random(), rng.random()] for _ in range(n))) < 0.02


# --- PyRIT's *_metrics.jsonl -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["objective", "harm"])
def test_metrics_line_is_the_one_pyrit_writes(kind: str) -> None:
    golden = GOLDEN["metrics_jsonl"]
    entry = golden[kind]
    case = next(c for c in GOLDEN[kind] if c["name"] == entry["case"])
    compute = objective_metrics if kind == "objective" else harm_metrics
    metrics = compute(_items(case))
    line = metrics_jsonl_line(golden["identifier"], "e" * 64, metrics, DatasetInfo(**entry["info"]))
    # Byte for byte PyRIT's add_evaluation_results line for the same numbers.
    assert line == entry["pyrit_line"]
    # And PyRIT's reader got every number of the line this project wrote.
    read = entry["read_back"]
    assert read["scorer_hash"] == golden["identifier"]["hash"]
    for field, value in metrics.pyrit_metrics().items():
        assert read["metrics"][field] == value
    assert read["metrics"]["dataset_name"] == entry["info"]["dataset_name"]


def test_metrics_line_writes_nan_as_pyrit_does() -> None:
    line = metrics_jsonl_line(
        {"class_name": "S"}, "h", harm_metrics([([0.1], [0.3]), ([0.2], [0.4])])
    )
    assert '"t_statistic": NaN' in line
    assert json.loads(line)["metrics"]["krippendorff_alpha_combined"] == pytest.approx(
        harm_metrics([([0.1], [0.3]), ([0.2], [0.4])]).krippendorff_alpha_combined
    )
    assert "krippendorff_alpha_humans" not in json.loads(line)["metrics"]


# --- PyRIT's human-labeled CSV --------------------------------------------------------------

HOSTILE = [
    LabeledRow(
        objective='Say "hi", then #comment',
        assistant_response='line one\nline two, with "quotes"\r\nand a # hash',
        human_scores=[1],
        harm_category="cyber",
    ),
    LabeledRow(
        objective="# looks like a comment",
        assistant_response="  padded with spaces  ",
        human_scores=[0],
        harm_category="a,b",
    ),
    LabeledRow(
        objective="emoji \U0001f642 and \u00e9",
        assistant_response="=cmd|' /C calc'!A0",
        human_scores=[1],
        data_type="text",
        harm_category="x",
    ),
]


def _golden_csv(name: str) -> dict[str, Any]:
    return next(c for c in GOLDEN["csv"] if c["name"] == name)


def _rows_with(scores: list[float], harm: str | None = None) -> list[LabeledRow]:
    return [
        LabeledRow(r.objective, r.assistant_response, scores, r.data_type, harm or r.harm_category)
        for r in HOSTILE
    ]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("objective_hostile", lambda: objective_csv(HOSTILE, dataset_version="1.0")),
        (
            "objective_three_raters",
            lambda: objective_csv(_rows_with([1, 0, 1]), dataset_version="2.1"),
        ),
        (
            "harm_three_raters",
            lambda: harm_csv(
                _rows_with([0.1, 0.25, 1.0], "violence"),
                dataset_version="1.0",
                harm_definition="violence.yaml",
                harm_definition_version="1.0",
            ),
        ),
        (
            "harm_one_rater",
            lambda: harm_csv(
                [LabeledRow("o", "r", [0.3], "text", "violence")],
                dataset_version="3",
                harm_definition="v.yaml",
                harm_definition_version="2",
            ),
        ),
        (
            "objective_numeric_responses",
            lambda: objective_csv(
                [LabeledRow("o", "42", [1], "text", "x"), LabeledRow("p", "7", [0], "text", "y")],
                dataset_version="1.0",
            ),
        ),
    ],
)
def test_written_csv_is_what_pyrit_loaded(name: str, text: Any) -> None:
    golden = _golden_csv(name)
    written = text()
    # Byte for byte the file PyRIT 1.1's HumanLabeledDataset.from_csv read.
    assert written == golden["text"]
    assert golden["rows"] == len(golden["entries"])


def test_pyrit_read_the_hostile_values_unchanged() -> None:
    golden = _golden_csv("objective_hostile")
    assert golden["version"] == "1.0"
    for row, entry in zip(HOSTILE, golden["entries"], strict=True):
        assert entry["objective_or_harm"] == row.objective.strip()
        # PyRIT strips the surrounding whitespace of text cells; nothing else changes.
        assert entry["assistant_response"] == row.assistant_response.strip()
        assert entry["human_scores"] == [bool(s) for s in row.human_scores]
        assert entry["data_type"] == "text"
    harm = _golden_csv("harm_three_raters")
    assert (harm["harm_definition"], harm["harm_definition_version"]) == ("violence.yaml", "1.0")
    assert all(e["human_scores"] == [0.1, 0.25, 1.0] for e in harm["entries"])
    assert "\r\n" in harm["entries"][0]["assistant_response"]


def test_values_pyrit_would_change_are_refused() -> None:
    refused = _golden_csv("refused_numeric_canon")
    # The prediction matches what PyRIT did to a hand-written file.
    assert pandas_reads(["007", "1.50"]) == [e["assistant_response"] for e in refused["entries"]]
    with pytest.raises(ValueError, match=re.escape("would be read by PyRIT as '7.0'")):
        objective_csv(
            [LabeledRow("o", "007", [1]), LabeledRow("p", "1.50", [0])], dataset_version="1"
        )
    for missing in ("NA", "None", "", "null"):
        with pytest.raises(ValueError, match="read by PyRIT as missing"):
            objective_csv([LabeledRow("o", missing, [1], "text", "x")], dataset_version="1")
    with pytest.raises(ValueError, match="objective is empty"):
        objective_csv([LabeledRow("  ", "r", [1], "text", "x")], dataset_version="1")
    with pytest.raises(ValueError, match=re.escape("outside 0..1")):
        harm_csv(
            [LabeledRow("o", "r", [1.5], "text", "v")],
            dataset_version="1",
            harm_definition="v.yaml",
            harm_definition_version="1",
        )
    with pytest.raises(ValueError, match="same number of human scores"):
        objective_csv(
            [LabeledRow("o", "r", [1], "text", "x"), LabeledRow("p", "s", [1, 0], "text", "x")],
            dataset_version="1",
        )
    with pytest.raises(ValueError, match="no comma"):
        objective_csv([LabeledRow("o", "r", [1], "text", "x")], dataset_version="1,2")
    with pytest.raises(ValueError, match="NaN"):
        harm_csv(
            [LabeledRow("o", "r", [math.nan], "text", "v")],
            dataset_version="1",
            harm_definition="v.yaml",
            harm_definition_version="1",
        )


@pytest.mark.parametrize("case", GOLDEN["pandas_inference"], ids=lambda c: "|".join(c["written"]))
def test_prediction_of_pandas_types_equals_pyrit(case: dict[str, Any]) -> None:
    assert pandas_reads(case["written"]) == case["read"]
    rows = [LabeledRow(f"o{i}", v, [1], "text", "x") for i, v in enumerate(case["written"])]
    changed = [v.strip() for v in case["written"]] != case["read"]
    if changed:
        with pytest.raises(ValueError, match="would be read by PyRIT as"):
            objective_csv(rows, dataset_version="1")
    else:
        assert objective_csv(rows, dataset_version="1")


def test_long_values_are_never_cut() -> None:
    long = "x" * 200_000 + "\n" + "y" * 10
    text = objective_csv([LabeledRow("o", long, [1], "text", "x")], dataset_version="1")
    assert long in text
