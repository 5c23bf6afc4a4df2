"""One configuration channel: the backends take explicit arguments only; SandboxConfig is
read from the environment (the CLI, and the platform's settings) and build_backend builds
the backend it describes; every variable is in docs/operations.md's table."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import ROOT

from grader.protocol import InfrastructureError
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.bubblewrap import BubblewrapSandbox
from grader.sandbox.config import DEFAULT_RUNTIME_DIR, ENVIRONMENT, PACKAGE_HARNESS
from grader.sandbox.docker import DockerSandbox

SANDBOX_PACKAGE = ROOT / "grader" / "sandbox"


def test_no_backend_module_reads_the_environment_itself() -> None:
    readers = [
        path.name
        for path in SANDBOX_PACKAGE.glob("*.py")
        if path.name != "config.py" and re.search(r"os\.environ|os\.getenv", path.read_text())
    ]
    assert readers == []


def test_every_variable_is_in_the_operations_table_and_named_by_the_config_alone() -> None:
    """The settings read the variables through SandboxConfig.from_environ: one place for
    their names and defaults (GRADLAB_DEVICE is also the settings' device of every job)."""
    readme = (ROOT / "docs" / "operations.md").read_text()
    settings = (ROOT / "platform" / "config" / "settings" / "base.py").read_text()
    assert "SandboxConfig.from_environ(os.environ)" in settings
    for name in ENVIRONMENT:
        assert f"| `{name}`" in readme, name
        if name != "GRADLAB_DEVICE":
            assert f'"{name}"' not in settings, name


def test_the_platform_builds_its_backend_from_every_variable(tmp_path: Path) -> None:
    values = {
        "GRADLAB_SANDBOX": "docker",
        "GRADLAB_SANDBOX_RUNTIME": str(tmp_path / "runtime env"),
        "GRADLAB_SANDBOX_HARNESS": str(tmp_path / "harness"),
        "GRADLAB_SANDBOX_PUBLISH_DIR": str(tmp_path / "published"),
        "GRADLAB_SANDBOX_USER": "someone",
        "GRADLAB_SANDBOX_WARM": "yes",
        "GRADLAB_SANDBOX_ZYGOTE": "on",
        "GRADLAB_ZYGOTE_JOBS": "7",
        "GRADLAB_CGROUP_PARENT": "/gradlab.slice",
        "GRADLAB_SANDBOX_IMAGE": "registry.example.org/sandbox:1",
        "GRADLAB_DEVICE": "cuda",
    }
    assert set(values) == set(ENVIRONMENT)
    code = (
        "import dataclasses, django, json; django.setup();"
        "from grading.bridge import sandbox_config;"
        "print(json.dumps(dataclasses.asdict(sandbox_config()), default=str))"
    )
    environ = {
        **os.environ,
        **values,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "PYTHONPATH": f"{ROOT / 'platform'}:{ROOT}",
        "SECRET_KEY": "only-for-this-test",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    expected = dataclasses.asdict(SandboxConfig.from_environ(values))
    assert json.loads(done.stdout) == json.loads(json.dumps(expected, default=str))


def test_an_empty_environment_gives_the_defaults() -> None:
    config = SandboxConfig.from_environ({})
    assert config == SandboxConfig()
    assert config.runtime_dir == DEFAULT_RUNTIME_DIR and config.harness_dir == PACKAGE_HARNESS


def test_each_variable_sets_its_field(tmp_path: Path) -> None:
    config = SandboxConfig.from_environ(
        {
            "GRADLAB_SANDBOX": "docker",
            "GRADLAB_SANDBOX_RUNTIME": str(tmp_path / "runtime env"),
            "GRADLAB_SANDBOX_HARNESS": str(tmp_path / "harness"),
            "GRADLAB_SANDBOX_PUBLISH_DIR": str(tmp_path / "published"),
            "GRADLAB_SANDBOX_USER": "someone",
            "GRADLAB_SANDBOX_WARM": "yes",
            "GRADLAB_SANDBOX_ZYGOTE": "on",
            "GRADLAB_ZYGOTE_JOBS": "7",
            "GRADLAB_CGROUP_PARENT": "/gradlab.slice",
            "GRADLAB_SANDBOX_IMAGE": "registry.example.org/sandbox:1",
            "GRADLAB_DEVICE": "cuda",
        }
    )
    assert config == SandboxConfig(
        backend="docker",
        runtime_dir=tmp_path / "runtime env",
        harness_dir=tmp_path / "harness",
        publish_root=tmp_path / "published",
        user="someone",
        warm=True,
        zygote=True,
        zygote_jobs=7,
        cgroup_parent="/gradlab.slice",
        image="registry.example.org/sandbox:1",
        gpu=True,
    )


def test_a_malformed_flag_or_backend_is_refused_with_its_name() -> None:
    with pytest.raises(InfrastructureError, match="GRADLAB_SANDBOX_WARM='maybe'"):
        SandboxConfig.from_environ({"GRADLAB_SANDBOX_WARM": "maybe"})
    with pytest.raises(InfrastructureError, match="unknown sandbox backend 'firejail'"):
        SandboxConfig.from_environ({"GRADLAB_SANDBOX": "firejail"})
    with pytest.raises(InfrastructureError, match="GRADLAB_ZYGOTE_JOBS='many'"):
        SandboxConfig.from_environ({"GRADLAB_ZYGOTE_JOBS": "many"})
    with pytest.raises(InfrastructureError, match="zygote_jobs must be at least 1"):
        SandboxConfig.from_environ({"GRADLAB_ZYGOTE_JOBS": "0"})


def test_the_config_builds_the_backend_it_describes(tmp_path: Path) -> None:
    bubblewrap = build_backend(
        SandboxConfig(
            runtime_dir=tmp_path, user="someone", warm=True, cgroup_parent="/x", zygote=True
        )
    )
    assert isinstance(bubblewrap, BubblewrapSandbox)
    assert (bubblewrap.runtime_dir, bubblewrap.user_name) == (tmp_path, "someone")
    assert (bubblewrap.warm, bubblewrap.cgroup_parent) == (True, "/x")
    assert (bubblewrap.zygote, bubblewrap.zygote_jobs) == (True, 1)  # a generation per job
    docker = build_backend(SandboxConfig(backend="docker", image="img:1", gpu=True))
    assert isinstance(docker, DockerSandbox)
    assert (docker.image, docker.gpu) == ("img:1", True)
