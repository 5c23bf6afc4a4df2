"""Screenshots of the pages issue 33 is judged by, on any checkout (the current tree or an
old commit, for a before/after pair): the learner's module page, the late-work view (the
late exercise's page and its late submission, the instructor's gradebook) and a submission
held for review as the learner and as the instructor see it.

    python scripts/page_screenshots.py CHECKOUT OUTDIR [--prefix after-]

Runs the checkout as `make run` does on its embedded default (scripts/run.sh: DEBUG,
config.settings.dev, SQLite under GRADLAB_VAR_DIR, gunicorn), on a fresh SQLite file in a
temporary folder and a free port: its front-end assets (scripts/setup-browser.sh
--assets-only), then what `manage.py prepare` does but the static collection (DEBUG serves
the sources), then a seed through the checkout's own services and ORM (this file again,
with --seed, on the checkout's PYTHONPATH), then Chromium (Playwright) at 1366x768, full
page. A feature the checkout lacks is skipped when seeding; a page it cannot show is
photographed as it is (a 500, say). The server is always stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

WIDTH, HEIGHT = 1366, 768  # the viewport
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SERVER_START_LIMIT_S = 60.0
COMMAND_LIMIT_S = 600.0
PAGE_LIMIT_MS = 30_000
MAX_PAGE_HEIGHT = 4000  # pixels of a full page kept
PNG_LIMIT_BYTES = 400 * 1024  # larger: a JPEG at JPEG_QUALITY instead
JPEG_QUALITY = 70
SEED_MARKER = "PAGE-SCREENSHOTS-SEED "  # the seed's one line of JSON on stdout
FULL_MARKS = float("inf")  # a report's `scored`: every check passed

MODULE_SLUG = "autograd-backprop"
ON_TIME_SLUG = "first-gradient"  # full marks, due yesterday, made three days ago
LATE_SLUG = "chain-rule"  # due yesterday, late work does not count, full marks made today
UPCOMING_SLUG = "multiple-variables"  # due in three days, part marks
HELD_SLUG = "gradient-accumulation"  # full marks, but integrity flags: held for review
TAMPER_DETAIL = "ctypes imported, audit hook saw it"
GC_DETAIL = "gc.get_objects called"


class ScreenshotError(RuntimeError):
    """A step that cannot go on (the server did not come up, seeding failed)."""


@dataclass(frozen=True)
class Shot:
    name: str  # file name without prefix and suffix
    who: str  # "learner" | "instructor"
    url_key: str  # key of the seed's "urls"


SHOTS = (
    Shot("module-learner", "learner", "module"),
    Shot("late-exercise-learner", "learner", "late_exercise"),
    Shot("late-submission-learner", "learner", "late_submission"),
    Shot("held-learner", "learner", "held_submission"),
    Shot("gradebook-instructor", "instructor", "gradebook"),
    Shot("held-instructor", "instructor", "held_submission"),
)


# --- the seed: runs inside the checkout (python this-file --seed) -------------------------


def _fields(model: Any) -> set[str]:
    return {field.name for field in model._meta.get_fields()}


def _only_fields(model: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The values whose fields the checkout's model has (an old commit lacks some)."""
    names = _fields(model)
    return {name: value for name, value in values.items() if name in names}


def _report(version: Any, *, scored: float, flags: tuple[tuple[str, str], ...] = ()) -> Any:
    """A report on the version's own checks: each passed while `scored` of the points last."""
    from grader.protocol import CheckResult, IntegrityFlag, Report

    specs = (version.manifest or {}).get("checks") or [{"name": "all checks", "points": 10}]
    total = float(sum(spec.get("points", 1) for spec in specs))
    left, checks = scored, []
    for spec in specs:
        points = float(spec.get("points", 1))
        passed = left >= points
        left -= points if passed else 0.0
        message = "" if passed else "differs from the reference (largest difference 0.5)"
        diagnosis = "" if passed else "wrong-value"
        earned = points if passed else 0.0
        checks.append(CheckResult(spec["name"], passed, earned, points, message, diagnosis))
    score = sum(check.score for check in checks)
    return Report(
        status="graded",
        score=score,
        max_score=total,
        passed=score == total,
        checks=tuple(checks),
        integrity_flags=tuple(IntegrityFlag(kind, detail) for kind, detail in flags),
    )


def _code(exercise: Any, *, solved: bool, before: str = "") -> str:
    """The package's solution (or its starter), as a learner would have sent it."""
    version = exercise.current_version
    files = getattr(version, "files", None) or {}
    code = files.get("solution.py") if solved else getattr(version, "starter_code", "")
    code = (code or CODE).split(REFERENCE_ONLY)[0].rstrip() + "\n"
    return before + code


def _graded(learner: Any, exercise: Any, report: Any, code: str) -> Any:
    """A submission graded through the worker's own claim and final write where the checkout
    has them, else written through the ORM with the fields it has."""
    from submissions.models import Submission

    try:
        from common import jobs
        from submissions.services import SUBMISSIONS, _finish_graded, submission_create
    except ImportError:
        return _graded_by_orm(learner, exercise, report, code)
    submission, _ = submission_create(learner=learner, exercise_slug=exercise.slug, code=code)
    attempt = jobs.job_claim(SUBMISSIONS, job_id=submission.pk)
    if attempt is None or not _finish_graded(submission.pk, attempt, report):
        raise ScreenshotError(f"could not grade the seeded submission {submission.pk}")
    return Submission.objects.get(pk=submission.pk)


def _graded_by_orm(learner: Any, exercise: Any, report: Any, code: str) -> Any:
    from django.utils import timezone

    from submissions.models import CheckResult, Submission

    held = bool(report.integrity_flags)
    due_at = getattr(exercise, "due_at", None)
    values = {
        "learner": learner,
        "exercise": exercise,
        "version": exercise.current_version,
        "code": code,
        "status": "graded",
        "graded_at": timezone.now(),
        "score": None if held else report.score,
        "max_score": report.max_score,
        "passed": None if held else report.passed,
        "report": report.to_json(),
        "review": "held" if held else "",
        "late": due_at is not None and timezone.now() > due_at,
    }
    submission = Submission.objects.create(**_only_fields(Submission, values))
    for order, check in enumerate(report.checks):
        row = {**check.to_json(), "submission": submission, "order": order}
        CheckResult.objects.create(**_only_fields(CheckResult, row))
    return submission


# A solution's tail that only the grader needs (the known mistakes' values): not sent.
REFERENCE_ONLY = "# Not part of the task"
CODE = "import torch\n\nx = torch.tensor(5.0, requires_grad=True)\ny = x**2\ny.backward()\n"


def _set_schedule(exercise: Any, **values: Any) -> None:
    """Due date and late policy, where the checkout's Exercise has them."""
    from courses.models import Exercise

    present = _only_fields(Exercise, values)
    if present:
        Exercise.objects.filter(pk=exercise.pk).update(**present)
        exercise.refresh_from_db()


def _backdate(submission: Any, days: float) -> None:
    from django.utils import timezone

    from submissions.models import Submission

    made = timezone.now() - timedelta(days=days)
    values = _only_fields(Submission, {"created_at": made, "started_at": made, "graded_at": made})
    Submission.objects.filter(pk=submission.pk).update(**values)


def _url(name: str, args: list[Any], fallback: str) -> str:
    from django.urls import NoReverseMatch, reverse

    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return fallback


def _person(username: str) -> tuple[Any, str]:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username=username)
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return user, password


def seed() -> dict[str, Any]:
    """The learner's week on the module, through the checkout's demo accounts (made by the
    preparation): one exercise on time, one late (late work not counting), one due soon with
    part marks, one held for review."""
    import django

    django.setup()
    from django.utils import timezone

    from courses.models import Exercise

    learner, learner_password = _person("demo-learner")
    _, instructor_password = _person("demo-instructor")
    exercises = {e.slug: e for e in Exercise.objects.filter(module__slug=MODULE_SLUG)}
    missing = {ON_TIME_SLUG, LATE_SLUG, UPCOMING_SLUG, HELD_SLUG} - exercises.keys()
    if missing:
        raise ScreenshotError(f"module {MODULE_SLUG} lacks {', '.join(sorted(missing))}")
    now = timezone.now()
    on_time, late = exercises[ON_TIME_SLUG], exercises[LATE_SLUG]
    upcoming, held_exercise = exercises[UPCOMING_SLUG], exercises[HELD_SLUG]

    solved = _report(on_time.current_version, scored=FULL_MARKS)
    full = _graded(learner, on_time, solved, _code(on_time, solved=True))
    _backdate(full, days=3)
    some = _report(upcoming.current_version, scored=6)
    part = _graded(learner, upcoming, some, _code(upcoming, solved=False))
    _backdate(part, days=1)
    flags = (("tamper", TAMPER_DETAIL), ("tamper", TAMPER_DETAIL), ("gc", GC_DETAIL))
    flagged = _report(held_exercise.current_version, scored=FULL_MARKS, flags=flags)
    tampered = _code(held_exercise, solved=True, before="import ctypes\n")
    held = _graded(learner, held_exercise, flagged, tampered)
    _set_schedule(late, due_at=now - timedelta(days=1), late_counts=False)
    solved_late = _report(late.current_version, scored=FULL_MARKS)
    late_one = _graded(learner, late, solved_late, _code(late, solved=True))
    _set_schedule(on_time, due_at=now - timedelta(days=1))
    _set_schedule(upcoming, due_at=now + timedelta(days=3))
    _set_schedule(held_exercise, due_at=now + timedelta(days=3))

    return {
        "learner": {"username": "demo-learner", "password": learner_password},
        "instructor": {"username": "demo-instructor", "password": instructor_password},
        "urls": {
            "login": _url("web:login", [], "/accounts/login/"),
            "module": _url("web:module", [MODULE_SLUG], f"/modules/{MODULE_SLUG}/"),
            "late_exercise": _url(
                "web:exercise", [MODULE_SLUG, LATE_SLUG], f"/modules/{MODULE_SLUG}/{LATE_SLUG}/"
            ),
            "late_submission": _url(
                "web:submission", [late_one.pk], f"/submissions/{late_one.pk}/"
            ),
            "held_submission": _url("web:submission", [held.pk], f"/submissions/{held.pk}/"),
            "gradebook": _url("web:teach_module", [MODULE_SLUG], f"/teach/{MODULE_SLUG}/"),
        },
    }


# --- the driver: runs anywhere ----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_answers(url: str) -> bool:
    try:
        import redis
    except ImportError:
        return False
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def checkout_env(checkout: Path, var_dir: Path, redis_url: str, queue: str) -> dict[str, str]:
    """make run's environment (scripts/run.sh) on a private SQLite file and an unconsumed
    grading queue (the seed's submissions are graded by the seed itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADLAB_", "DATABASE_"))}
    for name in ("DJANGO_SETTINGS_MODULE", "DEBUG", "CELERY_BROKER_URL", "REDIS_URL"):
        env.pop(name, None)
    env.update(
        PYTHONPATH=f"{checkout / 'platform'}{os.pathsep}{checkout}",
        DJANGO_SETTINGS_MODULE="config.settings.dev",
        GRADLAB_VAR_DIR=str(var_dir),
        REDIS_URL=redis_url,
        CELERY_BROKER_URL=redis_url,
        GRADLAB_QUEUE_CPU=queue,
        GRADLAB_QUEUE_GPU=queue,
        GRADLAB_QUEUE_AUTHORING=queue,
    )
    return env


def run_step(what: str, command: list[str], checkout: Path, env: dict[str, str]) -> str:
    result = subprocess.run(
        command, cwd=checkout, env=env, capture_output=True, text=True, timeout=COMMAND_LIMIT_S
    )
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-3000:]
        raise ScreenshotError(f"{what} failed ({result.returncode}):\n{tail}")
    return result.stdout


def prepare(python: str, checkout: Path, env: dict[str, str]) -> None:
    """make run's preparation: its assets, then manage.py prepare's steps but collectstatic
    (config.settings.dev serves the static sources through WhiteNoise's finders)."""
    run_step("assets", ["bash", "scripts/setup-browser.sh", "--assets-only"], checkout, env)
    for command in ("migrate", "load_exercises", "demo_accounts"):
        run_step(f"manage.py {command}", [python, "manage.py", command], checkout, env)


def seed_checkout(python: str, checkout: Path, env: dict[str, str]) -> dict[str, Any]:
    out = run_step("seed", [python, str(Path(__file__).resolve()), "--seed"], checkout, env)
    for line in out.splitlines():
        if line.startswith(SEED_MARKER):
            return dict(json.loads(line[len(SEED_MARKER) :]))
    raise ScreenshotError(f"the seed printed no result:\n{out[-3000:]}")


def server_command(python: str, checkout: Path, port: int) -> list[str]:
    """gunicorn as scripts/run.sh starts it (its config file where the checkout has one)."""
    command = [python, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}"]
    if (checkout / "platform/config/gunicorn_conf.py").exists():
        command += ["--config", "python:config.gunicorn_conf"]
    return [*command, "--workers", "1", "--access-logfile", "-", "--graceful-timeout", "5"]


def wait_until_up(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_LIMIT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise ScreenshotError(f"the server exited ({server.returncode}):\n{_tail(log)}")
        try:
            urllib.request.urlopen(f"{base}/accounts/login/", timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers, whatever it says
        except OSError:
            time.sleep(0.3)
    raise ScreenshotError(
        f"the server did not answer on {base} within {SERVER_START_LIMIT_S:.0f} s:\n{_tail(log)}"
    )


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace")[-3000:] if log.exists() else ""


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stops the process group (gunicorn's workers, a private Redis)."""
    if process.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def started(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> Iterator[Any]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield process
        finally:
            stop(process)


@contextmanager
def redis_for(url: str | None, tmp: Path) -> Iterator[str]:
    """The given Redis, else make run's default if it answers, else a private one."""
    wanted = url or os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    if redis_answers(wanted):
        yield wanted
        return
    server = shutil.which("redis-server")
    if server is None:
        raise ScreenshotError(f"no Redis at {wanted} and no redis-server to start one")
    port = free_port()
    command = [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--dir", str(tmp)]
    private = f"redis://127.0.0.1:{port}/0"
    with started([*command, "--appendonly", "no"], tmp, dict(os.environ), tmp / "redis.log"):
        for _ in range(50):
            if redis_answers(private):
                break
            time.sleep(0.2)
        else:
            raise ScreenshotError("the private Redis did not start")
        yield private


def forget_queue(redis_url: str, queue: str) -> None:
    """The seed's grading messages, never consumed, are dropped."""
    import redis

    redis.Redis.from_url(redis_url).delete(queue)


def save(page: Any, target: Path) -> Path:
    """A full-page PNG, the viewport's width (what overflows sideways is cut) and at most
    MAX_PAGE_HEIGHT tall (a DEBUG error page runs to 25,000), or a JPEG where the PNG is
    over PNG_LIMIT_BYTES."""
    height = page.evaluate("document.documentElement.scrollHeight")
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": min(height, MAX_PAGE_HEIGHT)}
    png = target.with_suffix(".png")
    page.screenshot(path=str(png), full_page=True, clip=clip)
    if png.stat().st_size <= PNG_LIMIT_BYTES:
        return png
    jpeg = target.with_suffix(".jpg")
    page.screenshot(path=str(jpeg), full_page=True, clip=clip, type="jpeg", quality=JPEG_QUALITY)
    png.unlink()
    return jpeg


def sign_in(context: Any, base: str, login_url: str, person: dict[str, str]) -> Any:
    page = context.new_page()
    page.goto(base + login_url)
    page.fill("input[name=username]", person["username"])
    page.fill("input[name=password]", person["password"])
    with page.expect_navigation():
        page.locator("form:has(input[name=password]) [type=submit]").first.click()
    if page.url.rstrip("/").endswith(login_url.rstrip("/")):
        raise ScreenshotError(f"signing in as {person['username']} failed: {page.url}")
    return page


def photograph(base: str, data: dict[str, Any], out: Path, prefix: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    saved: list[Path] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for who in ("learner", "instructor"):
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                page = sign_in(context, base, data["urls"]["login"], data[who])
                for shot in (shot for shot in SHOTS if shot.who == who):
                    page.goto(base + data["urls"][shot.url_key], wait_until="load")
                    _settle(page)
                    saved.append(save(page, out / f"{prefix}{shot.name}"))
                context.close()
        finally:
            browser.close()
    return saved


def _settle(page: Any) -> None:
    """Waits for the page's own requests (editor, fonts, charts) to end, at most a while."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with suppress(PlaywrightTimeout):  # a page that keeps polling is photographed as it is
        page.wait_for_load_state("networkidle", timeout=PAGE_LIMIT_MS // 3)


def screenshots(args: argparse.Namespace) -> list[Path]:
    checkout = Path(args.checkout).resolve()
    out = Path(args.outdir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="page-screenshots-") as tmp_name:
        tmp = Path(tmp_name)
        with redis_for(args.redis_url, tmp) as redis_url:
            queue = f"page-screenshots-{secrets.token_hex(4)}"
            (tmp / "var").mkdir()
            env = checkout_env(checkout, tmp / "var", redis_url, queue)
            try:
                prepare(args.python, checkout, env)
                data = seed_checkout(args.python, checkout, env)
            finally:
                forget_queue(redis_url, queue)
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            command = server_command(args.python, checkout, port)
            with started(command, checkout, env, tmp / "server.log") as server:
                wait_until_up(base, server, tmp / "server.log")
                return photograph(base, data, out, args.prefix)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", help="the checkout to run (its repository root)")
    parser.add_argument("outdir", nargs="?", help="where the screenshots go")
    parser.add_argument("--prefix", default="", help="file name prefix, e.g. before- or after-")
    parser.add_argument("--python", default=sys.executable, help="the Python to run it with")
    parser.add_argument("--redis-url", default=None, help="default: REDIS_URL or make run's")
    parser.add_argument("--seed", action="store_true", help=argparse.SUPPRESS)  # in a checkout
    args = parser.parse_args(argv)
    if args.seed:
        print(SEED_MARKER + json.dumps(seed()))
        return 0
    if not args.checkout or not args.outdir:
        parser.error("CHECKOUT and OUTDIR are required")
    try:
        for path in screenshots(args):
            print(f"{path} ({path.stat().st_size // 1024} KB)")
    except ScreenshotError as error:
        print(f"page_screenshots: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
