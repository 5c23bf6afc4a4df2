"""The zygote (zygote=True / GRADLAB_SANDBOX_ZYGOTE=1), in both backends: one
torch-loaded process (in bubblewrap, or as the init of a long-lived Docker container)
forks every job, and each job is isolated as if its sandbox were fresh. Job A leaves
behind everything it can; job B, later or at the same time, must see none of it.

(Every raw-harness test of the bubblewrap backend and every containment attack also runs
in zygote mode: see the `bubblewrap_raw` and `backend` fixtures in conftest.py; the
Docker tests run in both Docker modes: tests/docker/conftest.py.)
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import secrets
import shutil
import signal
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import (
    RAW_HARNESS,
    REQUIRE_DOCKER_ENV,
    SHARED_ZYGOTE_JOBS,
    assert_no_leftovers,
    docker_unavailable_reason,
    gradlab_cgroups,
    job_prefix,
    raw_job,
)

from grader.protocol import Limits, RunStatus, SandboxRequest, SandboxResult
from grader.sandbox.bubblewrap import BubblewrapSandbox
from grader.sandbox.docker import DockerSandbox

pytestmark = pytest.mark.sandbox
ZygoteBackend = BubblewrapSandbox | DockerSandbox
MakeBackend = Callable[..., ZygoteBackend]

MAGIC = 1234.5  # the value job A's tensor is filled with
SHM_KEY = 0x6772_6C62
SOCKET_NAME = "gradlab-leak-test"
WATCH_TIMEOUT_S = 60.0

# Job A: leaves every kind of state it can, then (when LINGER) stays alive while B runs.
LEAVER = """
import builtins, ctypes, os, random, socket, subprocess, sys, time
import torch
open("/tmp/left-by-a", "w").write("a")
os.environ["LEFT_BY_A"] = "1"
builtins.LEFT_BY_A = True
torch.add = lambda *args, **kwargs: "patched by A"
random.seed(42)
torch.manual_seed(42)
kept = torch.full((64, 1024, 1024), MAGIC)  # 256 MB
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind("\\0" + SOCKET_NAME)
listener.listen()
named = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
named.bind("/tmp/left-socket")
named.listen()
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(SHM_KEY, 4096, 0o1666)  # IPC_CREAT | 0666
assert segment >= 0, ctypes.get_errno()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # TOKEN"],
                 start_new_session=True)
print("left", flush=True)
if LINGER:
    time.sleep(60)
"""

# Job B: reports whatever of A it can find.
LOOKER = """
import builtins, ctypes, errno, json, os, random, socket
import torch
seen = {"tmp": sorted(os.listdir("/tmp")), "env": "LEFT_BY_A" in os.environ,
        "builtins": hasattr(builtins, "LEFT_BY_A"),
        "torch_add": str(torch.add(torch.ones(1), torch.ones(1)).tolist()),
        "random": random.random() == random.Random(42).random(),
        "torch_seed": torch.initial_seed(),
        "processes": sorted(p for p in os.listdir("/proc") if p.isdigit()),
        "cmdlines": [open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace")
                     for p in os.listdir("/proc") if p.isdigit()]}
probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    probe.connect("\\0" + SOCKET_NAME)
    seen["abstract_socket"] = "connected"
except OSError as error:
    seen["abstract_socket"] = errno.errorcode[error.errno]
libc = ctypes.CDLL(None, use_errno=True)
seen["shm"] = libc.shmget(SHM_KEY, 0, 0) >= 0 or errno.errorcode[ctypes.get_errno()]
fresh = torch.empty((64, 1024, 1024))
seen["magic_in_fresh_memory"] = bool((fresh == MAGIC).any())
print(json.dumps(seen))
"""


@pytest.fixture(
    scope="module",
    params=["bubblewrap-zygote", pytest.param("docker-zygote", marks=pytest.mark.docker)],
)
def zygote_kind(request: pytest.FixtureRequest) -> type[ZygoteBackend]:
    """The backend class of one kind of zygote: bubblewrap's, or Docker's (a zygote
    container)."""
    if request.param == "docker-zygote":
        reason = docker_unavailable_reason()
        if reason is not None:
            if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
                pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but Docker is unavailable: {reason}")
            pytest.skip(reason)
        return DockerSandbox
    return BubblewrapSandbox


@pytest.fixture
def make_backend(zygote_kind: type[ZygoteBackend]) -> Iterator[MakeBackend]:
    """Makes zygote-mode backends of one kind (closed at the end), the raw harness by
    default: for a test that replaces, kills or closes its zygote. A zygote shared across
    jobs unless the test says otherwise, as a deployment that chooses throughput runs it."""
    made: list[ZygoteBackend] = []

    def make(harness_dir: Path = RAW_HARNESS, **options: Any) -> ZygoteBackend:
        options.setdefault("zygote_jobs", SHARED_ZYGOTE_JOBS)
        backend = zygote_kind(harness_dir=harness_dir, zygote=True, **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture(scope="module")
def shared_zygote(zygote_kind: type[ZygoteBackend]) -> Iterator[ZygoteBackend]:
    """One zygote-mode backend of each kind for the module's tests that only run jobs in
    it (a zygote's start imports torch: ~2 s of CPU): each of those tests then also runs
    after every job the tests before it ran in the same zygote, as a worker's would that
    shares a zygote across jobs (a deployment that chooses throughput)."""
    backend = zygote_kind(harness_dir=RAW_HARNESS, zygote=True, zygote_jobs=SHARED_ZYGOTE_JOBS)
    yield backend
    backend.close()


@pytest.fixture
def zygote_backend(make_backend: MakeBackend) -> ZygoteBackend:
    """A zygote-mode backend of its own."""
    return make_backend()


def source(code: str, linger: bool = False) -> str:
    names = f"MAGIC = {MAGIC!r}\nSHM_KEY = {SHM_KEY}\nSOCKET_NAME = {SOCKET_NAME!r}\n"
    return f"{names}LINGER = {linger}\n{textwrap.dedent(code)}"


def run(backend: ZygoteBackend, prefix: str, code: str, **limits: object) -> SandboxResult:
    request = SandboxRequest(
        f"{prefix}-{secrets.token_hex(2)}", raw_job(code), Limits().replace(**limits)
    )
    return backend.run(request)


def looked(result: SandboxResult) -> dict:
    assert result.status is RunStatus.OK, (result.status, result.message, result.stdout[-800:])
    loaded: dict = json.loads(result.stdout.decode().strip().splitlines()[-1])
    return loaded


def assert_sees_nothing_of_a(seen: dict) -> None:
    assert seen["tmp"] == []
    assert seen["env"] is False and seen["builtins"] is False
    assert seen["torch_add"] == "[2.0]"
    assert seen["random"] is False
    assert seen["torch_seed"] == torch_default_seed()
    assert seen["processes"] == ["1", "2"], seen["cmdlines"]  # init and the job itself
    assert not [c for c in seen["cmdlines"] if "TOKEN" in c]
    assert seen["abstract_socket"] == "ECONNREFUSED"
    assert seen["shm"] == "ENOENT"
    assert seen["magic_in_fresh_memory"] is False


def torch_default_seed() -> int:
    """What torch.initial_seed() is in a fresh interpreter."""
    from grader.sandbox import zygote_init

    return zygote_init.TORCH_DEFAULT_SEED


ENDING_BOUND_S = 30.0  # generous: a correct end takes well under a second
# a job that leaves a detached process behind: its end (in the background) must kill it
DETACHED_SLEEPER = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)  # TOKEN'],"
    " start_new_session=True)\n"
)
EXITING = """
import os, signal, sys, time
sys.path.insert(0, {tests!r})
from sandbox_helpers import RAW_HARNESS, raw_job
from grader.protocol import Limits, SandboxRequest
from grader.sandbox.bubblewrap import BubblewrapSandbox

backend = BubblewrapSandbox(harness_dir=RAW_HARNESS, zygote=True, zygote_jobs=500)  # one zygote
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # as a Celery pool process's
for n, code in enumerate(["pass", {sleeper!r}]):
    result = backend.run(SandboxRequest(f"{prefix}-{{n}}", raw_job(code), Limits()))
    assert result.status.value == "ok", result.message
print(backend.zygote_pid(), flush=True)
if {wait_for_signal!r}:
    time.sleep(120)
"""


# These two first: they use no zygote fixture. pytest runs a module's tests grouped by the
# kind of zygote, Docker's last; a test without one after them would have the shared Docker
# zygote closed in its teardown, outside a `docker` test (tests/lanes.py).
@pytest.mark.parametrize("how", ["returns", "sigterm"])
def test_a_process_ending_just_after_a_zygote_job_ends_promptly_and_leaves_nothing(
    how: str,
) -> None:
    """A process whose last job's end is still under way in the background (its detached
    child to kill, its cgroups to remove) and whose next job's sandbox is prepared, ends
    by returning from its program or by SystemExit from its SIGTERM handler: its exit
    waits for that end, within the bound, and leaves no cgroup (its jobs', the prepared
    sandbox's, its zygote's), no process of its jobs and no zygote."""
    import subprocess
    import sys

    if not _host_has_job_cgroups():
        pytest.skip("no per-job cgroups here")
    prefix = job_prefix()
    program = textwrap.dedent(EXITING).format(
        tests=str(Path(__file__).resolve().parent), sleeper=DETACHED_SLEEPER,
        prefix=prefix, wait_for_signal=how == "sigterm",
    )  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'platform'}"}
    process = subprocess.Popen(
        [sys.executable, "-c", program], cwd=root, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    zygote = process.stdout.readline().strip()
    assert zygote.isdigit(), process.communicate(timeout=WATCH_TIMEOUT_S)[1].decode()[-2000:]
    started = time.monotonic()
    if how == "sigterm":
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=WATCH_TIMEOUT_S)
    assert time.monotonic() - started < ENDING_BOUND_S
    assert process.returncode == (143 if how == "sigterm" else 0), stderr.decode()[-2000:]
    assert not [c for c in gradlab_cgroups() if f"-{process.pid}-" in c.name]
    assert_no_leftovers(prefix)
    assert not Path(f"/proc/{zygote.decode()}").exists() or _is_zombie(int(zygote))


def test_a_later_job_sees_nothing_an_earlier_job_left(shared_zygote: ZygoteBackend) -> None:
    prefix = job_prefix()
    left = run(shared_zygote, prefix, source(LEAVER), memory_mb=1024)
    assert left.status is RunStatus.OK and left.stdout.strip() == b"left", left.message
    assert_sees_nothing_of_a(looked(run(shared_zygote, prefix, source(LOOKER), memory_mb=1024)))
    assert_no_leftovers(prefix)  # A's detached sleeper died with A's job


def test_a_concurrent_job_sees_nothing_of_a_job_still_running(
    shared_zygote: ZygoteBackend,
) -> None:
    prefix = job_prefix()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        lingering = pool.submit(
            run, shared_zygote, f"{prefix}-a", source(LEAVER, linger=True),
            memory_mb=1024, wall_seconds=20,
        )  # fmt: skip
        assert _sleeper_started(f"{prefix}-a", until=lingering), lingering.result().message
        seen = looked(run(shared_zygote, prefix, source(LOOKER), memory_mb=1024))
        assert not lingering.done()  # A was alive, its sockets listening, all along
        assert_sees_nothing_of_a(seen)
        _kill_job(f"{prefix}-a")  # instead of waiting out A's 20 s
        assert lingering.result().status is RunStatus.CRASHED
    assert_no_leftovers(prefix)


def _kill_job(job_id: str) -> None:
    """SIGKILLs every process in the job's cgroups, as the host's root can."""
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while time.monotonic() < deadline:
        pids = {
            int(pid)
            for folder in gradlab_cgroups()
            if folder.name.startswith(job_id)
            for pid in _read(folder / "cgroup.procs").split()
        }
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    pytest.fail(f"the processes of job {job_id} outlived {WATCH_TIMEOUT_S} s of SIGKILLs")


def _sleeper_started(prefix: str, until: concurrent.futures.Future[SandboxResult]) -> bool:
    """True once job A's detached sleeper runs (A has left everything by then)."""
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while not until.done() and time.monotonic() < deadline:
        for folder in (c for c in gradlab_cgroups() if c.name.startswith(prefix)):
            for pid in _read(folder / "cgroup.procs").split():
                if "TOKEN" in _read(Path(f"/proc/{pid}/cmdline")):
                    return True
        time.sleep(0.05)
    return False


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_a_job_can_neither_unshare_nor_mount_nor_nest_user_namespaces(
    shared_zygote: ZygoteBackend,
) -> None:
    code = """
    import ctypes, errno, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    def outcome(result):
        return "succeeded" if result == 0 else errno.errorcode[ctypes.get_errno()]
    status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines())
    print(json.dumps({
        "unshare_user": outcome(libc.unshare(0x10000000)),
        "unshare_mount": outcome(libc.unshare(0x00020000)),
        "mount": outcome(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None)),
        "max_user_namespaces": open("/proc/sys/user/max_user_namespaces").read().strip(),
        "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
        "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
        "filters": status.get("Seccomp_filters", "").strip(),
        "pid": os.getpid(), "parent": os.getppid(),
    }))
    """
    seen = looked(run(shared_zygote, job_prefix(), textwrap.dedent(code)))
    assert seen["unshare_user"] == seen["unshare_mount"] == seen["mount"] == "EPERM"
    assert seen["max_user_namespaces"] == "0"
    assert seen["caps"] == ["0000000000000000"] * 5
    assert seen["nnp"] == "1" and seen["seccomp"] == "2"
    assert seen["filters"] == "2"  # the zygote's, then the job's on top of it
    assert seen["pid"] == 2 and seen["parent"] == 1


def test_the_zygote_holds_no_descriptor_of_a_running_job(
    zygote_backend: ZygoteBackend,
) -> None:
    prefix = job_prefix()
    # its control socket, /dev/null (stdin, stdout) and its own stderr: no pipe of a job
    # (Docker: its stderr is the container's log pipe; bubblewrap: a file)
    own_stderr = {2} if isinstance(zygote_backend, DockerSandbox) else set()
    zygote_backend.prepare()  # the zygote is running before the job is handed over
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job = pool.submit(run, zygote_backend, prefix, "import time\ntime.sleep(3)")
        assert _job_running(prefix, until=job)
        fds, threads = _zygote_state_past_the_fork(zygote_backend, own_stderr, until=job)
        assert job.result().status is RunStatus.OK
    assert threads == "1"  # it refuses to fork with more (forking a threaded process)
    assert set(fds.values()) >= {"/dev/null"}, fds
    assert _pipes(fds) == own_stderr, fds
    assert len([t for t in fds.values() if t.startswith("socket:")]) == 1, fds


def _pipes(fds: dict[int, str]) -> set[int]:
    return {fd for fd, target in fds.items() if target.startswith("pipe:")}


def _zygote_state_past_the_fork(
    backend: ZygoteBackend, own_pipes: set[int], until: concurrent.futures.Future[SandboxResult]
) -> tuple[dict[int, str], str]:
    """The zygote's state (`_zygote_state`) once it holds no pipe but `own_pipes`, or the
    last one seen while the job ran. The zygote closes its copies of a job's descriptors
    right after forking the job's keeper, and on a busy host the job can be running before
    the zygote runs again to close them (seen once: its fds 5-7, the job's stdin, stdout
    and stderr); a zygote that kept them would hold them for the whole job (and the job's
    stdout would see no end of file while it did)."""
    while True:
        fds, threads = _zygote_state(backend)
        if _pipes(fds) == own_pipes or until.done():
            return fds, threads
        time.sleep(0.02)


def _job_running(prefix: str, until: concurrent.futures.Future[SandboxResult]) -> bool:
    """True once the job's keeper, init and harness are all in its cgroup."""
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while not until.done() and time.monotonic() < deadline:
        for folder in (c for c in gradlab_cgroups() if c.name.startswith(prefix)):
            if len(_read(folder / "cgroup.procs").split()) >= 3:
                return True
        time.sleep(0.02)
    return False


def _zygote_state(backend: ZygoteBackend) -> tuple[dict[int, str], str]:
    """What the zygote's python (pid 1 of its sandbox or container) holds open (by
    descriptor) and its thread count, seen from the host."""
    python = _zygote_python(backend)
    status = _read(Path(f"/proc/{python}/status"))
    threads = status.split("\nThreads:\t", 1)[1].split()[0]
    fds = Path(f"/proc/{python}/fd").iterdir()
    return {int(fd.name): os.readlink(fd) for fd in fds}, threads


def _zygote_python(backend: ZygoteBackend) -> int:
    """The host pid of the zygote's python: the container's init (Docker), bwrap's only
    child (bubblewrap)."""
    outer = backend.zygote_pid()
    assert outer is not None
    if isinstance(backend, DockerSandbox):
        return outer
    for entry in Path("/proc").iterdir():
        status = _read(entry / "status") if entry.name.isdigit() else ""
        if f"\nPPid:\t{outer}\n" in status:
            return int(entry.name)
    raise AssertionError(f"bwrap {outer} has no child")


def test_the_zygote_is_replaced_after_its_job_quota(make_backend: MakeBackend) -> None:
    """Two jobs per zygote: the first two share its hash secret, the third has the next
    generation's (started ahead when the second took the first zygote), and the worn-out
    zygote is stopped once its jobs are done."""
    backend = make_backend(zygote_jobs=2)
    prefix = job_prefix()
    hashes, first = [], None
    for _ in range(3):
        result = run(backend, prefix, "print(hash('gradlab'))")
        assert result.status is RunStatus.OK, result.message
        hashes.append(result.stdout)
        first = first or backend.zygote_pid()
    assert hashes[0] == hashes[1] != hashes[2]
    assert first is not None
    assert backend.zygote_slot.generations == 2
    assert _ended(first)


def _ended(pid: int) -> bool:
    """Whether process `pid` ends (or is a zombie) within WATCH_TIMEOUT_S: a worn-out
    zygote is stopped in the background."""
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while Path(f"/proc/{pid}").exists() and not _is_zombie(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_dead_zygote_is_replaced_and_the_next_job_runs(
    zygote_backend: ZygoteBackend,
) -> None:
    prefix = job_prefix()
    assert run(zygote_backend, prefix, "pass").status is RunStatus.OK
    first = zygote_backend.zygote_pid()
    assert first is not None
    os.kill(_zygote_python(zygote_backend), signal.SIGKILL)
    assert run(zygote_backend, prefix, "print('after')").stdout == b"after\n"
    # the sandbox prepared for that job may have served it while its zygote died: at the
    # latest the job after it finds the zygote dead and replaces it
    assert run(zygote_backend, prefix, "print('again')").stdout == b"again\n"
    assert zygote_backend.zygote_pid() not in {None, first}


def test_a_changed_harness_gets_a_new_zygote(tmp_path: Path, make_backend: MakeBackend) -> None:
    harness = tmp_path / "harness"
    shutil.copytree(RAW_HARNESS, harness)
    harness.chmod(0o755)
    backend = make_backend(harness_dir=harness)
    prefix, code = job_prefix(), "print(open('/harness/main.py').read().count('changed'))"
    assert run(backend, prefix, code).stdout == b"0\n"
    first = backend.zygote_pid()
    main = harness / "main.py"
    main.write_text(main.read_text() + "\n# changed\n")
    assert run(backend, prefix, code).stdout == b"1\n"
    assert backend.zygote_pid() not in {None, first}


def _is_zombie(pid: int) -> bool:
    return _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()[:1] == ["Z"]


def test_a_zygote_started_by_a_thread_that_has_ended_keeps_serving(
    zygote_backend: ZygoteBackend,
) -> None:
    """As a worker process starts its zygote from a short-lived thread: bwrap's
    --die-with-parent follows the thread that started it, not the process."""
    starter = threading.Thread(target=zygote_backend.prepare)
    starter.start()
    starter.join()
    first = zygote_backend.zygote_pid()
    assert first is not None
    time.sleep(0.5)  # room for a death signal to land; the assertions hold at any moment
    assert run(zygote_backend, job_prefix(), "print('served')").stdout == b"served\n"
    assert zygote_backend.zygote_pid() == first


def _prepared_cgroups() -> set[Path]:
    """The cgroups of keepers this test process's backends prepared ahead of a job."""
    return {c for c in gradlab_cgroups() if c.name.startswith(f"prepared-{os.getpid()}-")}


def _await_prepared(others: set[Path]) -> set[Path]:
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while not (prepared := _prepared_cgroups() - others) and time.monotonic() < deadline:
        time.sleep(0.02)
    return prepared


def test_the_next_job_is_prepared_ahead_and_runs_in_cgroups_named_after_itself(
    shared_zygote: ZygoteBackend,
) -> None:
    if not _host_has_job_cgroups():
        pytest.skip("no per-job cgroups here: keepers are forked per job")
    others = _prepared_cgroups()
    prefix = job_prefix()
    assert run(shared_zygote, prefix, "pass").status is RunStatus.OK
    prepared = _await_prepared(others)
    assert prepared, "no keeper was prepared for the next job"
    result = run(shared_zygote, prefix, "print(open('/proc/self/cgroup').read())")
    assert result.status is RunStatus.OK, result.message
    memory = [line for line in result.stdout.decode().splitlines() if ":memory:" in line]
    assert memory and f"/{prefix}-" in memory[0], result.stdout  # renamed for the job
    assert not prepared & gradlab_cgroups()
    assert_no_leftovers(prefix)


def _host_has_job_cgroups() -> bool:
    from grader.sandbox import cgroups

    try:
        cgroups.open_job_cgroup(
            cgroups.job_name("probe"), cgroups.JobLimits(1 << 26, 8, 1.0)
        ).remove()
    except cgroups.CgroupUnavailable:
        return False
    return True


def test_closing_a_zygote_backend_removes_the_keeper_it_prepared(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend()
    others = _prepared_cgroups()
    assert run(backend, job_prefix(), "pass").status is RunStatus.OK
    prepared = _await_prepared(others)
    if not prepared:
        pytest.skip("no keeper prepared here (no per-job cgroups)")
    backend.close()
    assert not prepared & gradlab_cgroups()


def test_the_zygote_maps_its_heap_with_huge_pages_where_the_kernel_offers_them(
    shared_zygote: ZygoteBackend,
) -> None:
    """Each job's forks and exits then copy and free a page table entry per 2 MiB."""
    enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    if not enabled.exists() or "[never]" in enabled.read_text() or (major, minor) < (6, 1):
        pytest.skip("no transparent huge pages, or no MADV_COLLAPSE (Linux < 6.1)")
    shared_zygote.prepare()
    rollup = _read(Path(f"/proc/{_zygote_python(shared_zygote)}/smaps_rollup"))
    huge_kb = int(rollup.split("\nAnonHugePages:", 1)[1].split()[0])
    assert huge_kb >= 32 * 1024  # of some 150 MB of heap and buffers


def test_a_closed_backend_has_ended_its_last_job_in_full(make_backend: MakeBackend) -> None:
    """A job's end (its cgroups' removal) runs after its result: closing waits for it."""
    backend = make_backend()
    prefix = job_prefix()
    assert run(backend, prefix, "pass").status is RunStatus.OK
    backend.close()
    assert not [c for c in gradlab_cgroups() if c.name.startswith(prefix)]


def test_closing_a_backend_just_after_a_job_ends_that_job_and_the_prepared_sandbox_in_full(
    make_backend: MakeBackend,
) -> None:
    """Closed while its last job's end is still under way in the background and the next
    job's sandbox is prepared: close returns well within the bound, and nothing of either
    is left (no cgroup, so no process)."""
    backend = make_backend()
    others = _prepared_cgroups()
    prefix = job_prefix()
    assert run(backend, prefix, "pass").status is RunStatus.OK
    assert run(backend, prefix, DETACHED_SLEEPER).status is RunStatus.OK
    prepared = _await_prepared(others)
    started = time.monotonic()
    backend.close()
    assert time.monotonic() - started < ENDING_BOUND_S
    assert not prepared & gradlab_cgroups()
    assert not [c for c in gradlab_cgroups() if c.name.startswith(prefix)]
    assert_no_leftovers(prefix)
