"""Creates the next LTI signing key (published now, signing after the publish lead) and
retires keys replaced long enough ago. Run it from cron, e.g. weekly."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from lti.keys import keys_rotate


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        rotation = keys_rotate()
        self.stdout.write(f"created key {rotation.created}; retired {rotation.retired}")
