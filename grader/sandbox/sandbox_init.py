"""pid 1 of a bubblewrap sandbox: starts the harness and holds nothing of the job.

Run inside the sandbox by the runtime's python (`python -I -S -c <this file's source>
<marker fd> cold|warm <harness command...>`), with bwrap's `--as-pid-1`. It

- makes itself non-dumpable, so that code in the sandbox (same uid) can neither read its
  /proc/1/fd, /proc/1/mem or /proc/1/environ nor attach to it;
- writes "1" on the marker pipe (the worker learns that bwrap's setup worked);
- forks the harness (which keeps the marker only in "warm" mode, to say "torch loaded");
- points its own stdin, stdout and stderr at /dev/null and closes every other descriptor,
  so that it holds no pipe of the job;
- reaps every orphan until the harness exits, then exits with the harness's status in the
  shell's encoding (128 + N for a death by signal N); the kernel then kills whatever is
  left in the sandbox's pid namespace.

Signals sent from inside the sandbox cannot reach it: the kernel drops every signal to a
namespace's init that has no handler, and this one installs none.
"""

import ctypes
import os
import sys

PR_SET_DUMPABLE = 4
SETUP_FAILED = 125
EXEC_FAILED = 127


def main(argv: list[str]) -> None:
    marker, mode, command = int(argv[1]), argv[2], argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        os._exit(SETUP_FAILED)
    os.write(marker, b"1")
    harness = os.fork()
    if harness == 0:
        if mode != "warm":
            os.close(marker)
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(EXEC_FAILED)
    hold_nothing()
    os._exit(wait_for(harness))


def hold_nothing() -> None:
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))


def wait_for(harness: int) -> int:
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return SETUP_FAILED
        if pid == harness:
            if os.WIFSIGNALED(status):
                return 128 + os.WTERMSIG(status)
            return os.WEXITSTATUS(status)


if __name__ == "__main__":
    main(sys.argv)
