"""What people call an identifier: its display name and its kind. Framework-free.

One rule for every page, chart and list: the class name, then the model people know it by
from the identifier's params (``underlying_model_name``, ``model_name``, ``model``,
``deployment_name``), e.g. ``OpenAIChatTarget · gpt-4o`` or, when the deployment and the
model differ, ``OpenAIChatTarget · gpt-4o (deployment contoso-gpt-deploy)``. The hash is shown
beside the name by the pages, never inside it.

Params are hostile: only non-empty strings are read, whitespace runs (newlines included)
become one space, every part is cut to a bound and the whole name to MAX_DISPLAY_NAME
characters. Templates still escape the result like any other stored text.

The kind (target, scorer, converter, attack, other) is decided from the class name's suffix,
then from the module path's segments, in :func:`identifier_kind` only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

MAX_DISPLAY_NAME: Final = 200
MAX_CLASS_CHARS: Final = 100
MAX_MODEL_CHARS: Final = 60
SEPARATOR: Final = " · "
ELLIPSIS: Final = "…"

# PyRIT's prompt targets name the deployment or model they call with model_name (the
# deployment name on Azure) and the model behind it with underlying_model_name; other
# components use model / model_id, and some deployment_name.
_UNDERLYING_KEYS: Final = ("underlying_model_name",)
_MODEL_KEYS: Final = ("model_name", "model", "model_id")
_DEPLOYMENT_KEYS: Final = ("deployment_name", "deployment")

KINDS: Final = ("target", "scorer", "converter", "attack", "other")
# (kind, class-name suffix, module path segments): the first match wins, suffixes first.
_KIND_RULES: Final = (
    ("target", "Target", ("prompt_target", "target")),
    ("scorer", "Scorer", ("score", "scorer")),
    ("converter", "Converter", ("prompt_converter", "converter")),
    ("attack", "Attack", ("attack",)),
)

_SPACES: Final = re.compile(r"\s+")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def _clean(value: Any, limit: int) -> str:
    """A param value as one bounded line; anything but a string is no name."""
    if not isinstance(value, str):
        return ""
    # Bound the work first: a hostile param may be megabytes long.
    text = _SPACES.sub(" ", value[: limit * 4]).strip()
    return _cut(text, limit)


def _first(params: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        text = _clean(params.get(key), MAX_MODEL_CHARS)
        if text:
            return text
    return ""


def model_label(params: Mapping[str, Any] | None) -> str:
    """The model part of a display name ("" when the params name none).

    ``gpt-4o`` when one name is known; ``gpt-4o (deployment my-dep)`` when the underlying
    model and the deployment (model_name or deployment_name) differ; ``deployment my-dep``
    when only a deployment is named.
    """
    if not isinstance(params, Mapping):
        return ""
    underlying = _first(params, _UNDERLYING_KEYS)
    model = _first(params, _MODEL_KEYS)
    deployment = _first(params, _DEPLOYMENT_KEYS)
    primary = underlying or model
    # With an underlying model, model_name is the deployment the client called.
    if underlying and model and model != underlying:
        deployment = model
    if primary and deployment and deployment != primary:
        return f"{primary} (deployment {deployment})"
    if primary:
        return primary
    return f"deployment {deployment}" if deployment else ""


def display_name(class_name: str, params: Mapping[str, Any] | None) -> str:
    """``OpenAIChatTarget · gpt-4o``: the class, then the model it calls (if named)."""
    name = _clean(class_name, MAX_CLASS_CHARS) or "(unnamed)"
    model = model_label(params)
    return _cut(f"{name}{SEPARATOR}{model}" if model else name, MAX_DISPLAY_NAME)


def identifier_kind(class_name: str, class_module: str) -> str:
    """target, scorer, converter, attack or other: by the class name's suffix (PyRIT's
    naming convention), else by a segment of its module path (``pyrit.prompt_target...``,
    ``pyrit.score...``, ``pyrit.prompt_converter...``, ``pyrit.executor.attack...``)."""
    name = class_name if isinstance(class_name, str) else ""
    for kind, suffix, _segments in _KIND_RULES:
        if name.endswith(suffix):
            return kind
    parts = set(class_module.split(".")) if isinstance(class_module, str) else set()
    for kind, _suffix, segments in _KIND_RULES:
        if parts.intersection(segments):
            return kind
    return "other"
