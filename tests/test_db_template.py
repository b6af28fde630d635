"""The migrated template the test databases are copied from (tests/db_template.py): what a
run stopped halfway leaves does not pass for a template, and a changed migration is a new
template."""

from __future__ import annotations

import sys

import psycopg
import pytest
from psycopg import sql

from tests import db_template
from tests.helpers import database_url

NAME = "test_console_template_probe"
MADE = (
    "import os, psycopg; psycopg.connect(os.environ['DATABASE_URL'], autocommit=True)"
    ".execute('CREATE TABLE made (id int)')"
)


@pytest.fixture
def server():
    with psycopg.connect(database_url("postgres"), autocommit=True) as conn:
        yield conn
        for name in (NAME, NAME + "_making"):
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(name)))


def tables(name: str) -> set[str]:
    with psycopg.connect(database_url(name)) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in rows}


def test_a_half_made_template_left_behind_is_made_again(server):
    # What a run killed during its migrate leaves: the database it was migrating.
    server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(NAME + "_making")))
    with psycopg.connect(database_url(NAME + "_making"), autocommit=True) as conn:
        conn.execute("CREATE TABLE half_made (id int)")

    # A stand-in for manage.py migrate (which every run that makes a template runs): it
    # makes one table in the database it is given.
    migrate = [sys.executable, "-c", MADE]
    db_template._make(server, NAME, migrate)

    assert tables(NAME) == {"made"}
    left = server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [NAME + "_making"])
    assert left.fetchone() is None


def test_a_changed_migration_is_another_template(tmp_path, monkeypatch):
    before = db_template.digest()
    (tmp_path / "app" / "migrations").mkdir(parents=True)
    monkeypatch.setattr(db_template, "ROOT", tmp_path)
    empty = db_template.digest()
    (tmp_path / "app" / "migrations" / "0001_initial.py").write_text("operations = []\n")
    one = db_template.digest()
    assert len({before, empty, one}) == 3
