"""Which operation an item names: PyRIT's `operation` memory label (`op_name` in older runs).

Framework-free, so the server's ingestion and the client read labels by one rule.
"""

from __future__ import annotations

from typing import Any

# Checked in this order: a row carrying both belongs to its `operation`.
OPERATION_LABEL_KEYS = ("operation", "op_name")
OPERATION_NAME_MAX = 255
# Where rows that name no operation go when their sender has no default operation of its own
# (management commands, rows stored before operations existed).
UNASSIGNED = "unassigned"


class OperationLabelError(ValueError):
    """The label is present but cannot name an operation."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def labelled_operation(labels: Any) -> str | None:
    """The operation a labels dict names, None when it names none.

    Raises OperationLabelError for a value that is not a non-empty string of at most
    OPERATION_NAME_MAX characters.
    """
    if not isinstance(labels, dict):
        return None
    for key in OPERATION_LABEL_KEYS:
        if key not in labels:
            continue
        value = labels[key]
        if not isinstance(value, str) or not value.strip():
            raise OperationLabelError(key, "must be a non-empty string naming an operation")
        if len(value) > OPERATION_NAME_MAX:
            raise OperationLabelError(
                key, f"names an operation longer than {OPERATION_NAME_MAX} characters"
            )
        return value
    return None
