"""Helpers of the integration tests (imported by name: tests/ holds no packages)."""

from __future__ import annotations

from pathlib import Path

from gradlab_fixtures import MODULE_SLUG, OTHER_MODULE_SLUG
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]
COURSE = MODULE_SLUG
OTHER_COURSE = OTHER_MODULE_SLUG
COURSE_EXERCISE = "first-gradient"
OTHER_EXERCISE = "retain-grad"


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def solution(exercise: str) -> str:
    return (ROOT / "exercises" / exercise / "solution.py").read_text(encoding="utf-8")
