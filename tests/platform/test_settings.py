"""Settings come from the environment; production refuses to start without a secret."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from gradlab_fixtures import ROOT

PROBE = "import django; django.setup(); from django.conf import settings; print(repr(({expr})))"


def _settings(module: str, expr: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The settings a fresh interpreter reads (about 1.3 s of CPU: a test using this is
    marked `processes`, which the fast lane leaves out, tests/lanes.py)."""
    ours = ("SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL", "CELERY_", "ALLOWED_HOSTS")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
    clean.update(PYTHONPATH=f"{ROOT / 'platform'}:{ROOT}", DJANGO_SETTINGS_MODULE=module, **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE.format(expr=expr)],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.processes
def test_production_without_secret_key_fails_at_start_with_a_clear_message() -> None:
    result = _settings("config.settings.prod", "settings.DEBUG")

    assert result.returncode != 0
    assert "SECRET_KEY is not set and DEBUG is off" in result.stderr


@pytest.mark.processes
def test_production_reads_the_secret_key_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("from-a-file-0123456789\n")

    result = _settings("config.settings.prod", "settings.SECRET_KEY", SECRET_KEY_FILE=str(secret))

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "'from-a-file-0123456789'"


@pytest.mark.processes
def test_dev_defaults_to_sqlite_in_var_and_debug_on() -> None:
    result = _settings(
        "config.settings.dev",
        "settings.DEBUG, settings.DATABASES['default']['ENGINE'], "
        "settings.DATABASES['default']['NAME']",
        DATABASE_URL="",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"(True, 'django.db.backends.sqlite3', '{ROOT / 'var' / 'gradlab.sqlite3'}')"
    )


@pytest.mark.processes
def test_tests_on_sqlite_use_a_file_beside_the_given_one_with_make_runs_write_lock(
    tmp_path: Path,
) -> None:
    database = tmp_path / "gradlab.sqlite3"
    result = _settings(
        "config.settings.test",
        "settings.DATABASES['default']['TEST'], settings.DATABASES['default']['OPTIONS']",
        DATABASE_URL=f"sqlite:///{database}",
    )
    run = _settings(
        "config.settings.dev", "settings.DATABASES['default']['OPTIONS']", DATABASE_URL=""
    )

    assert result.returncode == 0 and run.returncode == 0, result.stderr + run.stderr
    test_database, options = ast.literal_eval(result.stdout)
    assert test_database["NAME"] == str(tmp_path / "test_gradlab.sqlite3")
    assert options == ast.literal_eval(run.stdout)
    assert options == {"transaction_mode": "IMMEDIATE", "timeout": 20}


@pytest.mark.processes
def test_database_redis_and_hosts_come_from_the_environment() -> None:
    result = _settings(
        "config.settings.prod",
        "settings.DATABASES['default']['NAME'], settings.CELERY_BROKER_URL, settings.ALLOWED_HOSTS",
        SECRET_KEY="k" * 50,
        DATABASE_URL="postgres://u:p@db.example:5433/gl",
        REDIS_URL="redis://broker.example:6379/3",
        ALLOWED_HOSTS="gradlab.example, api.gradlab.example",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "('gl', 'redis://broker.example:6379/3', ['gradlab.example', 'api.gradlab.example'])"
    )


@pytest.mark.processes
def test_dev_with_debug_off_also_requires_a_secret_key() -> None:
    result = _settings("config.settings.dev", "settings.DEBUG", DEBUG="0")

    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_a_malformed_boolean_is_rejected_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from config.env import env_bool

    monkeypatch.setenv("DEBUG", "maybe")

    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe'"):
        env_bool("DEBUG")


def test_celery_is_json_only_with_late_acks_and_prefetch_one() -> None:
    from config.celery_app import app

    conf = app.conf
    assert conf.accept_content == ["json"] and conf.task_serializer == "json"
    assert conf.task_acks_late is True and conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_time_limit > conf.task_soft_time_limit > 60
    assert conf.beat_schedule["sweep-stuck-submissions"]["task"] == "gradlab.sweep_submissions"
