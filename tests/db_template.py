"""The test database from a migrated template (a `pytest_plugins` module of tests/conftest.py).

Each test process used to build its test database by running all ~70 migrations: 5-10 s
of a 2-core host per process, every run, most of the edit-test loop's start. Now the first
run that finds no template migrates as before and then copies its fresh database to a
template named after the migrations (every migration file's bytes and Django's version);
a later run clones the template (PostgreSQL: CREATE DATABASE ... TEMPLATE; SQLite: a file
copy) and lets Django's keepdb path run `migrate`, which finds nothing to apply. A changed
or new migration changes the name, so a stale template is never used (and is dropped).

It stands aside, and the database is built as pytest-django builds it, for --reuse-db,
--create-db, --no-migrations, another database engine, or any failure to clone.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from pytest_django.fixtures import _get_databases_for_setup  # pinned: requirements/dev.lock

TEMPLATE_PREFIX = "gradlab_tpl_"
POSTGRESQL = "django.db.backends.postgresql"
SQLITE = "django.db.backends.sqlite3"
CLONE_LOCK = 727_001  # pg_advisory_lock key: one CREATE DATABASE ... TEMPLATE at a time


def migrations_key() -> str:
    """Names what a migrated database holds: every migration file on disk and Django."""
    import django
    from django.db.migrations.loader import MigrationLoader

    loader = MigrationLoader(None, ignore_no_migrations=True)
    digest = hashlib.sha256(django.get_version().encode())
    for key in sorted(loader.disk_migrations):
        module = sys.modules[type(loader.disk_migrations[key]).__module__]
        digest.update(repr(key).encode())
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()[:16]


class Templates:
    """Where templates of one database alias live, and how a test database is cloned."""

    def __init__(self, connection: Any, key: str) -> None:
        self.connection = connection
        self.key = key
        self.engine = connection.settings_dict["ENGINE"]

    @property
    def usable(self) -> bool:
        if self.engine == SQLITE:
            return not self.connection.creation.is_in_memory_db(self.test_name())
        return self.engine == POSTGRESQL

    def test_name(self) -> str:
        return str(self.connection.creation._get_test_db_name())

    # -- PostgreSQL: databases on the same server ---------------------------------------
    def _maintenance(self) -> Any:
        return self.connection._nodb_cursor()

    def _pg_template(self) -> str:
        return f"{TEMPLATE_PREFIX}{self.key}"

    def clone(self) -> bool:
        """The test database as a copy of the template; False where there is none."""
        if self.engine == SQLITE:
            template = self._sqlite_template()
            if not template.is_file():
                return False
            shutil.copyfile(template, self.test_name())
            return True
        quoted = self.connection.ops.quote_name
        with self._maintenance() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self._pg_template()])
            if cursor.fetchone() is None:
                return False
            cursor.execute("SELECT pg_advisory_lock(%s)", [CLONE_LOCK])
            try:
                cursor.execute(f"DROP DATABASE IF EXISTS {quoted(self.test_name())}")
                cursor.execute(
                    f"CREATE DATABASE {quoted(self.test_name())} "
                    f"TEMPLATE {quoted(self._pg_template())}"
                )
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [CLONE_LOCK])
        return True

    def keep(self) -> None:
        """Copies the freshly migrated test database to the template, and drops the
        templates of other migrations. Another process doing the same at once is fine."""
        self.connection.close()
        if self.engine == SQLITE:
            template = self._sqlite_template()
            partial = template.with_suffix(f".partial-{id(self)}")
            shutil.copyfile(self.test_name(), partial)
            partial.replace(template)
            for stale in template.parent.glob(f"{TEMPLATE_PREFIX}*.sqlite3"):
                if stale != template:
                    stale.unlink(missing_ok=True)
            return
        from django.db import DatabaseError

        quoted = self.connection.ops.quote_name
        with self._maintenance() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [CLONE_LOCK])
            try:
                cursor.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [self._pg_template()]
                )
                if cursor.fetchone() is None:
                    cursor.execute(
                        f"CREATE DATABASE {quoted(self._pg_template())} "
                        f"TEMPLATE {quoted(self.test_name())}"
                    )
                cursor.execute(
                    "SELECT datname FROM pg_database WHERE datname LIKE %s AND datname <> %s",
                    [f"{TEMPLATE_PREFIX}%", self._pg_template()],
                )
                for (stale,) in cursor.fetchall():
                    with suppress(DatabaseError):  # in use by a run on the old migrations
                        cursor.execute(f"DROP DATABASE IF EXISTS {quoted(stale)}")
            finally:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [CLONE_LOCK])

    # -- SQLite: a file beside the test database ----------------------------------------
    def _sqlite_template(self) -> Path:
        return Path(self.test_name()).parent / f"{TEMPLATE_PREFIX}{self.key}.sqlite3"


def _templates(aliases: set[str]) -> list[Templates]:
    from django.db import connections

    key = migrations_key()
    found = [Templates(connections[alias], key) for alias in sorted(aliases)]
    return found if all(t.usable for t in found) else []


@pytest.fixture(scope="session")
def django_db_setup(
    request: pytest.FixtureRequest,
    django_test_environment: None,
    django_db_blocker: Any,
    django_db_use_migrations: bool,
    django_db_keepdb: bool,
    django_db_createdb: bool,
    django_db_modify_db_settings: None,
) -> Iterator[None]:
    """pytest-django's fixture of that name, with the test databases cloned from a
    migrated template where one exists (and kept as one where none did)."""
    from django.db import DatabaseError
    from django.test.utils import setup_databases, teardown_databases

    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    plain = django_db_keepdb or django_db_createdb or not django_db_use_migrations
    verbosity = request.config.option.verbose
    with django_db_blocker.unblock():
        templates = [] if plain else _templates(aliases)
        try:
            cloned = bool(templates) and all(t.clone() for t in templates)
        except (DatabaseError, OSError):
            cloned = False
        db_cfg = setup_databases(
            verbosity=verbosity, interactive=False, aliases=aliases,
            serialized_aliases=serialized_aliases, keepdb=cloned or django_db_keepdb,
        )  # fmt: skip
        if templates and not cloned:
            for template in templates:
                with suppress(DatabaseError, OSError):  # the next run migrates again
                    template.keep()
    yield
    if django_db_keepdb:
        return
    with django_db_blocker.unblock():
        try:
            teardown_databases(db_cfg, verbosity=verbosity)
        except Exception as exc:  # as pytest-django does: a warning, not an error
            held = _sessions_holding(db_cfg)
            request.node.warn(pytest.PytestWarning(
                f"could not drop the test databases: {exc!r}; still connected: {held}"
            ))  # fmt: skip


def _sessions_holding(db_cfg: Any) -> str:
    """Who is still connected to the test databases (PostgreSQL: each session's
    application_name, which names its process, config/settings/test.py; its state and
    last query), for the warning that says a drop failed."""
    from django.db import DatabaseError

    found = []
    for connection, _, _ in db_cfg:
        if connection.vendor != "postgresql":
            continue
        try:
            with connection._nodb_cursor() as cursor:
                names = [connection.settings_dict["NAME"], connection.creation._get_test_db_name()]
                cursor.execute(
                    "SELECT datname, application_name, pid, backend_start, state, "
                    "left(query, 120) FROM pg_stat_activity "
                    "WHERE datname = ANY(%s) AND pid <> pg_backend_pid()",
                    [names],
                )
                found += [repr(row) for row in cursor.fetchall()]
        except DatabaseError as error:
            found.append(f"(pg_stat_activity unreadable: {error})")
    return "; ".join(found) or "nobody any more"
