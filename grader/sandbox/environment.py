"""The environment every backend gives the harness: the same in bubblewrap and Docker."""

from __future__ import annotations

SANDBOX_USER_NAME = "learner"  # USER/LOGNAME, for getpass.getuser() without a passwd file
SANDBOX_THREADS = "1"  # one BLAS/OpenMP thread: a job gets one CPU's worth of time


def harness_env(device: str, *, workdir: str = "/tmp") -> dict[str, str]:
    """Everything the harness sees beyond PATH/LANG: never anything of the worker's."""
    return {
        "HOME": workdir,
        "TMPDIR": workdir,
        "USER": SANDBOX_USER_NAME,
        "LOGNAME": SANDBOX_USER_NAME,
        "OMP_NUM_THREADS": SANDBOX_THREADS,
        "MKL_NUM_THREADS": SANDBOX_THREADS,
        "OPENBLAS_NUM_THREADS": SANDBOX_THREADS,
        "PYTHONDONTWRITEBYTECODE": "1",
        "GRADLAB_DEVICE": device,
    }
