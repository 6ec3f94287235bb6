"""WireCat settings. Every knob is a `WIRECAT_*` environment variable with a safe default;
the README lists them all (a test keeps the two in step)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import django_stubs_ext

from wirecat.paths import database_path, state_dir, state_dir_private

# Lets admin.ModelAdmin[Model] and QuerySet[Model] be subscripted at run time (typing).
django_stubs_ext.monkeypatch()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def env_bytes(name: str, default: str) -> int:
    """A size: a number of bytes, or with a binary unit (`64M`, `4GiB`, `512k`)."""
    raw = (os.environ.get(name) or default).strip().lower().removesuffix("b").removesuffix("i")
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    number = raw[: len(raw) - len(unit)].strip().replace("_", "")
    try:
        return int(float(number) * _UNITS[unit])
    except ValueError as exc:
        raise ValueError(f"{name}={os.environ.get(name)!r} is not a size (e.g. 64M)") from exc


BASE_DIR = Path(__file__).resolve().parent.parent
STATE_DIR = state_dir()
DB_PATH = database_path(STATE_DIR)
# Every process (web, worker, beat, each command) imports these settings: the state folder
# is made the owner's alone here (0700, files 0600), at every start (wirecat/paths.py).
state_dir_private(STATE_DIR, database=DB_PATH)
BLOB_DIR = STATE_DIR / "blobs"


def _secret_key() -> str:
    """`WIRECAT_SECRET_KEY`, else a random key kept in the state folder (mode 600)."""
    explicit = os.environ.get("WIRECAT_SECRET_KEY")
    if explicit:
        return explicit
    key_file = STATE_DIR / "secret_key"
    if not key_file.exists():
        if not os.access(STATE_DIR, os.W_OK):  # read-only: this process's own key; the
            return secrets.token_urlsafe(50)  # store's pages say what is wrong (db/faults)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("WIRECAT_DEBUG")
ALLOWED_HOSTS = env_list("WIRECAT_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("WIRECAT_CSRF_TRUSTED_ORIGINS")


def default_base_url(bind: str) -> str:
    """The address for links when WIRECAT_BASE_URL is not set: where gunicorn listens
    (WIRECAT_BIND, as the Procfile reads it), seen from this machine. Every interface
    (0.0.0.0, ::) is reached as 127.0.0.1; a unix socket or an unreadable bind gives the
    Procfile's own default."""
    text = bind.strip()
    if not text or text.startswith(("unix:", "fd://")):
        return "http://127.0.0.1:8000"
    if text.isdigit():
        text = f"127.0.0.1:{text}"
    host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit():
        host, port = text, "8000"
    if host.startswith("["):  # IPv6: [::1]:8000
        host = host[1:-1] if host.endswith("]") else host[1:]
        host = f"[{host}]" if host not in ("", "::") else "127.0.0.1"
    elif host in ("", "0.0.0.0", "::", "*"):  # noqa: S104 - a bind being read, not made
        host = "127.0.0.1"
    return f"http://{host}:{port}"


# The address printed in one-time login links and by `wirecat start`.
BASE_URL = (
    os.environ.get("WIRECAT_BASE_URL", "").strip()
    or default_base_url(os.environ.get("WIRECAT_BIND", "127.0.0.1:8000"))
).rstrip("/")


def _meta_key(header: str) -> str:
    """`X-Forwarded-Proto` as Django's request.META names it."""
    return "HTTP_" + header.strip().upper().replace("-", "_")


# Behind an HTTPS tunnel (cloudflared, Tailscale Funnel): name the header the proxy sets,
# e.g. WIRECAT_PROXY_SSL_HEADER=X-Forwarded-Proto. Cookies become Secure with it, and
# whenever the owner's address (WIRECAT_BASE_URL) is https.
_proxy_header = os.environ.get("WIRECAT_PROXY_SSL_HEADER", "").strip()
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = (_meta_key(_proxy_header), "https")
HTTPS = BASE_URL.lower().startswith("https://") or bool(_proxy_header)
_secure_cookies = env_bool("WIRECAT_SECURE_COOKIES", default=HTTPS)
SESSION_COOKIE_SECURE = _secure_cookies
CSRF_COOKIE_SECURE = _secure_cookies
# HSTS behind https (wirecat.security also sends it when only the base URL says https: a
# browser heeds it over https alone). No includeSubDomains: the tunnel's domain is not ours.
SECURE_HSTS_SECONDS = int(os.environ.get("WIRECAT_HSTS_SECONDS", "31536000")) if HTTPS else 0
# The header naming the client's address that the tunnel sets (e.g. CF-Connecting-IP, or
# X-Forwarded-For whose last entry the tunnel adds). Unset: no header is believed, the
# address is the connection's (behind a tunnel, every client then looks like the tunnel).
_client_ip_header = os.environ.get("WIRECAT_CLIENT_IP_HEADER", "").strip()
CLIENT_IP_HEADER = _meta_key(_client_ip_header) if _client_ip_header else ""
# Sign-in guessing (wirecat.throttle): this many failures per user name and per client
# address within the window, then 429 until the oldest of them is older than the window.
LOGIN_ATTEMPTS = int(os.environ.get("WIRECAT_LOGIN_ATTEMPTS", "5"))
LOGIN_WINDOW_SECONDS = int(os.environ.get("WIRECAT_LOGIN_WINDOW_SECONDS", "900"))
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = 60 * 60 * 24 * 14
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# A request body Django reads into memory: a note may hold 1,000,000 characters, and a
# client escaping each as JSON's \uXXXX (or a form's %XX%XX) sends up to 12 bytes of one.
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024

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
    "meetings",
    "notes",
]

MIDDLEWARE = [
    "archive.web.middleware.AfterResponse",  # outermost: it sees the answer that is sent
    "django.middleware.security.SecurityMiddleware",
    "wirecat.security.SecurityHeaders",  # Content-Security-Policy on every page, HSTS
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "wirecat.throttle.LoginThrottle",  # 429 before a password is hashed
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
# delivery (sends), webhooks (their own, so a slow receiver holds up no send); everything
# else (imports, the heartbeat) on `celery`.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "archive.jobs.account_sync": {"queue": "sync"},
    "archive.jobs.accounts_repair": {"queue": "sync"},
    "archive.jobs.search_stems_drain": {"queue": "index"},
    "archive.jobs.notes_stems_drain": {"queue": "index"},
    "archive.jobs.store_optimize": {"queue": "index"},
    "archive.jobs.tag_bulk_run": {"queue": "index"},
    "archive.jobs.thumbnail_make": {"queue": "index"},
    "archive.jobs.file_texts_extract": {"queue": "index"},
    "archive.jobs.file_text_read": {"queue": "index"},
    "archive.jobs.conversations_build": {"queue": "index"},
    "archive.jobs.embeddings_refresh": {"queue": "index"},
    "archive.jobs.send_deliver": {"queue": "delivery"},
    "archive.jobs.webhooks_deliver": {"queue": "webhooks"},
}
WORKER_QUEUES = "celery,sync,index,delivery,webhooks"
# One webhook attempt's whole budget (connect, send, read at most 4 KB of the answer).
WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("WIRECAT_WEBHOOK_TIMEOUT_SECONDS", "10"))
# Messages per import batch (one transaction each); bounded by the sink's batch limit.
# Live sync: a worker's hold on an account it syncs, renewed after every page; a worker
# killed mid-run is overtaken once it lapses.
SYNC_LEASE_SECONDS = int(os.environ.get("WIRECAT_SYNC_LEASE_SECONDS", "120"))
IMPORT_BATCH_SIZE = int(os.environ.get("WIRECAT_IMPORT_BATCH", "5000"))
# Background work (imports and their readers, Celery workers) runs at this nice level
# (0..19; 0 leaves it as started) so that pages and the API come first on a busy machine.
BACKGROUND_NICE = int(os.environ.get("WIRECAT_BACKGROUND_NICE", "10"))
# An import's write transaction (which other writers, the API's included, wait for) is
# kept to about this long: batches shrink below WIRECAT_IMPORT_BATCH to fit (0: no budget).
IMPORT_TRANSACTION_MS = int(os.environ.get("WIRECAT_IMPORT_TRANSACTION_MS", "250"))
# Parse exports in a child process while the importing one writes (both cores busy).
IMPORT_READER_PROCESS = env_bool("WIRECAT_IMPORT_READER_PROCESS", default=True)
# What one import may cost, whatever the file (archive/connectors/limits.py, json_guard.py);
# past each, the import stops with an error naming the file, the place and the setting.
# A JSON export up to this size is parsed whole at C speed (its objects take up to 16x its
# size); a
# larger one, or one past any cap below, is streamed (archive/connectors/telegram/whole_file.py).
IMPORT_WHOLE_FILE = env_bytes("WIRECAT_IMPORT_WHOLE_FILE", "4M")
IMPORT_MAX_JSON_DEPTH = int(os.environ.get("WIRECAT_IMPORT_MAX_JSON_DEPTH", "64"))
IMPORT_MAX_JSON_VALUE = env_bytes("WIRECAT_IMPORT_MAX_JSON_VALUE", "1M")
IMPORT_MAX_MESSAGE_BYTES = env_bytes("WIRECAT_IMPORT_MAX_MESSAGE_BYTES", "16M")
IMPORT_MAX_MESSAGE_VALUES = int(os.environ.get("WIRECAT_IMPORT_MAX_MESSAGE_VALUES", "100000"))
IMPORT_MAX_LINE = env_bytes("WIRECAT_IMPORT_MAX_LINE", "16M")
IMPORT_MAX_ZIP_MEMBER = env_bytes("WIRECAT_IMPORT_MAX_ZIP_MEMBER", "4G")
IMPORT_MAX_ZIP_RATIO = int(os.environ.get("WIRECAT_IMPORT_MAX_ZIP_RATIO", "200"))
IMPORT_MAX_BYTES = env_bytes("WIRECAT_IMPORT_MAX_BYTES", "256G")
IMPORT_DISK_MARGIN = env_bytes("WIRECAT_IMPORT_DISK_MARGIN", "512M")
# A transcript (.vtt, .srt, Zoom chat .txt) is read up to this size; the cues after it are not kept.
IMPORT_MAX_TRANSCRIPT = env_bytes("WIRECAT_IMPORT_MAX_TRANSCRIPT", "16M")
# A message's text past this many characters is kept whole as an attachment, the first part
# as its text; a batch is written once its messages' text reaches WIRECAT_IMPORT_BATCH_BYTES.
IMPORT_MAX_TEXT = int(os.environ.get("WIRECAT_IMPORT_MAX_TEXT", "1000000"))
IMPORT_BATCH_BYTES = env_bytes("WIRECAT_IMPORT_BATCH_BYTES", "64M")
# Calendars (archive/connectors/ical/): a series is expanded from this many days back to this
# many ahead, to at most this many occurrences per event; a larger .ics file is refused.
MEETINGS_PAST_DAYS = int(os.environ.get("WIRECAT_MEETINGS_PAST_DAYS", str(5 * 365)))
MEETINGS_AHEAD_DAYS = int(os.environ.get("WIRECAT_MEETINGS_AHEAD_DAYS", "730"))
MEETINGS_MAX_OCCURRENCES = int(os.environ.get("WIRECAT_MEETINGS_MAX_OCCURRENCES", "5000"))
MEETINGS_MAX_ICS_BYTES = env_bytes("WIRECAT_MEETINGS_MAX_ICS_BYTES", "64M")
# The text of files (archive/files/): each file is read in a child process bounded by these
# (seconds of wall clock and CPU, memory in MB, the largest file read in MB, pages read of a
# PDF, deck or workbook). OCR is opt-in: "tesseract" reads images and scans (Debian's
# tesseract-ocr) in WIRECAT_OCR_LANGUAGES ("eng+deu"); "off" leaves them needs_text.
FILE_TEXT_SECONDS = float(os.environ.get("WIRECAT_FILE_TEXT_SECONDS", "60"))
FILE_TEXT_MEMORY_MB = int(os.environ.get("WIRECAT_FILE_TEXT_MEMORY_MB", "512"))
FILE_TEXT_MAX_MB = int(os.environ.get("WIRECAT_FILE_TEXT_MAX_MB", "100"))
FILE_TEXT_PAGES = int(os.environ.get("WIRECAT_FILE_TEXT_PAGES", "500"))
OCR = os.environ.get("WIRECAT_OCR", "off").strip().lower() or "off"
OCR_LANGUAGES = os.environ.get("WIRECAT_OCR_LANGUAGES", "eng").strip() or "eng"
# The Imports page imports a path on the server only under these folders (symlinks
# resolved), never inside the state folder. WIRECAT_IMPORT_ROOTS: folders separated by
# os.pathsep (":"); unset, the owner's home; set but empty, no server paths at all.
_import_roots = os.environ.get("WIRECAT_IMPORT_ROOTS")
IMPORT_ROOTS = (
    [Path.home()]
    if _import_roots is None
    else [Path(item).expanduser() for item in _import_roots.split(os.pathsep) if item.strip()]
)
# Uploaded exports are streamed to disk here, never held in memory.
UPLOAD_DIR = STATE_DIR / "uploads"
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
FILE_UPLOAD_TEMP_DIR = str(UPLOAD_DIR)
if os.access(STATE_DIR, os.W_OK):  # read-only: an upload says so (wirecat/db/faults.py)
    UPLOAD_DIR.mkdir(parents=True, exist_ok=True)
HEARTBEAT_SECONDS = int(os.environ.get("WIRECAT_HEARTBEAT_SECONDS", "30"))
# The nightly backup (archive/backups/) keeps this many archives in <state>/backups/.
BACKUP_KEEP = max(int(os.environ.get("WIRECAT_BACKUP_KEEP", "7")), 1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # A read-only or full store is logged as its sentence, without a traceback.
    "filters": {"store_faults": {"()": "wirecat.db.faults.OneLine"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["store_faults"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("WIRECAT_LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # httpx logs every request's URL at INFO, and a Bot API URL holds the bot's token.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
# Meaning search (archive/meaning/): the embedding model (its name is recorded with every
# vector; another name rebuilds the index), the threads it may use (0: all cores), and the
# longest chunk of text it is given, in characters.
MEANING_MODEL = os.environ.get("WIRECAT_MEANING_MODEL", "all-MiniLM-L6-v2-int8")
MEANING_THREADS = int(os.environ.get("WIRECAT_MEANING_THREADS", "0"))
MEANING_CHUNK_CHARS = int(os.environ.get("WIRECAT_MEANING_CHUNK_CHARS", "800"))
