from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import NotFound
from courses.selectors import exercise_get
from submissions.services import exercise_regrade


class Command(BaseCommand):
    help = "Regrade every graded submission of an exercise against its current version."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = exercise_regrade(exercise=exercise_get(slug=options["slug"]))
        except NotFound as error:
            raise CommandError(error.message) from None
        for change in result.changed:
            self.stdout.write(
                f"submission {change.submission_id} ({change.learner}): "
                f"{change.old_score} -> {change.new_score}, "
                f"passed {change.old_passed} -> {change.new_passed}"
            )
        for submission_id in result.errors:
            self.stderr.write(f"submission {submission_id}: could not be regraded (unchanged)")
        self.stdout.write(
            f"{result.exercise} v{result.version}: {result.regraded} regraded, "
            f"{len(result.changed)} changed, {len(result.errors)} errors"
        )
