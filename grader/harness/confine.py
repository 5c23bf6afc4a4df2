"""A per-child seccomp filter: the runner child cannot signal, trace or read the harness
parent, and cannot write to the protocol descriptor except through a socket send.

Installed by the runner child on itself before any learner code runs (x86-64 only;
elsewhere `install` returns False and the sandbox's own filter is all there is). The
filter is a classic BPF program built here and loaded with prctl (no library needed):

- kill, rt_sigqueueinfo, tgkill, rt_tgsigqueueinfo, pidfd_open aimed at the parent's pid,
  at 0 (the process group) or at a negative pid (a group, or -1: everything): EPERM;
- tkill, ptrace, process_vm_readv/writev, pidfd_getfd, kcmp: EPERM;
- write/pwrite/writev/sendfile/vmsplice/dup/dup2/dup3/F_DUPFD on the protocol
  descriptor, splice/tee/copy_file_range into it, dup2/dup3 over it: EPERM. Only
  send/sendto/sendmsg reach it, which need a socket object (audited: `socket.__new__`)
  or ctypes (audited), see guard.py.
"""

from __future__ import annotations

import ctypes
import platform
import struct
from collections.abc import Sequence

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_EPERM = 0x00050000 | 1
LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET = 0x06  # BPF_RET | BPF_K
NEGATIVE = 0x80000000  # the low 32 bits of a negative pid_t

# x86-64 system call numbers
KILL, TKILL, TGKILL, RT_SIGQUEUEINFO, RT_TGSIGQUEUEINFO = 62, 200, 234, 129, 297
PIDFD_OPEN, PIDFD_GETFD, PTRACE, VM_READV, VM_WRITEV, KCMP = 434, 438, 101, 310, 311, 312
WRITE, PWRITE64, WRITEV, PWRITEV, PWRITEV2, SENDFILE = 1, 18, 20, 296, 328, 40
SPLICE, TEE, VMSPLICE, COPY_FILE_RANGE = 275, 276, 278, 326
DUP, DUP2, DUP3, FCNTL = 32, 33, 292, 72
F_DUPFD, F_DUPFD_CLOEXEC = 0, 1030

# A check: (argument index, "eq" | "neg", value); a rule denies its system call when
# any of its checks holds, or always when it has none.
Check = tuple[int, str, int]
Rule = tuple[int, Sequence[Check]]


def rules(parent: int, channel_fd: int) -> list[Rule]:
    pid_checks: list[Check] = [(0, "eq", parent), (0, "eq", 0), (0, "neg", 0)]
    fd0: list[Check] = [(0, "eq", channel_fd)]
    return [
        (KILL, pid_checks),
        (RT_SIGQUEUEINFO, pid_checks),
        (TGKILL, pid_checks),
        (RT_TGSIGQUEUEINFO, pid_checks),
        (PIDFD_OPEN, pid_checks),
        *((number, ()) for number in (TKILL, PTRACE, VM_READV, VM_WRITEV, PIDFD_GETFD, KCMP)),
        *((number, fd0) for number in (WRITE, PWRITE64, WRITEV, PWRITEV, PWRITEV2)),
        *((number, fd0) for number in (SENDFILE, VMSPLICE, DUP)),
        (SPLICE, [(2, "eq", channel_fd)]),
        (TEE, [(1, "eq", channel_fd)]),
        (COPY_FILE_RANGE, [(2, "eq", channel_fd)]),
        (DUP2, [*fd0, (1, "eq", channel_fd)]),
        (DUP3, [*fd0, (1, "eq", channel_fd)]),
        (FCNTL, [(0, "eq", channel_fd)]),
    ]


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_offset(index: int) -> int:
    return 16 + 8 * index  # seccomp_data.args[index], low 32 bits (little endian)


def _rule(number: int, checks: Sequence[Check]) -> list[bytes]:
    if not checks:
        return [_insn(LD_ABS, 0, 0, 0), _insn(JEQ, 0, 1, number), _insn(RET, 0, 0, RET_EPERM)]
    body: list[bytes] = []
    count = len(checks)
    for position, (index, op, value) in enumerate(checks):
        to_deny = 2 * (count - position) - 1
        body.append(_insn(LD_ABS, 0, 0, _arg_offset(index)))
        if op == "neg":
            body.append(_insn(JGE, to_deny, 0, NEGATIVE))
        else:
            body.append(_insn(JEQ, to_deny, 0, value))
    body += [_insn(RET, 0, 0, RET_ALLOW), _insn(RET, 0, 0, RET_EPERM)]
    return [_insn(LD_ABS, 0, 0, 0), _insn(JEQ, 0, len(body), number), *body]


def program(parent: int, channel_fd: int) -> list[bytes]:
    """The filter's instructions (x86-64): arch check, x32 refused, one block per rule."""
    code = [
        _insn(LD_ABS, 0, 0, 4),
        _insn(JEQ, 1, 0, AUDIT_ARCH_X86_64),
        _insn(RET, 0, 0, RET_EPERM),
        _insn(LD_ABS, 0, 0, 0),
        _insn(JGE, 0, 1, X32_SYSCALL_BIT),
        _insn(RET, 0, 0, RET_EPERM),
    ]
    for number, checks in rules(parent, channel_fd):
        code += _rule(number, checks)
    code.append(_insn(RET, 0, 0, RET_ALLOW))
    return code


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def dumpable() -> None:
    """The child undoes the non-dumpable flag it inherited from the parent: its own /proc
    entries become readable to itself (the parent stays non-dumpable)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def install(parent: int, channel_fd: int) -> bool:
    """Loads the filter on the calling process (inherited by its children)."""
    if platform.machine() != "x86_64":
        return False
    code = program(parent, channel_fd)
    buffer = ctypes.create_string_buffer(b"".join(code))
    prog = _Program(len(code), ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
