"""Helpers of the integration tests (imported by name: tests/ holds no packages)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]
COURSE = "autograd-backprop"
OTHER_COURSE = "other-course"
COURSE_EXERCISE = "first-gradient"
OTHER_EXERCISE = "retain-grad"


def write_module(folder: Path, slug: str, exercises: tuple[str, ...]) -> Path:
    """An exercises/ folder with copies of real packages, listed in its module.toml."""
    folder.mkdir(parents=True)
    listed = ", ".join(f'"{name}"' for name in exercises)
    (folder / "module.toml").write_text(
        f'slug = "{slug}"\ntitle = "{slug} title"\nexercises = [{listed}]\n', encoding="utf-8"
    )
    for name in exercises:
        shutil.copytree(ROOT / "exercises" / name, folder / name)
    return folder


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def solution(exercise: str) -> str:
    return (ROOT / "exercises" / exercise / "solution.py").read_text(encoding="utf-8")
