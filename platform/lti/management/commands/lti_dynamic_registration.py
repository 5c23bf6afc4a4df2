"""Prints a Dynamic Registration URL to paste into an LMS (Moodle: Site administration →
Plugins → External tool → Manage tools → "Tool URL" → Add LTI Advantage; Canvas: Admin →
Developer Keys → + LTI Registration → Dynamic Registration). It works once, for
GRADLAB_LTI_REGISTRATION_URL_HOURS."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.urls import reverse

from lti.registration import registration_token_issue


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--base-url",
            required=True,
            help="gradlab's public URL, e.g. https://gradlab.example.org",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = reverse("lti:register", kwargs={"token": registration_token_issue()})
        hours = settings.GRADLAB_LTI_REGISTRATION_URL_HOURS
        self.stdout.write(f"{options['base_url'].rstrip('/')}{path}")
        self.stdout.write(f"(works once, for {hours:g} hours)")
