"""grader/sandbox/publish.py: the harness as the sandbox user can read it, wherever the
checkout lives; a changed harness gets a new folder."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from grader.protocol import InfrastructureError
from grader.sandbox.publish import publish


@pytest.fixture
def harness(tmp_path: Path) -> Path:
    source = tmp_path / "private checkout" / "harness"
    (source / "__pycache__").mkdir(parents=True)
    (source / "main.py").write_text("print('main')\n")
    (source / "helper.py").write_text("VALUE = 1\n")
    (source / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"stale")
    (tmp_path / "private checkout").chmod(0o700)
    return source


def test_the_published_copy_is_world_readable_and_skips_bytecode(
    harness: Path, tmp_path: Path
) -> None:
    folder = publish(harness, tmp_path / "published")
    assert sorted(p.name for p in folder.iterdir()) == ["helper.py", "main.py"]
    assert (folder / "main.py").read_text() == "print('main')\n"
    for path in (tmp_path / "published", folder, folder / "main.py"):
        mode = path.stat().st_mode
        assert mode & stat.S_IROTH and not mode & (stat.S_IWGRP | stat.S_IWOTH), path


def test_an_unchanged_harness_is_reused_and_a_changed_one_gets_a_new_folder(
    harness: Path, tmp_path: Path
) -> None:
    first = publish(harness, tmp_path / "published")
    assert publish(harness, tmp_path / "published") == first
    (harness / "helper.py").write_text("VALUE = 2\n")
    second = publish(harness, tmp_path / "published")
    assert second != first and (second / "helper.py").read_text() == "VALUE = 2\n"
    assert (first / "helper.py").read_text() == "VALUE = 1\n"  # a running sandbox keeps its copy


def test_a_root_others_can_write_to_is_refused(harness: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(InfrastructureError, match="must not be writable by others"):
        publish(harness, shared)


def test_a_folder_without_main_py_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InfrastructureError, match=r"main\.py is missing"):
        publish(tmp_path, tmp_path / "published")
