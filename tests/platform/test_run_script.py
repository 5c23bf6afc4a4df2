"""`scripts/run.sh` (what `make run` runs after setup): the README's "done when", end to
end. It comes up on PORT, prints demo tokens that work with curl-like requests, grades a
right and a wrong chain-rule solution, serves its pages to Chromium on its embedded SQLite
database, and stops everything it started on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings
from gradlab_fixtures import MODULE_SLUG, ROOT, wait_for
from platform_helpers import E2E_SLUG, package_file

pytestmark = [pytest.mark.worker, pytest.mark.sandbox]

START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 30.0
TOKEN_LINE = re.compile(r"username=demo-learner\s+password=\S+\s+token=([0-9a-f]{40})")
ACCOUNT_LINE = re.compile(r"username=(demo-\w+)\s+password=(\S+)\s+token=([0-9a-f]{40})")
GROUP_LINE = re.compile(r"started (\w+) \(process group (\d+)\)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _process_group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Running:
    def __init__(self, process: subprocess.Popen[bytes], log: Path, port: int) -> None:
        self.process, self.log, self.port = process, log, port

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def running_platform(tmp_path: Path) -> Iterator[Running]:
    port = _free_port()
    queue = f"grading-run-{os.getpid()}-{port}"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")
    }
    env.update(
        PORT=str(port),
        DATABASE_URL=f"sqlite:///{tmp_path / 'gradlab.sqlite3'}",
        REDIS_URL=settings.CELERY_BROKER_URL,
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        GRADLAB_VAR_DIR=str(tmp_path / "var"),
        GRADLAB_QUEUE_CPU=queue,
        GRADLAB_QUEUE_GPU=f"{queue}-gpu",
        GRADLAB_QUEUE_AUTHORING=f"{queue}-authoring",
        WEB_WORKERS="1",
    )
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["bash", "scripts/run.sh"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    running = Running(process, log, port)
    try:
        wait_for(
            lambda: "gradlab is running" in running.output() or process.poll() is not None,
            timeout=START_TIMEOUT_S, what="run.sh to come up",
        )  # fmt: skip
        assert process.poll() is None, running.output()
        yield running
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            for _, pgid in GROUP_LINE.findall(running.output()):
                if _process_group_alive(int(pgid)):
                    os.killpg(int(pgid), signal.SIGKILL)


def _grade(running: Running, token: str, code: str) -> dict[str, Any]:
    headers = {"Authorization": f"Token {token}"}
    created = requests.post(
        running.url("/api/v1/submissions/"), json={"exercise": E2E_SLUG, "code": code},
        headers=headers, timeout=30,
    )  # fmt: skip
    assert created.status_code == 201, created.text

    def finished() -> dict[str, Any] | None:
        body = requests.get(created.json()["url"], headers=headers, timeout=30).json()
        return body if body["status"] in ("graded", "failed") else None

    return wait_for(finished, what="grading through run.sh's worker")


def _signed_in(running: Running, username: str, password: str) -> requests.Session:
    session = requests.Session()
    login = running.url("/accounts/login/")
    session.get(login, timeout=30).raise_for_status()
    form = {"username": username, "password": password,
            "csrfmiddlewaretoken": session.cookies["csrftoken"]}  # fmt: skip
    assert session.post(login, data=form, timeout=30).status_code == 200
    return session


def _pages_and_mastery_answer(running: Running, wrong_id: int) -> None:
    """On run.sh's SQLite: the learner's home and module page, the instructor's page and
    both mastery endpoints answer, from the latest submission (the wrong one)."""
    accounts = {name: (password, token) for name, password, token in
                ACCOUNT_LINE.findall(running.output())}  # fmt: skip
    learner = _signed_in(running, "demo-learner", accounts["demo-learner"][0])
    instructor = _signed_in(running, "demo-instructor", accounts["demo-instructor"][0])
    home = learner.get(running.url("/"), timeout=30)
    module = learner.get(running.url(f"/modules/{MODULE_SLUG}/"), timeout=30)
    teach = instructor.get(running.url(f"/teach/{MODULE_SLUG}/"), timeout=30)
    api = running.url(f"/api/v1/modules/{MODULE_SLUG}/mastery/")
    own = requests.get(api, headers=_token(accounts["demo-learner"][1]), timeout=30)
    whole = requests.get(f"{api}class/", headers=_token(accounts["demo-instructor"][1]), timeout=30)

    assert [r.status_code for r in (home, module, teach, own, whole)] == [200] * 5
    failed = {f["submission"] for o in own.json()["objectives"] for f in o["failures"]}
    assert failed == {wrong_id}
    assert any(o["failures"] for o in whole.json()["objectives"])


def _pages_work_in_chromium(running: Running, new_page: Any, page_problems: Any) -> None:
    """The learner's and the instructor's story in a real browser on run.sh's SQLite: the
    module page lists the exercise, its page opens with the editor and the latest
    submission's diagnosis, the gradebook lists the learner; no console error or CSP
    violation on the way."""
    accounts = {name: password for name, password, _ in ACCOUNT_LINE.findall(running.output())}
    page = new_page()
    for username in ("demo-learner", "demo-instructor"):
        page.goto(running.url("/accounts/login/"))
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(accounts[username])
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda address: "/accounts/login/" not in address)
        if username == "demo-learner":
            module = page.goto(running.url(f"/modules/{MODULE_SLUG}/"))
            assert module is not None and module.status == 200
            page.locator(f"main a[href$='/{E2E_SLUG}/']").first.click()
            page.wait_for_selector(".code-editor")
            assert "hard-coded" in page.content()
        else:
            teach = page.goto(running.url(f"/teach/{MODULE_SLUG}/"))
            assert teach is not None and teach.status == 200
            assert page.locator("tr[data-learner=demo-learner]").count() == 1
        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url("**/accounts/login/")
    assert page_problems.errors == []


def _token(token: str) -> dict[str, str]:
    return {"Authorization": f"Token {token}"}


def test_run_script_serves_grades_and_pages_and_stops_everything_on_sigterm(
    running_platform: Running, new_page: Any, page_problems: Any
) -> None:
    output = running_platform.output()
    token = TOKEN_LINE.search(output)
    assert token, output
    groups = [int(pgid) for _, pgid in GROUP_LINE.findall(output)]
    assert {name for name, _ in GROUP_LINE.findall(output)} >= {"worker", "web"}

    right = _grade(running_platform, token.group(1), package_file(E2E_SLUG, "solution.py"))
    wrong = _grade(running_platform, token.group(1), package_file(E2E_SLUG, "wrong/hard-coded.py"))

    assert right["status"] == "graded" and right["passed"] is True
    assert right["checks"] and all(check["passed"] for check in right["checks"])
    assert wrong["status"] == "graded" and wrong["passed"] is False
    assert "hard-coded" in {check["diagnosis"] for check in wrong["checks"]}
    _pages_and_mastery_answer(running_platform, wrong["id"])
    _pages_work_in_chromium(running_platform, new_page, page_problems)

    running_platform.process.send_signal(signal.SIGTERM)
    running_platform.process.wait(timeout=STOP_TIMEOUT_S)
    time.sleep(0.5)
    assert [pgid for pgid in groups if _process_group_alive(pgid)] == []
    with pytest.raises(requests.ConnectionError):
        requests.get(running_platform.url("/api/v1/schema/"), timeout=5)
