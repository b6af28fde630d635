"""``manage.py verify``, the checks `make test` runs before its suite: each one it runs
stops it when it fails."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import migrations

pytestmark = pytest.mark.django_db


@pytest.fixture
def a_warning():
    def warn(app_configs, **kwargs):
        return [checks.Warning("a warning of the test's", id="tests.W001")]

    checks.register(warn)
    yield
    checks.registry.registry.registered_checks.discard(warn)


@pytest.fixture
def runtimes_made(monkeypatch):
    """make_runtime as a note of its call: the runtimes are the suite's own business."""
    made = []
    from resources.management.commands import make_runtime

    monkeypatch.setattr(make_runtime.Command, "handle", lambda self, *a, **o: made.append(1))
    return made


def test_it_passes_on_the_checkout_and_makes_the_runtimes(runtimes_made, capsys):
    call_command("verify")
    said = capsys.readouterr().out
    assert "System check identified no issues" in said and "No changes detected" in said
    assert runtimes_made == [1]


@pytest.mark.usefixtures("a_warning")
def test_a_warning_of_the_system_checks_stops_it(runtimes_made):
    with pytest.raises(SystemCheckError, match=r"tests\.W001"):
        call_command("verify")
    assert runtimes_made == []


def test_a_model_change_without_its_migration_stops_it(monkeypatch, runtimes_made):
    from django.db.migrations import autodetector

    missing = migrations.Migration("0099_missing", "jobs")
    monkeypatch.setattr(
        autodetector.MigrationAutodetector, "changes", lambda self, *a, **k: {"jobs": [missing]}
    )
    with pytest.raises(SystemExit) as stopped:
        call_command("verify")
    assert stopped.value.code == 1
    assert runtimes_made == []
