"""Production settings: `manage.py check --deploy` is clean with the variables README.md
documents, and a value that cannot be used stops start-up with one line naming it."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Everything this file sets, removed from the inherited environment first.
VARIABLES = {
    "PRODUCTION", "DEBUG", "DEMO_MODE", "SECRET_KEY", "ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS",
    "CLIENT_IP_HEADER", "TRUSTED_PROXY_COUNT", "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER",
    "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "RATE_LIMIT_PRIORITY",
}  # fmt: skip
# README.md's "Production" section: what to set.
DOCUMENTED = {
    "PRODUCTION": "1",
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "console.example.com",
    "CLIENT_IP_HEADER": "X-Forwarded-For",
    "DEMO_MODE": "0",
}


def deploy_check(**variables: str) -> subprocess.CompletedProcess:
    # The database and broker this test run uses are inherited: the check starts no server.
    # Not the test run's own switches either (the browser tests allow sync ORM calls).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in VARIABLES and k != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    env.update(variables)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_clean_with_the_documented_variables():
    result = deploy_check(**DOCUMENTED)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_fails_without_them():
    result = deploy_check()
    assert result.returncode == 1
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016",
                    "console.W002"):  # fmt: skip
        assert warning in result.stderr


@pytest.mark.parametrize(
    ("override", "warning"),
    [
        ({"DEMO_MODE": "1"}, "console.W001"),
        ({"SECURE_HSTS_SECONDS": "0"}, "security.W004"),
        ({"SESSION_COOKIE_SECURE": "0"}, "security.W012"),
        ({"CLIENT_IP_HEADER": "off"}, "console.W002"),
    ],
)
def test_each_default_can_be_overridden(override, warning):
    result = deploy_check(**{**DOCUMENTED, **override})
    assert result.returncode == 1
    assert warning in result.stderr


@pytest.mark.parametrize(
    ("override", "line"),
    [
        ({"ALLOWED_HOSTS": ""}, "error: ALLOWED_HOSTS: required in production"),
        ({"DEBUG": "1"}, "error: DEBUG: must be off in production"),
        ({"SECRET_KEY": "short"}, "error: SECRET_KEY: too weak for production"),
        ({"SECURE_HSTS_SECONDS": "-1"}, "error: SECURE_HSTS_SECONDS: expected a number"),
        ({"SECURE_SSL_REDIRECT": "sure"}, "error: SECURE_SSL_REDIRECT: expected true or false"),
        ({"CLIENT_IP_HEADER": "X Forwarded"}, "error: CLIENT_IP_HEADER: expected a header name"),
        ({"TRUSTED_PROXY_COUNT": "0"}, "error: TRUSTED_PROXY_COUNT: expected a number"),
        ({"CSRF_TRUSTED_ORIGINS": "console.example.com"}, "error: CSRF_TRUSTED_ORIGINS: "),
        ({"RATE_LIMIT_PRIORITY": "fast"}, "error: RATE_LIMIT_PRIORITY: expected COUNT/SECONDS"),
    ],
)
def test_a_bad_value_stops_start_up_in_one_line(override, line):
    result = deploy_check(**{**DOCUMENTED, **override})
    assert result.returncode == 2
    assert result.stderr.strip().startswith(line), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_secure_settings_reach_the_responses(client, settings):
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    plain = client.get("/login/")
    assert plain.status_code == 301
    assert plain["Location"] == "https://testserver/login/"
    secure = client.get("/login/", headers={"X-Forwarded-Proto": "https"})
    assert secure.status_code == 200
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_every_variable_is_documented(settings):
    """Each variable settings.py reads is in .env.example and README.md."""
    import re

    source = (ROOT / "console" / "settings.py").read_text()
    read = set(re.findall(r'config\.env_\w+\(\s*"([A-Z_]+)"', source))
    read |= {f"RATE_LIMIT_{kind.upper()}" for kind in settings.RATE_LIMITS}
    assert {"PRODUCTION", "CLIENT_IP_HEADER", "SECURE_HSTS_SECONDS"} <= read
    example = (ROOT / ".env.example").read_text()
    readme = (ROOT / "README.md").read_text()
    assert sorted(name for name in read if f"# {name}=" not in example) == []
    assert sorted(name for name in read if f"`{name}`" not in readme) == []
