"""Sandbox backends: see base.Sandbox and get_backend()."""

from __future__ import annotations

from typing import Any

from grader.protocol import InfrastructureError
from grader.sandbox.base import Sandbox

BACKENDS = ("bubblewrap", "docker")


def get_backend(name: str = "bubblewrap", **options: Any) -> Sandbox:
    """The sandbox backend called `name`, built with its keyword options.

    bubblewrap: runtime_dir, harness_dir, user, bwrap, warm (see BubblewrapSandbox).
    docker: see grader.sandbox.docker (imported only when asked for).
    """
    if name == "bubblewrap":
        from grader.sandbox.bubblewrap import BubblewrapSandbox

        return BubblewrapSandbox(**options)
    if name == "docker":
        from grader.sandbox.docker import DockerSandbox

        return DockerSandbox(**options)
    raise InfrastructureError(f"unknown sandbox backend {name!r}: expected one of {BACKENDS}")
