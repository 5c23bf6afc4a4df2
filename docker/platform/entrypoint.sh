#!/bin/sh
# The platform image's roles. Settings come from the environment (see docs/operations.md).
#   web         gunicorn on 0.0.0.0:$PORT (static files served by whitenoise)
#   worker      Celery worker for the CPU queue `grading`
#   worker-authoring  Celery worker for instructors' jobs, queue `authoring`
#   worker-gpu  Celery worker for the GPU queue `grading-gpu` (GRADLAB_DEVICE=cuda)
#   migrate     apply database migrations, then load exercises/ into the database
#   health-web  exit 0 when gunicorn answers HTTP (any status below 500)
#   health-worker exit 0 when this container's Celery worker answers a ping
#   <other>     run as given (e.g. `python manage.py createsuperuser`)
set -eu
cd /app
case "${1:-web}" in
web)
  exec gunicorn config.wsgi:application --config python:config.gunicorn_conf \
    --bind "0.0.0.0:${PORT:-8000}" --workers "${WEB_CONCURRENCY:-2}" \
    --access-logfile - --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-127.0.0.1}"
  ;;
worker)
  exec celery -A config.celery_app worker --queues grading \
    --concurrency "${WORKER_CONCURRENCY:-2}" --loglevel INFO --without-mingle
  ;;
worker-authoring)
  exec celery -A config.celery_app worker --queues authoring \
    --concurrency "${WORKER_CONCURRENCY:-1}" --loglevel INFO --without-mingle
  ;;
worker-gpu)
  export GRADLAB_DEVICE=cuda
  exec celery -A config.celery_app worker --queues grading-gpu \
    --concurrency "${WORKER_CONCURRENCY:-1}" --loglevel INFO --without-mingle
  ;;
migrate)
  python manage.py migrate --noinput
  python manage.py load_exercises
  ;;
health-web)
  exec python - <<'PY'
import http.client, os, sys
connection = http.client.HTTPConnection("127.0.0.1", int(os.environ.get("PORT", "8000")), timeout=5)
connection.request("GET", "/", headers={"Host": "localhost"})
sys.exit(connection.getresponse().status >= 500)
PY
  ;;
health-worker)
  exec celery -A config.celery_app inspect ping --destination "celery@$(hostname)" --timeout 10
  ;;
*)
  exec "$@"
  ;;
esac
