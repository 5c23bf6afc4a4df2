"""pytest (pyproject: DJANGO_SETTINGS_MODULE). PostgreSQL (or SQLite: `make test`'s second
pass, scripts/test.sh --sqlite) and Redis are real."""

import os
from pathlib import Path

import dj_database_url
from dj_database_url import DBConfig

# A zygote shared across jobs, as a deployment that chooses throughput runs it: the test
# processes, the workers and CLI runs they start grade many jobs each, and the product
# default (a zygote generation per job, GRADLAB_ZYGOTE_JOBS=1) would import torch for every
# one. Set before base reads the sandbox's configuration, and inherited by the workers and
# CLI runs; tests/sandbox checks the default itself (test_cross_job_isolation.py).
os.environ.setdefault("GRADLAB_ZYGOTE_JOBS", "500")

from config.env import env_bool, env_int, env_list, env_str
from config.settings.base import *  # noqa: F403
from config.settings.base import SECRET_KEY, SQLITE_ENGINE, SQLITE_OPTIONS

DEBUG = False
SECRET_KEY = SECRET_KEY or "test-only-insecure-key"
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gradlab"), conn_max_age=0
    )
}


def sqlite_test_database(database: DBConfig) -> DBConfig:
    """A SQLite database tested as `make run` uses it: a file beside the given one
    (test_<name>; pytest-xdist adds _gwN), not Django's shared in-memory default, whose
    table locks fail at once where a file's writers wait, with base's write-lock options."""
    path = Path(database["NAME"])
    return {
        **database,
        "OPTIONS": dict(SQLITE_OPTIONS),
        "TEST": {"NAME": str(path.with_name(f"test_{path.name}"))},
    }


if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:
    DATABASES["default"] = sqlite_test_database(DATABASES["default"])
else:
    # Each process's sessions say whose they are (pg_stat_activity.application_name): a
    # test database that cannot be dropped at the end names the process still connected.
    DATABASES["default"].setdefault("OPTIONS", {})["application_name"] = (
        f"gradlab-test-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
    )


def per_test_process(url: str) -> str:
    """Under pytest-xdist, test process gwN uses Redis database N above the given one, so
    the processes' caches (LTI nonces, throttles) and queues never meet."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return url
    base, _, db = url.rpartition("/")
    return f"{base}/{int(db or 0) + int(worker[2:])}"


# Database 1 by default: tests never share a broker database with a `make run` (database 0).
_REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/1")
REDIS_URL = per_test_process(_REDIS_URL)
CELERY_BROKER_URL = per_test_process(env_str("CELERY_BROKER_URL", _REDIS_URL))
# Celery reads CELERY_BROKER_URL from the environment before its configuration: this
# process's own database must be there too.
os.environ["CELERY_BROKER_URL"] = CELERY_BROKER_URL
CACHES = {
    "default": {
        **CACHES["default"],  # noqa: F405
        "LOCATION": per_test_process(env_str("GRADLAB_CACHE_URL", _REDIS_URL)),
    }
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# whitenoise finds a static file when it is asked for, instead of indexing STATIC_ROOT each
# time a test client builds the middleware (after `make run`'s collectstatic: ~900 files
# per client, a third of the fast lane's CPU).
WHITENOISE_AUTOREFRESH = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
GRADLAB_RETRY_BACKOFF_SECONDS = 0.5
GRADLAB_MAX_ATTEMPTS = env_int("GRADLAB_MAX_ATTEMPTS", 3)
# As `make run`: each process's CPU jobs fork from a torch-loaded zygote (its workers' pool
# processes and a test process grading in-process alike); a test of the cold or warm path
# sets GRADLAB_SANDBOX_ZYGOTE=0 for its worker.
GRADLAB_SANDBOX_ZYGOTE = env_bool("GRADLAB_SANDBOX_ZYGOTE", True)
# The tests' LMS peers are plain-http servers on 127.0.0.1 (a test of the https rule sets
# it back).
GRADLAB_LTI_ALLOW_HTTP = env_bool("GRADLAB_LTI_ALLOW_HTTP", True)
# ... which the egress guard lets it reach (by that address, never by a name).
GRADLAB_EGRESS_INSECURE_HOSTS = env_list("GRADLAB_EGRESS_INSECURE_HOSTS", ["127.0.0.1"])
