"""The repository layout is a contract: platform/ is a source root, never a package."""

import ast
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_required_top_level_entries_exist() -> None:
    for name in (
        "manage.py",
        "platform",
        "exercises",
        "grader",
        "docker-compose.yml",
        "tests",
        "README.md",
    ):
        assert (ROOT / name).exists(), name


def test_platform_is_a_source_root_not_a_package() -> None:
    assert not (ROOT / "platform" / "__init__.py").exists()


def test_no_app_in_platform_shadows_a_standard_library_module() -> None:
    stdlib = set(sys.stdlib_module_names)
    apps = {p.name for p in (ROOT / "platform").iterdir() if p.is_dir()}
    assert not apps & stdlib


def test_import_platform_is_the_standard_library() -> None:
    import platform

    assert Path(platform.__file__).parent == Path(sysconfig.get_paths()["stdlib"])
    assert callable(platform.python_version)


def test_tests_folder_has_no_init_files() -> None:
    assert not list((ROOT / "tests").rglob("__init__.py"))


def test_importing_grader_does_not_import_django() -> None:
    code = (
        "import sys, grader, grader.engine, grader.runs, grader.checks.registry,"
        " grader.checks.diagnoses.catalogue, grader.checks.diagnoses.run, grader.spec,"
        " grader.report, grader.authoring.validation, grader.authoring.archive;"
        "assert 'django' not in sys.modules, sorted(m for m in sys.modules if 'django' in m)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def _grader_imports(path: Path) -> set[str]:
    """The grader modules a source file imports (TYPE_CHECKING and function-level imports
    included): `from grader import spec` counts as grader.spec."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name == "grader" or name.startswith("grader.")}


def _importers(files: list[Path], packages: tuple[str, ...]) -> dict[str, list[str]]:
    """Each file that imports one of `packages` (or a module inside one), with what."""
    hits: dict[str, list[str]] = {}
    for path in files:
        bad = [
            name
            for name in sorted(_grader_imports(path))
            if any(name == p or name.startswith(p + ".") for p in packages)
        ]
        if bad:
            hits[str(path.relative_to(ROOT))] = bad
    return hits


def test_checks_import_nothing_from_spec_engine_or_runs() -> None:
    """grader/checks/ (the diagnoses included) is one layer below the manifest reader and
    the engine: CheckSpec lives in grader.checks.base, so no import circle is needed."""
    files = sorted((ROOT / "grader" / "checks").rglob("*.py"))
    assert files
    assert _importers(files, ("grader.spec", "grader.engine", "grader.runs")) == {}


def test_grading_runtime_imports_nothing_from_authoring() -> None:
    """Instructor tooling (grader/authoring/) sits on top of the runtime, never under it.
    grader/__main__.py is the command line for both and may import it."""
    grader = ROOT / "grader"
    files = [p for p in grader.glob("*.py") if p.name != "__main__.py"]
    for folder in ("runs", "checks", "harness", "sandbox"):
        files += sorted((grader / folder).rglob("*.py"))
    assert _importers(files, ("grader.authoring",)) == {}
