"""The one interface every sandbox backend implements."""

from __future__ import annotations

from typing import Protocol

from grader.protocol import SandboxRequest, SandboxResult


class Sandbox(Protocol):
    """Runs one job in a fresh, isolated environment and returns its capped stdout.

    A backend never reuses an environment across jobs. It raises
    `grader.protocol.InfrastructureError` when it cannot run the job at all (its own
    fault); every failure of the code under test is a `SandboxResult` instead.
    """

    name: str

    def runtime_key(self, device: str) -> str:
        """Identifies what runs the harness (e.g. "bubblewrap torch-2.13.0 cpu"); part of
        the reference-cache key."""
        ...

    def run(self, request: SandboxRequest) -> SandboxResult: ...

    def close(self) -> None:
        """Stops what the backend keeps between jobs (a zygote, a warm spare); idempotent."""
        ...
