"""Settings, all read from the environment (12-factor).

DATABASE_URL  unset -> SQLite file under var/; postgres://... -> PostgreSQL through psycopg 3.
DEBUG         off by default; with DEBUG off, SECRET_KEY must be set.
ENV_FILE      a dotenv file read first (default: .env at the checkout root; empty: none). Values
              already in the environment win. `make` writes .env with a random SECRET_KEY so
              `manage.py` works in a development checkout without exporting anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import django_stubs_ext
import environ

# Django's generic classes (ModelAdmin, ModelForm, formsets) take type arguments, as the
# stubs declare them: `class SeedAdmin(ModelAdmin[Seed])` must also work at run time.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"

env = environ.Env()
ENV_FILE: str = env.str("ENV_FILE", default=str(BASE_DIR / ".env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    environ.Env.read_env(ENV_FILE)

DEBUG: bool = env.bool("DEBUG", default=False)
if DEBUG:
    SECRET_KEY: str = env.str("SECRET_KEY", default="insecure-dev-key-only-for-debug")
else:
    # No fallback: a production server must never run with a known key.
    SECRET_KEY = env.str("SECRET_KEY")

ALLOWED_HOSTS: list[str] = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS: list[str] = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_api_key",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "axes",
    "redteam.common",
    "seeds",
    "memory",
    "scoring",
    "redteam.site",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
    "redteam.common.replicas.ReplicaReadsMiddleware",
    # Last, as django-axes requires: turns a locked-out login into a 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "redteam.urls"

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
        },
    },
]

WSGI_APPLICATION = "redteam.wsgi.application"

# An empty DATABASE_URL means the same as an unset one: the embedded SQLite database, whose
# folder (var/, not in git) a fresh clone does not have yet.
_database_url = env.str("DATABASE_URL", default="")
if not _database_url:
    VAR_DIR.mkdir(exist_ok=True)
    _database_url = f"sqlite:///{VAR_DIR / 'redteam.sqlite3'}"
DATABASES = {"default": env.db_url_config(_database_url)}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers and one writer work at once; the busy timeout makes a second writer
    # wait instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            # BEGIN IMMEDIATE takes the write lock up front, so concurrent writers queue on the
            # busy timeout instead of failing with "database is locked" when a read
            # transaction tries to upgrade to a write (several gunicorn workers on SQLite).
            "transaction_mode": "IMMEDIATE",
        }
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)

# Prepared statements for what every API request and ingested message runs
# (redteam.common.dbutil.prepared_statements). Behind PgBouncer in transaction pooling, they
# need PgBouncer 1.21 or later with max_prepared_statements set; turn them off otherwise.
DATABASE_PREPARED_STATEMENTS: bool = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)

# PostgreSQL settings for the app's sessions (DATABASE_SESSION_SETTINGS, comma-separated
# name=value; empty: the server's own). Every page reads a keyset range bounded by its page
# size, so the planner's whole-table cost estimates mislead two features at 10M pieces:
# parallel workers (full-text search: 15 ms serial, 50 ms with two workers starting) and JIT
# compilation (the review queues' bounded counts: 15 ms of execution, 267 ms compiling).
# The only prepared statements are the key lookups and writes of DATABASE_PREPARED_STATEMENTS,
# so they always take their generic plan: left to choose, PostgreSQL planned the stored-piece
# lookup again on every request, its generic plan costed for ten ids where one was sent.
# Behind PgBouncer, which does not pass startup options, set them on the role instead.
DATABASE_SESSION_SETTINGS = env.list(
    "DATABASE_SESSION_SETTINGS",
    default=["jit=off", "max_parallel_workers_per_gather=0", "plan_cache_mode=force_generic_plan"],
)


def _postgres_session_options(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with DATABASE_SESSION_SETTINGS added to its libpq `options` (PostgreSQL)."""
    if "postgresql" not in config["ENGINE"] or not DATABASE_SESSION_SETTINGS:
        return config
    options = dict(config.get("OPTIONS", {}))
    settings = " ".join(f"-c {setting.strip()}" for setting in DATABASE_SESSION_SETTINGS)
    options["options"] = f"{options.get('options', '')} {settings}".strip()
    return {**config, "OPTIONS": options}


DATABASES["default"] = _postgres_session_options(DATABASES["default"])

# PostgreSQL streaming replicas (comma-separated URLs): review pages and read APIs read from
# them; writes, and reads of a client that just wrote, stay on the primary
# (redteam/common/replicas.py). Pinned clients read the primary for this many seconds.
# Tests never create, flush or migrate a replica (MIRROR); a test that wants one adds it.
for _number, _url in enumerate(env.list("DATABASE_REPLICA_URLS", default=[]), start=1):
    DATABASES[f"replica{_number}"] = {
        **_postgres_session_options(env.db_url_config(_url)),
        "ATOMIC_REQUESTS": False,
        "CONN_MAX_AGE": DATABASES["default"].get("CONN_MAX_AGE", 0),
        "TEST": {"MIRROR": "default"},
    }
DATABASE_REPLICAS = [alias for alias in DATABASES if alias != "default"]
DATABASE_REPLICA_PIN_SECONDS = env.int("DATABASE_REPLICA_PIN_SECONDS", default=10)
DATABASE_ROUTERS = ["redteam.common.replicas.ReplicaRouter"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=VAR_DIR / "staticfiles")
MEDIA_ROOT = env.path("MEDIA_ROOT", default=VAR_DIR / "media")
# Media bytes: a local folder (MEDIA_ROOT; a shared volume when several app servers run) or,
# with MEDIA_STORAGE=s3, an S3-compatible bucket through django-storages (`pip install
# redteam[s3]`). Blobs are named by sha256 only, so any backend that can save/open/exists works.
MEDIA_STORAGE: str = env.str("MEDIA_STORAGE", default="filesystem")
_MEDIA_BACKENDS = {
    "filesystem": "django.core.files.storage.FileSystemStorage",
    "s3": "storages.backends.s3.S3Storage",
}
if MEDIA_STORAGE not in _MEDIA_BACKENDS:
    raise environ.ImproperlyConfigured(
        f"MEDIA_STORAGE must be one of {sorted(_MEDIA_BACKENDS)}, got {MEDIA_STORAGE!r}"
    )
_MEDIA_OPTIONS: dict[str, object] = {}
if MEDIA_STORAGE == "s3":
    # Credentials come from boto3's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an
    # instance role, ...). Objects stay private: downloads go through the app, which checks
    # the API key or session and sets safe content types.
    _MEDIA_OPTIONS = {
        "bucket_name": env.str("MEDIA_S3_BUCKET"),
        "endpoint_url": env.str("MEDIA_S3_ENDPOINT_URL", default="") or None,
        "region_name": env.str("MEDIA_S3_REGION", default="") or None,
        "location": env.str("MEDIA_S3_PREFIX", default="media"),
        "default_acl": "private",
        "file_overwrite": False,
        "querystring_auth": True,
    }
STORAGES = {
    "default": {"BACKEND": _MEDIA_BACKENDS[MEDIA_STORAGE], "OPTIONS": _MEDIA_OPTIONS},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}

# Login rate limiting (django-axes): after AXES_FAILURE_LIMIT failed logins for one username
# from one address, that pair is locked out (HTTP 429) for AXES_COOLOFF_TIME hours. Locking
# the pair (not the username alone) means a guesser cannot lock a reviewer out from elsewhere.
# Axes must come first so it can refuse before the password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED: bool = env.bool("AXES_ENABLED", default=True)
AXES_FAILURE_LIMIT: int = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME: float = env.float("AXES_COOLOFF_TIME", default=0.25)  # hours
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Behind N trusted reverse proxies, the client address is the Nth from the right of
# X-Forwarded-For; with 0 (no proxy) it is REMOTE_ADDR, which a client cannot forge.
REDTEAM_TRUSTED_PROXY_COUNT: int = env.int("REDTEAM_TRUSTED_PROXY_COUNT", default=0)
AXES_CLIENT_IP_CALLABLE = "redteam.common.security.client_ip"
# API key guessing: after REDTEAM_API_KEY_FAILURE_LIMIT failed keys from one client address
# (the same address as above, so proxies are handled alike) within
# REDTEAM_API_KEY_FAILURE_WINDOW seconds, that address gets 429 with Retry-After until the
# window ends, even with a correct key. 0 turns the limit off.
REDTEAM_API_KEY_FAILURE_LIMIT: int = env.int("REDTEAM_API_KEY_FAILURE_LIMIT", default=20)
REDTEAM_API_KEY_FAILURE_WINDOW: int = env.int("REDTEAM_API_KEY_FAILURE_WINDOW", default=900)

# Review queues: opening an item holds it for this many minutes, so reviewers working one
# queue never get the same item from "next" (scoring/queues.py).
REVIEW_CLAIM_MINUTES: int = env.int("REVIEW_CLAIM_MINUTES", default=10)
# Live pages: how often (seconds) an open list, queue, dashboard or running conversation asks
# whether new rows arrived (redteam/common/live.py); hidden tabs ask less often.
REDTEAM_LIVE_POLL_SECONDS: int = env.int("REDTEAM_LIVE_POLL_SECONDS", default=12)

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# Request limits: ingestion bodies are capped here and again, with a readable 413, by the API.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=64 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024
REDTEAM_MAX_BODY_BYTES: int = env.int("REDTEAM_MAX_BODY_BYTES", default=64 * 1024 * 1024)
REDTEAM_MAX_ITEMS: int = env.int("REDTEAM_MAX_ITEMS", default=20_000)
REDTEAM_MAX_MEDIA_BYTES: int = env.int("REDTEAM_MAX_MEDIA_BYTES", default=256 * 1024 * 1024)
# Per item: longest string and deepest nesting inside one ingested item. A longer or deeper
# item is rejected alone (207), never its batch, on push and import alike. PyRIT stores any
# length: the default admits any real response, and the body limit caps one request.
REDTEAM_MAX_STRING_CHARS: int = env.int("REDTEAM_MAX_STRING_CHARS", default=16 * 1024 * 1024)
REDTEAM_MAX_JSON_DEPTH: int = env.int("REDTEAM_MAX_JSON_DEPTH", default=64)
# One human-labels file (scoring.human_labels): results, and characters of objectives and
# responses; past either the download answers 400 and asks for narrower filters.
HUMAN_LABELS_MAX_ROWS: int = env.int("HUMAN_LABELS_MAX_ROWS", default=5_000)
HUMAN_LABELS_MAX_CHARS: int = env.int("HUMAN_LABELS_MAX_CHARS", default=32 * 1024 * 1024)

REST_FRAMEWORK = {
    # API keys (Authorization: Bearer) first, so a missing key is answered with 401; browser
    # users fall through to their session. See redteam/common/api_auth.py for the scope policy.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "redteam.common.api_auth.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Every endpoint needs auth; GETs need the "read" scope unless a view says otherwise.
    "DEFAULT_PERMISSION_CLASSES": ["redteam.common.api_auth.HasReadScope"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Non-finite floats go out as NaN/Infinity tokens, as PyRIT's own json.dumps writes them.
    "DEFAULT_RENDERER_CLASSES": ["redteam.common.renderers.PyritJSONRenderer"],
}

SPECTACULAR_SETTINGS = {
    "TITLE": "redteam API",
    "DESCRIPTION": "Ingest and read PyRIT memory: message pieces, scores, attack results, seeds.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["redteam.common.api_auth.HasReadScope"],
    # Swagger UI from our own static files: the CSP allows no third-party origins.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Document the framework's own error answers (401/403/400/404/415) on every operation.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "redteam.common.openapi.add_error_responses",
    ],
}

# Content-Security-Policy: no inline script anywhere, no third-party origins. Ingested content
# is hostile, so even an escaping bug must not be able to run script or call out.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "media-src": ["'self'"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "frame-ancestors": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
    }
}

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT: bool = env.bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE: bool = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE: bool = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS: int = env.int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = not DEBUG
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Load balancers probe /health/ over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="WARNING")},
}

# Where PyRIT fixture data lives for tests and demo data (never copied into the repository).
REDTEAM_FIXTURES = env.path("REDTEAM_FIXTURES", default=BASE_DIR.parent / "shared" / "fixtures")
