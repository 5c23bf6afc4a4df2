"""Where a PackageError points (the authoring page marks that line in its editor).

A PackageError's message starts with `<origin>/<file>: ` and then, depending on the file,
`line N: ...` (a .py file that does not compile, cases.py), `invalid TOML (... (at line N,
column M))`, or the manifest field it is about (`checks[1].target: ...`, `names: ...`,
`diagnoses.my-mistake.hint: ...`). `problem_place` turns that back into the file and the
line of that file, finding a field's line in the manifest's text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

HEAD = re.compile(r"^[^/:]+/(?P<file>[^:]+): (?P<rest>.*)$", re.DOTALL)
LINE = re.compile(r"^line (?P<line>\d+):")
TOML_LINE = re.compile(r"^invalid TOML \(.*\(at line (?P<line>\d+), column \d+\)\)$", re.DOTALL)
FIELD = re.compile(r"^(?P<field>[A-Za-z0-9_-]+(?:\[\d+\])?(?:\.[A-Za-z0-9_-]+)*): ")
ITEM = re.compile(r"^(?P<key>[A-Za-z0-9_-]+)\[(?P<index>\d+)\]$")


@dataclass(frozen=True)
class ProblemPlace:
    file: str  # the package's relative path
    line: int  # 1-based; 0: the file as a whole
    field: str = ""  # the manifest field, as the message names it


def problem_place(message: str, files: Mapping[str, str]) -> ProblemPlace | None:
    """The file (one of `files`) and line a PackageError message points at, or None when
    it names no file of the package (a missing file, the package as a whole)."""
    head = HEAD.match(message)
    if head is None or head["file"] not in files:
        return None
    file, rest = head["file"], head["rest"]
    found = LINE.match(rest) or TOML_LINE.match(rest)
    if found is not None:
        return ProblemPlace(file, int(found["line"]))
    field = FIELD.match(rest)
    if field is None or not file.endswith(".toml"):
        return ProblemPlace(file, 0)
    return ProblemPlace(file, field_line(files[file], field["field"]), field["field"])


def field_line(toml: str, field: str) -> int:
    """The line of `field` (`key`, `table[index].key`, `table.sub.key`) in the TOML text:
    its `key =` line, else its table's header line, else 0."""
    lines = toml.splitlines()
    parts = field.split(".")
    item = ITEM.match(parts[0])
    if item is not None:
        start = _nth_header(lines, f"[[{item['key']}]]", int(item["index"]))
        keys = parts[1:]
    else:
        start, keys = _table_of(lines, parts)
    if start is None:
        return 0
    if not keys:
        return start + 1 if start >= 0 else 0
    found = _key_line(lines, start + 1, keys[0])
    if found is not None:
        return found + 1
    return start + 1 if start >= 0 else 0


def _nth_header(lines: list[str], header: str, index: int) -> int | None:
    seen = -1
    for number, line in enumerate(lines):
        if line.strip() == header:
            seen += 1
            if seen == index:
                return number
    return None


def _table_of(lines: list[str], parts: list[str]) -> tuple[int | None, list[str]]:
    """The header line of the longest table `[a.b]` the dotted field starts with (-1: the
    top level), and the keys left after it."""
    for cut in range(len(parts) - 1, 0, -1):
        header = "[" + ".".join(parts[:cut]) + "]"
        found = _nth_header(lines, header, 0)
        if found is not None:
            return found, parts[cut:]
    return -1, parts


def _key_line(lines: list[str], begin: int, key: str) -> int | None:
    """The line (0-based) of `key = ...` from `begin` to the next table header."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for number in range(max(begin, 0), len(lines)):
        if lines[number].lstrip().startswith("["):
            return None
        if pattern.match(lines[number]):
            return number
    return None
