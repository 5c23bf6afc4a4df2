"""Instructor CLI.

    python -m grader check exercises/<slug>       validate one package (with its auto-mutants)
    python -m grader check exercises/             validate every package (and module.toml)
    python -m grader run exercises/<slug> answer.py [--json]   grade one answer
    python -m grader mutants exercises/<slug>     grade the reference's auto-mutants
    python -m grader new <slug> [--dir exercises]  write a new script exercise that validates

Everything is built here from the command line, with the same environment variables as
the platform's settings for defaults: `--sandbox` (GRADLAB_SANDBOX, default bubblewrap)
configured by the other GRADLAB_SANDBOX* variables (grader.sandbox.config.SandboxConfig),
`--zygote` (GRADLAB_SANDBOX_ZYGOTE, default off: bubblewrap forks each CPU job from a
torch-loaded zygote), `--device` (GRADLAB_DEVICE, default cpu), `--cache-dir`
(GRADLAB_CACHE_DIR, default var/reference-cache). The seed defaults to
grader.engine.DEV_SEED (a fixed development seed); `--seed` overrides it. Exit status: 0
when everything is as declared / the answer passes / no mutant survives undeclared, 1
otherwise, 2 for a malformed package or bad arguments, 3 for a sandbox fault.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path

from grader.authoring.diagnosis_share import diagnosis_share
from grader.authoring.mutants import run_mutants, table
from grader.authoring.scaffold import KINDS, new_package
from grader.authoring.validation import Validation, validate_package
from grader.cache import DEFAULT_CACHE_DIR, ReferenceCache
from grader.engine import DEV_SEED, GradeJob, grade
from grader.protocol import ExerciseError, InfrastructureError, Report
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.base import Sandbox
from grader.spec import (
    MANIFEST,
    MODULE_MANIFEST,
    Module,
    PackageError,
    check_objectives,
    load_module,
    load_package,
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INFRASTRUCTURE = 0, 1, 2, 3
DEVICES = ("cpu", "cuda")


def _sandbox(args: argparse.Namespace) -> Sandbox:
    config = SandboxConfig.from_environ(os.environ)
    return build_backend(dataclasses.replace(config, backend=args.sandbox, zygote=args.zygote))


def _cache(args: argparse.Namespace) -> ReferenceCache:
    return ReferenceCache(args.cache_dir)


def _check_one(
    path: Path, sandbox: Sandbox, cache: ReferenceCache, args: argparse.Namespace
) -> bool:
    try:
        package = load_package(path)
    except PackageError as error:
        print(f"FAIL {path.name}: {error}")
        return False
    validation: Validation = validate_package(
        package, sandbox=sandbox, cache=cache, seed=args.seed, mutants=not args.no_mutants
    )
    print(validation.summary(), flush=True)
    print(diagnosis_share(validation).line(), flush=True)
    return validation.ok


def _check_module(root: Path) -> tuple[bool, list[Path]]:
    packages = sorted(p for p in root.iterdir() if (p / MANIFEST).is_file())
    if not (root / MODULE_MANIFEST).is_file():
        return True, packages
    try:
        module = load_module(root)
    except PackageError as error:
        print(f"FAIL {MODULE_MANIFEST}: {error}")
        return False, packages
    present = {p.name for p in packages}
    missing = [slug for slug in module.exercises if slug not in present]
    unlisted = sorted(present - set(module.exercises))
    ok = not unlisted and _objectives_ok(module, packages)
    note = f"{len(module.exercises)} exercises listed, {len(present)} present"
    if missing:
        note += f"; not written yet: {', '.join(missing)}"
    if unlisted:
        note += f"; not listed in {MODULE_MANIFEST}: {', '.join(unlisted)}"
    print(f"{'ok  ' if ok else 'FAIL'} {MODULE_MANIFEST} ({module.slug}): {note}")
    return ok, packages


def _objectives_ok(module: Module, packages: list[Path]) -> bool:
    """Every check's objectives are ones module.toml declares (each package that parses)."""
    ok = True
    for path in packages:
        try:
            package = load_package(path)
        except PackageError:
            continue  # _check_one reports it
        try:
            check_objectives(package, module.objective_ids, origin=str(path))
        except PackageError as error:
            print(f"FAIL {error}")
            ok = False
    return ok


def command_check(args: argparse.Namespace) -> int:
    root = Path(args.path)
    if (root / MANIFEST).is_file():
        with closing(_sandbox(args)) as sandbox:
            return EXIT_OK if _check_one(root, sandbox, _cache(args), args) else EXIT_FAILED
    if not root.is_dir():
        print(f"{root}: not an exercise package or a folder of packages", file=sys.stderr)
        return EXIT_BAD_INPUT
    ok, packages = _check_module(root)
    if not packages:
        print(f"{root}: no exercise packages found", file=sys.stderr)
        return EXIT_BAD_INPUT
    cache = _cache(args)
    with closing(_sandbox(args)) as sandbox:
        results = [_check_one(path, sandbox, cache, args) for path in packages]
    passed = sum(results)
    print(f"{passed}/{len(results)} packages valid")
    return EXIT_OK if ok and all(results) else EXIT_FAILED


def format_report(report: Report) -> str:
    lines = [
        f"status: {report.status}   score: {report.score:g}/{report.max_score:g}   "
        f"passed: {'yes' if report.passed else 'no'}   ({report.duration_s:.2f} s, "
        f"{report.runtime})"
    ]
    if report.message:
        lines.append(f"message: {report.message}")
    for check in report.checks:
        mark = "PASS" if check.passed else "FAIL"
        lines.append(f"  {mark} {check.score:g}/{check.max_score:g}  {check.name}")
        lines.append(f"        {check.message}")
        if check.diagnosis:
            lines.append(f"        diagnosis: {check.diagnosis} - {check.hint}")
    if report.exception:
        error = report.exception
        lines.append(f"exception: {error.get('type')}: {error.get('message')}")
        if error.get("traceback"):
            lines.append(str(error["traceback"]).rstrip())
    if report.curves:
        lines.append(f"loss curve (yours): {report.curves['learner']}")
        lines.append(f"loss curve (reference): {report.curves['reference']}")
    if report.stdout:
        lines.append("output:")
        lines.extend(f"  | {line}" for line in report.stdout.rstrip("\n").splitlines())
    return "\n".join(lines)


def command_run(args: argparse.Namespace) -> int:
    package = load_package(args.package)
    try:
        code = Path(args.answer).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        print(f"{args.answer}: cannot be read ({error})", file=sys.stderr)
        return EXIT_BAD_INPUT
    job = GradeJob(package=package, code=code, seed=args.seed, device=args.device)
    with closing(_sandbox(args)) as sandbox:
        report = grade(job, sandbox=sandbox, cache=_cache(args))
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(format_report(report))
    return EXIT_OK if report.passed else EXIT_FAILED


def command_mutants(args: argparse.Namespace) -> int:
    package = load_package(args.package)
    with closing(_sandbox(args)) as sandbox:
        results = run_mutants(
            package, sandbox=sandbox, cache=_cache(args), seed=args.seed, device=args.device
        )
    print(table(package.slug, package.solution, results), flush=True)
    return EXIT_FAILED if any(result.bad for result in results) else EXIT_OK


def command_new(args: argparse.Namespace) -> int:
    target = Path(args.dir) / args.slug
    if target.exists():
        print(f"{target}: already exists", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path, text in new_package(args.slug, title=args.title, kind=args.kind).items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_text(text, encoding="utf-8")
    load_package(target)  # what was written parses
    print(f"wrote {target}: edit it, then `python -m grader check {target}`")
    if (Path(args.dir) / MODULE_MANIFEST).is_file():
        print(f"list {args.slug!r} in {Path(args.dir) / MODULE_MANIFEST} to publish it")
    return EXIT_OK


def _common(command: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    backend = environ.get("GRADLAB_SANDBOX", "bubblewrap")
    device = environ.get("GRADLAB_DEVICE", "cpu")
    cache_dir = environ.get("GRADLAB_CACHE_DIR") or DEFAULT_CACHE_DIR
    command.add_argument("--seed", type=int, default=DEV_SEED, help=f"default {DEV_SEED}")
    command.add_argument("--sandbox", default=backend, help=f"backend (now {backend})")
    zygote = SandboxConfig.from_environ(environ).zygote
    command.add_argument(
        "--zygote",
        action=argparse.BooleanOptionalAction,
        default=zygote,
        help="bubblewrap: fork each CPU job, freshly isolated, from a torch-loaded zygote "
        f"(GRADLAB_SANDBOX_ZYGOTE; now {'on' if zygote else 'off'})",
    )
    command.add_argument("--device", default=device, help=f"cpu or cuda (now {device})")
    command.add_argument("--cache-dir", default=cache_dir, help=f"now {cache_dir}")


def parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    environ = os.environ if environ is None else environ
    main = argparse.ArgumentParser(prog="python -m grader", description=__doc__.split("\n")[0])
    commands = main.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="validate exercise packages")
    check.add_argument("path", help="exercises/<slug> or exercises/")
    check.add_argument(
        "--no-mutants", action="store_true", help="skip the auto-mutants (quicker, not valid)"
    )
    _common(check, environ)
    check.set_defaults(handler=command_check)
    run = commands.add_parser("run", help="grade one answer and print the report")
    run.add_argument("package", help="exercises/<slug>")
    run.add_argument("answer", help="the answer's .py file")
    _common(run, environ)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(handler=command_run)
    mutants = commands.add_parser("mutants", help="grade the reference's auto-mutants")
    mutants.add_argument("package", help="exercises/<slug>")
    _common(mutants, environ)
    mutants.set_defaults(handler=command_mutants)
    new = commands.add_parser("new", help="write a new exercise package that validates")
    new.add_argument("slug", help="lowercase words joined by -")
    new.add_argument("--kind", choices=KINDS, default="script", help="script (default) or function")
    new.add_argument("--dir", default="exercises", help="where its folder goes")
    new.add_argument("--title", default="", help="default: from the slug")
    new.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    new.set_defaults(handler=command_new)
    return main


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.device not in DEVICES:
        print(f"--device: must be one of {list(DEVICES)}, not {args.device!r}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        return int(args.handler(args))
    except PackageError as error:
        print(f"malformed package: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ExerciseError as error:
        print(f"broken exercise: {error}", file=sys.stderr)
        return EXIT_FAILED
    except InfrastructureError as error:
        print(f"sandbox fault: {error}", file=sys.stderr)
        return EXIT_INFRASTRUCTURE


if __name__ == "__main__":
    sys.exit(main())
