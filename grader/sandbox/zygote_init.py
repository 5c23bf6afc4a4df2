"""The zygote: a torch-loaded process inside a sandbox (bubblewrap, or a Docker container)
that forks one freshly isolated sandbox per job (grader/sandbox/zygote.py starts it and
talks to it).

Run inside bwrap (`python -I -B -c <this file's source> <control fd> <filter fd>`, with
`--as-pid-1`, as the unprivileged sandbox user, under the zygote seccomp filter: the job
filter plus unshare and mount), or as the init of a long-lived Docker container
(`... <control socket path>`, under the same policy as a Docker seccomp profile: it
connects, and the worker's first message carries the job filter's descriptor). At start
it reads the job filter (classic BPF, from the worker) and makes itself non-dumpable;
imports numpy, torch and the harness's modules; seeds every generator and runs one
autograd pass (lazy initialisations, done once); checks that it still has a single
thread; compiles /harness/main.py; collects and freezes its heap (`gc.freeze()`: forked
children then share its pages); maps its anonymous memory with huge pages where the
kernel can (`use_huge_pages`: each of a job's forks then copies a page table entry per
2 MiB instead of per 4 KiB, and each exit frees as many); says "R" on the control
socket. It never runs nor reads job code, input or output: per job it receives, on the
control socket (SOCK_SEQPACKET), one JSON header from the worker (the job's rlimits and
/tmp size) and four descriptors (the job's link to the worker, stdin's read end,
stdout's and stderr's write ends), forks, and closes its copies.

The fork, the job's *keeper*, isolates itself before any job data is read (the worker
may fork it ahead of its job: its harness then waits on stdin until the job comes):

    keeper   setsid; the four descriptors at 0-3 and every other one closed (after a
             gc.collect(): a later collection could close a reused number); says "H" on
             the link (the worker learns its host pid from SCM_CREDENTIALS and moves it
             into the job's cgroups meanwhile); unshares user, mount, pid, ipc, net and
             uts namespaces (uid and gid mapped to themselves, setgroups denied); makes
             / private, mounts a fresh size-capped /tmp and a fresh read-only /dev/shm
             and /dev/mqueue (where there is one: a Docker container's, mode 1777,
             would be every job's; the job's own POSIX queues and SysV IPC are its
             ipc namespace's); sets the rlimits; waits for "J" (it is then in the
             job's cgroups, which every process of the job inherits); forks the job's
             init; holds only the link; says "1" when the init reports its set-up
             done, then "S" and the init's exit status (4 bytes, big endian) when it
             ends.
    init     pid 1 of the new pid namespace: mounts a fresh /proc; forbids further user
             namespaces (user.max_user_namespaces = 0 in its namespace); drops every
             capability (bounding, ambient, effective, permitted, inheritable); sets
             no-new-privs and non-dumpable; loads the job seccomp filter (the same one
             a cold sandbox gets: no unshare, mount, ptrace...); forks the harness;
             then, like sandbox_init.py, holds nothing and reaps until the harness exits.
    harness  pid 2: RNGs reseeded (Python's from the kernel, numpy's too, torch's to its
             fresh-interpreter default), then /harness/main.py runs as `__main__`, on
             fds 0-2, exactly as in a cold sandbox (trusted parent, learner child).

The filter stack keeps unshare and mount away from the job: the zygote's filter allows
them, the job's (loaded on top, by init) refuses them, and the strictest answer wins.
"""

import builtins
import contextlib
import ctypes
import gc
import json
import os
import random
import resource
import select
import socket
import struct
import sys
from types import CodeType

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
CAPABILITY_VERSION_3 = 0x20080522
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REC, MS_PRIVATE = 0x4000, 1 << 18
MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_COLLAPSE = 14, 15, 25
HUGE_PAGE = 2 << 20
SHM_BYTES = 4096  # read-only, as in a cold sandbox (its /dev is read-only)
SEALED = ("/dev/shm", "/dev/mqueue")  # each an empty read-only tmpfs per job, where it exists

HARNESS_DIR = "/harness"
HARNESS_MAIN = f"{HARNESS_DIR}/main.py"
WORKDIR = "/tmp"
MAX_HEADER = 4096
MAX_FDS = 4
LINK_FD = 3  # the keeper's link to the worker
SETUP_FAILED = 125
REAP_EVERY_S = 1.0
TORCH_DEFAULT_SEED = 67280421310721  # a fresh interpreter's torch.initial_seed()

libc = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]  # fmt: skip


def check(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


# --- the zygote ---------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    control, program = open_control(argv[1:])
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    probe_isolation()
    harness = preload()
    gc.collect()
    gc.freeze()
    use_huge_pages()
    control.sendall(b"R")
    while True:
        reap()
        readable, _, _ = select.select([control], [], [], REAP_EVERY_S)
        if not readable:
            continue
        header, fds = receive(control)
        if header is None:
            os._exit(0)  # the worker is gone
        if len(fds) != MAX_FDS:
            close_all(fds)
            continue
        pid = os.fork()
        if pid == 0:
            keeper(control, header, fds, program, harness)
        close_all(fds)


def open_control(args: list[str]) -> tuple[socket.socket, bytes]:
    """The control socket and the job filter: inherited descriptors (bubblewrap), or a
    socket to connect to whose first message carries the filter's descriptor (Docker)."""
    if args[0].isdigit():
        return socket.socket(fileno=int(args[0])), read_all(int(args[1]))
    null = os.open("/dev/null", os.O_RDWR)  # stdout too: only stderr goes to the logs
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    control.connect(args[0])
    _, fds, _, _ = socket.recv_fds(control, 16, MAX_FDS)
    if len(fds) != 1:
        raise RuntimeError(f"expected the job filter's descriptor, got {len(fds)}")
    return control, read_all(fds[0])


def probe_isolation() -> None:
    """Makes one job's namespaces and mounts in a throwaway child, so that a zygote that
    cannot (a seccomp or AppArmor profile refusing them) fails at start, not per job."""
    pid = os.fork()
    if pid == 0:
        status = SETUP_FAILED
        try:
            isolate({"tmpfs_bytes": 1 << 20, "rlimits": []})
            init = os.fork()
            if init == 0:
                code = 0
                try:
                    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
                except BaseException as error:
                    os.write(2, f"gradlab zygote: cannot mount a job's /proc: {error}\n".encode())
                    code = SETUP_FAILED
                os._exit(code)
            status = wait_for(init)
        except BaseException as error:
            os.write(2, f"gradlab zygote: cannot isolate a job: {error}\n".encode())
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise RuntimeError("the zygote cannot make a job's namespaces and mounts (see above)")


def read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return data


def preload() -> CodeType:
    """Imports what every job needs; returns main.py compiled (run per job)."""
    import numpy  # noqa: F401
    import torch  # noqa: F401

    if HARNESS_DIR not in sys.path:
        sys.path.insert(0, HARNESS_DIR)
    for name in sorted(os.listdir(HARNESS_DIR)):
        if name.endswith(".py") and name != "main.py":
            __import__(name[:-3])
    with open(HARNESS_MAIN, encoding="utf-8") as source:
        main_source = source.read()
    for name in imported_by(main_source):  # what main.py imports (termios...): once here
        with contextlib.suppress(ImportError):
            __import__(name)
    warm_up()
    return compile(main_source, HARNESS_MAIN, "exec")


def imported_by(source: str) -> list[str]:
    """The modules a source's top-level `import` statements name."""
    import ast

    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def warm_up() -> None:
    """Runs once what every job runs first (seeding, a first autograd pass), so that the
    lazy imports and initialisations behind it are shared instead of redone per job. It
    leaves every generator as a fresh interpreter has it (reseed() runs again per job)
    and must leave the zygote single-threaded: forking a threaded process is unsafe."""
    import torch

    reseed()
    # as the harness's runner.warm_up_autograd(): a backward with an explicit gradient
    # imports torch's symbolic shapes and sympy (0.6 s), once here for every job
    leaf = torch.ones(2, requires_grad=True)
    (leaf * leaf).sum().backward()
    (leaf * leaf).backward(torch.ones(2))
    torch.autograd.grad((leaf * leaf).sum(), leaf, grad_outputs=torch.tensor(1.0))
    repr(leaf.grad)  # printing a tensor imports torch's schema check mode (some 4 ms)
    del leaf
    runner = sys.modules.get("runner")  # the harness's, preloaded: warmed, it skips this per job
    harness_warm_up = getattr(runner, "warm_up_autograd", None)
    if callable(harness_warm_up):
        harness_warm_up()
    reseed()
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise RuntimeError(f"the zygote runs {threads} threads after its imports: not forking")


def use_huge_pages() -> None:
    """Collapses the zygote's private anonymous memory (the heap, torch's and numpy's
    buffers: some 150 MB) into transparent huge pages, in place (MADV_COLLAPSE, Linux
    6.1): forking and exiting (four of each per job) then walk a few hundred huge page
    entries instead of tens of thousands of small ones. Memory new faults bring in stays
    small (MADV_NOHUGEPAGE: a job's heap does not grow by 2 MiB at a time). A kernel that
    cannot (huge pages off, an older kernel) refuses with an error: then nothing changes."""
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with open("/proc/self/maps", encoding="ascii") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        if fields[1] != "rw-p" or (len(fields) > 5 and fields[5] != "[heap]"):
            continue  # file mappings are not copied by fork; stacks and vdso are named
        low, high = (int(address, 16) for address in fields[0].split("-"))
        start, end = -(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE
        if end > start and libc.madvise(start, end - start, MADV_HUGEPAGE) == 0:
            libc.madvise(start, end - start, MADV_COLLAPSE)
            libc.madvise(start, end - start, MADV_NOHUGEPAGE)


def receive(control: socket.socket) -> tuple[dict | None, list[int]]:
    space = socket.CMSG_SPACE(MAX_FDS * 4)
    message, ancillary, _, _ = control.recvmsg(MAX_HEADER, space)
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % 4
            fds += list(struct.unpack(f"{usable // 4}i", data[:usable]))
    if not message:
        close_all(fds)
        return None, []
    try:
        header = json.loads(message)
    except ValueError:
        header = {}
    return (header if isinstance(header, dict) else {}), fds


def close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# --- one job: the keeper ------------------------------------------------------------------


def keeper(
    control: socket.socket, header: dict, fds: list[int], program: bytes, code: CodeType
) -> None:
    status = SETUP_FAILED
    try:
        os.close(control.detach())
        os.setsid()
        place(fds)
        say(b"H")
        isolate(header)  # meanwhile, the worker moves this process into the job's cgroups
        if os.read(LINK_FD, 1) != b"J":
            os._exit(SETUP_FAILED)
        marker_read, marker_write = os.pipe()
        init = os.fork()
        if init == 0:
            os.close(LINK_FD)
            os.close(marker_read)
            job_init(marker_write, program, code)
        os.close(marker_write)
        hold_only_the_link()
        if os.read(marker_read, 1) == b"1":
            say(b"1")
        os.close(marker_read)
        status = wait_for(init)
    except BaseException as error:  # reported, never raised into the zygote
        with contextlib.suppress(OSError):
            os.write(2, f"gradlab zygote: job set-up failed: {error}\n".encode())
    try:
        say(b"S" + struct.pack("!i", status))
    finally:
        os._exit(0)


def place(fds: list[int]) -> None:
    """The link at 3, the job's stdin, stdout, stderr at 0-2; nothing else open."""
    link, stdin, stdout, stderr = fds
    moved = [os.dup(fd) for fd in (stdin, stdout, stderr, link)]
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    gc.collect()  # before closing: a collection after it could close a reused number
    os.closerange(LINK_FD + 1, os.sysconf("SC_OPEN_MAX"))


def say(message: bytes) -> None:
    os.write(LINK_FD, message)


def isolate(header: dict) -> None:
    """Fresh namespaces, /tmp, /dev/shm and /dev/mqueue, and the job's rlimits."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(NAMESPACES), "unshare")
    # Its own /proc files are root's while it is non-dumpable (no job code can see this
    # process: the job lives in the new pid namespace, below it).
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", f"{uid} {uid} 1")
    write("/proc/self/gid_map", f"{gid} {gid} 1")
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
    mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    size = int(header["tmpfs_bytes"])
    mount("tmpfs", WORKDIR, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    sealed_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY
    for path in SEALED:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", sealed_flags, f"size={SHM_BYTES},mode=1777")
    for number, soft, hard in header["rlimits"]:
        resource.setrlimit(int(number), (int(soft), int(hard)))


def write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as file:
        file.write(text)


def mount(source: str | None, target: str, kind: str | None, flags: int, data: str | None) -> None:
    def raw(value: str | None) -> bytes | None:
        return value.encode() if value is not None else None

    check(libc.mount(raw(source), raw(target), raw(kind), flags, raw(data)), f"mount {target}")


def hold_only_the_link() -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def wait_for(child: int) -> int:
    """The exit status of `child` in the shell's encoding, reaping every orphan met."""
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return SETUP_FAILED
        if pid == child:
            return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


# --- one job: its init (pid 1) ------------------------------------------------------------


def job_init(marker: int, program: bytes, code: CodeType) -> None:
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
        write("/proc/sys/user/max_user_namespaces", "0")
        drop_privileges()
        load_filter(program)
        os.chdir(WORKDIR)
        os.write(marker, b"1")
        os.close(marker)
    except BaseException as error:
        try:
            os.write(2, f"gradlab zygote: sandbox set-up failed: {error}\n".encode())
        finally:
            os._exit(SETUP_FAILED)
    harness = os.fork()
    if harness == 0:
        run_harness(code)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os._exit(wait_for(harness))


def drop_privileges() -> None:
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as file:
        last = int(file.read())
    for capability in range(last + 1):
        check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "prctl(PR_CAPBSET_DROP)")
    check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT)")
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def load_filter(program: bytes) -> None:
    if not program or len(program) % 8:
        raise OSError("no usable seccomp program")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _Program(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


# --- one job: the harness (pid 2) ---------------------------------------------------------


def run_harness(code: CodeType) -> None:
    status = 1
    try:
        reseed()
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.argv = [HARNESS_MAIN]
        status = 0
        try:
            names = {"__name__": "__main__", "__file__": HARNESS_MAIN, "__builtins__": builtins}
            exec(code, names)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            if not isinstance(stop.code, int | None):
                print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def reseed() -> None:
    """As a fresh interpreter would be: Python's and numpy's generators from the kernel,
    torch's at its default seed (the zygote never drew from any of them)."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:  # the CPU generator: torch.manual_seed would queue a CUDA seeding
        torch.default_generator.manual_seed(TORCH_DEFAULT_SEED)  # (the zygote has no GPU)


if __name__ == "__main__":
    main(sys.argv)
