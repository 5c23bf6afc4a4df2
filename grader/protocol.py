"""Plain-data messages between the platform, the engine and the sandboxes.

Everything here is a frozen dataclass that round-trips through JSON: the web/grader
boundary never carries ORM objects, and nothing that crosses it is pickled.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = 1
# The first line of the harness's stdin: "GRADLAB-JOB <envelope line's bytes>\n"
# (FORMAT.md section 2; grader/harness/main.py reads exactly that many, never past them).
JOB_HEADER = "GRADLAB-JOB"
# The most bytes of the result frame's header line ("GRADLAB-RESULT <nonce> <length>\n")
# around the capture on the harness's stdout (FORMAT.md section 2).
FRAME_OVERHEAD_BYTES = 256


class InfrastructureError(Exception):
    """The sandbox itself failed (not the learner's code): the platform retries the job."""


class ReferenceStarved(InfrastructureError):
    """The reference run was stopped by its wall clock before it could use its CPU time
    (the wall limit is above the CPU limit: it was waiting for a CPU, on an overloaded
    worker), or killed from outside (SIGKILL, not by its memory limit). Not the
    exercise's fault: retried like any infrastructure fault."""


class ExerciseError(Exception):
    """The exercise package is broken (e.g. its reference fails): not the learner's fault,
    not worth retrying; the platform marks the submission failed without charging it."""


@dataclass(frozen=True)
class Limits:
    """Every resource limit of one sandbox run, explicit and named."""

    wall_seconds: float = 20.0
    cpu_seconds: int = 10
    memory_mb: int = 1024
    pids: int = 64
    tmpfs_mb: int = 64
    file_size_mb: int = 16
    result_bytes: int = 4_000_000
    stdout_bytes: int = 65_536
    open_files: int = 256
    cpus: float = 1.0  # CPU quota of the whole sandbox, in CPUs

    def replace(self, **changes: Any) -> Limits:
        return dataclasses.replace(self, **changes)


def size_label(count: int) -> str:
    """A byte count as learners read it: 65536 -> "64 KiB", 1000 -> "1000 bytes"."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


class RunStatus(str, enum.Enum):
    OK = "ok"
    TIMEOUT = "timeout"
    MEMORY = "memory"
    CRASHED = "crashed"
    OUTPUT_LIMIT = "output-limit"


@dataclass(frozen=True)
class SandboxRequest:
    """One run of the harness. `stdin` (`Envelope.stdin`, FORMAT.md section 2)
    is written to the harness, then closed. `device` is "cpu" or "cuda"."""

    job_id: str
    stdin: bytes
    limits: Limits = field(default_factory=Limits)
    device: str = "cpu"
    # Jobs with the same non-empty `share` may be forked by one zygote generation (the
    # runs of one submission; the trusted reference runs): they share its hash secret and
    # address layout, which no job of another key does (grader/sandbox/zygote.py).
    share: str = ""


@dataclass(frozen=True)
class EnvelopeLimits:
    """The harness's own caps of one job (the envelope's `limits`, FORMAT.md section 2):
    the bytes of stdout kept, the elements of a tensor captured whole, and the capture's
    size (None: the harness's default)."""

    stdout_bytes: int
    tensor_elements: int
    result_bytes: int | None = None

    def to_json(self) -> dict[str, int]:
        raw = {"stdout_bytes": self.stdout_bytes, "tensor_elements": self.tensor_elements}
        if self.result_bytes is not None:
            raw["result_bytes"] = self.result_bytes
        return raw


@dataclass(frozen=True)
class Envelope:
    """One job of the harness, built once per run: its stdin (`stdin`; the envelope line
    is `to_json`, FORMAT.md section 2). A field left None (False for `seed_by_learner`) is
    not sent: `entry`, `seed`, `trials` are a function exercise's reference job's, `cases`
    a function exercise's learner job's (on the cases line, never in the envelope's);
    `stand_in` and `grad_scale` ask the harness for a stand-in GPU and scaled gradient
    seeds (the second run's other starting values are written into the source itself,
    grader/rewrite.py)."""

    kind: str  # "script" | "function"
    mode: str  # "reference" | "learner"
    names: tuple[str, ...]
    files: Mapping[str, str]
    limits: EnvelopeLimits
    seed_by_learner: bool = False
    entry: str | None = None
    seed: int | None = None
    trials: int | None = None
    cases: tuple[Mapping[str, Any], ...] | None = None
    stand_in: str | None = None
    grad_scale: float | None = None
    protocol: int = PROTOCOL_VERSION

    def stdin(self, nonce: str) -> bytes:
        """The harness's whole stdin (FORMAT.md section 2): the header line with the
        envelope line's length, the envelope line, the cases line (a learner function
        job's hidden cases, else `[]`: the parent reads it only after it forked the
        child), the nonce line."""
        envelope = json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False)
        hidden = self.kind == "function" and self.mode == "learner"
        cases = [dict(case) for case in self.cases or ()] if hidden else []
        line = envelope.encode("utf-8")
        body = json.dumps(cases, separators=(",", ":"), allow_nan=False).encode("utf-8")
        header = f"{JOB_HEADER} {len(line)}\n".encode("ascii")
        return header + line + b"\n" + body + b"\n" + f"{nonce}\n".encode("ascii")

    def to_json(self) -> dict[str, Any]:
        """The envelope line's JSON object (grader/harness/main.py); never the cases."""
        raw: dict[str, Any] = {
            "protocol": self.protocol,
            "kind": self.kind,
            "mode": self.mode,
            "names": list(self.names),
            "limits": self.limits.to_json(),
        }
        if self.seed_by_learner:
            raw["seed_by_learner"] = True
        optional = {
            "entry": self.entry,
            "seed": self.seed,
            "trials": self.trials,
            "stand_in": self.stand_in,
            "grad_scale": self.grad_scale,
        }
        raw.update({key: value for key, value in optional.items() if value is not None})
        raw["files"] = dict(self.files)
        return raw


@dataclass(frozen=True)
class SandboxResult:
    status: RunStatus
    stdout: bytes
    exit_code: int | None
    duration_s: float
    message: str = ""


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    score: float
    max_score: float
    message: str
    diagnosis: str = ""
    hint: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "data": dict(self.data)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CheckResult:
        return cls(**{f.name: raw[f.name] for f in dataclasses.fields(cls) if f.name in raw})


@dataclass(frozen=True)
class IntegrityFlag:
    """Something in a learner's run that an honest run cannot produce (a tamper attempt
    the harness recorded, a structurally impossible capture, a check that could not
    judge it): the platform holds the score for an instructor's review."""

    kind: str
    detail: str


@dataclass(frozen=True)
class Report:
    status: str  # "graded" | "failed"
    score: float
    max_score: float
    passed: bool
    message: str = ""
    checks: tuple[CheckResult, ...] = ()
    stdout: str = ""
    exception: Mapping[str, Any] | None = None
    curves: Mapping[str, Any] | None = None
    duration_s: float = 0.0
    runtime: str = ""
    integrity_flags: tuple[IntegrityFlag, ...] = ()  # empty: nothing to review

    def to_json(self) -> dict[str, Any]:
        raw = dataclasses.asdict(self)
        raw["checks"] = [c.to_json() for c in self.checks]
        raw["integrity_flags"] = [dataclasses.asdict(f) for f in self.integrity_flags]
        return raw

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Report:
        values = {f.name: raw[f.name] for f in dataclasses.fields(cls) if f.name in raw}
        values["checks"] = tuple(CheckResult.from_json(c) for c in raw.get("checks", ()))
        values["integrity_flags"] = tuple(
            IntegrityFlag(kind=str(f["kind"]), detail=str(f["detail"]))
            for f in raw.get("integrity_flags", ())
        )
        return cls(**values)
