"""What one job can write, a later job of the same backend (the same worker: the same
zygote, in zygote mode) must not read, in every backend: bubblewrap and Docker, cold and
zygote. Job A writes a file into every directory of the whole tree it can create one in,
creates a POSIX message queue (mq_open) and a SysV shared memory segment, message queue
and semaphore set; job B looks for each. /tmp, its own and fresh, is the only directory a
job can write to (FORMAT.md section 2): /dev/shm and /dev/mqueue are read-only.

Each job also reports its str hash secret and address layout: a cold sandbox's are its
own (a fresh interpreter); a zygote's jobs are forked, and a fork inherits both from the
zygote, so that by default (one job per zygote generation, each started ahead: the
zygote's docstring in grader/sandbox/zygote.py) every job is forked by a freshly exec'd
zygote of its own. The leak tests run on a zygote shared across jobs, the harder case.
"""

from __future__ import annotations

import json
import os
import secrets
import textwrap
from collections.abc import Iterator

import pytest
from sandbox_helpers import (
    RAW_HARNESS,
    REQUIRE_DOCKER_ENV,
    SHARED_ZYGOTE_JOBS,
    assert_no_zygotes_but,
    docker_unavailable_reason,
    our_zygotes,
    raw_job,
)

from grader.protocol import Limits, RunStatus, SandboxRequest
from grader.sandbox.bubblewrap import BubblewrapSandbox
from grader.sandbox.docker import DockerSandbox

pytestmark = pytest.mark.sandbox
Backend = BubblewrapSandbox | DockerSandbox

KINDS = [
    "bubblewrap",
    "bubblewrap-zygote",
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("docker-zygote", marks=pytest.mark.docker),
]

SPARE_WAIT_S = 300.0  # generous: a zygote's start (torch's import) on a loaded host

# MODE "leave": write everywhere it can; "look": report what of "leave" it finds.
PROBE = """
import ctypes, errno, json, mmap, os
MARK = ".gradlab-left-by-a"
QUEUE = b"/gradlab-left-by-a"
KEY = 0x676C_6C61
SKIPPED = {"/proc", "/sys"}
libc = ctypes.CDLL(None, use_errno=True)

def failure(result):
    return errno.errorcode[ctypes.get_errno()] if result < 0 else "exists"

def directories():
    for top, names, _ in os.walk("/", onerror=lambda error: None):
        names[:] = [n for n in names if os.path.join(top, n) not in SKIPPED]
        yield top

def layout():
    starts = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            name = fields[5] if len(fields) > 5 else ""
            starts.setdefault(name, fields[0].split("-")[0])
    region = mmap.mmap(-1, 1 << 20)
    fresh = ctypes.addressof(ctypes.c_char.from_buffer(region))
    library = next(start for name, start in starts.items() if "/libc.so" in name)
    return {"libc": library, "heap": starts.get("[heap]"), "stack": starts["[stack]"],
            "mmap": fresh}

report = {"hash": hash("gradlab"), "layout": layout()}
if MODE == "leave":
    written = []
    for folder in directories():
        try:
            fd = os.open(os.path.join(folder, MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError:
            continue
        os.close(fd)
        written.append(folder)
    report["written"] = written
    queue = libc.mq_open(QUEUE, os.O_CREAT | os.O_RDWR, 0o666, None)
    report["mq"] = queue >= 0 and libc.mq_send(queue, b"a", 1, 0) == 0
    report["shm"] = libc.shmget(KEY, 4096, 0o1666) >= 0  # IPC_CREAT | 0666
    report["msg"] = libc.msgget(KEY, 0o1666) >= 0
    report["sem"] = libc.semget(KEY, 1, 0o1666) >= 0
else:
    report["found"] = [f for f in directories() if os.path.lexists(os.path.join(f, MARK))]
    report["mq"] = failure(libc.mq_open(QUEUE, os.O_RDONLY))
    report["shm"] = failure(libc.shmget(KEY, 0, 0))
    report["msg"] = failure(libc.msgget(KEY, 0))
    report["sem"] = failure(libc.semget(KEY, 0, 0))
print(json.dumps(report))
"""


@pytest.fixture(scope="module", params=KINDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """One backend of each kind, running the raw harness, for the whole module: every
    job of a zygote kind comes from the same zygote (one shared across jobs, as a
    deployment that chooses throughput runs it)."""
    kind, _, mode = request.param.partition("-")
    if kind == "docker":
        reason = docker_unavailable_reason()
        if reason is not None:
            if os.environ.get(REQUIRE_DOCKER_ENV) == "1":
                pytest.fail(f"{REQUIRE_DOCKER_ENV}=1 but Docker is unavailable: {reason}")
            pytest.skip(reason)
    kind_of = DockerSandbox if kind == "docker" else BubblewrapSandbox
    made = kind_of(harness_dir=RAW_HARNESS, zygote=mode == "zygote", zygote_jobs=SHARED_ZYGOTE_JOBS)
    yield made
    if mode == "zygote":
        made.close()


@pytest.fixture
def per_job_backend(backend: Backend) -> Iterator[Backend]:
    """The module's cold backend; for a zygote kind, one of its own with the product
    default (one job per zygote generation), checked at the end to leave no zygote behind
    (the next generation is still starting when it is closed)."""
    if not backend.zygote:
        yield backend
        return
    docker = isinstance(backend, DockerSandbox)
    kept = our_zygotes(docker=docker)
    made = type(backend)(harness_dir=RAW_HARNESS, zygote=True)
    yield made
    made.close()
    assert_no_zygotes_but(kept, docker=docker)


def probe(backend: Backend, mode: str) -> dict:
    code = f"MODE = {mode!r}\n{textwrap.dedent(PROBE)}"
    request = SandboxRequest(f"cross-job-{secrets.token_hex(3)}", raw_job(code), Limits())
    result = backend.run(request)
    assert result.status is RunStatus.OK, (result.status, result.message, result.stderr[-800:])
    report: dict = json.loads(result.stdout.decode().strip().splitlines()[-1])
    return report


def test_tmp_is_the_only_place_a_job_can_write(backend: Backend) -> None:
    left = probe(backend, "leave")
    assert left["written"] == ["/tmp"]
    # its own IPC namespace: the job may make queues, segments, semaphores (none outlives it)
    assert left["mq"] and left["shm"] and left["msg"] and left["sem"]


def test_a_later_job_finds_nothing_an_earlier_job_left(backend: Backend) -> None:
    probe(backend, "leave")
    seen = probe(backend, "look")
    assert seen["found"] == []
    assert (seen["mq"], seen["shm"], seen["msg"], seen["sem"]) == ("ENOENT",) * 4


def test_each_job_has_its_own_hash_secret_and_address_layout(per_job_backend: Backend) -> None:
    """A zygote kind by default: the next zygote generation starts as the first job takes
    its zygote and is ready with no second job asking; the second job is forked by it
    (which starts the third generation)."""
    first = probe(per_job_backend, "look")
    if per_job_backend.zygote:
        slot = per_job_backend.zygote_slot
        assert slot.spare_pid(SPARE_WAIT_S) is not None
        assert slot.generations == 2
    second = probe(per_job_backend, "look")
    if per_job_backend.zygote:
        assert per_job_backend.zygote_slot.generations == 3  # the second was the spare's
    assert first["hash"] != second["hash"]
    for region in ("libc", "heap", "stack", "mmap"):
        assert first["layout"][region] != second["layout"][region], region
