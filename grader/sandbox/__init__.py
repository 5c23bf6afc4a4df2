"""Sandbox backends: see base.Sandbox, and config.SandboxConfig with build_backend(config),
the one way to build a backend."""

from __future__ import annotations

from grader.sandbox.config import BACKENDS, SandboxConfig, build_backend

__all__ = ["BACKENDS", "SandboxConfig", "build_backend"]
