"""The dependency lists (requirements/): base -> prod -> dev, each with its pinned lock, no
torch in the platform's lists, no test tool in production, and .venv installed from dev.lock."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements"
LISTS = ("base", "prod", "dev")
SANDBOX_ONLY = {"torch", "numpy"}
TEST_TOOLS = {"pytest", "pytest-django", "hypothesis", "playwright", "ruff", "mypy", "pip-tools"}


def requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a pip requirements file: no comments, options or includes."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def pins(path: Path) -> dict[str, str]:
    """name -> pinned version of every requirement in the file."""
    found: dict[str, str] = {}
    for line in requirement_lines(path):
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{path.name}: {line} is not pinned with =="
        found[canonicalize_name(requirement.name)] = spec.version
    return found


@pytest.mark.parametrize("name", LISTS)
def test_every_direct_requirement_is_pinned_and_locked_at_that_version(name: str) -> None:
    direct = pins(REQUIREMENTS / f"{name}.in")
    locked = pins(REQUIREMENTS / f"{name}.lock")

    assert direct
    assert {package: locked.get(package) for package in direct} == direct


@pytest.mark.parametrize(("smaller", "larger"), [("base", "prod"), ("prod", "dev")])
def test_each_lock_holds_the_one_below_it_at_the_same_versions(smaller: str, larger: str) -> None:
    below = pins(REQUIREMENTS / f"{smaller}.lock")
    above = pins(REQUIREMENTS / f"{larger}.lock")

    assert {package: above.get(package) for package in below} == below


@pytest.mark.parametrize("name", LISTS)
def test_the_platforms_lists_hold_no_torch_or_numpy(name: str) -> None:
    assert not SANDBOX_ONLY & set(pins(REQUIREMENTS / f"{name}.lock"))


def test_production_holds_no_test_tool() -> None:
    assert not TEST_TOOLS & set(pins(REQUIREMENTS / "prod.lock"))
    assert set(pins(REQUIREMENTS / "dev.lock")) >= TEST_TOOLS


def test_the_platform_venv_has_dev_lock_installed_and_no_torch() -> None:
    wanted = pins(REQUIREMENTS / "dev.lock")
    installed = {package: installed_version(package) for package in wanted}

    assert installed == wanted, "run `make venv` (scripts/setup-python.sh --platform-only)"
    assert importlib.util.find_spec("torch") is None
    assert importlib.util.find_spec("numpy") is None


def installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None
