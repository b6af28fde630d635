"""A bad value in the environment stops start-up with one line naming the variable."""

import subprocess

import pytest

from tests.smoke.conftest import ROOT, free_port


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"DATABASE_URL": "mysql://x/y"}, "error: DATABASE_URL: expected a postgres:// URL"),
        ({"DATABASE_URL": "postgres://h:port/db"}, "error: DATABASE_URL: not a valid URL"),
        (
            {"DATABASE_URL": f"postgres://postgres@127.0.0.1:{free_port()}/console"},
            "error: DATABASE_URL: cannot connect",
        ),
        (
            {"CELERY_BROKER_URL": f"redis://127.0.0.1:{free_port()}/0"},
            "error: CELERY_BROKER_URL: cannot connect",
        ),
        ({"CELERY_BROKER_URL": "ftp://x"}, "error: CELERY_BROKER_URL: expected a redis://"),
        ({"PORT": "eighty"}, "error: PORT: expected a whole number"),
        ({"DEMO_MODE": "perhaps"}, "error: DEMO_MODE: expected true or false"),
        ({"PRODUCTION": "1"}, "error: ALLOWED_HOSTS: required in production"),
        # 2 web processes x 60 + 2 worker processes + 3 > the server's 100 less 3 reserved.
        (
            {"DB_POOL_SIZE": "60"},
            "error: DB_POOL_SIZE: the console may open 125 database connections",
        ),
    ],
)
def test_bad_value_is_one_clear_line(supervisor_env, supervisor_argv, variables, expected):
    supervisor_env.update(variables)
    result = subprocess.run(
        supervisor_argv, cwd=ROOT, env=supervisor_env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[0]], result.stderr
    assert lines[0].startswith(expected)
    assert "Traceback" not in result.stdout + result.stderr


def test_manage_py_reports_bad_values_in_one_line(supervisor_env):
    import sys

    supervisor_env["DATABASE_URL"] = "postgres://nodb"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=supervisor_env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: DATABASE_URL: the URL names no database (postgres://host/DATABASE)"
    )
