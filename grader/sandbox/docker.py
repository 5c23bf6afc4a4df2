"""The production sandbox backend: one fresh Docker container per job (grader/FORMAT.md
section 2), started through the Docker Engine API (Docker SDK for Python).

One job:

    create   every limit explicit (no network, read-only root, size-capped /tmp tmpfs
             (the only writable place: /dev/shm and /dev/mqueue empty and read-only),
             memory == memory+swap, pids, CPU quota, rlimits, no capabilities, no new
             privileges, gradlab's seccomp profile (syscalls.py: Docker's default plus
             the extra denials), non-root user, minimal environment, capped logs, labels
             naming the job and its deadline); a GPU device request only for "cuda" jobs
             on a backend made for the GPU queue
    attach   stdin + stdout + stderr on one hijacked connection, before start
    start    write the job, half-close the socket (the container's stdin gets EOF:
             stdin_once), read the multiplexed output under a cap and a wall-clock deadline
    wait     kill the container itself on timeout or output overflow (killing a client
             does not stop a container), wait, inspect (OOMKilled) and only then remove it:
             auto-remove would lose the OOM flag

Zygote mode (`zygote=True`, GRADLAB_SANDBOX_ZYGOTE): CPU jobs are forked, each freshly
isolated, by a torch-loaded zygote in one long-lived container per backend (per worker
process): docker_zygote.py. CUDA jobs, and every job while no zygote can start, run in
their own container as above. `harness_dir` (tests): the harness published from that
folder is bind-mounted read-only over the image's /harness, in both modes.

Containers of jobs whose deadline has passed (a worker died mid-job) and zygote
containers that have exited (their worker went away) are removed by `reap_expired()`,
run opportunistically by each backend and callable from Celery beat or
`python -m grader.sandbox.docker janitor`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import struct
import sys
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

from grader.protocol import InfrastructureError, Limits, SandboxRequest, SandboxResult
from grader.sandbox import cgroups, common, publish, syscalls
from grader.sandbox import zygote as zygotes
from grader.sandbox.config import DEFAULT_IMAGE, DEFAULT_ZYGOTE_JOBS

log = logging.getLogger(__name__)

SANDBOX_UID = 10001
SANDBOX_USER = f"{SANDBOX_UID}:{SANDBOX_UID}"  # a bare uid:gid (the image has no accounts)

# Labels: what the janitor and the configuration test look for.
LABEL_ROLE = "org.gradlab.role"
ROLE_SANDBOX = "sandbox-job"
ROLE_ZYGOTE = "sandbox-zygote"  # a long-lived zygote container (docker_zygote.py)
LABEL_WORKER = "org.gradlab.worker"  # host:pid of the worker a zygote container serves
LABEL_JOB = "org.gradlab.job"
LABEL_DEADLINE = "org.gradlab.deadline"  # unix time after which the container is garbage
IMAGE_LABEL_TORCH = "org.gradlab.torch"

# How a container is run beyond grader.protocol.Limits and grader.sandbox.common.
LOG_MAX_SIZE = "1m"  # the engine's own copy of the output (json-file), capped
LOG_MAX_FILES = "1"
# /dev/shm and /dev/mqueue (Docker's, mode 1777) as empty read-only tmpfs: /tmp is a job's
# only writable place, as in bubblewrap; its POSIX queues and SysV IPC are its ipc namespace's
SEALED_TMPFS = "ro,nosuid,nodev,noexec,size=4k,mode=1777"
SEALED_PATHS = ("/dev/shm", "/dev/mqueue")
OOM_SCORE_ADJ = 1000  # under host memory pressure, sandboxes die before anything else
DEADLINE_GRACE_S = 60.0  # creation + wall limit + this = when the janitor may remove it
ENGINE_TIMEOUT_S = 60  # one Engine API call
KILL_WAIT_S = 10.0  # how long to wait for a killed container to stop
IMAGE_RECHECK_S = 2.0  # how long an image lookup is trusted (an Engine call: ~10 ms)
JANITOR_EVERY_S = 60.0  # opportunistic janitor runs per backend, at most this often
READ_CHUNK = 65_536

_HEADER = struct.Struct(">BxxxL")  # docker's multiplexed stream: stream id, 3 pad, length
_STDOUT, _STDERR = 1, 2
_SAFE_LABEL = re.compile(r"[^A-Za-z0-9_.:-]")


@dataclass(frozen=True)
class _Output:
    """What came back on the attach stream."""

    stdout: bytes
    stderr: bytes
    timed_out: bool
    stdout_exceeded: bool


class DockerSandbox:
    """Runs each job in a fresh Docker container. See the module docstring.

    `gpu`: this backend serves the GPU queue; "cuda" jobs then get the GPU through a
    device request. Other backends run "cuda" jobs on the CPU (FORMAT.md: cuda exercises
    also run on CPU workers). `base_url`: the Engine (default: Docker's own DOCKER_HOST
    or its socket).
    """

    name = "docker"

    def __init__(
        self,
        *,
        image: str = DEFAULT_IMAGE,
        gpu: bool = False,
        base_url: str | None = None,
        client: Any = None,
        zygote: bool = False,
        zygote_jobs: int = DEFAULT_ZYGOTE_JOBS,
        cgroup_parent: str | None = None,
        harness_dir: str | os.PathLike[str] | None = None,
        publish_root: str | os.PathLike[str] | None = None,
    ) -> None:
        """`zygote`: CPU jobs are forked by a zygote container (docker_zygote.py),
        replaced after `zygote_jobs` jobs; each job's cgroups go below `cgroup_parent`
        (default: below the worker's own). `harness_dir`, `publish_root`: see the module
        docstring."""
        self.image = image
        self.gpu = gpu
        self._base_url = base_url
        self._client = client
        self._last_janitor = 0.0
        self._lock = threading.Lock()
        self.zygote = zygote
        self.zygote_jobs = zygote_jobs
        self.cgroup_parent = cgroup_parent
        self.harness_dir = Path(harness_dir) if harness_dir else None
        self.publish_root = Path(publish_root) if publish_root else None
        self._zygotes = zygotes.ZygoteSlot(self._start_zygote, zygote_jobs)
        self._warned = False
        self._image_seen: tuple[float, Any] | None = None  # (when, the image)
        weakref.finalize(self, self._zygotes.stop)

    # --- the Sandbox interface -----------------------------------------------------------

    def runtime_key(self, device: str) -> str:
        image = self._image()
        torch = (image.labels or {}).get(IMAGE_LABEL_TORCH, "unknown")
        image_id = image.id.split(":", 1)[-1][:12]
        return f"docker {image_id} torch-{torch} {self._device(device)}"

    def run(self, request: SandboxRequest) -> SandboxResult:
        self._maybe_reap()
        image = self._image()
        device = self._device(request.device)
        harness = self._harness()
        if self.zygote and device == "cpu":
            forked = self._zygotes.run(
                self._identity(image.id, harness),
                request,
                lambda job_id: self._open_cgroup(job_id, request.limits),
            )
            if forked is not None:
                return _forked_result(forked, request.limits)
        container = self._create(image.id, request, device, harness)
        try:
            output, duration = self._exchange(container, request)
            ended = self._end(container, output)
        finally:
            _remove(container)
        if output.stderr:
            log.debug("sandbox %s stderr: %s", request.job_id, output.stderr[-2000:])
        status, message = common.classify(ended, request.limits)
        return SandboxResult(
            status=status,
            stdout=output.stdout,
            exit_code=None if ended.killed else ended.exit_code,
            duration_s=duration,
            message=message,
        )

    # --- the zygote ----------------------------------------------------------------------

    def prepare(self) -> None:
        """Starts the zygote container now (zygote mode), so that the first job need not
        wait for torch's import; a worker process calls it in the background."""
        if self.zygote:
            identity = self._identity(self._image().id, self._harness())
            self._zygotes.ready(identity, for_job=False)

    def close(self) -> None:
        """Stops the zygote container, if any (it would exit with the worker anyway)."""
        self._zygotes.stop()

    def zygote_pid(self) -> int | None:
        """The host pid of the zygote (its container's init), if one runs."""
        return self._zygotes.pid()

    @property
    def zygote_slot(self) -> zygotes.ZygoteSlot:
        """The slot of its zygote generations (what tests and diagnostics read of it)."""
        return self._zygotes

    def _identity(self, image_id: str, harness: Path | None) -> zygotes.ZygoteIdentity:
        return zygotes.ZygoteIdentity(
            harness or Path(common.HARNESS_MOUNT), (image_id,), SANDBOX_UID
        )

    def _start_zygote(self, identity: zygotes.ZygoteIdentity) -> zygotes.Zygote:
        from grader.sandbox import docker_zygote

        harness = None if identity.harness == Path(common.HARNESS_MOUNT) else identity.harness
        return docker_zygote.start(self, str(identity.runtime[0]), identity, harness=harness)

    def _harness(self) -> Path | None:
        """The published harness folder replacing the image's, if any."""
        if self.harness_dir is None:
            return None
        return publish.publish(self.harness_dir, self.publish_root)

    def _open_cgroup(self, job_id: str, limits: Limits) -> cgroups.JobCgroup | None:
        job_limits = cgroups.JobLimits(
            memory_bytes=limits.memory_mb * common.MIB, pids=limits.pids, cpus=limits.cpus
        )
        try:
            return cgroups.open_job_cgroup(
                cgroups.job_name(job_id), job_limits, parent=self.cgroup_parent
            )
        except cgroups.CgroupUnavailable as why:
            if not self._warned:
                self._warned = True
                log.warning(
                    "zygote jobs get no cgroup of their own (%s): memory is limited by "
                    "RLIMIT_AS, processes by RLIMIT_NPROC, and the zygote container's limits",
                    why,
                )
            return None

    # --- the Engine ----------------------------------------------------------------------

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _connect(self._base_url)
            return self._client

    def _image(self) -> Any:
        """The image `self.image` names now, looked up at most every IMAGE_RECHECK_S (a
        rebuilt image is used, and replaces the zygote, within that time)."""
        import docker.errors

        now = time.monotonic()
        cached = self._image_seen
        if cached is not None and now - cached[0] < IMAGE_RECHECK_S:
            return cached[1]
        try:
            image = self.client.images.get(self.image)
            self._image_seen = (now, image)
            return image
        except docker.errors.ImageNotFound:
            raise InfrastructureError(
                f"the sandbox image {self.image} is missing: build it with "
                "docker/build-sandbox-image.sh"
            ) from None
        except _engine_errors() as error:
            raise InfrastructureError(f"Docker Engine error: {error}") from error

    def _device(self, device: str) -> str:
        return "cuda" if device == "cuda" and self.gpu else "cpu"

    def engine_errors(self) -> tuple[type[Exception], ...]:
        return _engine_errors()

    def container_config(
        self, image_id: str, request: SandboxRequest, device: str, harness: Path | None = None
    ) -> dict[str, Any]:
        """The arguments of the Engine's container create call: every limit, explicit."""
        limits = request.limits
        deadline = time.time() + limits.wall_seconds + DEADLINE_GRACE_S
        return {
            "image": image_id,
            "command": list(common.HARNESS_COMMAND),
            "user": SANDBOX_USER,
            "working_dir": common.SANDBOX_WORKDIR,
            "hostname": common.SANDBOX_HOSTNAME,
            "environment": _sandbox_env(device),
            "stdin_open": True,
            "detach": False,  # with stdin_open: StdinOnce, EOF on attach closes its stdin
            "tty": False,
            "network_disabled": True,
            "labels": {
                LABEL_ROLE: ROLE_SANDBOX,
                LABEL_JOB: _SAFE_LABEL.sub("_", request.job_id)[:200],
                LABEL_DEADLINE: f"{deadline:.0f}",
            },
            "host_config": self.client.api.create_host_config(
                **self.host_config(request.limits, device, harness)
            ),
        }

    def base_host_config(self) -> dict[str, Any]:
        """What every container of this backend has, a job's or a zygote's."""
        import docker.types

        return {
            "network_mode": "none",
            "read_only": True,
            "ipc_mode": "private",
            "oom_score_adj": OOM_SCORE_ADJ,
            "cap_drop": ["ALL"],
            "privileged": False,
            "init": False,
            "auto_remove": False,  # removal waits until the OOM flag has been read
            "log_config": docker.types.LogConfig(
                type="json-file", config={"max-size": LOG_MAX_SIZE, "max-file": LOG_MAX_FILES}
            ),
        }

    def host_config(
        self, limits: Limits, device: str, harness: Path | None = None
    ) -> dict[str, Any]:
        import docker.types

        memory = f"{limits.memory_mb}m"
        options: dict[str, Any] = {
            **self.base_host_config(),
            "tmpfs": {
                common.SANDBOX_WORKDIR: f"rw,nosuid,nodev,noexec,size={limits.tmpfs_mb}m,mode=1777",
                **sealed_tmpfs(),
            },
            "mem_limit": memory,
            "memswap_limit": memory,  # equal: no swap
            "pids_limit": limits.pids,
            "nano_cpus": int(limits.cpus * 1e9),
            "ulimits": _ulimits(limits),
            "security_opt": ["no-new-privileges", f"seccomp={syscalls.profile_json()}"],
        }
        if harness is not None:
            options["mounts"] = [
                docker.types.Mount(common.HARNESS_MOUNT, str(harness), type="bind", read_only=True)
            ]
        if device == "cuda":
            options["device_requests"] = [
                docker.types.DeviceRequest(driver="nvidia", count=1, capabilities=[["gpu"]])
            ]
        return options

    def _create(
        self, image_id: str, request: SandboxRequest, device: str, harness: Path | None
    ) -> Any:
        try:
            created = self.client.api.create_container(
                **self.container_config(image_id, request, device, harness)
            )
            return self.client.containers.get(created["Id"])
        except _engine_errors() as error:
            raise InfrastructureError(f"cannot create the sandbox container: {error}") from error

    def _exchange(self, container: Any, request: SandboxRequest) -> tuple[_Output, float]:
        limits = request.limits
        try:
            stream = self.client.api.attach_socket(
                container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
        except _engine_errors() as error:
            raise InfrastructureError(f"cannot attach to the sandbox: {error}") from error
        sock: socket.socket = getattr(stream, "_sock", stream)
        try:
            started = time.monotonic()
            try:
                container.start()
            except _engine_errors() as error:
                raise InfrastructureError(f"cannot start the sandbox: {error}") from error
            _send(sock, request.stdin)
            output = _collect(
                sock,
                deadline=started + limits.wall_seconds,
                stdout_cap=common.stdout_cap(limits),
            )
            if output.timed_out or output.stdout_exceeded:
                _kill(container)
            return output, time.monotonic() - started
        finally:
            with contextlib.suppress(OSError):
                sock.close()
            with contextlib.suppress(Exception):
                stream.close()

    def _end(self, container: Any, output: _Output) -> common.Ending:
        killed = output.timed_out or output.stdout_exceeded
        try:
            container.wait(timeout=KILL_WAIT_S if killed else ENGINE_TIMEOUT_S)
            container.reload()
        except _engine_errors() as error:
            _kill(container)
            raise InfrastructureError(f"the sandbox container did not stop: {error}") from error
        state = container.attrs.get("State", {})
        if state.get("Running"):
            raise InfrastructureError("the sandbox container is still running after its end")
        return common.Ending(
            exit_code=state.get("ExitCode"),
            timed_out=output.timed_out,
            stdout_exceeded=output.stdout_exceeded,
            oom_killed=bool(state.get("OOMKilled")),
        )

    # --- janitor -------------------------------------------------------------------------

    def reap_expired(self, now: float | None = None) -> list[str]:
        """Remove sandbox containers whose deadline label has passed; their names."""
        return reap_expired(self.client, now=now)

    def _maybe_reap(self) -> None:
        now = time.monotonic()
        if now - self._last_janitor < JANITOR_EVERY_S:
            return
        self._last_janitor = now
        try:
            reap_expired(self.client)
        except InfrastructureError as error:
            log.warning("sandbox janitor: %s", error)


def reap_expired(client: Any = None, *, now: float | None = None) -> list[str]:
    """Remove every sandbox container (running or not) whose deadline has passed, e.g.
    after its worker died mid-job. Safe to run from any number of workers at once.
    Returns the names of the removed containers."""
    client = client or _connect(None)
    now = time.time() if now is None else now
    removed: list[str] = []
    containers = _listed(client, "sandbox", {"label": f"{LABEL_ROLE}={ROLE_SANDBOX}"})
    for container in containers + _exited_zygotes(client):
        if _deadline(container.labels) > now or not _reap(container):
            continue
        removed.append(container.name)
        log.info(
            "sandbox janitor removed %s (job %s)",
            container.name,
            container.labels.get(LABEL_JOB, "?"),
        )
    return removed


def _reap(container: Any) -> bool:
    """The janitor's removal of one expired container: True when this call removed it.
    A failure is logged and left to the next pass; it never stops the pass (nor the
    grading that ran it)."""
    try:
        return remove_container(container)
    except _engine_errors() as error:
        log.warning("sandbox janitor: cannot remove %s (next pass): %s", container.name, error)
        return False


def _exited_zygotes(client: Any) -> list[Any]:
    """Zygote containers that have ended (their worker went away: a zygote exits when its
    control socket closes). They carry no deadline label: long expired."""
    filters = {"label": f"{LABEL_ROLE}={ROLE_ZYGOTE}", "status": ["exited", "dead"]}
    return _listed(client, "zygote", filters)


def _listed(client: Any, kind: str, filters: Mapping[str, Any]) -> list[Any]:
    """The containers (running or not) these filters match. One removed between the
    Engine's list and the SDK's look at it (another worker's janitor) is left out."""
    try:
        return list(client.containers.list(all=True, filters=filters, ignore_removed=True))
    except _engine_errors() as error:
        raise InfrastructureError(f"cannot list {kind} containers: {error}") from error


def _deadline(labels: Mapping[str, str]) -> float:
    """The deadline label; a missing or malformed one counts as long expired."""
    try:
        return float(labels.get(LABEL_DEADLINE, "0"))
    except ValueError:
        return 0.0


def _engine_errors() -> tuple[type[Exception], ...]:
    """What a failing Engine call raises: the SDK's errors, and requests' own (a daemon
    that died mid-call, a read timeout), which the SDK does not wrap."""
    import docker.errors
    import requests  # type: ignore[import-untyped]

    return (docker.errors.DockerException, requests.RequestException)


def _connect(base_url: str | None) -> Any:
    try:
        import docker
    except ImportError as error:
        raise InfrastructureError("the Docker SDK for Python is not installed") from error
    # The ignores: mypy resolves `docker` to the repository's docker/ folder (a namespace
    # package on mypy_path); at run time the SDK, a regular package, takes precedence.
    try:
        if base_url:
            return docker.DockerClient(  # type: ignore[attr-defined]
                base_url=base_url, version="auto", timeout=ENGINE_TIMEOUT_S
            )
        return docker.from_env(version="auto", timeout=ENGINE_TIMEOUT_S)  # type: ignore[attr-defined]
    except _engine_errors() as error:
        raise InfrastructureError(f"the Docker Engine is not reachable: {error}") from error


def _sandbox_env(device: str) -> dict[str, str]:
    """The whole environment of the harness beyond the image's (PATH, LANG)."""
    return common.harness_env(device)


def _forked_result(forked: zygotes.ForkedRun, limits: Limits) -> SandboxResult:
    """The result of a job forked by the zygote container."""
    outcome = forked.outcome
    stderr = outcome.stderr.decode("utf-8", "replace").strip()
    if not forked.set_up or outcome.returncode is None:
        raise InfrastructureError(
            f"the zygote could not set up the job's sandbox (exit {outcome.returncode}): "
            f"{stderr[-2000:] or 'no message'}"
        )
    if stderr:
        log.debug("sandbox stderr: %s", stderr[-2000:])
    ending = common.Ending(
        exit_code=outcome.returncode,
        timed_out=outcome.timed_out,
        stdout_exceeded=outcome.stdout_exceeded,
        oom_killed=forked.oom_killed,
    )
    status, message = common.classify(ending, limits)
    return SandboxResult(
        status=status,
        stdout=outcome.stdout,
        exit_code=None if ending.killed else outcome.returncode,
        duration_s=outcome.duration_s,
        message=message,
    )


def sealed_tmpfs() -> dict[str, str]:
    """The tmpfs options that make /dev/shm and /dev/mqueue empty and read-only (a mount
    of ours there replaces Docker's own)."""
    return dict.fromkeys(SEALED_PATHS, SEALED_TMPFS)


def _ulimits(limits: Limits) -> list[Any]:
    import docker.types

    cpu = int(limits.cpu_seconds)
    size = limits.file_size_mb * common.MIB
    files = limits.open_files
    return [
        docker.types.Ulimit(name="cpu", soft=cpu, hard=cpu + common.CPU_HARD_GRACE_S),
        docker.types.Ulimit(name="fsize", soft=size, hard=size),
        docker.types.Ulimit(name="nofile", soft=files, hard=files),
        docker.types.Ulimit(name="core", soft=0, hard=0),
    ]


def _send(sock: socket.socket, data: bytes) -> None:
    """Write the whole job, then half-close: the harness sees EOF on stdin."""
    try:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError as error:  # the harness exited before reading it all: its result says why
        log.debug("sandbox stdin closed early: %s", error)


def _collect(sock: socket.socket, *, deadline: float, stdout_cap: int) -> _Output:
    """Demultiplex the attach stream until EOF, the deadline or stdout passing its cap."""
    out, err = bytearray(), bytearray()
    pending = b""
    exceeded = False
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return _Output(bytes(out[:stdout_cap]), bytes(err), True, exceeded)
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(READ_CHUNK)
        except TimeoutError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            return _Output(bytes(out[:stdout_cap]), bytes(err), False, exceeded)
        pending += chunk
        pending = _demux(pending, out, err)
        if len(out) > stdout_cap:
            exceeded = True
            return _Output(bytes(out[:stdout_cap]), bytes(err), False, exceeded)
        del err[common.STDERR_CAP_BYTES :]


def _demux(pending: bytes, out: bytearray, err: bytearray) -> bytes:
    """Move every complete frame of `pending` into out/err; return the incomplete rest."""
    while len(pending) >= _HEADER.size:
        stream, length = _HEADER.unpack_from(pending)
        end = _HEADER.size + length
        if len(pending) < end:
            break
        (out if stream == _STDOUT else err).extend(pending[_HEADER.size : end])
        pending = pending[end:]
    return pending


def _kill(container: Any) -> None:
    with contextlib.suppress(*_engine_errors()):  # e.g. it exited meanwhile
        container.kill()


def _remove(container: Any) -> None:
    try:
        remove_container(container)
    except _engine_errors() as error:
        log.error("cannot remove sandbox container %s (the janitor will): %s", container.id, error)


def remove_container(container: Any) -> bool:
    """Force-removes a container: True when the Engine says this call removed it, False
    when it was gone or its removal already under way (a janitor of another worker got
    there first: the Engine answers 409 Conflict, "removal of container ... is already in
    progress"). Two removals that overlap can both be answered as done, so two janitors
    may each report the same container (a log line twice, nothing worse)."""
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as error:
        if error.status_code == HTTPStatus.CONFLICT and "in progress" in str(error):
            return False
        raise
    return True


def main(argv: list[str]) -> int:
    """`python -m grader.sandbox.docker janitor`: remove expired sandbox containers."""
    if argv[1:] != ["janitor"]:
        print("usage: python -m grader.sandbox.docker janitor", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO)
    removed = reap_expired()
    print(f"removed {len(removed)} expired sandbox container(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
