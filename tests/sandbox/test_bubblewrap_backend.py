"""The bubblewrap backend on raw jobs: isolation, limits, outcomes, clean-up.

Every test runs real code in the real sandbox (tests/sandbox/raw_harness executes the
job's "python" field as the sandbox's main program).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from sandbox_helpers import (
    FORK_UNTIL_REFUSED,
    RAW_HARNESS,
    ROOT,
    RawRun,
    assert_no_leftovers,
    job_prefix,
    raw_job,
)

from grader.protocol import InfrastructureError, Limits, RunStatus, SandboxRequest
from grader.sandbox import SandboxConfig, build_backend
from grader.sandbox.bubblewrap import BubblewrapSandbox
from grader.sandbox.config import DEFAULT_RUNTIME_DIR

pytestmark = pytest.mark.sandbox


def report(run_raw: RawRun, code: str, **limits: object) -> dict:
    """Runs code that prints one JSON object; returns it."""
    result = run_raw(textwrap.dedent(code), **limits)
    assert result.status is RunStatus.OK, (result.status, result.message, result.stdout[-500:])
    return json.loads(result.stdout.decode().strip().splitlines()[-1])


# --- who and what the code sees ---------------------------------------------------------


def test_code_runs_as_an_unprivileged_user_without_capabilities(run_raw: RawRun) -> None:
    seen = report(
        run_raw,
        """
        import json, os
        status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines())
        print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                          "caps": [status[k].strip() for k in ("CapInh", "CapPrm", "CapEff",
                                                                "CapBnd", "CapAmb")],
                          "nnp": status["NoNewPrivs"].strip()}))
        """,
    )
    assert seen["uid"] == 1000 and seen["gid"] == 1000
    assert set(seen["groups"]) <= {1000}
    assert seen["caps"] == ["0000000000000000"] * 5
    assert seen["nnp"] == "1"


def test_the_host_sees_the_sandboxed_code_as_an_unprivileged_user(run_raw: RawRun) -> None:
    duration = f"3.{secrets.randbelow(10**6):06d}"  # a command line no one else runs
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        job = pool.submit(run_raw, _sleeper(duration))
        uids = _host_uids_of(_sleeper_cmdline(duration), until=job)
        assert job.result().status is RunStatus.OK
    assert uids, "the sandboxed sleep was never seen on the host"
    expected = pwd.getpwnam("gradlab-sandbox").pw_uid if os.geteuid() == 0 else os.getuid()
    assert uids == {expected} and 0 not in uids


def _sleeper(seconds: str) -> str:
    """Job code that runs a child process sleeping `seconds` (the sandbox has no sleep(1):
    only python)."""
    return f"import subprocess, sys\nsubprocess.run({_sleeper_argv(seconds)!r})"


def _sleeper_argv(seconds: str) -> list[str]:
    return ["/runtime/bin/python", "-c", f"import time; time.sleep({seconds})"]


def _sleeper_cmdline(seconds: str) -> bytes:
    return b"".join(part.encode() + b"\0" for part in _sleeper_argv(seconds))


def _host_uids_of(cmdline: bytes, until: concurrent.futures.Future[object]) -> set[int]:
    uids: set[int] = set()
    while not until.done():
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and (entry / "cmdline").read_bytes() == cmdline:
                    status = (entry / "status").read_text()
                    uids |= {int(v) for v in status.split("Uid:")[1].split("\n")[0].split()}
            except OSError:
                continue
        time.sleep(0.05)
    return uids


def test_the_filesystem_holds_only_the_runtime_the_harness_and_tmp(run_raw: RawRun) -> None:
    seen = report(
        run_raw,
        """
        import json, os
        print(json.dumps({"root": sorted(os.listdir("/")), "cwd": os.getcwd(),
                          "harness": sorted(os.listdir("/harness")),
                          "usr": sorted(os.listdir("/usr")),
                          "usr_bin": sorted(os.listdir("/usr/bin"))}))
        """,
    )
    assert set(seen["root"]) == {"dev", "harness", "lib", "lib64", "proc", "runtime", "tmp", "usr"}
    assert seen["cwd"] == "/tmp"
    assert seen["harness"] == ["main.py"]
    assert set(seen["usr"]) <= {"bin", "lib", "lib64"}
    assert seen["usr_bin"] == [Path(os.path.realpath("/opt/gradlab/sandbox-env/bin/python")).name]


def test_the_host_usr_is_not_mounted_only_the_files_python_and_torch_load(
    run_raw: RawRun,
) -> None:
    seen = report(
        run_raw,
        """
        import json, os
        mounts = [line.split()[3:5] for line in open("/proc/self/mountinfo")]
        import torch, numpy
        shells = [p for p in ("/bin/sh", "/usr/bin/bash") if os.path.exists(p)]
        print(json.dumps({"mounts": mounts, "torch": torch.ones(2).sum().item(),
                          "shells": shells}))
        """,
    )
    roots = {root for root, _ in seen["mounts"]}
    assert seen["torch"] == 2.0
    assert seen["shells"] == []
    assert "/usr" not in roots and "/usr/bin" not in roots  # no whole host folder of binaries
    private = (str(ROOT), "/home", "/root", "/work")  # the checkout, homes: nothing of them
    assert not [root for root in roots if root.startswith(private)]
    assert ("/", "/tmp") in {tuple(m) for m in seen["mounts"]}  # a private tmpfs


def test_code_cannot_read_files_outside_the_sandbox(run_raw: RawRun) -> None:
    seen = report(
        run_raw,
        f"""
        import json
        found = {{}}
        for path in ["/etc/shadow", "/etc/passwd", "/root", "{ROOT}/exercises",
                     "{ROOT}/exercises/first-gradient/solution.py", "/work", "/home"]:
            try:
                open(path).read()
                found[path] = "read"
            except IsADirectoryError:
                found[path] = "exists"
            except OSError as error:
                found[path] = type(error).__name__
        print(json.dumps(found))
        """,
    )
    assert set(seen.values()) == {"FileNotFoundError"}, seen


def test_code_cannot_write_outside_tmp_and_tmp_is_capped(run_raw: RawRun) -> None:
    seen = report(
        run_raw,
        """
        import json
        out = {}
        for path in ["/x", "/dev/shm/x", "/usr/x", "/runtime/x", "/harness/x"]:
            try:
                open(path, "w").write("x")
                out[path] = "written"
            except OSError as error:
                out[path] = error.errno
        written = 0
        try:
            with open("/tmp/fill", "wb") as f:
                for _ in range(64):
                    f.write(b"x" * 1024 * 1024)
                    f.flush()
                    written += 1
        except OSError as error:
            out["tmp_error"] = error.errno
        out["tmp_mb"] = written
        print(json.dumps(out))
        """,
        tmpfs_mb=8,
        file_size_mb=32,
    )
    assert all(v != "written" for k, v in seen.items() if k.startswith("/")), seen
    assert seen["tmp_mb"] <= 8
    assert seen["tmp_error"] == 28  # ENOSPC


def test_code_cannot_see_host_processes(run_raw: RawRun) -> None:
    seen = report(
        run_raw,
        """
        import json, os
        pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print(json.dumps({"pids": pids, "me": os.getpid()}))
        """,
    )
    assert max(seen["pids"]) < 10 and seen["me"] < 10
    assert os.getpid() not in seen["pids"] or os.getpid() < 10


def test_code_sees_none_of_the_workers_environment(
    run_raw: RawRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "gradlab-test-secret-" + os.urandom(8).hex()
    monkeypatch.setenv("SECRET_KEY", secret)
    monkeypatch.setenv("DATABASE_URL", f"postgres://u:{secret}@127.0.0.1/db")
    result = run_raw(
        """
import os
print(sorted(os.environ))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            print(open(f"/proc/{pid}/environ", "rb").read())
        except OSError as error:
            print(pid, error)
"""
    )
    assert result.status is RunStatus.OK
    assert secret.encode() not in result.stdout
    assert b"SECRET_KEY" not in result.stdout and b"DATABASE_URL" not in result.stdout
    assert b"OMP_NUM_THREADS" in result.stdout


def test_code_cannot_reach_a_listener_on_the_host(run_raw: RawRun) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        host_ip = _host_address()
        seen = report(
            run_raw,
            f"""
            import json, socket
            out = {{}}
            for host in ["127.0.0.1", "{host_ip}", "1.1.1.1"]:
                try:
                    socket.create_connection((host, {port}), timeout=2).close()
                    out[host] = "connected"
                except OSError as error:
                    out[host] = type(error).__name__
            try:  # needs a netlink socket, which the seccomp filter refuses
                out["interfaces"] = [name for _, name in socket.if_nameindex()]
            except OSError as error:
                out["interfaces"] = type(error).__name__
            print(json.dumps(out))
            """,
        )
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert "connected" not in seen.values(), seen
    assert seen["127.0.0.1"] == "PermissionError"  # no AF_INET socket at all
    assert seen["interfaces"] in (["lo"], "PermissionError")


def _host_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def test_code_cannot_create_user_namespaces_or_raise_privileges(run_raw: RawRun) -> None:
    result = run_raw(
        """
import subprocess
print(subprocess.run(["unshare", "-U", "-r", "id"], capture_output=True).returncode)
"""
    )
    assert result.stdout.strip() != b"0"


# --- the job on stdin -----------------------------------------------------------------


def test_a_large_job_arrives_whole_on_stdin_then_eof(bubblewrap_raw: BubblewrapSandbox) -> None:
    payload = "x" * 3_000_000  # far beyond a pipe's buffer
    code = (
        "import sys, hashlib\n"
        f"payload = {payload!r}\n"
        "rest = sys.stdin.read()\n"
        "print(len(payload), repr(rest), NONCE)\n"
    )
    prefix = job_prefix()
    request = SandboxRequest(f"{prefix}-0", raw_job(code, nonce="ab" * 16), Limits())
    result = bubblewrap_raw.run(request)
    assert result.status is RunStatus.OK, result.message
    assert result.stdout == f"3000000 '' {'ab' * 16}\n".encode()
    assert_no_leftovers(prefix)


# --- limits and outcomes --------------------------------------------------------------


def test_allocating_2_gb_is_a_memory_failure(run_raw: RawRun) -> None:
    result = run_raw("block = bytearray(2 * 1024**3)\nprint('allocated')")
    assert result.status is RunStatus.MEMORY
    assert result.message == "memory limit of 1024 MB exceeded"
    assert b"allocated" not in result.stdout


def test_the_memory_limit_comes_from_the_request(run_raw: RawRun) -> None:
    code = (
        "block = bytearray(400 * 1024**2)\nblock[::4096] = b'x' * len(block[::4096])\nprint('ok')"
    )
    assert run_raw(code, memory_mb=1024).status is RunStatus.OK
    small = run_raw(code, memory_mb=256)
    assert small.status is RunStatus.MEMORY
    assert "256 MB" in small.message


def test_a_fork_bomb_is_capped_and_killed_at_the_time_limit(run_raw: RawRun) -> None:
    result = run_raw(
        FORK_UNTIL_REFUSED + "while True:\n    time.sleep(1)\n",
        wall_seconds=4,
        pids=32,
    )
    assert result.status is RunStatus.TIMEOUT
    assert int(result.stdout.split()[0]) < 32
    assert result.message == "time limit of 4 s exceeded"


def test_an_infinite_loop_is_killed_at_the_wall_clock_limit(run_raw: RawRun) -> None:
    # the CPU limit far above the wall clock: only the wall clock can end the loop, and
    # the message says which limit did (no bound on how fast a loaded host kills it)
    result = run_raw("while True:\n    pass", wall_seconds=2, cpu_seconds=600)
    assert result.status is RunStatus.TIMEOUT
    assert result.exit_code is None
    assert result.message == "time limit of 2 s exceeded"
    assert result.duration_s >= 2


def test_cpu_time_over_the_limit_is_a_timeout(run_raw: RawRun) -> None:
    # a wall clock far above the CPU limit: the loop reaches 1 s of CPU first however
    # little of a core a loaded host gives it
    result = run_raw("while True:\n    pass", wall_seconds=300, cpu_seconds=1)
    assert result.status is RunStatus.TIMEOUT
    assert result.message == "CPU time limit of 1 s exceeded"


def test_printing_100_mb_stops_at_the_output_cap(run_raw: RawRun) -> None:
    code = "import sys\nfor _ in range(100):\n    sys.stdout.write('x' * 1024 * 1024)"
    result = run_raw(code, result_bytes=1_000_000)
    assert result.status is RunStatus.OUTPUT_LIMIT
    assert len(result.stdout) <= 1_000_000 + 256
    assert result.message == "output limit of 1000000 bytes exceeded"


def test_writing_a_1_gb_file_is_stopped_by_the_file_size_limit(run_raw: RawRun) -> None:
    result = run_raw(
        """
import errno
try:
    with open("/tmp/big", "wb") as f:
        for _ in range(1024):
            f.write(b"x" * 1024 * 1024)
except OSError as error:
    print(errno.errorcode[error.errno])
""",
        file_size_mb=16,
    )
    assert result.status is RunStatus.OK
    assert result.stdout.strip() == b"EFBIG"


def test_a_nonzero_exit_is_a_crash_with_its_status(run_raw: RawRun) -> None:
    result = run_raw("raise SystemExit(3)")
    assert result.status is RunStatus.CRASHED
    assert result.exit_code == 3
    assert result.message == "the sandboxed program exited with status 3"


def test_a_fatal_signal_is_a_crash_naming_the_signal(run_raw: RawRun) -> None:
    result = run_raw("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert result.status is RunStatus.CRASHED
    assert "SIGSEGV" in result.message


def test_a_detached_process_does_not_outlive_its_job(run_raw: RawRun) -> None:
    result = run_raw(
        """
import subprocess
subprocess.Popen(["python", "-c", "import time; time.sleep(1000)"], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("detached")
"""
    )
    assert result.status is RunStatus.OK
    assert result.stdout == b"detached\n"
    # run_raw's teardown asserts that the sleep is gone and the job's cgroup removed


def test_the_next_job_runs_normally_after_a_killed_one(run_raw: RawRun) -> None:
    assert run_raw("while True:\n    pass", wall_seconds=1).status is RunStatus.TIMEOUT
    result = run_raw("import torch\nprint(torch.ones(2).sum().item())")
    assert result.status is RunStatus.OK
    assert result.stdout == b"2.0\n"


# --- runtime facts, devices, infrastructure faults ------------------------------------


def test_runtime_key_names_the_backend_torch_and_device() -> None:
    key = build_backend(SandboxConfig()).runtime_key("cpu")
    backend, torch_version, device = key.split(" ")
    assert backend == "bubblewrap"
    assert torch_version.startswith("torch-2.")
    assert device == "cpu"


def test_a_cuda_job_without_a_usable_gpu_runs_on_cpu_and_says_so(run_raw: RawRun) -> None:
    if Path("/dev/nvidia0").exists():
        pytest.skip("this worker has a GPU")
    result = run_raw(
        "import os, torch\nprint(os.environ['GRADLAB_DEVICE'], torch.cuda.is_available())",
        device="cuda",
        wall_seconds=60,  # a cold torch import and exit: over 20 s on a loaded 2-core host
    )
    assert result.status is RunStatus.OK
    assert result.stdout == b"cpu False\n"
    assert "ran on CPU" in result.message
    assert build_backend(SandboxConfig()).runtime_key("cuda").endswith(" cpu")


def test_a_missing_bwrap_is_an_infrastructure_error() -> None:
    sandbox = BubblewrapSandbox(bwrap="/nonexistent/bwrap")
    with pytest.raises(InfrastructureError, match="not installed"):
        sandbox.run(SandboxRequest("test-missing", raw_job("print(1)")))


def test_a_missing_runtime_is_an_infrastructure_error(tmp_path: Path) -> None:
    sandbox = BubblewrapSandbox(runtime_dir=tmp_path / "nothing")
    with pytest.raises(InfrastructureError, match="runtime python"):
        sandbox.run(SandboxRequest("test-missing", raw_job("print(1)")))


def private_folder(tmp_path: Path) -> Path:
    """A folder like root's home: mode 0700, and a space in its name."""
    if os.geteuid() != 0:
        pytest.skip("needs a root worker (the folder must be unreadable to the sandbox user)")
    hidden = tmp_path / "private home"
    hidden.mkdir(mode=0o700)
    return hidden


def test_a_harness_in_a_private_folder_with_a_space_in_its_path_still_runs(
    tmp_path: Path,
) -> None:
    harness = private_folder(tmp_path) / "my checkout" / "harness"
    shutil.copytree(RAW_HARNESS, harness)
    sandbox = BubblewrapSandbox(harness_dir=harness)
    prefix = job_prefix()
    code = "print(open('/proc/self/mountinfo').read())"
    result = sandbox.run(SandboxRequest(f"{prefix}-0", raw_job(code)))
    assert result.status is RunStatus.OK, result.message
    assert b" /harness " in result.stdout
    assert str(tmp_path).encode() not in result.stdout  # the published copy, not the checkout
    assert_no_leftovers(prefix)


def test_bwrap_failing_to_set_up_is_an_infrastructure_error(tmp_path: Path) -> None:
    runtime = private_folder(tmp_path) / "runtime"  # a runtime the sandbox user cannot read
    (runtime / "bin").mkdir(parents=True)
    (runtime / "lib").mkdir()
    shutil.copy(DEFAULT_RUNTIME_DIR / "pyvenv.cfg", runtime / "pyvenv.cfg")
    (runtime / "bin" / "python").symlink_to(os.path.realpath(DEFAULT_RUNTIME_DIR / "bin/python"))
    sandbox = BubblewrapSandbox(runtime_dir=runtime, harness_dir=RAW_HARNESS)
    prefix = job_prefix()
    with pytest.raises(InfrastructureError, match="bubblewrap could not set up the sandbox"):
        sandbox.run(SandboxRequest(f"{prefix}-0", raw_job("print(1)")))
    assert_no_leftovers(prefix)


def readable_copy_for_another_user() -> Path:
    """The worker's code for a user that cannot read the checkout (a clone under a 0700
    home): the grader package and the sandbox helpers, copied to a world-readable folder."""
    folder = Path(tempfile.mkdtemp(prefix="gradlab-nonroot-worker-"))
    folder.chmod(0o755)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "grader", folder / "grader", ignore=skip)
    shutil.copytree(RAW_HARNESS, folder / "raw_harness", ignore=skip)
    shutil.copy(Path(__file__).with_name("sandbox_helpers.py"), folder)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


def test_a_worker_that_is_not_root_runs_bwrap_as_itself_with_rlimits() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to start the worker as another user")
    duration = f"2.{secrets.randbelow(10**6):06d}"
    code = textwrap.dedent(
        f"""
        import json
        from grader.protocol import Limits, SandboxRequest
        from grader.sandbox.bubblewrap import BubblewrapSandbox
        from sandbox_helpers import RAW_HARNESS, raw_job
        sandbox = BubblewrapSandbox(harness_dir=RAW_HARNESS)
        def run(code, **limits):
            result = sandbox.run(SandboxRequest("test-nonroot", raw_job(code),
                                                Limits().replace(**limits)))
            return [result.status.value, result.stdout.decode()[-200:]]
        print(json.dumps({{
            "sleep": run({_sleeper(duration)!r}),
            "memory": run("b = bytearray(3 * 1024**3); print('allocated')"),
            "loop": run("while True: pass", wall_seconds=2),
        }}))
        """
    )
    copy = readable_copy_for_another_user()
    try:
        # nobody runs the published runtime's interpreter on its own copy of the code: the
        # checkout and the platform's virtual environment may sit under a 0700 home.
        env = {"PATH": "/usr/bin:/bin"}
        worker = subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--",
             str(DEFAULT_RUNTIME_DIR / "bin" / "python"), "-I", "-c",
             f"import sys; sys.path[:0] = [{str(copy)!r}]\n{code}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd="/",
        )  # fmt: skip
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            done = pool.submit(worker.communicate, timeout=120)
            uids = _host_uids_of(_sleeper_cmdline(duration), until=done)
            stdout, stderr = done.result()
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    assert worker.returncode == 0, stderr[-2000:]
    seen = json.loads(stdout.splitlines()[-1])
    assert uids == {pwd.getpwnam("nobody").pw_uid}
    assert seen["sleep"][0] == "ok"
    assert seen["memory"][0] == "crashed" and "allocated" not in seen["memory"][1]
    assert seen["loop"][0] == "timeout"
