"""The shared `catalog` fixture (tests/gradlab_fixtures.py): the rows it writes back for a
test are the rows a load through the services wrote, stamped at the test's own time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from gradlab_fixtures import CatalogRows, _catalog_load

pytestmark = pytest.mark.django_db


def _stored(rows: CatalogRows) -> dict[str, list[dict[str, Any]]]:
    return {
        model._meta.label: list(model._base_manager.order_by("pk").values())
        for model, _ in rows.tables
    }


def _loaded_once() -> tuple[CatalogRows, dict[str, list[dict[str, Any]]]]:
    """A load through the services, its rows as stored, then rolled back."""
    saved = transaction.savepoint()
    rows = CatalogRows.of_load(_catalog_load)
    assert rows is not None
    stored = _stored(rows)
    transaction.savepoint_rollback(saved)
    return rows, stored


def test_the_catalog_written_back_holds_every_row_the_services_loaded_but_its_times() -> None:
    rows, loaded = _loaded_once()
    assert rows.tables_empty()
    assert {"courses.Module", "courses.Exercise", "courses.ExerciseVersion"} <= set(loaded)

    rows.write_back()

    written = _stored(rows)
    assert written.keys() == loaded.keys()
    for label, table in loaded.items():
        assert len(written[label]) == len(table), label
        for before, after in zip(table, written[label], strict=True):
            kept = {k: v for k, v in before.items() if not isinstance(v, datetime)}
            assert {k: after[k] for k in kept} == kept, label


def test_the_catalog_written_back_is_stamped_at_the_time_of_the_write_back() -> None:
    from courses.models import ExerciseVersion

    rows, _ = _loaded_once()
    start = timezone.now()

    rows.write_back()

    versions = ExerciseVersion.objects.all()
    assert versions and all(v.created_at >= start for v in versions)
    assert all(v.published_at is not None and v.published_at >= start for v in versions)


def test_a_load_into_tables_that_hold_rows_already_is_not_kept_for_writing_back() -> None:
    from courses.models import Module

    Module.objects.create(slug="already-here", title="Already here")

    assert CatalogRows.of_load(_catalog_load) is None
