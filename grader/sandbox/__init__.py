"""Sandbox backends: see base.Sandbox, config.SandboxConfig and get_backend()."""

from __future__ import annotations

from typing import Any

from grader.protocol import InfrastructureError
from grader.sandbox.base import Sandbox
from grader.sandbox.config import BACKENDS, SandboxConfig, backend_from_environ, build_backend

__all__ = ["BACKENDS", "SandboxConfig", "backend_from_environ", "build_backend", "get_backend"]


def get_backend(name: str = "bubblewrap", **options: Any) -> Sandbox:
    """The sandbox backend called `name`, built with its keyword options (explicit
    arguments only: see BubblewrapSandbox and DockerSandbox)."""
    if name == "bubblewrap":
        from grader.sandbox.bubblewrap import BubblewrapSandbox

        return BubblewrapSandbox(**options)
    if name == "docker":
        from grader.sandbox.docker import DockerSandbox

        return DockerSandbox(**options)
    raise InfrastructureError(f"unknown sandbox backend {name!r}: expected one of {BACKENDS}")
