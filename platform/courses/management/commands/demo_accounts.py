from __future__ import annotations

import secrets
from typing import Any

from django.core.management.base import BaseCommand

from accounts.models import Enrollment
from accounts.services import token_issue, user_get_or_create
from courses.roster import enrollment_set_all_modules

DEMO_ACCOUNTS = (
    ("demo-instructor", Enrollment.Role.INSTRUCTOR),
    ("demo-learner", Enrollment.Role.LEARNER),
)
PASSWORD_BYTES = 9


class Command(BaseCommand):
    help = (
        "Create (or refresh) the demo instructor and learner, enrolled in every module; "
        "print their web passwords (new on each run) and API tokens."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for username, role in DEMO_ACCOUNTS:
            password = secrets.token_urlsafe(PASSWORD_BYTES)
            user = user_get_or_create(username=username, password=password)
            enrollment_set_all_modules(user=user, role=role)
            token = token_issue(user=user)
            self.stdout.write(
                f"{role:<10}  username={username}  password={password}  token={token}"
            )
