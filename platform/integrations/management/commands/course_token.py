"""Creates a course API token for an instructor of the module and prints it (the only
time it is shown), or revokes one: the command-line twin of /api/v1/courses/{module}/tokens/.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import DomainError
from courses.models import Module
from integrations.tokens import SCOPES, course_token_create, course_token_revoke


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("module", help="the course module's slug")
        parser.add_argument("username", help="an instructor of the module")
        parser.add_argument("--name", default="command line")
        parser.add_argument(
            "--scope", action="append", default=[], choices=sorted(SCOPES), dest="scopes"
        )
        parser.add_argument("--revoke", type=int, metavar="TOKEN_ID")

    def handle(self, *args: Any, **options: Any) -> None:
        module = Module.objects.filter(slug=options["module"]).first()
        user = User.objects.filter(username=options["username"]).first()
        if module is None or user is None:
            raise CommandError("No such module or user.")
        try:
            if options["revoke"] is not None:
                course_token_revoke(user=user, module=module, token_id=options["revoke"])
                self.stdout.write(f"revoked token {options['revoke']}")
                return
            issued = course_token_create(
                creator=user, module=module, name=options["name"], scopes=options["scopes"]
            )
        except DomainError as error:
            raise CommandError(error.message) from None
        self.stdout.write(f"token id {issued.token.pk}, scopes {' '.join(issued.token.scopes)}")
        self.stdout.write(issued.secret)
