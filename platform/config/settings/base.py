"""Settings shared by every environment. Values come only from the environment."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_secret, env_str
from grader.protocol import InfrastructureError
from grader.sandbox.config import SandboxConfig

BASE_DIR = Path(__file__).resolve().parents[3]  # the repository root
VAR_DIR = Path(env_str("GRADLAB_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_secret("SECRET_KEY")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served locally (no CDN)
    "grading",  # the bridge to grader/ (platform/grading)
    "accounts",
    "courses",
    "submissions",
    "authoring",  # drafts, validation and regrade jobs (platform/authoring)
    "api",
    "web",
    "integrations",  # course API tokens, idempotency keys, webhooks
    "lti_tool",  # django-lti: LTI registrations, deployments, keys, contexts
    "lti",  # gradlab's LTI 1.3 tool (platform/lti)
    "ops",  # heartbeats, health endpoints, startup checks (platform/ops)
    "axes",  # sign-in throttling (AXES_* below)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "ops.middleware.RefuseNulMiddleware",  # a NUL in the query string: 400, not a 500
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "lti.middleware.LmsCookiesMiddleware",  # an LMS-launched session's cookies, in its frame
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "lti.middleware.LmsFramingMiddleware",  # frame-ancestors: the registered LMSs (lti/)
    "web.middleware.ContentSecurityPolicyMiddleware",
    "web.middleware.DomainErrorPagesMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out sign-in: 429 and web/locked_out.html
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'gradlab.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", DEFAULT_DATABASE_URL),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
SQLITE_ENGINE = "django.db.backends.sqlite3"
# The web server and the worker write concurrently: take the write lock up front and wait
# for it rather than fail with "database is locked" (test settings use the same).
SQLITE_OPTIONS = {"transaction_mode": "IMMEDIATE", "timeout": 20}
if DATABASES["default"]["ENGINE"] == SQLITE_ENGINE:
    DATABASES["default"]["OPTIONS"] = dict(SQLITE_OPTIONS)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = env_str("LOGIN_URL", "/accounts/login/")
# Sign-in throttling (django-axes): after GRADLAB_LOGIN_FAILURE_LIMIT failed sign-ins for
# one account (from anywhere) or from one address (for any account), further attempts
# are refused with 429 and a page saying when to try again, for the cool-off period; a
# successful sign-in resets the account's count. The address is REMOTE_ADDR (never a
# header a client writes: behind a proxy, every client shares the proxy's count).
# Attempts are rows of the database (axes' default handler): one count for every web
# process. LTI launches and API tokens never go through it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("GRADLAB_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("GRADLAB_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "web.views.signin.locked_out"
AXES_VERBOSE = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# --- REST API -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
        "integrations.authentication.CourseTokenAuthentication",  # Bearer <course token>
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "integrations.permissions.CourseTokenScope",  # a course token: its course and scopes
    ],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],  # depth, valid Unicode
    "DEFAULT_RENDERER_CLASSES": ["api.parsers.TextSafeJSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "PAGE_SIZE": 20,
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "gradlab API",
    "DESCRIPTION": "Autograded PyTorch autograd exercises: exercises and submissions.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery (config/celery_app.py reads these with the CELERY_ namespace) -----------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = None  # results live in the database, not in the broker
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"
# Queue names are a contract (workers are started with -Q grading / grading-gpu); the
# override exists so that tests can give their own worker a private queue.
GRADLAB_QUEUE_CPU = env_str("GRADLAB_QUEUE_CPU", "grading")
GRADLAB_QUEUE_GPU = env_str("GRADLAB_QUEUE_GPU", "grading-gpu")
# Instructor jobs (validations, regrades: many sandboxes each) have a queue and a worker of
# their own, so that a flood of them never holds a worker a learner's submission waits for.
GRADLAB_QUEUE_AUTHORING = env_str("GRADLAB_QUEUE_AUTHORING", "authoring")
# Send `device = "cuda"` exercises to the GPU queue only where GPU workers consume it;
# otherwise they are graded on the CPU queue (every course exercise also runs on a CPU).
GRADLAB_GPU_QUEUE_ENABLED = env_bool("GRADLAB_GPU_QUEUE_ENABLED", False)

# --- Grading ---------------------------------------------------------------------------
GRADLAB_EXERCISES_DIR = Path(env_str("GRADLAB_EXERCISES_DIR", str(BASE_DIR / "exercises")))


def _sandbox_config() -> tuple[SandboxConfig | None, str]:
    try:
        return SandboxConfig.from_environ(os.environ), ""
    except InfrastructureError as error:
        return None, str(error)


# The sandbox backend's configuration, read from the GRADLAB_SANDBOX* variables by
# grader.sandbox.config.SandboxConfig.from_environ (the one place their names and defaults
# are written; the backends read no environment themselves). A bad value does not stop the
# web server or the worker: the grading bridge raises it (GRADLAB_SANDBOX_CONFIG_ERROR) as
# an infrastructure error of each job that needs a sandbox, retried and then shown with its
# reason. GRADLAB_SANDBOX (the backend) and GRADLAB_SANDBOX_ZYGOTE (a worker starts its
# zygote; the test settings turn it on) are settings of their own too: the bridge's
# sandbox_config() takes both from them.
GRADLAB_SANDBOX_CONFIG, GRADLAB_SANDBOX_CONFIG_ERROR = _sandbox_config()
GRADLAB_SANDBOX = GRADLAB_SANDBOX_CONFIG.backend if GRADLAB_SANDBOX_CONFIG else ""
GRADLAB_SANDBOX_ZYGOTE = bool(GRADLAB_SANDBOX_CONFIG and GRADLAB_SANDBOX_CONFIG.zygote)
GRADLAB_CACHE_DIR = Path(env_str("GRADLAB_CACHE_DIR", str(VAR_DIR / "reference-cache")))
GRADLAB_DEVICE = env_str("GRADLAB_DEVICE", "cpu")

GRADLAB_CODE_MAX_BYTES = 64 * 1024
GRADLAB_RATE_LIMIT_COUNT = env_int("GRADLAB_RATE_LIMIT_COUNT", 10)
GRADLAB_RATE_LIMIT_WINDOW_SECONDS = env_int("GRADLAB_RATE_LIMIT_WINDOW_SECONDS", 60)
# Instructor jobs (validations, regrades) per user per window; a repeat of a pending job
# of the same exercise version and kind is that job, never a new one.
GRADLAB_JOB_RATE_LIMIT_COUNT = env_int("GRADLAB_JOB_RATE_LIMIT_COUNT", 30)
GRADLAB_JOB_RATE_LIMIT_WINDOW_SECONDS = env_int("GRADLAB_JOB_RATE_LIMIT_WINDOW_SECONDS", 600)
# A grading task may run at most this long (two sandbox runs: reference + learner).
GRADLAB_TASK_SOFT_TIME_LIMIT = env_int("GRADLAB_TASK_SOFT_TIME_LIMIT", 150)
GRADLAB_TASK_TIME_LIMIT = env_int("GRADLAB_TASK_TIME_LIMIT", 180)
# A running submission whose lease expired is presumed lost (worker died): the sweep
# re-queues it. It must exceed the task's hard time limit.
GRADLAB_RUNNING_LEASE_SECONDS = env_int("GRADLAB_RUNNING_LEASE_SECONDS", 240)
# A queued submission not claimed within this time is re-sent (the broker lost it).
GRADLAB_QUEUED_LEASE_SECONDS = env_int("GRADLAB_QUEUED_LEASE_SECONDS", 300)
GRADLAB_SWEEP_INTERVAL_SECONDS = env_float("GRADLAB_SWEEP_INTERVAL_SECONDS", 60.0)
# The recovery sweep (submissions and instructor jobs whose worker died) runs this often:
# a job of a dead worker is graded again within about this long. Readiness fails when
# the last sweep is older than three intervals (ops.heartbeats).
GRADLAB_RECOVERY_SWEEP_SECONDS = env_float("GRADLAB_RECOVERY_SWEEP_SECONDS", 10.0)
# Instructor jobs (validate, regrade) run many sandboxes: their own time limits, and a
# running lease above the hard limit (the same sweep re-queues a job whose worker died).
GRADLAB_JOB_SOFT_TIME_LIMIT = env_int("GRADLAB_JOB_SOFT_TIME_LIMIT", 30 * 60)
GRADLAB_JOB_TIME_LIMIT = env_int("GRADLAB_JOB_TIME_LIMIT", 31 * 60)
GRADLAB_JOB_RUNNING_LEASE_SECONDS = env_int("GRADLAB_JOB_RUNNING_LEASE_SECONDS", 35 * 60)
GRADLAB_MAX_ATTEMPTS = env_int("GRADLAB_MAX_ATTEMPTS", 4)
GRADLAB_RETRY_BACKOFF_SECONDS = env_float("GRADLAB_RETRY_BACKOFF_SECONDS", 5.0)
GRADLAB_RETRY_BACKOFF_MAX_SECONDS = env_float("GRADLAB_RETRY_BACKOFF_MAX_SECONDS", 120.0)
# Drafts pruning (courses.pruning): per exercise, the most recent drafts kept (plus every
# draft a job or a submission points at), and how often the beat schedule prunes.
GRADLAB_DRAFTS_KEPT = env_int("GRADLAB_DRAFTS_KEPT", 20)
GRADLAB_DRAFTS_PRUNE_SECONDS = env_int("GRADLAB_DRAFTS_PRUNE_SECONDS", 24 * 3600)

CELERY_TASK_SOFT_TIME_LIMIT = GRADLAB_TASK_SOFT_TIME_LIMIT
CELERY_TASK_TIME_LIMIT = GRADLAB_TASK_TIME_LIMIT
CELERY_TASK_DEFAULT_QUEUE = GRADLAB_QUEUE_CPU
CELERY_TASK_ROUTES = {
    "gradlab.grade_submission": {"queue": GRADLAB_QUEUE_CPU},
    "gradlab.sweep_submissions": {"queue": GRADLAB_QUEUE_CPU},
    "gradlab.run_exercise_job": {"queue": GRADLAB_QUEUE_AUTHORING},
    "gradlab.sweep_exercise_jobs": {"queue": GRADLAB_QUEUE_CPU},
    "gradlab.reap_sandboxes": {"queue": GRADLAB_QUEUE_CPU},
    "gradlab.prune_drafts": {"queue": GRADLAB_QUEUE_CPU},
}
CELERY_BEAT_SCHEDULE = {
    "sweep-stuck-submissions": {
        "task": "gradlab.sweep_submissions",
        "schedule": GRADLAB_RECOVERY_SWEEP_SECONDS,
        "options": {"expires": GRADLAB_RECOVERY_SWEEP_SECONDS},
    },
    "sweep-stuck-exercise-jobs": {
        "task": "gradlab.sweep_exercise_jobs",
        "schedule": GRADLAB_RECOVERY_SWEEP_SECONDS,
        "options": {"expires": GRADLAB_RECOVERY_SWEEP_SECONDS},
    },
    # Docker sandboxes of a worker that died mid-job outlive it: remove them even when no
    # new job arrives (a no-op with bubblewrap).
    "reap-expired-sandboxes": {
        "task": "gradlab.reap_sandboxes",
        "schedule": GRADLAB_SWEEP_INTERVAL_SECONDS,
        "options": {"expires": GRADLAB_SWEEP_INTERVAL_SECONDS},
    },
    "prune-old-drafts": {
        "task": "gradlab.prune_drafts",
        "schedule": GRADLAB_DRAFTS_PRUNE_SECONDS,
        "options": {"expires": GRADLAB_DRAFTS_PRUNE_SECONDS},
    },
}
# Unacknowledged messages come back after this long: longer than any retry countdown and
# at least twice the longest task time limit (ops.checks refuses less).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("GRADLAB_VISIBILITY_TIMEOUT_SECONDS", 2 * 3600)
}


# --- Integrations (platform/integrations): idempotency keys, webhooks -------------------
# An Idempotency-Key is remembered this long after its first use (then it is a new key).
GRADLAB_IDEMPOTENCY_KEY_TTL_SECONDS = env_int("GRADLAB_IDEMPOTENCY_KEY_TTL_SECONDS", 24 * 3600)
# A request still "processing" after this long is presumed dead: a retry takes its key over.
GRADLAB_IDEMPOTENCY_LOCK_SECONDS = env_int("GRADLAB_IDEMPOTENCY_LOCK_SECONDS", 60)
# Webhooks: attempts per message, first backoff (doubles, capped; under the broker's
# visibility timeout), request timeout; plain http and private addresses only for tests.
GRADLAB_WEBHOOK_MAX_ATTEMPTS = env_int("GRADLAB_WEBHOOK_MAX_ATTEMPTS", 8)
GRADLAB_WEBHOOK_BACKOFF_SECONDS = env_float("GRADLAB_WEBHOOK_BACKOFF_SECONDS", 30.0)
GRADLAB_WEBHOOK_BACKOFF_MAX_SECONDS = env_float("GRADLAB_WEBHOOK_BACKOFF_MAX_SECONDS", 1800.0)
GRADLAB_WEBHOOK_TIMEOUT_SECONDS = env_float("GRADLAB_WEBHOOK_TIMEOUT_SECONDS", 10.0)
GRADLAB_WEBHOOK_SWEEP_GRACE_SECONDS = env_float("GRADLAB_WEBHOOK_SWEEP_GRACE_SECONDS", 60.0)
GRADLAB_WEBHOOK_ALLOW_HTTP = env_bool("GRADLAB_WEBHOOK_ALLOW_HTTP", False)
GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS = env_bool("GRADLAB_WEBHOOK_ALLOW_PRIVATE_HOSTS", False)
# After a secret rotation, the old secret signs beside the new one this long.
GRADLAB_WEBHOOK_SECRET_GRACE_SECONDS = env_int("GRADLAB_WEBHOOK_SECRET_GRACE_SECONDS", 24 * 3600)
# The egress guard (integrations.egress) of every request to a URL from outside (webhooks,
# LMS services, key sets): hosts it may reach over plain http and at private or loopback
# addresses (tests, a development LMS on this machine); none in production.
GRADLAB_EGRESS_INSECURE_HOSTS = env_list("GRADLAB_EGRESS_INSECURE_HOSTS", [])
CELERY_BEAT_SCHEDULE["sweep-webhook-deliveries"] = {
    "task": "gradlab.sweep_webhooks",
    "schedule": GRADLAB_SWEEP_INTERVAL_SECONDS,
    "options": {"expires": GRADLAB_SWEEP_INTERVAL_SECONDS},
}
# LTI 1.3 (platform/lti). The OIDC state and nonce live in the cache between the login
# and the launch (which may reach another web process): a shared cache (Redis).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env_str("GRADLAB_CACHE_URL", REDIS_URL),
        "KEY_PREFIX": "gradlab",
    }
}
GRADLAB_LTI_CLOCK_SKEW_SECONDS = env_int("GRADLAB_LTI_CLOCK_SKEW_SECONDS", 60)
# A login start (anonymous) keeps its state and nonce this long, server-side, for one launch;
# at most LIMIT starts per client address in WINDOW (lti.oidc).
GRADLAB_LTI_STATE_SECONDS = env_int("GRADLAB_LTI_STATE_SECONDS", 300)
GRADLAB_LTI_LOGIN_LIMIT = env_int("GRADLAB_LTI_LOGIN_LIMIT", 30)
GRADLAB_LTI_LOGIN_WINDOW_SECONDS = env_int("GRADLAB_LTI_LOGIN_WINDOW_SECONDS", 60)
# A verified launch's claims (deep linking's second step) and its one-time link to open
# gradlab in a new window, where the LMS's frame keeps no cookie.
GRADLAB_LTI_LAUNCH_DATA_SECONDS = env_int("GRADLAB_LTI_LAUNCH_DATA_SECONDS", 7200)
GRADLAB_LTI_TICKET_SECONDS = env_int("GRADLAB_LTI_TICKET_SECONDS", 300)
# An LMS-launched session's cookies are SameSite=None; Secure and Partitioned (CHIPS) in a
# secure context, so that the LMS's frame keeps them without third-party cookies.
GRADLAB_LTI_PARTITIONED_COOKIES = env_bool("GRADLAB_LTI_PARTITIONED_COOKIES", True)
GRADLAB_LTI_NONCE_LIFETIME_SECONDS = env_int("GRADLAB_LTI_NONCE_LIFETIME_SECONDS", 24 * 3600)
GRADLAB_LTI_KEYSET_CACHE_SECONDS = env_int("GRADLAB_LTI_KEYSET_CACHE_SECONDS", 3600)
GRADLAB_LTI_KEYSET_REFETCH_SECONDS = env_int("GRADLAB_LTI_KEYSET_REFETCH_SECONDS", 10)
GRADLAB_LTI_HTTP_TIMEOUT_SECONDS = env_float("GRADLAB_LTI_HTTP_TIMEOUT_SECONDS", 10.0)
# A new tool key is published this long before it signs; the old one stays this much longer.
GRADLAB_LTI_KEY_PUBLISH_SECONDS = env_int("GRADLAB_LTI_KEY_PUBLISH_SECONDS", 24 * 3600)
GRADLAB_LTI_KEY_RETIRE_SECONDS = env_int("GRADLAB_LTI_KEY_RETIRE_SECONDS", 24 * 3600)
# A line item's end date (the exercise's due date in that course) is re-read this often.
GRADLAB_LTI_LINEITEM_REFRESH_SECONDS = env_int("GRADLAB_LTI_LINEITEM_REFRESH_SECONDS", 3600)
GRADLAB_LTI_MAX_ATTEMPTS = env_int("GRADLAB_LTI_MAX_ATTEMPTS", 8)
GRADLAB_LTI_BACKOFF_SECONDS = env_float("GRADLAB_LTI_BACKOFF_SECONDS", 30.0)
GRADLAB_LTI_BACKOFF_MAX_SECONDS = env_float("GRADLAB_LTI_BACKOFF_MAX_SECONDS", 1800.0)
# A score carries a comment ("gradlab submission N (late)") only when on: Canvas shows each
# as a new submission comment, Moodle as the grade's feedback.
GRADLAB_LTI_SCORE_COMMENT = env_bool("GRADLAB_LTI_SCORE_COMMENT", False)
# Addresses an LMS sends (the deep-link return URL) must be https; plain http only for
# test platforms on this machine.
GRADLAB_LTI_ALLOW_HTTP = env_bool("GRADLAB_LTI_ALLOW_HTTP", False)
# An LMS's service URLs (AGS line items and scores, NRPS rosters and their next pages) are
# requested only on an origin of its registration (issuer, login, token and key set URLs)
# or on one given here as ISSUER=ORIGIN (Canvas: the school's origin is not its issuer's).
GRADLAB_LTI_SERVICE_ORIGINS = env_list("GRADLAB_LTI_SERVICE_ORIGINS", [])
# A deployment id that a registered platform launches with for the first time is recorded
# (lti.deployments) unless this is off; its courses still need a binding to open anything.
GRADLAB_LTI_ACCEPT_NEW_DEPLOYMENTS = env_bool("GRADLAB_LTI_ACCEPT_NEW_DEPLOYMENTS", True)
# A Dynamic Registration URL (`manage.py lti_register --dynamic`) works this long, once.
GRADLAB_LTI_REGISTRATION_URL_HOURS = env_float("GRADLAB_LTI_REGISTRATION_URL_HOURS", 72.0)
# The tool's signing key is replaced this often, by the scheduler (lti.keys.keys_rotate_if_due).
GRADLAB_LTI_KEY_ROTATE_SECONDS = env_int("GRADLAB_LTI_KEY_ROTATE_SECONDS", 30 * 24 * 3600)
# Origins allowed to frame every page, beyond the registered LMSs' own (lti.middleware). The
# launch is a cross-site POST and the pages then run in a third-party frame, so the session
# and CSRF cookies must be SameSite=None; Secure (HTTPS, also behind a TLS proxy that sets
# X-Forwarded-Proto: prod's SECURE_PROXY_SSL_HEADER).
GRADLAB_LTI_FRAME_ANCESTORS = env_list("GRADLAB_LTI_FRAME_ANCESTORS", [])
if GRADLAB_LTI_FRAME_ANCESTORS:
    SESSION_COOKIE_SAMESITE = "None"
    CSRF_COOKIE_SAMESITE = "None"
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
CELERY_BEAT_SCHEDULE["sweep-lti-scores"] = {
    "task": "gradlab.lti_sweep_scores",
    "schedule": GRADLAB_SWEEP_INTERVAL_SECONDS,
    "options": {"expires": GRADLAB_SWEEP_INTERVAL_SECONDS},
}
CELERY_BEAT_SCHEDULE["rotate-lti-keys"] = {
    "task": "gradlab.lti_rotate_keys",
    "schedule": 3600.0,
    "options": {"expires": 3600.0},
}
CELERY_BEAT_SCHEDULE["purge-idempotency-keys"] = {
    "task": "gradlab.purge_idempotency_keys",
    "schedule": 3600.0,
    "options": {"expires": 3600.0},
}

# --- Operations (platform/ops) ---------------------------------------------------------
# GET /metrics (Prometheus): for `Authorization: Bearer <token>`, or for a client address
# in one of these networks (REMOTE_ADDR: behind a proxy, use the token). Neither: 404.
GRADLAB_METRICS_TOKEN = env_secret("GRADLAB_METRICS_TOKEN")
GRADLAB_METRICS_ALLOWED_IPS = env_list("GRADLAB_METRICS_ALLOWED_IPS", [])

# Log lines: "plain" text or "json" (one object a line, for a log shipper). Both carry
# the ids of the job being run (common.logs: submission_id, job_id, task_id) when there is one.
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: expected 'plain' or 'json'")
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"job_context": {"()": "common.logs.JobContextFilter"}},
    "formatters": {
        "plain": {"()": "common.logs.PlainFormatter"},
        "json": {"()": "common.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["job_context"],
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # django-axes logs every successful sign-in's reset at INFO; lockouts are warnings
    "loggers": {"axes": {"level": "WARNING"}},
}
