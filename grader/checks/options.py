"""Typed check options: each check type declares a frozen dataclass of its manifest
options beside the check (grader.checks.values, grader.checks.runs), with defaults and
a parser per field. `CheckOptions.parse` turns a manifest's `[[checks]]` table (minus
name/type/target/points) into that dataclass or raises `OptionError(field, message)`,
which grader.spec reports as a PackageError naming the file and the field.

    @dataclass(frozen=True)
    class GraphOptions(CheckOptions):
        facts: tuple[str, ...] = option(GRAPH_FACTS, one_or_more_of(*GRAPH_FACTS))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar


class OptionError(ValueError):
    """A malformed check option; `field` is its key (e.g. "rtol", "variants.typo")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class OptionContext:
    """What option parsers may check against: the manifest's names and the diagnoses it
    may use (grader.checks.diagnoses.catalogue.DIAGNOSES and its own [diagnoses])."""

    names: tuple[str, ...] = ()
    diagnoses: frozenset[str] = frozenset()


Parser = Callable[[Any, OptionContext], Any]
PARSER = "parse"


def option(default: Any, parse: Parser) -> Any:
    """A dataclass field that is a manifest option: its default and its parser."""
    return dataclasses.field(default=default, metadata={PARSER: parse})


class _Invalid(ValueError):
    """Raised by a parser: the message of an OptionError whose field the caller knows."""


# -- field parsers -------------------------------------------------------------------


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def tolerance(value: Any, context: OptionContext) -> float:
    if not _real(value) or not math.isfinite(value) or value < 0:
        raise _Invalid("must be a non-negative number")
    return float(value)


def number(value: Any, context: OptionContext) -> float:
    if not _real(value) or not math.isfinite(value):
        raise _Invalid("must be a number")
    return float(value)


def count(value: Any, context: OptionContext) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Invalid("must be a non-negative integer")
    return value


def flag(value: Any, context: OptionContext) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("must be true or false")
    return value


def one_of(*choices: str) -> Parser:
    def parse(value: Any, context: OptionContext) -> str:
        if value not in choices:
            if len(choices) == 1:
                raise _Invalid(f'the only accepted value is "{choices[0]}"')
            raise _Invalid(f"must be one of {list(choices)}")
        return str(value)

    return parse


def one_or_more_of(*choices: str) -> Parser:
    def parse(value: Any, context: OptionContext) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or any(v not in choices for v in value):
            raise _Invalid(f"must be a non-empty list drawn from {list(choices)}")
        return tuple(value)

    return parse


def listed_names(value: Any, context: OptionContext) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or any(v not in context.names for v in value):
        raise _Invalid("must be a non-empty list of names listed in names")
    return tuple(value)


def module_param(value: Any, context: OptionContext) -> str:
    """`"model.weight"`: a parameter of a module held by a name listed in names."""
    if not isinstance(value, str) or value.count(".") < 1:
        raise _Invalid('must be "<name>.<parameter>", e.g. "model.weight"')
    name, param = value.split(".", 1)
    if name not in context.names or not param or any(not p for p in param.split(".")):
        raise _Invalid(f"{value!r}: {name!r} must be listed in names, then a parameter name")
    return value


def known_diagnosis(value: Any, context: OptionContext) -> str:
    if not isinstance(value, str) or value not in context.diagnoses:
        raise _Invalid(
            f"{value!r} is not a known diagnosis "
            "(grader.checks.diagnoses.catalogue.DIAGNOSES or this manifest's [diagnoses])"
        )
    return value


def variants(value: Any, context: OptionContext) -> tuple[tuple[str, str], ...]:
    """`{diagnosis = "_observation"}`: pairs in manifest order."""
    if not isinstance(value, dict) or not value:
        raise _Invalid("must be a table {diagnosis = observation key}")
    for slug, key in value.items():
        if slug not in context.diagnoses:
            raise OptionError(f"variants.{slug}", "not a known diagnosis")
        if not isinstance(key, str) or not key.startswith("_"):
            raise OptionError(f"variants.{slug}", "must name an observation starting with _")
    return tuple((str(slug), str(key)) for slug, key in value.items())


# -- the base class ------------------------------------------------------------------

Options = TypeVar("Options", bound="CheckOptions")


@dataclass(frozen=True)
class CheckOptions:
    """Options every check type takes. `diagnosis` names a failure that the check's own
    comparison recognised as no specific mistake (FORMAT.md section 4)."""

    diagnosis: str = option("", known_diagnosis)

    @classmethod
    def parse(cls, raw: Mapping[str, Any], context: OptionContext) -> Self:
        declared = {f.name: f for f in dataclasses.fields(cls) if PARSER in f.metadata}
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in declared:
                raise OptionError(str(key), "unknown field")
            try:
                values[key] = declared[key].metadata[PARSER](value, context)
            except _Invalid as error:
                raise OptionError(key, str(error)) from None
        parsed = cls(**values)
        parsed.validate(set(values))
        return parsed

    def validate(self, given: set[str]) -> None:
        """Rules between fields (`given`: the keys the manifest set); raises OptionError."""


def options_of(options: CheckOptions, kind: type[Options]) -> Options:
    """`options` as the check's own type (the registry parsed them with it)."""
    if not isinstance(options, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(options).__name__}")
    return options
