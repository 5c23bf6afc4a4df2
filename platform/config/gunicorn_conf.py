"""gunicorn's settings for `make run` (scripts/run.sh) and the platform image
(docker/platform/entrypoint.sh): `gunicorn --config python:config.gunicorn_conf`.

Slow clients: threaded workers with a read timeout per client socket
(config.web_worker), so that half-sent requests hold threads, not the site; `timeout`
restarts a worker whose main loop stops answering. The number of processes stays on the
command line (WEB_WORKERS, WEB_CONCURRENCY)."""

from __future__ import annotations

from config.env import env_int

worker_class = "config.web_worker.ReadTimeoutThreadWorker"
threads = env_int("WEB_THREADS", 8)
timeout = env_int("GUNICORN_TIMEOUT", 60)
keepalive = 5
