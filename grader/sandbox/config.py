"""How a sandbox backend is configured: one plain record, read from the environment
(`SandboxConfig.from_environ`: the only place the variables below and their defaults are
named) by the platform's settings (GRADLAB_SANDBOX_CONFIG, platform/config/settings/base.py)
and by the command line; `build_backend(config)` builds the backend it describes. The
backends themselves read no environment variable.

    variable                     field          meaning
    GRADLAB_SANDBOX              backend        bubblewrap | docker
    GRADLAB_SANDBOX_RUNTIME      runtime_dir    bubblewrap: the runtime's virtual environment
    GRADLAB_SANDBOX_HARNESS      harness_dir    bubblewrap: the harness's source folder
    GRADLAB_SANDBOX_PUBLISH_DIR  publish_root   bubblewrap: where the harness is published
    GRADLAB_SANDBOX_USER         user           bubblewrap: the host user a root worker drops to
    GRADLAB_SANDBOX_WARM         warm           bubblewrap: keep a torch-loaded spare sandbox
    GRADLAB_SANDBOX_ZYGOTE       zygote         both: fork CPU jobs from a torch-loaded zygote,
                                                each freshly isolated (zygote.py; Docker: in
                                                a long-lived container, docker_zygote.py)
    GRADLAB_ZYGOTE_JOBS          zygote_jobs    both: jobs per zygote generation (default 1:
                                                each job its own freshly exec'd zygote,
                                                started ahead; more trade the hash secret's
                                                and address layout's freshness for CPU)
    GRADLAB_CGROUP_PARENT        cgroup_parent  both: the cgroup job groups go below (Docker:
                                                the zygote's jobs)
    GRADLAB_SANDBOX_IMAGE        image          docker: the sandbox image
    GRADLAB_DEVICE               gpu            docker: "cuda" gives cuda jobs the GPU
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.protocol import InfrastructureError
from grader.sandbox.base import Sandbox

BACKENDS = ("bubblewrap", "docker")
DEFAULT_RUNTIME_DIR = Path("/opt/gradlab/sandbox-env")
PACKAGE_HARNESS = Path(__file__).resolve().parents[1] / "harness"
DEFAULT_USER = "gradlab-sandbox"
DEFAULT_IMAGE = "gradlab-sandbox:latest"
# grader.sandbox.zygote.DEFAULT_MAX_JOBS: one job per zygote generation, so that no two
# jobs share a hash secret or an address layout (zygote.py's docstring: the trade-off).
DEFAULT_ZYGOTE_JOBS = 1
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}

ENVIRONMENT = {
    "GRADLAB_SANDBOX": "backend",
    "GRADLAB_SANDBOX_RUNTIME": "runtime_dir",
    "GRADLAB_SANDBOX_HARNESS": "harness_dir",
    "GRADLAB_SANDBOX_PUBLISH_DIR": "publish_root",
    "GRADLAB_SANDBOX_USER": "user",
    "GRADLAB_SANDBOX_WARM": "warm",
    "GRADLAB_SANDBOX_ZYGOTE": "zygote",
    "GRADLAB_ZYGOTE_JOBS": "zygote_jobs",
    "GRADLAB_CGROUP_PARENT": "cgroup_parent",
    "GRADLAB_SANDBOX_IMAGE": "image",
    "GRADLAB_DEVICE": "gpu",
}


@dataclass(frozen=True)
class SandboxConfig:
    """Everything that decides what a sandbox backend does, explicit and typed."""

    backend: str = "bubblewrap"
    runtime_dir: Path = DEFAULT_RUNTIME_DIR
    harness_dir: Path = PACKAGE_HARNESS
    publish_root: Path | None = None  # None: grader.sandbox.publish.DEFAULT_PUBLISH_ROOT
    user: str = DEFAULT_USER
    warm: bool = False
    zygote: bool = False
    zygote_jobs: int = DEFAULT_ZYGOTE_JOBS
    cgroup_parent: str | None = None
    image: str = DEFAULT_IMAGE
    gpu: bool = False  # docker: this worker serves the GPU queue

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise InfrastructureError(
                f"unknown sandbox backend {self.backend!r}: expected one of {BACKENDS}"
            )
        if self.zygote_jobs < 1:
            raise InfrastructureError(f"zygote_jobs must be at least 1, not {self.zygote_jobs}")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> SandboxConfig:
        """The configuration the ENVIRONMENT variables describe (unset or empty: default)."""
        env = os.environ if environ is None else environ

        def given(name: str) -> str | None:
            return env.get(name) or None

        values: dict[str, object] = {}
        for name, field_name in ENVIRONMENT.items():
            raw = given(name)
            if raw is None:
                continue
            if field_name == "gpu":
                values["gpu"] = raw == "cuda"
            elif field_name in {"warm", "zygote"}:
                values[field_name] = _flag(name, raw)
            elif field_name == "zygote_jobs":
                values[field_name] = _count(name, raw)
            elif field_name in {"runtime_dir", "harness_dir", "publish_root"}:
                values[field_name] = Path(raw)
            else:
                values[field_name] = raw
        return cls(**values)  # type: ignore[arg-type]


def build_backend(config: SandboxConfig) -> Sandbox:
    """The backend `config` describes."""
    if config.backend == "docker":
        from grader.sandbox.docker import DockerSandbox

        return DockerSandbox(
            image=config.image,
            gpu=config.gpu,
            zygote=config.zygote,
            zygote_jobs=config.zygote_jobs,
            cgroup_parent=config.cgroup_parent,
        )
    from grader.sandbox.bubblewrap import BubblewrapSandbox

    return BubblewrapSandbox(
        runtime_dir=config.runtime_dir,
        harness_dir=config.harness_dir,
        publish_root=config.publish_root,
        user=config.user,
        warm=config.warm,
        cgroup_parent=config.cgroup_parent,
        zygote=config.zygote,
        zygote_jobs=config.zygote_jobs,
    )


def _count(name: str, raw: str) -> int:
    try:
        return int(raw.strip())
    except ValueError:
        raise InfrastructureError(f"{name}={raw!r}: expected a whole number") from None


def _flag(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise InfrastructureError(f"{name}={raw!r}: expected 1/0, true/false, yes/no or on/off")
