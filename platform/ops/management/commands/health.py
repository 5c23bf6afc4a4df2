"""`manage.py health`: the readiness probes (database, broker, sweep freshness); exits 1
when one fails. The health check of containers without a web server (beat, workers)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ops.health import readiness


class Command(BaseCommand):
    help = "Checks the database, the broker and the recovery sweep's freshness."

    def handle(self, *args: Any, **options: Any) -> None:
        probes = readiness()
        for probe in probes:
            self.stdout.write(f"{probe.name}: {'ok' if probe.ok else 'FAIL'} ({probe.detail})")
        if not all(probe.ok for probe in probes):
            raise CommandError("not ready")
