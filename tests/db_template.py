"""The test databases are copies of one migrated template, not migrated each run.

Migrating an empty database takes about 9 s of Python (the migrations' states rendered one
by one), in every test process of every run. PostgreSQL copies a database in a fraction of
that (``CREATE DATABASE ... TEMPLATE``, which Django does when the test settings name a
template). The template is named by a digest of what it is made from (every migration
file, the installed apps, Django's version): a change to any of them makes a new one, and
the old ones are dropped. It is made once per machine and database server, under an
advisory lock so that the test processes of one run make it once; Django's own migrate
then finds nothing to apply.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import django
import psycopg
from django.conf import settings
from psycopg import sql

from tests.helpers import database_url

ROOT = Path(__file__).resolve().parents[1]
LOCK = 7_406_221  # the advisory lock's key: any number no other client of the server uses


def digest() -> str:
    """What the migrated database depends on, in 12 hex digits."""
    made_of = hashlib.sha256(django.get_version().encode())
    made_of.update(repr(settings.INSTALLED_APPS).encode())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        made_of.update(path.relative_to(ROOT).as_posix().encode())
        made_of.update(path.read_bytes())
    return made_of.hexdigest()[:12]


def use_template() -> str:
    """Make sure the template exists and have the test databases copied from it: its name."""
    db = settings.DATABASES["default"]
    prefix = f"test_{db['NAME']}_template_"
    name = prefix + digest()
    with psycopg.connect(database_url("postgres"), autocommit=True) as server:
        server.execute("SELECT pg_advisory_lock(%s)", [LOCK])
        try:
            names = [row[0] for row in server.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", [prefix + "%"]
            )]  # fmt: skip
            if name not in names:
                _make(server, name)
                for old in names:  # templates of earlier migrations; one in use stays
                    with contextlib.suppress(psycopg.errors.ObjectInUse):
                        server.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(old)))
        finally:
            server.execute("SELECT pg_advisory_unlock(%s)", [LOCK])
    db.setdefault("TEST", {})["TEMPLATE"] = name
    return name


MIGRATE = (sys.executable, "manage.py", "migrate", "--verbosity", "0")


def _make(server: psycopg.Connection, name: str, migrate=MIGRATE) -> None:
    """Migrate a new database in a process of its own (``migrate``, given DATABASE_URL),
    then give it the template's name: a run stopped halfway leaves no template that looks
    made, and the next one starts that database again."""
    making = sql.Identifier(name + "_making")
    server.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(making))
    server.execute(sql.SQL("CREATE DATABASE {}").format(making))
    env = {**os.environ, "DATABASE_URL": database_url(name + "_making")}
    subprocess.run(migrate, cwd=ROOT, env=env, check=True)
    # The server ends a session a moment after its client has gone; a database with a
    # session cannot be renamed.
    for _ in range(100):
        sessions = server.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name + "_making"]
        ).fetchone()[0]
        if not sessions:
            break
        time.sleep(0.1)
    server.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(making, sql.Identifier(name)))
