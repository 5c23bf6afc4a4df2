"""tests/db_template.py: a test database cloned from a template holds every migration, and
the template's name changes with any migration file, so a stale one is never cloned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from db_template import migrations_key


def test_the_template_name_changes_when_any_migration_file_changes(monkeypatch: Any) -> None:
    before = migrations_key()
    read_bytes = Path.read_bytes

    def edited(path: Path) -> bytes:
        data = read_bytes(path)
        return data + b"\n# edited\n" if path.name == "0001_initial.py" else data

    monkeypatch.setattr(Path, "read_bytes", edited)

    assert migrations_key() != before
    monkeypatch.undo()
    assert migrations_key() == before


@pytest.mark.django_db
def test_the_test_database_has_every_migration_on_disk_applied() -> None:
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(connection)

    assert set(loader.disk_migrations) <= loader.applied_migrations.keys()
    assert not loader.detect_conflicts()
