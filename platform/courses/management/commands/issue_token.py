from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Enrollment
from accounts.services import token_issue, user_get_or_create
from common.errors import DomainError
from courses.models import Module
from courses.roster import enrollment_set_all_modules, module_member_set


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
        for role in (Enrollment.Role.LEARNER, Enrollment.Role.INSTRUCTOR):
            parser.add_argument(
                f"--{role}-of",
                action="append",
                default=[],
                metavar="MODULE",
                help=f"make the user a {role} of MODULE (repeatable)",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        exists = get_user_model().objects.filter(username=username).exists()
        if not exists and not options["create"]:
            raise CommandError(f"no user {username!r} (pass --create to create it)")
        enrolments = [(slug, Enrollment.Role.LEARNER) for slug in options["learner_of"]]
        enrolments += [(slug, Enrollment.Role.INSTRUCTOR) for slug in options["instructor_of"]]
        modules = {slug: _module(slug) for slug, _ in enrolments}  # all known, or nothing done
        user = user_get_or_create(username=username)
        if options["instructor"]:
            enrollments = enrollment_set_all_modules(user=user, role=Enrollment.Role.INSTRUCTOR)
            self.stderr.write(f"{username} is an instructor of {len(enrollments)} module(s)")
        for slug, role in enrolments:
            try:
                module_member_set(module=modules[slug], username=username, role=role)
            except DomainError as error:
                raise CommandError(f"{slug}: {error.message}") from None
            self.stderr.write(f"{username} is a {role} of {slug}")
        if not _enrolled_anywhere(user):
            self.stderr.write(
                f"warning: {username} is enrolled in no module, so sees no exercise and cannot "
                "submit: pass --learner-of MODULE or --instructor-of MODULE"
            )
        self.stdout.write(token_issue(user=user))


def _module(slug: str) -> Module:
    module = Module.objects.filter(slug=slug).first()
    if module is None:
        known = ", ".join(Module.objects.values_list("slug", flat=True)) or "none"
        raise CommandError(f"no module {slug!r} (modules: {known})")
    return module


def _enrolled_anywhere(user: AbstractBaseUser) -> bool:
    return (
        bool(getattr(user, "is_staff", False))
        or Enrollment.objects.filter(user_id=user.pk).exists()
    )
