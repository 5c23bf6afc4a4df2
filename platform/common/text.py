"""Text that is not valid Unicode (a lone surrogate such as '\\ud800', which no UTF-8 page,
JSON body or PostgreSQL row can hold) and data nested beyond a depth: found at the
boundary, where input is refused, and replaced (U+FFFD) where stored data is shown."""

from __future__ import annotations

import re
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
NOT_TEXT = "Must be valid Unicode text (it holds a lone surrogate)."


def has_lone_surrogate(text: str) -> bool:
    return LONE_SURROGATE.search(text) is not None


def scrub(value: Any) -> Any:
    """`value` with every lone surrogate of its strings (and keys) replaced by U+FFFD."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub(REPLACEMENT, value)
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(item) for item in value]
    return value


def first_problem(value: Any, max_depth: int) -> tuple[str, str] | None:
    """(the path of the field, what is wrong) for the first string holding a lone surrogate
    or container nested deeper than `max_depth`, else None. Iterative: no depth recurses."""
    pending: list[tuple[Any, str, int]] = [(value, "", 0)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return path, NOT_TEXT
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= max_depth:
            return path, f"Nested deeper than {max_depth} levels."
        if isinstance(item, dict):
            for key, child in item.items():
                where = _join(path, str(key))
                if has_lone_surrogate(str(key)):
                    return where, NOT_TEXT
                pending.append((child, where, depth + 1))
        else:
            pending.extend((child, _join(path, str(i)), depth + 1) for i, child in enumerate(item))
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
