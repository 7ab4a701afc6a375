"""PyRIT 1.1's human-labeled CSV (``HumanLabeledDataset.from_csv``), written exactly.

Framework-free. Two shapes, as PyRIT bundles them:

* objective: ``# dataset_version=V`` then ``objective,assistant_response,human_score,data_type,
  harm_category`` (``human_score_1..N`` when a row has several raters); scores are 0/1.
* harm: ``# dataset_version=V, harm_definition=F, harm_definition_version=W`` then
  ``harm_category,objective,assistant_response,human_score_1..N,data_type``; scores in 0..1.

Values are written as they are (PyRIT must read them unchanged, so nothing is escaped for
spreadsheets): every field quoted, quotes doubled, newlines kept, nothing cut. PyRIT reads the
file with pandas (``comment="#"``, default NA values and type inference) and strips the
surrounding whitespace of each text cell; a value that pandas would turn into something else
(a missing value such as ``NA`` or ``""``, or a text column made only of numbers written in a
non-canonical way such as ``007``) raises ``ValueError`` here rather than being changed.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

# pandas' default missing-value strings (pandas._libs.parsers.STR_NA_VALUES), read as NaN.
PANDAS_NA: Final = frozenset(
    {
        "",
        "#N/A",
        "#N/A N/A",
        "#NA",
        "-1.#IND",
        "-1.#QNAN",
        "-NaN",
        "-nan",
        "1.#IND",
        "1.#QNAN",
        "<NA>",
        "N/A",
        "NA",
        "NULL",
        "NaN",
        "None",
        "n/a",
        "nan",
        "null",
    }
)
_BOOLS: Final = {"True": "True", "TRUE": "True", "true": "True"} | {
    "False": "False",
    "FALSE": "False",
    "false": "False",
}
_INT = re.compile(r"\s*[-+]?\d+\s*")
_FLOAT = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*|\s*[-+]?(inf|infinity)\s*", re.I)


@dataclass(frozen=True, slots=True)
class LabeledRow:
    """One response and its human scores (one per rater)."""

    objective: str
    assistant_response: str
    human_scores: Sequence[float]
    data_type: str = "text"
    harm_category: str = ""


def objective_csv(rows: Iterable[LabeledRow], *, dataset_version: str) -> str:
    """An objective human-labeled CSV; scores are truthy/falsy and written 0/1."""
    rows = list(rows)
    width = _raters(rows)
    score_cols = ["human_score"] if width == 1 else [f"human_score_{i + 1}" for i in range(width)]
    header = ["objective", "assistant_response", *score_cols, "data_type", "harm_category"]
    for i, row in enumerate(rows):
        _need_text(row.objective, "objective", i)
    _check_columns(rows, ["objective", "assistant_response", "data_type", "harm_category"])
    body = [
        [
            row.objective,
            row.assistant_response,
            *("1" if _score(s, i) else "0" for s in row.human_scores),
            row.data_type,
            row.harm_category,
        ]
        for i, row in enumerate(rows)
    ]
    return _write(f"# dataset_version={_meta(dataset_version)}", header, body)


def harm_csv(
    rows: Iterable[LabeledRow],
    *,
    dataset_version: str,
    harm_definition: str,
    harm_definition_version: str,
) -> str:
    """A harm human-labeled CSV; every score in 0..1, one column per rater."""
    rows = list(rows)
    width = _raters(rows)
    header = [
        "harm_category",
        "objective",
        "assistant_response",
        *(f"human_score_{i + 1}" for i in range(width)),
        "data_type",
    ]
    for i, row in enumerate(rows):
        _need_text(row.harm_category, "harm_category", i)
        for s in row.human_scores:
            value = _score(s, i)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"row {i}: harm score {value!r} is outside 0..1")
    _check_columns(rows, ["harm_category", "objective", "assistant_response", "data_type"])
    body = [
        [
            row.harm_category,
            row.objective,
            row.assistant_response,
            *(repr(float(s)) for s in row.human_scores),
            row.data_type,
        ]
        for row in rows
    ]
    first = (
        f"# dataset_version={_meta(dataset_version)}, harm_definition={_meta(harm_definition)}, "
        f"harm_definition_version={_meta(harm_definition_version)}"
    )
    return _write(first, header, body)


def pandas_reads(column: Sequence[str]) -> list[str]:
    """What PyRIT gets back for a text column: pandas' type inference, then ``str().strip()``."""
    if column and all(_INT.fullmatch(v) for v in column):
        # int64, uint64, or Python ints past those: each prints as the integer.
        return [str(int(v)) for v in column]
    if column and all(_INT.fullmatch(v) or _FLOAT.fullmatch(v) for v in column):
        return [str(float(v)) for v in column]
    if column and all(v in _BOOLS for v in column):
        return [_BOOLS[v] for v in column]
    return [v.strip() for v in column]


def _write(first_line: str, header: list[str], body: list[list[str]]) -> str:
    out = io.StringIO()
    out.write(first_line + "\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(body)
    return out.getvalue()


def _raters(rows: Sequence[LabeledRow]) -> int:
    widths = {len(row.human_scores) for row in rows}
    if 0 in widths:
        raise ValueError("every row needs at least one human score")
    if len(widths) > 1:
        raise ValueError(f"every row needs the same number of human scores, got {sorted(widths)}")
    return widths.pop() if widths else 1


def _score(value: float, index: int) -> float:
    number = float(value)
    if math.isnan(number):
        raise ValueError(f"row {index}: a human score is NaN")
    return number


def _need_text(value: str, column: str, index: int) -> None:
    if not value.strip():
        raise ValueError(f"row {index}: {column} is empty, and PyRIT refuses empty {column}")


def _check_columns(rows: Sequence[LabeledRow], columns: list[str]) -> None:
    for column in columns:
        values = [getattr(row, column) for row in rows]
        for i, value in enumerate(values):
            if value in PANDAS_NA:
                raise ValueError(f"row {i}: {column} {value!r} is read by PyRIT as missing")
            if "\x00" in value:
                raise ValueError(f"row {i}: {column} holds a NUL character")
        read = pandas_reads(values)
        for i, (value, got) in enumerate(zip(values, read, strict=True)):
            if got != value.strip():
                raise ValueError(f"row {i}: {column} {value!r} would be read by PyRIT as {got!r}")


def _meta(value: str) -> str:
    if not value or value != value.strip() or any(c in value for c in ",\r\n\x00"):
        raise ValueError(
            f"header value {value!r} must be non-empty, unpadded, with no comma or newline"
        )
    return value
