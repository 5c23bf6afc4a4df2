"""`manage.py prepare`: what `make run` (scripts/run.sh) does before it starts its
processes, in one Python process instead of four: migrate, load the exercises, collect the
static files (only when their sources changed since the last collection), and create the
demo accounts, whose lines are the only output on stdout (the rest goes to stderr)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand

FINGERPRINT_FILE = ".gradlab-collected"  # in STATIC_ROOT: what the last collection saw


def static_sources_fingerprint() -> str:
    """A digest of every file the static finders would collect: its path, size and
    modification time (changes when a source is added, removed or edited)."""
    entries = []
    for finder in get_finders():
        for path, storage in finder.list([]):
            stat = Path(storage.path(path)).stat()
            entries.append(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(sorted(entries)).encode()).hexdigest()


def collected_fingerprint(static_root: Path) -> str | None:
    try:
        return (static_root / FINGERPRINT_FILE).read_text(encoding="ascii").strip()
    except OSError:
        return None


def manifest_present(static_root: Path) -> bool:
    """The manifest storage's index is there (always true for a storage without one)."""
    name = getattr(staticfiles_storage, "manifest_name", None)
    return name is None or (static_root / name).exists()


class Command(BaseCommand):
    help = (
        "Migrate, load exercises/, collect static files when their sources changed, and "
        "create the demo accounts (printed on stdout): make run's preparation in one process."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0, stdout=self.stderr)
        call_command("load_exercises", stdout=self.stderr, stderr=self.stderr)
        self._collect_static()
        call_command("demo_accounts", stdout=self.stdout)

    def _collect_static(self) -> None:
        static_root = Path(settings.STATIC_ROOT)
        fingerprint = static_sources_fingerprint()
        if collected_fingerprint(static_root) == fingerprint and manifest_present(static_root):
            self.stderr.write("static files: unchanged since the last collection")
            return
        call_command("collectstatic", interactive=False, verbosity=0, stdout=self.stderr)
        (static_root / FINGERPRINT_FILE).write_text(fingerprint + "\n", encoding="ascii")
