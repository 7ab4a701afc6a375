"""The API's JSON renderer (its own module: DRF imports it while loading its settings)."""

from __future__ import annotations

from rest_framework.renderers import JSONRenderer


class PyritJSONRenderer(JSONRenderer):
    """JSON as PyRIT's json.dumps writes it: NaN, Infinity and -Infinity as bare tokens.

    PyRIT's memory holds non-finite floats in metadata and identifier params; DRF's strict
    default would fail the whole answer on one of them (and Python's json reads them back).
    """

    strict = False
