from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Enrollment
from accounts.services import enrollment_set_all_modules, token_issue, user_get_or_create


class Command(BaseCommand):
    help = "Print USERNAME's API token (the last line of the output)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--create", action="store_true", help="create the user if missing")
        parser.add_argument(
            "--instructor",
            action="store_true",
            help="make the user an instructor of every course module",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        exists = get_user_model().objects.filter(username=username).exists()
        if not exists and not options["create"]:
            raise CommandError(f"no user {username!r} (pass --create to create it)")
        user = user_get_or_create(username=username)
        if options["instructor"]:
            enrollments = enrollment_set_all_modules(user=user, role=Enrollment.Role.INSTRUCTOR)
            self.stderr.write(f"{username} is an instructor of {len(enrollments)} module(s)")
        self.stdout.write(token_issue(user=user))
