from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from courses.services import exercises_load
from grader.spec import PackageError


class Command(BaseCommand):
    help = "Load exercises/ (module.toml order); a new version only when a package changed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--path",
            type=Path,
            default=None,
            help="exercises folder (default: GRADLAB_EXERCISES_DIR or exercises/)",
        )

        parser.add_argument("--strict", action="store_true", help="fail on any malformed package")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"] or settings.GRADLAB_EXERCISES_DIR
        try:
            result = exercises_load(exercises_dir=path, strict=options["strict"])
        except PackageError as error:
            raise CommandError(str(error)) from None
        for label, slugs in (
            ("created", result.created),
            ("new version", result.updated),
            ("unchanged", result.unchanged),
            ("not on disk yet", result.missing),
        ):
            if slugs:
                self.stdout.write(f"{label}: {', '.join(slugs)}")
        for message in result.broken:
            self.stderr.write(f"skipped, malformed: {message}")
        loaded = len(result.created) + len(result.updated) + len(result.unchanged)
        self.stdout.write(f"module {result.module}: {loaded} exercises loaded")
