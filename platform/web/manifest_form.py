"""The authoring page's manifest form: the exercise.toml fields an author edits without
writing TOML (title, kind, names, the checks with their objectives, the wrong solutions and
alternatives), read from and written back into the manifest. Every other key (limits, check
options, custom diagnoses, equivalent mutants) is kept as it was; `points` is the sum of the
checks."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SCALARS = ("title", "kind", "entry", "trials", "device", "tolerance_note")
ORDER = ("slug", "title", "kind", "points", "names", "entry", "trials", "device",
         "reference_device", "tolerance_note")  # fmt: skip
ROWS = {  # table array -> (form prefix, its fields)
    "checks": ("check", ("name", "type", "target", "points", "objectives")),
    "wrong": ("wrong", ("file", "diagnosis", "note")),
    "alternative": ("alternative", ("file", "note")),
}
LISTS = ("objectives",)  # row fields written as a comma-separated list in the form
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class ManifestFormError(ValueError):
    """The manifest cannot be edited with the form (its TOML does not parse)."""


@dataclass(frozen=True)
class FormRows:
    """What the template shows: the scalar fields and each table array's rows."""

    fields: dict[str, str]
    names: str
    checks: list[dict[str, str]]
    wrong: list[dict[str, str]]
    alternative: list[dict[str, str]]


def form_rows(toml_text: str) -> FormRows | None:
    """The form's values from a manifest; None when its TOML does not parse."""
    try:
        raw = tomllib.loads(toml_text)
    except (tomllib.TOMLDecodeError, RecursionError, MemoryError):  # nested too deeply
        return None
    tables = {
        key: [
            {name: _field_text(item.get(name)) for name in fields}
            for item in raw.get(key, [])
            if isinstance(item, dict)
        ]
        for key, (_, fields) in ROWS.items()
    }
    names = raw.get("names", [])
    return FormRows(
        fields={key: _text(raw.get(key)) for key in SCALARS},
        names=", ".join(str(n) for n in names) if isinstance(names, list) else "",
        checks=tables["checks"],
        wrong=tables["wrong"],
        alternative=tables["alternative"],
    )


def apply_form(toml_text: str, form: Mapping[str, str]) -> str:
    """The manifest with the form's values in place, as TOML."""
    try:
        raw = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError as error:
        raise ManifestFormError(
            f"exercise.toml does not parse ({error}): fix it in the TOML view"
        ) from None
    except (RecursionError, MemoryError):
        raise ManifestFormError(
            "exercise.toml does not parse (nested too deeply): fix it in the TOML view"
        ) from None
    for key in SCALARS:
        value = form.get(key, "").strip()
        if key == "trials":
            _set(raw, key, int(value) if value.isdigit() else None)
        else:
            _set(raw, key, value or None)
    raw["names"] = [n.strip() for n in form.get("names", "").split(",") if n.strip()]
    for key, (prefix, fields) in ROWS.items():
        raw[key] = _rows(raw.get(key, []), form, prefix, fields)
        if not raw[key] and key != "checks":
            del raw[key]
    raw["points"] = sum(c.get("points", 0) for c in raw["checks"] if isinstance(c, dict)
                        and isinstance(c.get("points"), int))  # fmt: skip
    return dumps(raw)


def _rows(
    old: list[Any], form: Mapping[str, str], prefix: str, fields: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Row i keeps the options of old row i that the form does not show; a row whose
    first field is empty (or marked for deletion) is dropped; the `new` row is added."""
    rows = []
    count = int(form.get(f"{prefix}-count", "0") or 0)
    for index in [*range(count), "new"]:
        values = {f: form.get(f"{prefix}-{index}-{f}", "").strip() for f in fields}
        if not values[fields[0]] or form.get(f"{prefix}-{index}-delete"):
            continue
        keep = old[index] if isinstance(index, int) and index < len(old) else {}
        row: dict[str, Any] = {}
        if isinstance(keep, dict):
            row = {str(k): v for k, v in keep.items() if k not in fields}
        for name in fields:
            value = values[name]
            if name == "points":
                row[name] = int(value) if value.isdigit() else value
            elif name in LISTS:
                _set(row, name, [v.strip() for v in value.split(",") if v.strip()] or None)
            elif value:
                row[name] = value
        ordered = sorted(row, key=lambda key: _field_order(key, fields))
        rows.append({key: row[key] for key in ordered})
    return rows


def _field_order(key: str, fields: tuple[str, ...]) -> tuple[int, str]:
    return (fields.index(key), "") if key in fields else (len(fields), key)


def _set(raw: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        raw.pop(key, None)
    else:
        raw[key] = value


def _field_text(value: Any) -> str:
    """A list field (a check's objectives) is shown as `a, b`."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return _text(value)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# -- a small TOML writer for manifests (strings, numbers, booleans, arrays, tables) -----------


def dumps(raw: Mapping[str, Any]) -> str:
    scalars = {k: v for k, v in raw.items() if not _is_table(v) and not _is_table_array(v)}
    keys = sorted(scalars, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))
    lines = [f"{_key(k)} = {_value(scalars[k])}" for k in keys]
    for key, value in raw.items():
        if _is_table(value):
            lines += _table(key, value)
    for key, value in raw.items():
        if _is_table_array(value):
            for item in value:
                lines += ["", f"[[{_key(key)}]]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in item.items()]
    return "\n".join(lines) + "\n"


def _table(name: str, table: Mapping[str, Any]) -> list[str]:
    inner = {k: v for k, v in table.items() if not _is_table(v)}
    lines = ["", f"[{name}]"] + [f"{_key(k)} = {_value(v)}" for k, v in inner.items()]
    for key, value in table.items():
        if _is_table(value):
            lines += _table(f"{name}.{_key(key)}", value)
    return lines


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    return key if BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise ManifestFormError(f"cannot write {type(value).__name__} values in TOML")
