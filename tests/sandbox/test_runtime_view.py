"""The sandbox's view of the runtime (grader.sandbox.runtime): the host libraries the
runtime's Python and its shared objects load, found with ldd."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.protocol import InfrastructureError
from grader.sandbox import runtime


def _fake_ldd(tmp_path: Path, body: str) -> str:
    script = tmp_path / "ldd"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def test_an_ldd_killed_midway_is_an_infrastructure_fault_not_a_narrower_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printed_then_killed = (
        "printf '\\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x1)\\n'\nkill -KILL $$"
    )
    monkeypatch.setattr(runtime, "LDD", _fake_ldd(tmp_path, printed_then_killed))

    with pytest.raises(InfrastructureError, match="was killed by signal 9"):
        runtime._ldd(["/usr/lib/x86_64-linux-gnu/libffi.so.8"])


def test_an_ldd_that_finishes_gives_every_library_path_it_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = (
        "printf 'a.so:\\n\\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x1)\\n"
        "\\tlinux-vdso.so.1 (0x2)\\n\\t/lib64/ld-linux-x86-64.so.2 (0x3)\\n"
        "\\tlibgone.so => not found\\n'"
    )
    monkeypatch.setattr(runtime, "LDD", _fake_ldd(tmp_path, listing))

    assert runtime._ldd(["a.so"]) == {
        "/lib/x86_64-linux-gnu/libz.so.1",
        "/lib64/ld-linux-x86-64.so.2",
    }
