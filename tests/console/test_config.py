import pytest
from hypothesis import given
from hypothesis import strategies as st

from console import config
from console.config import ConfigError


class TestDatabaseURL:
    def test_full_url(self):
        db = config.parse_database_url("DATABASE_URL", "postgres://u:p%40ss@db.local:5433/app")
        assert db == config.DatabaseURL("app", "u", "p@ss", "db.local", "5433")

    def test_socket_directory_in_query(self):
        db = config.parse_database_url("DATABASE_URL", "postgresql://postgres@/console?host=/v/pg")
        assert (db.host, db.name, db.user) == ("/v/pg", "console", "postgres")

    def test_django_settings(self):
        settings = config.parse_database_url("X", "postgres://h/app").django()
        assert settings["ENGINE"] == "django.db.backends.postgresql"
        assert settings["NAME"] == "app"

    @pytest.mark.parametrize(
        ("url", "problem"),
        [
            ("mysql://h/app", "expected a postgres:// URL"),
            ("postgres://h", "names no database"),
            ("postgres:///app", "names no host"),
            ("postgres://h:notaport/app", "not a valid URL"),
            ("", "expected a postgres:// URL"),
        ],
    )
    def test_bad_urls_name_the_variable(self, url, problem):
        with pytest.raises(ConfigError) as caught:
            config.parse_database_url("DATABASE_URL", url)
        assert caught.value.variable == "DATABASE_URL"
        assert problem in str(caught.value)
        assert str(caught.value).startswith("DATABASE_URL: ")

    @given(st.text())
    def test_never_crashes_otherwise(self, url):
        try:
            config.parse_database_url("DATABASE_URL", url)
        except ConfigError as exc:
            assert exc.variable == "DATABASE_URL"


class TestBrokerURL:
    @pytest.mark.parametrize(
        "url",
        ["redis://127.0.0.1:6379/0", "redis+socket:///tmp/r.sock", "amqp://g:g@localhost:5672//"],
    )
    def test_accepted(self, url):
        assert config.check_broker_url("CELERY_BROKER_URL", url) == url

    @pytest.mark.parametrize(
        ("url", "problem"),
        [
            ("http://h", "expected a redis://"),
            ("redis://:99999999/0", "not a valid URL"),
            ("redis+socket://", "needs the socket's path"),
            ("redis:///0", "names no host"),
        ],
    )
    def test_rejected(self, url, problem):
        with pytest.raises(ConfigError, match=problem):
            config.check_broker_url("CELERY_BROKER_URL", url)

    @given(st.text())
    def test_never_crashes_otherwise(self, url):
        try:
            config.check_broker_url("CELERY_BROKER_URL", url)
        except ConfigError as exc:
            assert exc.variable == "CELERY_BROKER_URL"


class TestScalars:
    def test_bool(self, monkeypatch):
        monkeypatch.setenv("FLAG", "Yes")
        assert config.env_bool("FLAG", False) is True
        monkeypatch.setenv("FLAG", "off")
        assert config.env_bool("FLAG", True) is False
        monkeypatch.setenv("FLAG", "")
        assert config.env_bool("FLAG", True) is True
        monkeypatch.setenv("FLAG", "maybe")
        with pytest.raises(ConfigError, match="FLAG: expected true or false"):
            config.env_bool("FLAG", True)

    def test_int(self, monkeypatch):
        monkeypatch.setenv("N", "12")
        assert config.env_int("N", 1, low=1, high=20) == 12
        monkeypatch.setenv("N", "x")
        with pytest.raises(ConfigError, match="N: expected a whole number"):
            config.env_int("N", 1)
        monkeypatch.setenv("N", "99")
        with pytest.raises(ConfigError, match="from 1 to 20"):
            config.env_int("N", 1, low=1, high=20)

    def test_list(self, monkeypatch):
        monkeypatch.setenv("L", " a, b ,,c ")
        assert config.env_list("L", []) == ["a", "b", "c"]
        monkeypatch.delenv("L")
        assert config.env_list("L", ["d"]) == ["d"]


class TestProductionReaders:
    def test_header(self, monkeypatch):
        monkeypatch.setenv("H", "X-Forwarded-For")
        assert config.env_header("H") == "HTTP_X_FORWARDED_FOR"
        for off in ("off", "none", ""):
            monkeypatch.setenv("H", off)
            assert config.env_header("H", "X-Real-IP") is None
        monkeypatch.delenv("H")
        assert config.env_header("H", "X-Real-IP") == "HTTP_X_REAL_IP"
        monkeypatch.setenv("H", "X_Forwarded:For")
        with pytest.raises(ConfigError, match="H: expected a header name"):
            config.env_header("H")

    def test_origins(self, monkeypatch):
        monkeypatch.setenv("O", "https://a.example.com, http://b:8000")
        assert config.env_origins("O") == ["https://a.example.com", "http://b:8000"]
        for bad in ("a.example.com", "https://a.example.com/path"):
            monkeypatch.setenv("O", bad)
            with pytest.raises(ConfigError, match="O: expected origins"):
                config.env_origins("O")

    def test_site_url(self, monkeypatch):
        assert config.env_site_url("U") == ""
        monkeypatch.setenv("U", "https://console.example.com/")
        assert config.env_site_url("U") == "https://console.example.com"
        for bad in ("console.example.com", "https://console.example.com/jobs"):
            monkeypatch.setenv("U", bad)
            with pytest.raises(ConfigError, match="U: expected an address"):
                config.env_site_url("U")

    def test_rate(self, monkeypatch):
        assert config.env_rate("R", (3, 4)) == (3, 4)
        monkeypatch.setenv("R", " 30 / 60 ")
        assert config.env_rate("R", (3, 4)) == (30, 60)
        for bad in ("30", "30/", "x/60", "²/60", "-1/60"):
            monkeypatch.setenv("R", bad)
            with pytest.raises(ConfigError, match="R: expected COUNT/SECONDS"):
                config.env_rate("R", (3, 4))
        monkeypatch.setenv("R", "0/60")
        with pytest.raises(ConfigError, match="at least 1"):
            config.env_rate("R", (3, 4))

    def test_secret_key(self):
        key = "k" * 10 + "abcdefghij" * 4
        assert config.check_secret_key("S", key) == key
        for weak in ("short", "a" * 60, "django-insecure-" + "abcdefghij" * 5):
            with pytest.raises(ConfigError, match="S: too weak"):
                config.check_secret_key("S", weak)
