"""PyRIT's class-name and registry-name conversions (PYRIT-MODEL.md 7.9)."""

from __future__ import annotations

import re
from typing import Final

# --------------------------------------------------------------------------------------------
# Name utilities (section 7.9)
# --------------------------------------------------------------------------------------------

#: Names accepted by PyRIT's registries.
REGISTRY_NAME_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_CAPITALIZED_WORD: Final = re.compile(r"(.)([A-Z][a-z]+)")
_LOWER_THEN_UPPER: Final = re.compile(r"([a-z0-9])([A-Z])")


def class_name_to_snake_case(name: str, suffix: str = "") -> str:
    """``OpenAIChatTarget`` -> ``open_ai_chat_target``, stripping ``suffix`` first."""
    if suffix and name.endswith(suffix):
        name = name[: -len(suffix)]
    # Split before a capitalized word (keeps acronyms together: XMLParser -> XML_Parser), then
    # between a lowercase letter or digit and a capital (getHTTP -> get_HTTP).
    name = _CAPITALIZED_WORD.sub(r"\1_\2", name)
    return _LOWER_THEN_UPPER.sub(r"\1_\2", name).lower()


def snake_case_to_class_name(name: str, suffix: str = "") -> str:
    """``open_ai_chat`` -> ``OpenAiChat`` + ``suffix`` (str.capitalize per part)."""
    return "".join(part.capitalize() for part in name.split("_")) + suffix
