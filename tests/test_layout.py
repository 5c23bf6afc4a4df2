"""The repository layout is a contract: platform/ is a source root, never a package."""

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
        "import sys, grader, grader.engine, grader.checks, grader.diagnose, grader.spec;"
        "assert 'django' not in sys.modules, sorted(m for m in sys.modules if 'django' in m)"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
