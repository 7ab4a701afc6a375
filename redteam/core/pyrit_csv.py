"""PyRIT 1.1's human-labeled CSV (``HumanLabeledDataset.from_csv``), written exactly.

Framework-free. Two shapes, as PyRIT bundles them:

* objective: ``# dataset_version=V`` then ``objective,assistant_response,human_score,data_type,
  harm_category`` (``human_score_1..N`` when a row has several raters); scores are 0/1. PyRIT's
  objective loader never reads ``harm_category``, so it may be empty there (a response with no
  targeted harm category); only a NUL character is refused in it.
* harm: ``# dataset_version=V, harm_definition=F, harm_definition_version=W`` then
  ``harm_category,objective,assistant_response,human_score_1..N,data_type``; scores in 0..1.

Values are written as they are (PyRIT must read them unchanged, so nothing is escaped for
spreadsheets): every field quoted, quotes doubled, newlines kept, nothing cut. PyRIT reads the
file with pandas (``comment="#"``, default NA values and type inference) and strips the
surrounding whitespace of each text cell; a value that pandas would turn into something else
(a missing value such as ``NA`` or ``""``, or a text column made only of numbers written in a
non-canonical way such as ``007``) raises ``ValueError`` here rather than being changed.
``refusals`` / ``split_readable`` name those rows without raising, for callers that leave them
out and report them.
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
    _raise_first(refusals(rows, harm=False))
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
    _raise_first(refusals(rows, harm=True))
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


# The text columns PyRIT reads, in the order problems are reported.
_OBJECTIVE_COLUMNS: Final = ("objective", "assistant_response", "data_type")
_HARM_COLUMNS: Final = ("harm_category", "objective", "assistant_response", "data_type")


def refusals(rows: Sequence[LabeledRow], *, harm: bool) -> dict[int, str]:
    """Why PyRIT would not read each of these rows back as written: row index -> reason, for
    the rows of an objective (``harm=False``) or harm file. What the writers raise on.

    Checks every row's scores (NaN; outside 0..1 for harm) and required text (objective, or
    harm_category for harm), then each text column PyRIT reads as pandas would type it. The
    typing of a column depends on all its values, so leaving rows out can change it:
    ``split_readable`` repeats the check until it holds."""
    found: dict[int, str] = {}
    required = "harm_category" if harm else "objective"
    for i, row in enumerate(rows):
        try:
            for s in row.human_scores:
                value = _score(s, i)
                if harm and not 0.0 <= value <= 1.0:
                    found[i] = f"harm score {value!r} is outside 0..1"
        except (TypeError, ValueError) as exc:
            found[i] = str(exc).removeprefix(f"row {i}: ")
        if i not in found and not getattr(row, required).strip():
            found[i] = f"{required} is empty, and PyRIT refuses empty {required}"
    for column in _HARM_COLUMNS if harm else _OBJECTIVE_COLUMNS:
        values = [getattr(row, column) for row in rows]
        read = pandas_reads(values)
        for i, (value, got) in enumerate(zip(values, read, strict=True)):
            if i in found:
                continue
            if value in PANDAS_NA:
                found[i] = f"{column} {value!r} is read by PyRIT as missing"
            elif "\x00" in value:
                found[i] = f"{column} holds a NUL character"
            elif got != value.strip():
                found[i] = f"{column} {value!r} would be read by PyRIT as {got!r}"
    if not harm:
        # Not read by PyRIT's objective loader: empty is fine, a NUL would still end the cell.
        for i, row in enumerate(rows):
            if i not in found and "\x00" in row.harm_category:
                found[i] = "harm_category holds a NUL character"
    return dict(sorted(found.items()))


# Leaving rows out retypes a column at most once per column and type; a bound, not a goal.
_MAX_PASSES: Final = 16


def split_readable(
    rows: Sequence[LabeledRow], *, harm: bool
) -> tuple[list[LabeledRow], dict[int, str]]:
    """The rows PyRIT reads back as written, and why each other row is left out (index in
    `rows` -> reason): `refusals` repeated until the kept rows pass it."""
    kept = list(range(len(rows)))
    left_out: dict[int, str] = {}
    for _ in range(_MAX_PASSES):
        found = refusals([rows[i] for i in kept], harm=harm)
        if not found:
            return [rows[i] for i in kept], dict(sorted(left_out.items()))
        left_out.update({kept[j]: reason for j, reason in found.items()})
        kept = [i for j, i in enumerate(kept) if j not in found]
    raise ValueError("the rows' columns kept changing type while refused rows were left out")


def _raise_first(found: dict[int, str]) -> None:
    for i, reason in found.items():
        raise ValueError(f"row {i}: {reason}")


def _meta(value: str) -> str:
    if not value or value != value.strip() or any(c in value for c in ",\r\n\x00"):
        raise ValueError(
            f"header value {value!r} must be non-empty, unpadded, with no comma or newline"
        )
    return value
