"""pyrit_csv's per-row refusals: the rows the writers would raise on, named without raising."""

from __future__ import annotations

import pytest

from redteam.core.pyrit_csv import (
    LabeledRow,
    harm_csv,
    objective_csv,
    refusals,
    split_readable,
)


def _row(response: str, objective: str = "o", category: str = "c", score: float = 1) -> LabeledRow:
    return LabeledRow(objective, response, [score], "text", category)


def test_refusals_name_every_row_the_writers_raise_on() -> None:
    rows = [_row("fine"), _row("NA"), _row("ok", objective=" "), _row("x\x00y"), _row("z")]
    assert refusals(rows, harm=False) == {
        1: "assistant_response 'NA' is read by PyRIT as missing",
        2: "objective is empty, and PyRIT refuses empty objective",
        3: "assistant_response holds a NUL character",
    }
    with pytest.raises(ValueError, match="row 1: assistant_response 'NA'"):
        objective_csv(rows, dataset_version="1")
    harm = [_row("a", score=1.5), _row("b", category=""), _row("c", score=float("nan"))]
    assert refusals(harm, harm=True) == {
        0: "harm score 1.5 is outside 0..1",
        1: "harm_category is empty, and PyRIT refuses empty harm_category",
        2: "a human score is NaN",
    }


def test_leaving_rows_out_can_retype_a_column_so_the_check_repeats() -> None:
    # With "NA" present the column is text; without it, pandas reads "007" as the integer 7.
    rows = [_row("007"), _row("NA"), _row("42")]
    assert refusals(rows, harm=False) == {1: "assistant_response 'NA' is read by PyRIT as missing"}
    kept, left_out = split_readable(rows, harm=False)
    assert kept == [rows[2]]
    assert left_out == {
        0: "assistant_response '007' would be read by PyRIT as '7'",
        1: "assistant_response 'NA' is read by PyRIT as missing",
    }
    assert objective_csv(kept, dataset_version="1")


def test_an_objective_file_may_leave_harm_category_empty() -> None:
    # PyRIT's objective loader never reads harm_category (checked in pyrit_human_labels.json).
    text = objective_csv([_row("r", category="")], dataset_version="1")
    assert text.endswith('"o","r","1","text",""\n')
    assert refusals([_row("r", category="a\x00")], harm=False) == {
        0: "harm_category holds a NUL character"
    }
    with pytest.raises(ValueError, match="harm_category is empty"):
        harm_csv(
            [_row("r", category="")],
            dataset_version="1",
            harm_definition="v.yaml",
            harm_definition_version="1",
        )
