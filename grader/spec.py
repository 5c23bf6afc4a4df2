"""Exercise packages (FORMAT.md section 1): parse, validate strictly, hash.

A package is a folder of UTF-8 text files. `load_package(path)` reads one from disk,
`Package.from_files(files)` builds one from memory (the instructor page). Every problem
raises `PackageError` naming the file and the field.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from grader.checks.base import CheckSpec
from grader.checks.diagnoses.catalogue import DIAGNOSES
from grader.checks.options import OptionContext, OptionError
from grader.checks.registry import REGISTRY, parse_options
from grader.protocol import Limits
from grader.statement import HEADING, MARKER, marker_lines, stale_section, with_checks

MANIFEST = "exercise.toml"
MODULE_MANIFEST = "module.toml"
REQUIRED_FILES = ("exercise.toml", "statement.md", "starter.py", "solution.py")
CASES_FILE = "cases.py"
SLUG_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_PACKAGE_FILES = 200
MAX_PACKAGE_BYTES = 2_000_000
MAX_TRIALS = 100
KINDS = ("script", "function")
DEVICES = ("cpu", "cuda")
REFERENCE_DEVICES = ("worker", "cpu")
# The fields of a [[checks]] table that are not options; each check type declares its
# options as a typed dataclass beside the check (grader.checks.registry).
CHECK_FIELDS = frozenset({"name", "type", "target", "points", "objectives"})
MODULE_KEYS = {"slug", "title", "exercises", "objectives"}
OBJECTIVE_KEYS = {"id", "title"}


class PackageError(ValueError):
    """A malformed exercise package; the message names the file and the field."""


@dataclass(frozen=True)
class KnownSolution:
    """A `[[wrong]]` (with its declared diagnosis) or an `[[alternative]]` (diagnosis "")."""

    file: str
    note: str = ""
    diagnosis: str = ""


@dataclass(frozen=True)
class DiagnosisSpec:
    title: str
    hint: str


@dataclass(frozen=True)
class DataLine:
    """`[data_line]`: a script exercise's training targets lie on a line, `target = slope *
    input + intercept` (training-loop: y = 2x + 1). The second run draws another line per
    submission (FORMAT.md section 2, "Which data"), so the values the model learns are
    unknown before the run."""

    target: str
    input: str
    slope: float
    intercept: float


@dataclass(frozen=True)
class Manifest:
    slug: str
    title: str
    kind: str
    points: int
    names: tuple[str, ...]
    checks: tuple[CheckSpec, ...]
    entry: str | None = None
    trials: int = 0
    device: str = "cpu"
    reference_device: str = "worker"
    tolerance_note: str = ""
    limits: Limits = field(default_factory=Limits)
    wrong: tuple[KnownSolution, ...] = ()
    alternatives: tuple[KnownSolution, ...] = ()
    diagnoses: Mapping[str, DiagnosisSpec] = field(default_factory=dict)
    # The statement asks the learner to seed torch: the harness leaves torch's generator
    # as a fresh interpreter has it (seeded from the OS), so a missing seed line shows.
    seed_by_learner: bool = False
    # `[starter] max_share`: the share of the points the untouched starter may score (None:
    # it must not pass), with the `reason` the author gives for it; checked by validation.
    starter_max_share: float | None = None
    starter_share_reason: str = ""
    data_line: DataLine | None = None


@dataclass(frozen=True)
class Package:
    slug: str
    manifest: Manifest
    files: Mapping[str, str]

    @classmethod
    def from_files(cls, files: Mapping[str, str], *, origin: str = "") -> Package:
        """Builds and validates a package from `{relative path: text}`."""
        prefix = origin or "<package>"
        _check_files(files, prefix)
        manifest = parse_manifest(files[MANIFEST], f"{prefix}/{MANIFEST}", files)
        _check_statement(files["statement.md"], f"{prefix}/statement.md")
        return cls(slug=manifest.slug, manifest=manifest, files=MappingProxyType(dict(files)))

    @property
    def content_hash(self) -> str:
        return package_hash(self.files)

    @property
    def solution(self) -> str:
        return self.files["solution.py"]

    @property
    def starter(self) -> str:
        return self.files["starter.py"]

    @property
    def statement(self) -> str:
        """statement.md with its "What is checked" section generated from the manifest
        (grader.statement), which is what learners read."""
        return with_checks(self.files["statement.md"], self.manifest)

    @property
    def cases(self) -> str | None:
        return self.files.get(CASES_FILE)


@dataclass(frozen=True)
class Objective:
    """A learning objective a module declares (module.toml `[[objectives]]`); checks are
    tagged with its id."""

    id: str
    title: str


@dataclass(frozen=True)
class Module:
    slug: str
    title: str
    exercises: tuple[str, ...]
    objectives: tuple[Objective, ...] = ()

    @property
    def objective_ids(self) -> tuple[str, ...]:
        return tuple(objective.id for objective in self.objectives)


def package_hash(files: Mapping[str, str]) -> str:
    """SHA-256 of the sorted (relative path, bytes) pairs."""
    digest = hashlib.sha256()
    for path in sorted(files):
        data = files[path].encode("utf-8")
        for part in (path.encode("utf-8"), data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
    return digest.hexdigest()


def load_package(path: str | Path) -> Package:
    """Reads `exercises/<slug>/` from disk; the folder name must equal the manifest slug."""
    root = Path(path)
    if not (root / MANIFEST).is_file():
        raise PackageError(f"{root}/{MANIFEST}: file missing (not an exercise package)")
    files = _read_tree(root)
    package = Package.from_files(files, origin=str(root).rstrip("/"))
    if package.slug != root.resolve().name:
        raise PackageError(
            f"{root}/{MANIFEST}: slug: must equal the folder name {root.resolve().name!r}"
        )
    return package


def load_module(exercises_dir: str | Path) -> Module:
    """Reads `exercises/module.toml`."""
    where = f"{Path(exercises_dir)}/{MODULE_MANIFEST}"
    try:
        text = (Path(exercises_dir) / MODULE_MANIFEST).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PackageError(f"{where}: cannot be read ({error})") from error
    return parse_module(text, where)


def parse_module(text: str, where: str) -> Module:
    """Parses the text of a module.toml; `where` names it in errors."""
    raw = _parse_toml(text, where)
    _reject_unknown(raw, MODULE_KEYS, where, "")
    slug = _slug(raw, "slug", where)
    title = _text(raw, "title", where)
    exercises = _string_list(raw, "exercises", where, required=True)
    for index, item in enumerate(exercises):
        if not SLUG_PATTERN.match(item):
            raise PackageError(f"{where}: exercises[{index}]: {item!r} is not a valid slug")
    if len(set(exercises)) != len(exercises):
        raise PackageError(f"{where}: exercises: lists a slug twice")
    objectives = parse_objectives(raw.get("objectives", []), where)
    return Module(slug=slug, title=title, exercises=tuple(exercises), objectives=objectives)


def parse_objectives(raw: Any, where: str) -> tuple[Objective, ...]:
    """module.toml's `[[objectives]]`: each an `id` (a slug, unique) and a `title`."""
    if not isinstance(raw, list):
        raise PackageError(f"{where}: objectives: must be an array of tables ([[objectives]])")
    objectives: list[Objective] = []
    for index, item in enumerate(raw):
        here = f"objectives[{index}]"
        if not isinstance(item, dict):
            raise PackageError(f"{where}: {here}: must be a table with id and title")
        _reject_unknown(item, OBJECTIVE_KEYS, where, f"{here}.")
        ident = _text(item, "id", where, prefix=here)
        if not SLUG_PATTERN.match(ident):
            raise PackageError(f"{where}: {here}.id: {ident!r} must be lowercase words joined by -")
        if ident in {o.id for o in objectives}:
            raise PackageError(f"{where}: {here}.id: {ident!r} is declared twice")
        objectives.append(Objective(id=ident, title=_text(item, "title", where, prefix=here)))
    return tuple(objectives)


def check_objectives(package: Package, objectives: tuple[str, ...], *, origin: str) -> None:
    """Every objective a check of `package` is tagged with is one its module declares
    (PackageError naming the check otherwise)."""
    declared = set(objectives)
    for index, check in enumerate(package.manifest.checks):
        for position, tag in enumerate(check.objectives):
            if tag not in declared:
                listed = ", ".join(objectives) or "none"
                raise PackageError(
                    f"{origin}/{MANIFEST}: checks[{index}].objectives[{position}]: {tag!r} "
                    f"is not an objective of the module ({MODULE_MANIFEST} declares: {listed})"
                )


def package_dirs(exercises_dir: str | Path) -> list[Path]:
    """Every package folder under `exercises_dir` (those holding an exercise.toml)."""
    root = Path(exercises_dir)
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / MANIFEST).is_file())


# -- files ---------------------------------------------------------------------------


def _read_tree(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_symlink():
            raise PackageError(f"{root}/{relative}: symbolic links are not allowed")
        if not path.is_file():
            continue
        try:
            files[relative.as_posix()] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            raise PackageError(f"{root}/{relative}: not UTF-8 text ({error})") from error
        if len(files) > MAX_PACKAGE_FILES:
            raise PackageError(f"{root}: more than {MAX_PACKAGE_FILES} files")
    return files


def _check_files(files: Mapping[str, str], prefix: str) -> None:
    if len(files) > MAX_PACKAGE_FILES:
        raise PackageError(f"{prefix}: more than {MAX_PACKAGE_FILES} files")
    total = 0
    for name, text in files.items():
        if not isinstance(name, str) or not isinstance(text, str):
            raise PackageError(f"{prefix}: file names and contents must be text")
        parts = name.split("/")
        if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise PackageError(f"{prefix}/{name}: not a relative path inside the package")
        if not _is_unicode_text(text):
            raise PackageError(f"{prefix}/{name}: not valid Unicode text (a lone surrogate)")
        total += len(text.encode("utf-8"))
    if total > MAX_PACKAGE_BYTES:
        raise PackageError(f"{prefix}: files larger than {MAX_PACKAGE_BYTES} bytes in all")
    for required in REQUIRED_FILES:
        if required not in files:
            raise PackageError(f"{prefix}/{required}: file missing")
    for name in files:
        if name.endswith(".py"):
            _check_compiles(files[name], f"{prefix}/{name}", name)


def _is_unicode_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_compiles(source: str, where: str, filename: str) -> None:
    """A PackageError naming the file for code that does not compile, including code that
    makes the compiler recurse too deep or run out of memory, and NUL bytes."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise PackageError(f"{where}: line {error.lineno}: syntax error ({error.msg})") from None
    except (RecursionError, MemoryError):
        raise PackageError(f"{where}: nested too deeply to compile") from None
    except ValueError as error:  # "source code string cannot contain null bytes"
        raise PackageError(f"{where}: does not compile ({error})") from None


def _check_statement(text: str, where: str) -> None:
    if marker_lines(text) > 1:
        raise PackageError(f"{where}: the line {MARKER} appears more than once")
    if stale_section(text):
        raise PackageError(
            f"{where}: a hand-written {HEADING!r} section; the table is generated from "
            f"{MANIFEST} where the line {MARKER} stands"
        )


# -- manifest ------------------------------------------------------------------------

TOP_LEVEL_KEYS = {
    "slug",
    "title",
    "kind",
    "points",
    "names",
    "entry",
    "trials",
    "device",
    "reference_device",
    "tolerance_note",
    "limits",
    "checks",
    "wrong",
    "alternative",
    "diagnoses",
    "equivalent_mutant",  # read by grader.authoring.mutants (declared-equivalent auto-mutants)
    "seed_by_learner",
    "starter",  # [starter] max_share and reason (_starter_share)
    "data_line",  # [data_line] target, input, slope, intercept (_data_line)
}
DATA_LINE_KEYS = {"target", "input", "slope", "intercept"}


def parse_manifest(text: str, where: str, files: Mapping[str, str]) -> Manifest:
    raw = _parse_toml(text, where)
    _reject_unknown(raw, TOP_LEVEL_KEYS, where, "")
    slug = _slug(raw, "slug", where)
    kind = _choice(raw, "kind", KINDS, where)
    names = _string_list(raw, "names", where, required=True)
    for index, name in enumerate(names):
        if not NAME_PATTERN.match(name):
            raise PackageError(f"{where}: names[{index}]: {name!r} is not a Python name")
    entry, trials = _function_fields(raw, kind, names, where, files)
    diagnoses = _diagnoses(raw.get("diagnoses", {}), where)
    known = set(DIAGNOSES) | set(diagnoses)
    checks = _checks(raw.get("checks"), kind, names, known, where)
    points = _positive_int(raw, "points", where)
    total = sum(check.points for check in checks)
    if points != total:
        raise PackageError(f"{where}: points: is {points} but the checks' points sum to {total}")
    return Manifest(
        slug=slug,
        title=_text(raw, "title", where),
        kind=kind,
        points=points,
        names=tuple(names),
        checks=checks,
        entry=entry,
        trials=trials,
        device=_choice(raw, "device", DEVICES, where, default="cpu"),
        reference_device=_choice(
            raw, "reference_device", REFERENCE_DEVICES, where, default="worker"
        ),
        tolerance_note=_text(raw, "tolerance_note", where, default=""),
        limits=_limits(raw.get("limits", {}), where),
        wrong=_known(raw.get("wrong", []), "wrong", known, files, where),
        alternatives=_known(raw.get("alternative", []), "alternative", None, files, where),
        diagnoses=MappingProxyType(diagnoses),
        seed_by_learner=_flag(raw, "seed_by_learner", where),
        **_starter_share(raw.get("starter", {}), where),
        data_line=_data_line(raw.get("data_line"), kind, where),
    )


def _data_line(raw: Any, kind: str, where: str) -> DataLine | None:
    """`[data_line]` (script exercises only): the targets' name, the inputs' name, and the
    line's slope and intercept as the reference's solution writes them (finite numbers)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise PackageError(f"{where}: data_line: must be a table")
    if kind != "script":
        raise PackageError(f"{where}: data_line: only script exercises have one")
    _reject_unknown(raw, DATA_LINE_KEYS, where, "data_line.")
    target, source = (_name(raw, key, where) for key in ("target", "input"))
    if target == source:
        raise PackageError(f"{where}: data_line: target and input must be different names")
    slope, intercept = (_finite(raw, key, where) for key in ("slope", "intercept"))
    return DataLine(target, source, slope, intercept)


def _name(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = _text(raw, key, where, prefix="data_line")
    if not NAME_PATTERN.match(value):
        raise PackageError(f"{where}: data_line.{key}: {value!r} is not a Python name")
    return value


def _finite(raw: Mapping[str, Any], key: str, where: str) -> float:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PackageError(f"{where}: data_line.{key}: must be a finite number")
    return float(value)


def _starter_share(raw: Any, where: str) -> dict[str, Any]:
    """`[starter]`: max_share (0 to 1) of the points an untouched starter may score, and
    the reason it may (required): without the table the starter must not pass."""
    if not isinstance(raw, dict):
        raise PackageError(f"{where}: starter: must be a table")
    _reject_unknown(raw, {"max_share", "reason"}, where, "starter.")
    if not raw:
        return {}
    share = raw.get("max_share")
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise PackageError(f"{where}: starter.max_share: must be a number from 0 to 1")
    reason = _text(raw, "reason", where, prefix="starter")
    return {"starter_max_share": float(share), "starter_share_reason": reason}


def _flag(raw: Mapping[str, Any], key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise PackageError(f"{where}: {key}: must be true or false")
    return value


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PackageError(f"{where}: invalid TOML ({error})") from error
    except (RecursionError, MemoryError):
        raise PackageError(f"{where}: invalid TOML (nested too deeply)") from None


def _reject_unknown(raw: Mapping[str, Any], allowed: set[str], where: str, path: str) -> None:
    for key in raw:
        if key not in allowed:
            raise PackageError(f"{where}: {path}{key}: unknown field")


def _function_fields(
    raw: Mapping[str, Any], kind: str, names: list[str], where: str, files: Mapping[str, str]
) -> tuple[str | None, int]:
    if kind == "script":
        for key in ("entry", "trials"):
            if key in raw:
                raise PackageError(f"{where}: {key}: only function exercises have one")
        if CASES_FILE in files:
            raise PackageError(f"{where}: kind: script exercises have no {CASES_FILE}")
        return None, 0
    entry = _text(raw, "entry", where)
    if not NAME_PATTERN.match(entry):
        raise PackageError(f"{where}: entry: {entry!r} is not a Python name")
    if not names or names[0] != entry:
        raise PackageError(f"{where}: names: must list the entry {entry!r} first")
    trials = _positive_int(raw, "trials", where)
    if trials > MAX_TRIALS:
        raise PackageError(f"{where}: trials: at most {MAX_TRIALS}")
    if CASES_FILE not in files:
        raise PackageError(f"{where.rsplit('/', 1)[0]}/{CASES_FILE}: file missing")
    _check_cases_source(files[CASES_FILE], f"{where.rsplit('/', 1)[0]}/{CASES_FILE}")
    return entry, trials


def _check_cases_source(source: str, where: str) -> None:
    """cases.py defines make_cases(seed, trials) (and optionally variants(case, env)), the
    reference-only contract; the old run(entry, case) ran in the learner's sandbox."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as error:
        raise PackageError(f"{where}: line {error.lineno}: {error.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise PackageError(f"{where}: does not compile (nested too deeply or NUL bytes)") from None
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    if "make_cases" not in defined:
        raise PackageError(f"{where}: must define make_cases(seed, trials)")
    if "run" in defined or "generate" in defined:
        raise PackageError(
            f"{where}: run()/generate() are gone: cases are plain data for the harness's "
            "case runner (FORMAT.md section 1)"
        )


def _checks(
    raw: Any, kind: str, names: list[str], known: set[str], where: str
) -> tuple[CheckSpec, ...]:
    if not isinstance(raw, list) or not raw:
        raise PackageError(f"{where}: checks: at least one [[checks]] table is required")
    checks: list[CheckSpec] = []
    for index, item in enumerate(raw):
        here = f"checks[{index}]"
        if not isinstance(item, dict):
            raise PackageError(f"{where}: {here}: must be a table")
        checks.append(_check(item, kind, names, known, where, here))
    seen: set[str] = set()
    for index, check in enumerate(checks):
        if check.name in seen:
            raise PackageError(f"{where}: checks[{index}].name: {check.name!r} is used twice")
        seen.add(check.name)
    return tuple(checks)


def _check(
    item: Mapping[str, Any], kind: str, names: list[str], known: set[str], where: str, here: str
) -> CheckSpec:
    name = _text(item, "name", where, prefix=here)
    ctype = item.get("type")
    if not isinstance(ctype, str) or ctype not in REGISTRY:
        raise PackageError(
            f"{where}: {here}.type: {ctype!r} is not one of {', '.join(sorted(REGISTRY))}"
        )
    raw_options = {key: value for key, value in item.items() if key not in CHECK_FIELDS}
    try:
        options = parse_options(ctype, raw_options, OptionContext(tuple(names), frozenset(known)))
    except OptionError as error:
        raise PackageError(f"{where}: {here}.{error.field}: {error.message}") from None
    points = _positive_int(item, "points", where, prefix=here)
    target = item.get("target")
    if REGISTRY[ctype].needs_target:
        target = _text(item, "target", where, prefix=here)
        if kind == "script" and target not in names:
            raise PackageError(f"{where}: {here}.target: {target!r} is not listed in names")
    elif target is not None:
        raise PackageError(f"{where}: {here}.target: a {ctype} check takes no target")
    objectives = _objective_tags(item.get("objectives", []), where, here)
    return CheckSpec(
        name=name, type=ctype, points=points, target=target, options=options, objectives=objectives
    )


def _objective_tags(raw: Any, where: str, here: str) -> tuple[str, ...]:
    """A check's `objectives`: ids of its module's objectives (checked against the module
    by `check_objectives`, where the module is known)."""
    if not isinstance(raw, list) or not all(isinstance(tag, str) for tag in raw):
        raise PackageError(f"{where}: {here}.objectives: must be a list of objective ids")
    for position, tag in enumerate(raw):
        if not SLUG_PATTERN.match(tag):
            raise PackageError(
                f"{where}: {here}.objectives[{position}]: {tag!r} is not an objective id "
                "(lowercase words joined by -)"
            )
    if len(set(raw)) != len(raw):
        raise PackageError(f"{where}: {here}.objectives: lists an objective twice")
    return tuple(raw)


def _known(
    raw: Any, key: str, known: set[str] | None, files: Mapping[str, str], where: str
) -> tuple[KnownSolution, ...]:
    if not isinstance(raw, list):
        raise PackageError(f"{where}: {key}: must be an array of tables ([[{key}]])")
    result: list[KnownSolution] = []
    for index, item in enumerate(raw):
        here = f"{key}[{index}]"
        if not isinstance(item, dict):
            raise PackageError(f"{where}: {here}: must be a table")
        allowed = {"file", "note", "diagnosis"} if known is not None else {"file", "note"}
        _reject_unknown(item, allowed, where, f"{here}.")
        file = _text(item, "file", where, prefix=here)
        if file not in files:
            raise PackageError(f"{where}: {here}.file: {file!r} is not in the package")
        if not file.endswith(".py"):
            raise PackageError(f"{where}: {here}.file: must be a .py file")
        diagnosis = ""
        if known is not None:
            diagnosis = _text(item, "diagnosis", where, prefix=here)
            if diagnosis not in known:
                raise PackageError(
                    f"{where}: {here}.diagnosis: {diagnosis!r} is not a known diagnosis "
                    "(grader.checks.diagnoses.catalogue.DIAGNOSES or this manifest's [diagnoses])"
                )
        note = _text(item, "note", where, prefix=here, default="")
        result.append(KnownSolution(file=file, note=note, diagnosis=diagnosis))
    return tuple(result)


def _diagnoses(raw: Any, where: str) -> dict[str, DiagnosisSpec]:
    if not isinstance(raw, dict):
        raise PackageError(f"{where}: diagnoses: must be a table")
    result: dict[str, DiagnosisSpec] = {}
    for slug, item in raw.items():
        here = f"diagnoses.{slug}"
        if not SLUG_PATTERN.match(slug):
            raise PackageError(f"{where}: {here}: {slug!r} is not a valid slug")
        if slug in DIAGNOSES:
            raise PackageError(f"{where}: {here}: redefines a built-in diagnosis")
        if not isinstance(item, dict):
            raise PackageError(f"{where}: {here}: must be a table with title and hint")
        _reject_unknown(item, {"title", "hint"}, where, f"{here}.")
        result[slug] = DiagnosisSpec(
            title=_text(item, "title", where, prefix=here),
            hint=_text(item, "hint", where, prefix=here),
        )
    return result


def _limits(raw: Any, where: str) -> Limits:
    if not isinstance(raw, dict):
        raise PackageError(f"{where}: limits: must be a table")
    defaults = Limits()
    kinds = {f.name: type(getattr(defaults, f.name)) for f in dataclasses.fields(Limits)}
    for key, value in raw.items():
        if key not in kinds:
            raise PackageError(f"{where}: limits.{key}: unknown limit")
        number_ok = isinstance(value, int | float) and not isinstance(value, bool)
        if kinds[key] is int and not (isinstance(value, int) and not isinstance(value, bool)):
            raise PackageError(f"{where}: limits.{key}: must be a positive integer")
        if not number_ok or not math.isfinite(value) or value <= 0:
            raise PackageError(f"{where}: limits.{key}: must be a positive number")
    return defaults.replace(**raw)


# -- scalar field helpers ------------------------------------------------------------


def _label(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _text(
    raw: Mapping[str, Any], key: str, where: str, *, prefix: str = "", default: str | None = None
) -> str:
    if key not in raw:
        if default is not None:
            return default
        raise PackageError(f"{where}: {_label(prefix, key)}: required field missing")
    value = raw[key]
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise PackageError(f"{where}: {_label(prefix, key)}: must be a non-empty string")
    return value


def _slug(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = _text(raw, key, where)
    if not SLUG_PATTERN.match(value):
        raise PackageError(f"{where}: {key}: {value!r} must be lowercase words joined by -")
    return value


def _positive_int(raw: Mapping[str, Any], key: str, where: str, *, prefix: str = "") -> int:
    value = raw.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise PackageError(f"{where}: {_label(prefix, key)}: must be a positive integer")
    return value


def _choice(
    raw: Mapping[str, Any],
    key: str,
    choices: tuple[str, ...],
    where: str,
    *,
    default: str | None = None,
) -> str:
    if key not in raw and default is not None:
        return default
    value = raw.get(key)
    if value not in choices:
        raise PackageError(f"{where}: {key}: must be one of {list(choices)}, not {value!r}")
    return value


def _string_list(raw: Mapping[str, Any], key: str, where: str, *, required: bool) -> list[str]:
    value = raw.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise PackageError(f"{where}: {key}: must be a non-empty list of strings")
    if len(set(value)) != len(value):
        raise PackageError(f"{where}: {key}: lists an entry twice")
    return value
