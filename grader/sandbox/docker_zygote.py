"""The Docker backend's zygote (`DockerSandbox(zygote=True)`): one long-lived container per
worker process (per worker slot) whose init is the zygote of zygote_init.py, forking one
freshly isolated sandbox per job exactly as the bubblewrap zygote does. Everything from
the control socket on is zygote.py's, shared with the bubblewrap backend.

    worker (root, on the Engine's host)            zygote container (uid 10001)
    makes a private folder with a listening
    SOCK_SEQPACKET socket, bind-mounts the
    folder read-only at /run/gradlab-zygote,
    starts the container                           python -I -B -c <zygote_init.py>
                                                   /run/gradlab-zygote/control: connects
    accepts; unlinks the socket (nothing else
    can connect); sends the job filter (a
    memfd, classic BPF: the same program the
    bubblewrap backend loads)      -- "F" + fd --> reads it; imports torch ... "R"
    then per job: zygote.Zygote.fork and ZygoteSlot, unchanged (the job's descriptors
    pass over the socket; the keeper's "H" carries its host pid in SCM_CREDENTIALS, which
    the worker moves into the job's cgroups)

The container is started with every limit of a cold sandbox container that is not a
job's own (no network, read-only root, no capabilities, no new privileges, non-root,
capped logs, its memory, pids and CPU quota bound the zygote and a job's keeper until it
is moved into the job's cgroup) and two differences, which the zygote needs to make
each job's namespaces (README, "Docker zygote"):

  - seccomp: syscalls.zygote_profile(), gradlab's profile plus unshare and mount (as the
    bubblewrap zygote's filter); each job's init loads the job filter on top, which
    refuses both again;
  - /proc unmasked (Docker's MaskedPaths and ReadonlyPaths empty, what the CLI calls
    `--security-opt systempaths=unconfined`): the kernel lets a new pid namespace mount
    a fresh /proc only where the existing one is fully visible. Nothing of the job sees
    the container's /proc: each job mounts its own.

When the worker goes away, its end of the control socket closes and the zygote exits;
the janitor (docker.reap_expired) removes exited zygote containers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from grader.protocol import InfrastructureError
from grader.sandbox import common, syscalls
from grader.sandbox import zygote as zygotes

CONTROL_DIR = "/run/gradlab-zygote"
CONTROL_NAME = "control"
CONNECT_TIMEOUT_S = 120.0  # the container's start on a loaded host
CONNECT_POLL_S = 0.5
ZYGOTE_TMPFS = "rw,nosuid,nodev,noexec,size=1m,mode=1777"  # each job mounts its own /tmp
LOG_TAIL_LINES = 40


class ContainerHost:
    """The zygote's container, as zygote.Zygote drives its host. The zygote is the
    container's init: when it dies, its control socket closes (Zygote.alive sees that
    without asking the Engine) and the container stops."""

    def __init__(self, container: Any, folder: Path, engine_errors: tuple[type[Exception], ...]):
        self.container = container
        self.folder = folder
        self._errors = engine_errors
        self._pid: int | None = None

    @property
    def pid(self) -> int | None:
        if self._pid is None:
            with contextlib.suppress(*self._errors):
                self.container.reload()
                self._pid = int(self.container.attrs.get("State", {}).get("Pid") or 0) or None
        return self._pid

    def running(self) -> bool:
        return True  # see the class docstring: the control socket tells

    def kill(self) -> None:
        with contextlib.suppress(*self._errors):  # NotFound too: the janitor was faster
            self.container.remove(force=True)
        shutil.rmtree(self.folder, ignore_errors=True)

    def diagnostics(self) -> str:
        with contextlib.suppress(*self._errors):
            logs = self.container.logs(stdout=False, stderr=True, tail=LOG_TAIL_LINES)
            return bytes(logs).decode("utf-8", "replace").strip()
        return ""


def start(
    sandbox: Any,
    image_id: str,
    identity: zygotes.ZygoteIdentity,
    *,
    harness: Path | None,
) -> zygotes.Zygote:
    """A started zygote container of `sandbox` (a DockerSandbox) for `image_id`, connected
    and importing torch (not ready yet: Zygote.wait_ready); the published `harness`
    folder replaces the image's /harness when given."""
    folder = Path(tempfile.mkdtemp(prefix="gradlab-zygote-"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    container: Any = None
    control: socket.socket | None = None
    try:
        path = folder / CONTROL_NAME
        listener.bind(str(path))
        listener.listen(1)
        _hand_to_sandbox_user(folder, path, identity.host_uid)
        container = _create(sandbox, image_id, folder, harness)
        host = ContainerHost(container, folder, sandbox.engine_errors())
        container.start()
        control = _accept(listener, container, host)
        path.unlink()  # nothing else can connect from here on
        _send_job_filter(control)
    except BaseException as error:
        listener.close()
        if control is not None:
            control.close()
        if container is not None:
            ContainerHost(container, folder, sandbox.engine_errors()).kill()
        shutil.rmtree(folder, ignore_errors=True)
        if isinstance(error, sandbox.engine_errors()):
            raise InfrastructureError(f"cannot start the zygote container: {error}") from error
        raise
    listener.close()
    # No cgroup of its own: the container's limits are the zygote's. It imports torch
    # now: the slot awaits its "R" (Zygote.wait_ready).
    return zygotes.Zygote(host, control, group=None, identity=identity)


def container_config(
    sandbox: Any, image_id: str, folder: Path, harness: Path | None
) -> dict[str, Any]:
    """The arguments of the Engine's container create call for a zygote container."""
    from grader.sandbox import docker

    limits = zygotes.ZYGOTE_LIMITS
    memory = f"{limits.memory_bytes // common.MIB}m"
    options = {
        **sandbox.base_host_config(),
        # each job mounts its own /tmp, /dev/shm and /dev/mqueue over these
        "tmpfs": {common.SANDBOX_WORKDIR: ZYGOTE_TMPFS, **docker.sealed_tmpfs()},
        "mem_limit": memory,
        "memswap_limit": memory,
        "pids_limit": limits.pids,
        "nano_cpus": int(limits.cpus * 1e9),
        "ulimits": [_ulimit("core", 0)],
        "security_opt": [
            "no-new-privileges",
            f"seccomp={syscalls.profile_json(syscalls.zygote_profile())}",
        ],
        "mounts": _mounts(folder, harness),
    }
    host_config = sandbox.client.api.create_host_config(**options)
    host_config["MaskedPaths"] = []  # systempaths=unconfined: see the module docstring
    host_config["ReadonlyPaths"] = []
    control = f"{CONTROL_DIR}/{CONTROL_NAME}"
    return {
        "image": image_id,
        "command": [*zygotes.ZYGOTE_COMMAND, control],
        "user": docker.SANDBOX_USER,
        "working_dir": common.SANDBOX_WORKDIR,
        "hostname": common.SANDBOX_HOSTNAME,
        "environment": common.harness_env("cpu"),
        "network_disabled": True,
        "labels": {
            docker.LABEL_ROLE: docker.ROLE_ZYGOTE,
            docker.LABEL_WORKER: f"{socket.gethostname()}:{os.getpid()}",
        },
        "host_config": host_config,
    }


def _create(sandbox: Any, image_id: str, folder: Path, harness: Path | None) -> Any:
    created = sandbox.client.api.create_container(
        **container_config(sandbox, image_id, folder, harness)
    )
    return sandbox.client.containers.get(created["Id"])


def _mounts(folder: Path, harness: Path | None) -> list[Any]:
    import docker.types

    mounts = [docker.types.Mount(CONTROL_DIR, str(folder), type="bind", read_only=True)]
    if harness is not None:
        mounts.append(
            docker.types.Mount(common.HARNESS_MOUNT, str(harness), type="bind", read_only=True)
        )
    return mounts


def _ulimit(name: str, value: int) -> Any:
    import docker.types

    return docker.types.Ulimit(name=name, soft=value, hard=value)


def _hand_to_sandbox_user(folder: Path, path: Path, uid: int) -> None:
    """Only the sandbox user (and root) may reach the socket: connecting needs write
    permission on it."""
    if os.geteuid() == 0:
        os.chown(folder, uid, uid)
        os.chown(path, uid, uid)
        folder.chmod(0o700)
        path.chmod(0o600)
    else:  # a worker in the docker group: a folder no one can list
        folder.chmod(0o711)
        path.chmod(0o666)


def _accept(listener: socket.socket, container: Any, host: ContainerHost) -> socket.socket:
    """The zygote's connection, or InfrastructureError when its container ends first or
    it does not connect in time."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    listener.settimeout(CONNECT_POLL_S)
    while time.monotonic() < deadline:
        try:
            control, _ = listener.accept()
        except TimeoutError:
            container.reload()
            if container.status not in {"created", "running"}:
                raise InfrastructureError(
                    f"the zygote container stopped before connecting: {host.diagnostics()}"
                ) from None
            continue
        control.settimeout(None)
        return control
    raise InfrastructureError("the zygote container did not connect in time")


def _send_job_filter(control: socket.socket) -> None:
    program = syscalls.compile_bpf()
    fd = os.memfd_create("gradlab-seccomp")
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        socket.send_fds(control, [b"F"], [fd])
    finally:
        os.close(fd)
