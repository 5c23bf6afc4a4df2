"""Slow clients do not hold the site: the web server as `make run` and the platform image
start it (gunicorn with config/gunicorn_conf.py: threaded workers, a read timeout per
client socket), one worker process, real sockets. Four clients that send half a request
and then nothing hold four threads; a normal GET is still served, and the half-sent
requests are cut off after the read timeout."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from gradlab_fixtures import wait_for

ROOT = Path(__file__).resolve().parents[2]
HALF_SENT = (
    b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\nContent-Len"
)
SLOW_CLIENTS = 4


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    """gunicorn on a free port, one worker process, a 2 s read timeout."""
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'platform'}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'web.sqlite3'}",
        "GRADLAB_WEB_READ_TIMEOUT_SECONDS": "2",
    }
    command = [
        sys.executable, "-m", "gunicorn", "config.wsgi", "--config", "python:config.gunicorn_conf",
        "--bind", f"127.0.0.1:{port}", "--workers", "1",
    ]  # fmt: skip
    log = (tmp_path / "gunicorn.log").open("wb")
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(f"{base}/healthz/live"), timeout=60, what="gunicorn")
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def _half_sent(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    client = socket.create_connection((host, int(port)))
    client.sendall(HALF_SENT)
    return client


def test_four_half_sent_posts_do_not_stop_a_get_from_being_served(web_server: str) -> None:
    slow = [_half_sent(web_server) for _ in range(SLOW_CLIENTS)]
    try:
        response = requests.get(f"{web_server}/healthz/live", timeout=10)

        assert response.status_code == 200
    finally:
        for client in slow:
            client.close()


def test_a_half_sent_request_is_cut_off_after_the_read_timeout(web_server: str) -> None:
    client = _half_sent(web_server)
    client.settimeout(30)
    try:
        answer = client.recv(4096)  # the server closes (b"") or refuses it (a 4xx)
    finally:
        client.close()

    assert answer == b"" or answer.startswith(b"HTTP/1.1 4")
