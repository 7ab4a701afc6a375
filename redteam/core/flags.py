"""Yes/no parameters: the one set of spellings every flag of the API and pages accepts.

Framework-free. Case and surrounding spaces are ignored; an empty value is "not given", and
any other word is an error rather than a silent "no".
"""

from __future__ import annotations

from typing import Final

TRUE_WORDS: Final = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS: Final = frozenset({"false", "0", "no", "off"})


def parse_flag(value: object) -> bool | None:
    """True or False for a spelled flag, None when empty; ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if not text:
        return None
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise ValueError(f"{text[:40]!r} is not true or false.")
