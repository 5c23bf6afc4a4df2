from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from courses.pruning import drafts_prune


class Command(BaseCommand):
    help = (
        "Delete old drafts: per exercise, all but the most recent --keep, except those a job "
        "or a submission points at and the current draft (courses.pruning)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--keep",
            type=int,
            default=None,
            help="drafts kept per exercise (default: GRADLAB_DRAFTS_KEPT)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        keep = settings.GRADLAB_DRAFTS_KEPT if options["keep"] is None else options["keep"]
        if keep < 0:
            raise CommandError("--keep: at least 0")
        result = drafts_prune(keep=keep)
        self.stdout.write(
            f"deleted {result.deleted} drafts of {result.exercises} exercises "
            f"(kept the last {keep} of each, and every draft in use)"
        )
