"""Model fields that store every string and JSON value exactly (NUL, NaN and Infinity too).

Each field encodes in get_prep_value (every ORM write, lookup and bulk path goes through it)
and decodes in from_db_value (every read), with redteam.core.storedtext's one representation.
Encoding may grow a string (at most double), so the character columns are declared twice
as wide in the database while validation keeps the field's max_length on the real value.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Value
from django.db.models.expressions import Expression
from django.db.models.functions import Left, Length, Replace

from redteam.core.storedtext import (
    ESCAPE,
    NUL_MARK,
    decode_json,
    decode_text,
    decode_text_head,
    encode_json,
    encode_text,
)

_JSON_MARKS = (ESCAPE, "\\ufdd0", "\\uFDD0")


def _prep_text(value: Any) -> Any:
    return encode_text(value) if isinstance(value, str) else value


def _from_db_text(value: Any) -> Any:
    return decode_text(value) if isinstance(value, str) and ESCAPE in value else value


class ExactCharField(models.CharField):  # type: ignore[type-arg]
    """A CharField whose values may hold any character, NUL included."""

    def get_prep_value(self, value: Any) -> Any:
        """The stored (escaped) form."""
        return _prep_text(super().get_prep_value(value))

    def from_db_value(self, value: Any, expression: Expression, connection: Any) -> Any:
        """The original string."""
        return _from_db_text(value)

    def db_type_parameters(self, connection: BaseDatabaseWrapper) -> Any:
        """Room for the escaped form: every character escaped takes two."""
        params = super().db_type_parameters(connection)
        if self.max_length is None:
            return params
        return {"max_length": 2 * self.max_length}


class ExactTextField(models.TextField):  # type: ignore[type-arg]
    """A TextField whose values may hold any character, NUL included."""

    def get_prep_value(self, value: Any) -> Any:
        """The stored (escaped) form."""
        return _prep_text(super().get_prep_value(value))

    def from_db_value(self, value: Any, expression: Expression, connection: Any) -> Any:
        """The original string."""
        return _from_db_text(value)


class ExactTextHeadField(models.TextField):  # type: ignore[type-arg]
    """The output of stored_text_head: the start of an ExactTextField's value, decoded."""

    def from_db_value(self, value: Any, expression: Expression, connection: Any) -> Any:
        """The start of the original string (a pair split by the cut left out)."""
        return decode_text_head(value) if isinstance(value, str) else value


def stored_text_head(name: str, chars: int) -> Left:
    """At most the first `chars` characters of the ExactTextField `name`, cut in the database:
    a page that shows the start of a value does not read megabytes of it. Read back decoded,
    so a value holding NUL or the escape character may come back a few characters shorter."""
    return Left(F(name), chars, output_field=ExactTextHeadField())


def stored_text_length(name: str) -> Length:
    """The length of the original string the ExactTextField `name` holds, computed in the
    database: each escape pair counted as one character (pairs replaced left to right, as
    decode_text reads them; a value without the escape character is counted as it is)."""
    pairs = Replace(
        Replace(F(name), Value(ESCAPE + ESCAPE), Value("x")), Value(ESCAPE + NUL_MARK), Value("x")
    )
    return Length(pairs, output_field=models.IntegerField())


class ExactJSONField(models.JSONField):
    """A JSONField whose values may hold NUL in strings and keys, NaN and +/-Infinity."""

    def get_prep_value(self, value: Any) -> Any:
        """The stored (escaped) form."""
        return encode_json(super().get_prep_value(value))

    def from_db_value(self, value: Any, expression: Expression, connection: Any) -> Any:
        """The original value."""
        # Only a stored text holding the escape character needs the decoding walk (SQLite
        # keeps the JSON text as json.dumps wrote it, with the character as a \u escape).
        needs_decoding = not isinstance(value, str) or any(mark in value for mark in _JSON_MARKS)
        value = super().from_db_value(value, expression, connection)
        return decode_json(value) if needs_decoding else value


class ExactForeignKey(models.ForeignKey):  # type: ignore[type-arg]
    """A ForeignKey to an ExactCharField key: its raw id reads back decoded like the key.

    Django converts a foreign key's raw value with the key field's get_prep_value on the way
    in, but not with its from_db_value on the way out, so `piece.conversation_id` would
    otherwise show the stored form of an id holding NUL.
    """

    def get_prep_value(self, value: Any) -> Any:
        """The value as given: the key field escapes it, exactly once.

        Django's related lookups prepare a value with the key field's get_prep_value and then
        with this one; saves go through the key field's get_db_prep_save. Escaping here too
        would escape twice.
        """
        return value

    def from_db_value(self, value: Any, expression: Expression, connection: Any) -> Any:
        """The original id."""
        return _from_db_text(value)


def stored_json_text(value: Any) -> str:
    """The JSON text a ExactJSONField stores for `value` (for COPY, which bypasses fields)."""
    return json.dumps(encode_json(value))
