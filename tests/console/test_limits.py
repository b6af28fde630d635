import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import limits

pytestmark = pytest.mark.django_db


def test_every_limit_declares_a_valid_default():
    form = limits.settings_form_class()(
        data={
            limit.name: (
                ", ".join(map(str, limit.default))
                if limit.kind == "int_list"
                else ("on" if limit.default else "")
                if limit.kind == "bool"
                else limit.default
            )
            for limit in limits.LIMITS
        }
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {limit.name: limit.default for limit in limits.LIMITS}


def test_reader_caches_between_calls():
    with CaptureQueriesContext(connection) as cold:
        assert limits.current().urgent_jobs_per_project == 5
    with CaptureQueriesContext(connection) as warm:
        assert limits.get("urgent_jobs_per_project") == 5
    assert len(cold) == 1
    assert len(warm) == 0


def test_save_refreshes_the_cache(django_capture_on_commit_callbacks, admin):
    limits.current()
    with django_capture_on_commit_callbacks(execute=True):
        assert limits.save({"urgent_jobs_per_project": 2, "unknown": 1}, admin) == [
            "urgent_jobs_per_project"
        ]
    assert limits.get("urgent_jobs_per_project") == 2


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        limits.current().no_such_limit  # noqa: B018


def test_the_settings_page_says_where_prepared_data_lives(client, admin, settings):
    """SPEC J19: the local nodes' fast storage is NODE_CACHE_DIR; the admin sees where, next
    to the retention of prepared data, and the script time limit has its own section."""
    settings.EXECUTION_BACKEND = "local"
    client.force_login(admin)
    page = client.get("/settings/").content.decode()
    assert str(settings.NODE_CACHE_DIR) in page
    assert 'data-testid="node-cache-dir"' in page
    assert 'name="lifecycle_script_timeout_seconds"' in page and "Lifecycle scripts" in page
