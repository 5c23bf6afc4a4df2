"""The containers the Docker backend creates, inspected while they run (a job's, and the
long-lived zygote container of zygote mode): a weakened limit or an added mount fails
here, in CI, before it reaches production."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest
from docker_helpers import containers_of_job, request

from grader.protocol import Limits, RunStatus
from grader.sandbox import syscalls, zygote
from grader.sandbox.docker import (
    LABEL_DEADLINE,
    LABEL_JOB,
    LABEL_ROLE,
    LABEL_WORKER,
    ROLE_SANDBOX,
    ROLE_ZYGOTE,
    DockerSandbox,
)
from grader.sandbox.docker_zygote import CONTROL_DIR

MIB = 1024 * 1024
INSPECT_TIMEOUT_S = 20.0
ALLOWED_ENV = {
    "PATH", "LANG", "HOME", "TMPDIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "PYTHONDONTWRITEBYTECODE", "GRADLAB_DEVICE", "USER", "LOGNAME",
}  # fmt: skip
SLEEPING_JOB = "import time\ntime.sleep(2)\nx = 1\n"

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_sandbox(sandbox_image: str) -> DockerSandbox:
    """A container per job (the zygote's container is inspected on its own below)."""
    return DockerSandbox(image=sandbox_image, gpu=False)


def inspect_while_running(client: Any, sandbox: DockerSandbox, limits: Limits) -> dict[str, Any]:
    """Run a job that sleeps; inspect its container from another thread meanwhile."""
    job = request(SLEEPING_JOB, **limits.__dict__)
    seen: dict[str, Any] = {}

    def watch() -> None:
        deadline = time.monotonic() + INSPECT_TIMEOUT_S
        while time.monotonic() < deadline and not seen:
            found = client.containers.list(
                filters={"label": f"{LABEL_JOB}={job.job_id}"}, ignore_removed=True
            )
            if found:
                seen.update(found[0].attrs)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = sandbox.run(job)
    watcher.join()
    assert result.status == RunStatus.OK, result
    assert seen, "the backend's container was never seen running"
    return seen


def test_the_sandbox_container_has_every_limit_and_no_way_out(
    docker_client: Any, docker_sandbox: DockerSandbox
) -> None:
    limits = Limits(memory_mb=768, pids=48, tmpfs_mb=32, wall_seconds=120)
    attrs = inspect_while_running(docker_client, docker_sandbox, limits)
    host, config = attrs["HostConfig"], attrs["Config"]

    assert host["Privileged"] is False
    assert not host.get("Binds") and not host.get("Mounts") and not attrs.get("Mounts")
    assert not host.get("VolumesFrom") and not host.get("Devices")
    assert "docker.sock" not in json.dumps(attrs)
    assert host["ReadonlyRootfs"] is True
    assert host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
    assert "no-new-privileges" in (host.get("SecurityOpt") or [])
    profiles = [o.split("=", 1)[1] for o in host["SecurityOpt"] if o.startswith("seccomp=")]
    assert [json.loads(p) for p in profiles] == [syscalls.gradlab_profile()]
    assert host["PidMode"] == "" and host["IpcMode"] == "private" and host["UTSMode"] == ""
    assert host["UsernsMode"] == ""  # not "host"
    assert not host.get("DeviceRequests")  # a CPU job never sees a GPU
    assert host["Memory"] == host["MemorySwap"] == limits.memory_mb * MIB
    assert host["PidsLimit"] == limits.pids
    assert host["NanoCpus"] == int(limits.cpus * 1e9) == 10**9  # one CPU
    sealed = "ro,nosuid,nodev,noexec,size=4k,mode=1777"  # /tmp is the only writable place
    assert host["Tmpfs"] == {
        "/tmp": f"rw,nosuid,nodev,noexec,size={limits.tmpfs_mb}m,mode=1777",
        "/dev/shm": sealed,
        "/dev/mqueue": sealed,
    }
    assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "1m", "max-file": "1"}}
    assert host["AutoRemove"] is False  # removed by the backend, after reading the OOM flag
    ulimits = {u["Name"]: u for u in host["Ulimits"]}
    assert ulimits["cpu"]["Soft"] == limits.cpu_seconds
    assert ulimits["fsize"]["Hard"] == limits.file_size_mb * MIB

    user = config["User"]
    assert user and user.split(":")[0] not in {"0", "root"}
    assert config["NetworkDisabled"] is True
    assert config["StdinOnce"] is True and config["Tty"] is False
    assert config["Cmd"] == ["python", "-I", "-B", "/harness/main.py"]
    env_names = {entry.split("=", 1)[0] for entry in config["Env"]}
    assert env_names <= ALLOWED_ENV, env_names - ALLOWED_ENV
    labels = config["Labels"]
    assert labels[LABEL_ROLE] == ROLE_SANDBOX
    assert labels[LABEL_JOB]
    assert float(labels[LABEL_DEADLINE]) > time.time()


def test_the_sandbox_container_is_removed_after_its_job(
    docker_client: Any, docker_sandbox: DockerSandbox
) -> None:
    job = request("x = 1\n")
    assert docker_sandbox.run(job).status == RunStatus.OK
    assert containers_of_job(docker_client, job.job_id) == []


def test_the_sandbox_image_runs_as_a_non_root_user_with_only_our_harness(
    docker_client: Any, sandbox_image: str
) -> None:
    image = docker_client.images.get(sandbox_image)
    assert image.attrs["Config"]["User"] not in {"", "0", "root", "0:0"}
    listing = docker_client.containers.run(
        sandbox_image,
        ["sh", "-c", "ls /harness /opt; ls -d /app /exercises /platform; touch /harness/x; true"],
        network_mode="none",
        remove=True,
        stderr=True,
    ).decode()
    assert "main.py" in listing and "sandbox-env" in listing
    assert listing.count("No such file or directory") == 3  # no app, exercises or platform
    assert "Permission denied" in listing  # the harness is not the sandbox user's to change


def test_a_cuda_job_gets_the_gpu_by_a_device_request_only_on_a_gpu_backend(
    sandbox_image: str,
) -> None:
    gpu_worker = DockerSandbox(image=sandbox_image, gpu=True)
    cpu_worker = DockerSandbox(image=sandbox_image, gpu=False)
    limits = Limits()
    gpu_options = gpu_worker.host_config(limits, "cuda")
    assert [r["Capabilities"] for r in gpu_options["device_requests"]] == [[["gpu"]]]
    assert "device_requests" not in gpu_worker.host_config(limits, "cpu")
    assert cpu_worker.runtime_key("cuda").endswith(" cpu")
    assert gpu_worker.runtime_key("cuda").endswith(" cuda")
    config = gpu_worker.container_config("image-id", request("x = 1"), "cuda")
    env = config["environment"]
    assert not any(name.startswith(("NVIDIA_", "CUDA_")) for name in env)


def test_the_zygote_container_has_every_limit_but_the_namespace_calls_it_needs(
    docker_client: Any, docker_zygote: DockerSandbox
) -> None:
    docker_zygote.prepare()
    pid = docker_zygote.zygote_pid()
    found = [
        c
        for c in docker_client.containers.list(
            filters={"label": f"{LABEL_ROLE}={ROLE_ZYGOTE}"}, ignore_removed=True
        )
        if c.attrs["State"]["Pid"] == pid
    ]
    assert len(found) == 1
    attrs = found[0].attrs
    host, config = attrs["HostConfig"], attrs["Config"]

    assert host["Privileged"] is False and not host.get("Binds") and not host.get("Devices")
    mounts = [(m["Type"], m["Destination"], m["RW"]) for m in attrs["Mounts"]]
    assert mounts == [("bind", CONTROL_DIR, False)]  # the control socket's folder, read-only
    assert "docker.sock" not in json.dumps(attrs)
    assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none"
    assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
    assert host["IpcMode"] == "private" and host["PidMode"] == "" and host["UsernsMode"] == ""
    assert "no-new-privileges" in host["SecurityOpt"]
    profiles = [o.split("=", 1)[1] for o in host["SecurityOpt"] if o.startswith("seccomp=")]
    assert [json.loads(p) for p in profiles] == [syscalls.zygote_profile()]
    rules = syscalls.native_rules(syscalls.zygote_profile())  # as Docker applies it here
    allowed = {rule.name for rule in rules if rule.errno is None and not rule.args}
    assert {"unshare", "mount"} <= allowed and "setns" not in allowed and "ptrace" not in allowed
    assert host["MaskedPaths"] == [] and host["ReadonlyPaths"] == []  # a job mounts its /proc
    limits = zygote.ZYGOTE_LIMITS
    assert host["Memory"] == host["MemorySwap"] == limits.memory_bytes
    assert host["PidsLimit"] == limits.pids and host["NanoCpus"] == int(limits.cpus * 1e9)
    assert host["LogConfig"]["Config"] == {"max-size": "1m", "max-file": "1"}
    assert config["User"].split(":")[0] not in {"0", "root"}
    assert config["NetworkDisabled"] is True
    env_names = {entry.split("=", 1)[0] for entry in config["Env"]}
    assert env_names <= ALLOWED_ENV, env_names - ALLOWED_ENV
    assert config["Labels"][LABEL_WORKER].endswith(f":{os.getpid()}")
