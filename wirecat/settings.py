"""WireCat settings. Every knob is a `WIRECAT_*` environment variable with a safe default;
the README lists them all (a test keeps the two in step)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import django_stubs_ext

from wirecat.paths import database_path, state_dir

# Lets admin.ModelAdmin[Model] and QuerySet[Model] be subscripted at run time (typing).
django_stubs_ext.monkeypatch()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = state_dir()
STATE_DIR.mkdir(parents=True, exist_ok=True)
DB_PATH = database_path(STATE_DIR)
BLOB_DIR = STATE_DIR / "blobs"


def _secret_key() -> str:
    """`WIRECAT_SECRET_KEY`, else a random key kept in the state folder (mode 600)."""
    explicit = os.environ.get("WIRECAT_SECRET_KEY")
    if explicit:
        return explicit
    key_file = STATE_DIR / "secret_key"
    if not key_file.exists():
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("WIRECAT_DEBUG")
ALLOWED_HOSTS = env_list("WIRECAT_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("WIRECAT_CSRF_TRUSTED_ORIGINS")
# The address printed in one-time login links.
BASE_URL = os.environ.get("WIRECAT_BASE_URL", "http://127.0.0.1:8000").rstrip("/")

# Behind an HTTPS tunnel (cloudflared, Tailscale Funnel): name the header the proxy sets,
# e.g. WIRECAT_PROXY_SSL_HEADER=X-Forwarded-Proto; cookies then become Secure.
_proxy_header = os.environ.get("WIRECAT_PROXY_SSL_HEADER", "").strip()
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
_secure_cookies = env_bool("WIRECAT_SECURE_COOKIES", default=bool(_proxy_header))
SESSION_COOKIE_SECURE = _secure_cookies
CSRF_COOKIE_SECURE = _secure_cookies
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = 60 * 60 * 24 * 14
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "django_celery_beat",
    "ninja",
    "archive",
    "tasks",
]

MIDDLEWARE = [
    "archive.web.middleware.AfterResponse",  # outermost: it sees the answer that is sent
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "wirecat.auth.OwnerRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "archive.web.middleware.PageErrors",  # WireCatError -> the error page, for every page
]

ROOT_URLCONF = "wirecat.urls"
WSGI_APPLICATION = "wirecat.wsgi.application"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "archive:dashboard"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    },
]

DATABASES = {
    "default": {
        # Our backend: bundled modern SQLite, capability check, PRAGMAs (wirecat/db/).
        "ENGINE": "wirecat.db",
        "NAME": str(DB_PATH),
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 10},
        "CONN_MAX_AGE": 600,
        "CONN_HEALTH_CHECKS": True,
        "TEST": {"NAME": os.environ.get("WIRECAT_TEST_DB", str(STATE_DIR / "test-wirecat.db"))},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = os.environ.get("WIRECAT_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
if DEBUG or env_bool("WIRECAT_PLAIN_STATIC"):
    STORAGES["staticfiles"] = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}

# Celery. The embedded default broker is a SQLite file beside the store (kombu's SQLAlchemy
# transport), so nothing else has to run; CELERY_BROKER_URL switches to Redis or RabbitMQ.
BROKER_DB = STATE_DIR / "broker.db"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or f"sqla+sqlite:///{BROKER_DB}"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    {"connect_args": {"timeout": 30}} if CELERY_BROKER_URL.startswith("sqla+sqlite") else {}
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Queues, so a worker can take only some work (`celery -A wirecat worker -Q sync`):
# sync (live sync, the repair pass), index (stems, FTS upkeep, tagging many results),
# delivery (sends, webhooks); everything else (imports, the heartbeat) on `celery`.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "archive.jobs.account_sync": {"queue": "sync"},
    "archive.jobs.accounts_repair": {"queue": "sync"},
    "archive.jobs.search_stems_drain": {"queue": "index"},
    "archive.jobs.store_optimize": {"queue": "index"},
    "archive.jobs.tag_bulk_run": {"queue": "index"},
    "archive.jobs.send_deliver": {"queue": "delivery"},
    "archive.jobs.webhooks_deliver": {"queue": "delivery"},
}
WORKER_QUEUES = "celery,sync,index,delivery"
# Messages per import batch (one transaction each); bounded by the sink's batch limit.
# Live sync: a worker's hold on an account it syncs, renewed after every page; a worker
# killed mid-run is overtaken once it lapses.
SYNC_LEASE_SECONDS = int(os.environ.get("WIRECAT_SYNC_LEASE_SECONDS", "120"))
IMPORT_BATCH_SIZE = int(os.environ.get("WIRECAT_IMPORT_BATCH", "5000"))
# Parse exports in a child process while the importing one writes (both cores busy).
IMPORT_READER_PROCESS = env_bool("WIRECAT_IMPORT_READER_PROCESS", default=True)
# Uploaded exports are streamed to disk here, never held in memory.
UPLOAD_DIR = STATE_DIR / "uploads"
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_DIR)
UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
HEARTBEAT_SECONDS = int(os.environ.get("WIRECAT_HEARTBEAT_SECONDS", "30"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("WIRECAT_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # httpx logs every request's URL at INFO, and a Bot API URL holds the bot's token.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
