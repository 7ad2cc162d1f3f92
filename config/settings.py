"""Settings, read from the environment (django-environ).

Required outside tests and `make run`: SECRET_KEY, DATABASE_URL, REDIS_URL. `make run`
and `make test` fill DATABASE_URL/REDIS_URL with embedded servers when they are unset.
"""

from datetime import timedelta
import os
from pathlib import Path

import environ
from whitenoise.compress import Compressor

from config.embedded import running_servers
from config.limits import LIMITS

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

DEBUG = env.bool("DEBUG", default=False)
TESTING = env.bool("CONCORD_TESTING", default=False)
# A developer's server on loopback over plain http (`make run` sets it; DEBUG=1 implies it): loopback
# hosts, cookies without Secure, static files from the source folders, a throwaway key. Errors still
# show the product's pages: Django's debug page (settings, local variables) only where DEBUG=1 is asked for.
LOCAL_SERVING = env.bool("CONCORD_LOCAL_SERVING", default=False) or DEBUG

SECRET_KEY = env.str("SECRET_KEY", default="")
SECRET_KEY_MISSING = not SECRET_KEY
if SECRET_KEY_MISSING:
    if LOCAL_SERVING or TESTING:
        # Only for a developer's machine and the test suite; production must set it.
        SECRET_KEY = "insecure-dev-only-key-do-not-use-in-production"
    else:
        # Offline commands (agreement, gold_eval) need no key; serving does: config/wsgi.py and the
        # Celery app refuse to start without one, so this throwaway key never signs anything served.
        import secrets

        SECRET_KEY = secrets.token_urlsafe(50)

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"] if LOCAL_SERVING or TESTING
                         else [])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# What a judge may reach and name (judges/egress.py): loopback and private endpoints are open on a developer's
# machine and in the tests, in production only those listed (hosts, addresses, networks such as 10.20.0.0/16);
# key variables end in _API_KEY or start with JUDGE_, or are listed here.
JUDGE_LOCAL_ENDPOINTS = LOCAL_SERVING or TESTING
JUDGE_PRIVATE_ENDPOINTS = env.list("CONCORD_JUDGE_PRIVATE_ENDPOINTS", default=[])
JUDGE_KEY_VARIABLES = env.list("CONCORD_JUDGE_KEY_VARIABLES", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served from our own /static/ (no CDN)
    "django_htmx",
    "template_partials",
    "rubrics",
    "annotation",
    "judges",
    "axes",
    "csp",
    "config.apps.ConcordConfig",  # the project's own system checks (config/checks.py)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Right after SecurityMiddleware: static files are answered before sessions or the database are touched.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.errors.UploadSizeMiddleware",  # an oversized upload: 413 before its body is read
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",  # the Content-Security-Policy of every response (CONTENT_SECURITY_POLICY)
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during authentication into its response.
    "axes.middleware.AxesMiddleware",
    # Innermost, so it sees a view's database error before anything renders a 500.
    "config.errors.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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
            # {% translate %} in every template without a {% load %} (the rater's pages are translated).
            "builtins": ["django.templatetags.i18n"],
        },
    },
]

# While `make run` (or make test/bench) serves on its embedded servers, their URLs are in
# .data/servers.env: a manage.py started beside it, with the variables unset, uses the same servers.
for _name, _url in running_servers(Path(env.str("CONCORD_DATA_DIR", default=str(BASE_DIR / ".data")))).items():
    os.environ.setdefault(_name, _url)

# Management commands that need no database (agreement, gold_eval) still import settings,
# so an unset DATABASE_URL is only an error when a connection is actually made: then
# config.unset_db says what to do.
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": env.db("DATABASE_URL")}
else:
    DATABASES = {"default": {"ENGINE": "config.unset_db", "NAME": "concord-DATABASE_URL-unset", "HOST": "",
                             "USER": "", "PASSWORD": "", "PORT": ""}}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The same backend, whose health check needs no round trip while the connection's socket is quiet.
    DATABASES["default"]["ENGINE"] = "config.postgres"
# The rating loop's statements are prepared on the server (annotation.db); off for a pooler that
# cannot keep prepared statements (PgBouncer before 1.21 in transaction mode).
DATABASE_PREPARED_STATEMENTS = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)
# Behind a transaction-mode pooler a cursor cannot outlive its transaction (Django's advice: turn them off).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool("DATABASE_DISABLE_SERVER_SIDE_CURSORS", default=False)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")

CACHES = {"default": {"BACKEND": "config.cache.RedisCache", "LOCATION": REDIS_URL}}

# Sessions read from Redis, written through to PostgreSQL: one query fewer on every request.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

if TESTING:
    # Hashing is deliberately slow (~0.2 s a password); tests create and sign in hundreds of users.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Login throttling (django-axes): after AXES_FAILURE_LIMIT failed logins for one username from one
# IP address, that pair is refused (HTTP 429, even with the right password) for AXES_COOLOFF_TIME.
# Keyed on username+IP, so an attacker elsewhere cannot lock a rater out (and on the address alone, below).
# Behind a reverse proxy set TRUSTED_PROXY_COUNT to the number of proxies, so the client address comes from
# X-Forwarded-For.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "annotation.auth_backend.ModelBackend",  # Django's, the session user read by a prepared statement
]
AXES_ENABLED = env.bool("AXES_ENABLED", default=True)
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# 15 minutes from the tenth failure, not from the latest refused try: a rater who keeps retrying is
# not kept out for ever, and a guesser still gets at most ten tries per quarter hour.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_VERBOSE = False  # no banner on every manage.py command; lockouts are still logged (LOGGING)
# And per address over all accounts: LOGIN_ADDRESS_FAILURE_LIMIT failures within AXES_COOLOFF_TIME lock that
# address out for every account (config/login_throttle.py), so that one address cannot spray passwords.
AXES_HANDLER = "config.login_throttle.AddressAwareHandler"
LOGIN_ADDRESS_FAILURE_LIMIT = env.int("LOGIN_ADDRESS_FAILURE_LIMIT", default=30)
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)  # reverse proxies in front of Concord


def axes_client_ip(request) -> str | None:
    """The client's address: REMOTE_ADDR, or behind TRUSTED_PROXY_COUNT proxies the X-Forwarded-For entry
    the outermost proxy appended (entries further left are whatever the client sent)."""
    from django.conf import settings

    forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
    if settings.TRUSTED_PROXY_COUNT and len(forwarded) >= settings.TRUSTED_PROXY_COUNT:
        return forwarded[-settings.TRUSTED_PROXY_COUNT]
    return request.META.get("REMOTE_ADDR")


AXES_CLIENT_IP_CALLABLE = axes_client_ip

CSRF_FAILURE_VIEW = "config.errors.csrf_failure"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
# The interface's languages: English and a complete German translation of every page a rater sees
# (locale/de/; the compiled .mo is committed). A study may fix its raters' language (Study.language);
# otherwise LocaleMiddleware takes the browser's Accept-Language.
LANGUAGES = [("en", "English"), ("de", "Deutsch")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Static files: gunicorn serves them itself through WhiteNoise, from STATIC_ROOT as `collectstatic` left it
# (the Dockerfile runs it at build): content-hashed names cached for a year, with .gz and .br beside each.
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # The test suite and a local server serve the source files through the finders, so nothing needs
    # collecting first; tests/prod runs gunicorn on the hashed, compressed files as production does.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if TESTING or LOCAL_SERVING
        else "whitenoise.storage.CompressedManifestStaticFilesStorage",
    },
}
WHITENOISE_USE_FINDERS = LOCAL_SERVING or TESTING
WHITENOISE_AUTOREFRESH = LOCAL_SERVING or TESTING
# Only the content-hashed copy of each file is kept and compressed: templates and the API docs link hashed names
# (`{% static %}`), so the plain copies were never served but doubled collectstatic's Brotli work and the image.
WHITENOISE_KEEP_ONLY_HASHED_FILES = True
# Source maps (6.3 MB of Swagger UI's and Redoc's 9.4 MB) are fetched by a developer's browser tools alone:
# Brotli at its best level spent most of collectstatic's CPU on them.
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")
MEDIA_ROOT = env.path("MEDIA_ROOT", default=BASE_DIR / ".data" / "media")

# Overrides of config/limits.py's values by key, as JSON (e.g. {"exports.per_study_per_hour": 500}).
CONCORD_LIMITS: dict[str, int] = env.json("CONCORD_LIMITS", default={})
# The body size comes from the table of limits, as every other bound does.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(CONCORD_LIMITS.get("request.body", LIMITS["request.body"].value))
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024  # larger uploaded files wait in a temporary file, not in memory

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "annotation.api_tokens.ExpiringTokenAuthentication",  # DRF's, with an expiry (API_TOKEN_DAYS)
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "config.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
API_TOKEN_DAYS = env.int("API_TOKEN_DAYS", default=90)  # a token's life; its owner makes a new one on /account/tokens/
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Human evaluation of AI-generated text with LLM judges.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["annotation.api.MayReadApiDocs"],  # staff and study members, not crowd participants
    # Two models have a `status` with different choices; name each enum after its model.
    "ENUM_NAME_OVERRIDES": {
        "StudyStatusEnum": "annotation.models.Study.Status",
        "JudgeRunStatusEnum": "judges.models.JudgeRun.Status",
    },
    # Swagger UI from drf-spectacular-sidecar's files under /static/, so /api/docs/ works with no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "annotation.api.document_error_responses",
    ],
}

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "default"
# Queues and time limits by kind of work: config/celery.py TASK_KINDS. A task of a kind past its limit
# (seconds) fails with that reason; TASK_HARD_LIMIT_GRACE_S later its process is killed. A judge chunk's
# limit stays below the broker's visibility timeout (it would be handed to a second worker meanwhile).
TASK_TIME_LIMITS = {"judges": env.int("TASK_TIME_LIMIT_JUDGES_S", default=600),
                    "builds": env.int("TASK_TIME_LIMIT_BUILDS_S", default=1800),
                    "housekeeping": env.int("TASK_TIME_LIMIT_HOUSEKEEPING_S", default=300)}
TASK_HARD_LIMIT_GRACE_S = 30
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT = "config.broker_transport:Transport"  # a dropped connection fails as a lost broker
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Publishing (a run's chunks, a release build, a task's own retry) waits out a Redis restart
# of a few seconds (0.5 + 1 + 1.5 + 2 + 2 + 2 = 9 s) instead of Celery's default ~1 s, after
# which the web request failed and left a run queued with no chunk anywhere (tests/faults).
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 6, "interval_start": 0.5, "interval_step": 0.5,
                                    "interval_max": 2.0}
# On a broker connection loss, chunks already running finish and write their scores (writes are
# idempotent); cancelling them (Celery 6's announced default) would leave them for the visibility
# timeout, as their unacked messages cannot be restored while Redis is down.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# A task unacknowledged this long is redelivered (a killed worker's chunk comes back after it);
# keep it above the longest judge chunk. Redelivery is harmless: every score is written once.
# A consumer whose BRPOP connection went stale in a Redis restart (celery#8030, #9054: the worker
# reconnects, then consumes nothing) is dropped and reconnected once its reply is overdue by the
# health-check interval: kombu's default of 25 s left a CI run idle for over a minute; a PING
# every 5 s costs nothing. kombu 5.7 looks for unacknowledged messages past the visibility timeout every
# 10 s but scans only on every 10th look: a chunk whose consumer was lost in a broker restart came back
# up to 100 s after it was due (a CI run waited 90 s for it). One look, one scan (a ZRANGE a worker).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=900),
                                   "health_check_interval": env.int("CELERY_BROKER_HEALTH_CHECK_S", default=5),
                                   "unacked_restore_throttle": 1}
# Workers look for judge chunks and release builds whose messages the broker lost after each
# (re)connection and also this often: a message lost without a reconnection the consumer noticed
# (a Redis restart kombu absorbed below it) would otherwise leave its run waiting forever. 0: only
# after connections.
CELERY_LOST_WORK_SWEEP_S = env.float("CELERY_LOST_WORK_SWEEP_S", default=300.0)

# Annotation
ASSIGNMENT_TTL_SECONDS = env.int("ASSIGNMENT_TTL_SECONDS", default=30 * 60)
# Crowd participants (annotation.services.crowd): another browser with the same panel ids takes a participant
# over only once the holding browser was idle this long; their sessions last this long (staff's: SESSION_COOKIE_AGE).
CROWD_BROWSER_IDLE_MINUTES = env.int("CROWD_BROWSER_IDLE_MINUTES", default=15)
CROWD_SESSION_SECONDS = env.int("CROWD_SESSION_SECONDS", default=4 * 3600)
# Connections one bulk read (export, report) may use at once, each on a range of the ratings.
BULK_READ_WORKERS = env.int("BULK_READ_WORKERS", default=min(4, os.cpu_count() or 1))
# A study with this many ratings (the triggers' change count) has its report computed by a worker,
# not in the web request that asks for it (annotation.reports.background).
REPORT_BACKGROUND_RATINGS = env.int("REPORT_BACKGROUND_RATINGS", default=200_000)
REPORT_SECTIONS = ["annotation.reports.facets.answer_facets", "judges.report_section.judges_vs_humans",
                   "judges.report_trust.judge_trust"]  # sections other apps add to the study report (each
# names what it reads with an `inputs` attribute, so that it is kept until that changes: annotation/reports/sections.py)
REPORT_SUMMARIES = ["judges.report_summary.judges_summary"]  # parts other apps add to the report's summary
# Where the human side reads the judges' scores per output, as plain rows (the plan page's active-sampling prediction).
STUDY_JURY = "judges.selectors.study_jury"

# Security by default; relaxed only where a local server serves plain http on loopback.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"
# No inline script, no eval, nothing from other origins: scripts and styles come from our static files (htmx
# vendored, configured without eval in _base.html). Inline style attributes stay allowed (templates set widths
# and colours with them; they run no code). The documentation site adds the hashes of its own inline scripts
# (config/docs_site.py); Swagger UI loads its initialiser as a file (SpectacularSwaggerSplitView); the pages that
# show a study's sandboxed HTML outputs allow inline scripts (annotation.views.workspace.allow_output_frames).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "worker-src": ["'self'", "blob:"],  # the docs site's search runs in a worker
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
if not LOCAL_SERVING and not TESTING:
    SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=True)
    CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=True)
    # Production serves HTTPS only: plain http is redirected and browsers keep to HTTPS for a year (HSTS). A
    # proxy that ends TLS sets X-Forwarded-Proto (SECURE_PROXY_SSL_HEADER below). A deployment that says it
    # serves plain http on purpose (SESSION_COOKIE_SECURE=0: the benchmarks' servers on loopback) gets neither;
    # health checks over plain http go to paths in SECURE_REDIRECT_EXEMPT (regular expressions).
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=SESSION_COOKIE_SECURE)
    SECURE_REDIRECT_EXEMPT = env.list("SECURE_REDIRECT_EXEMPT", default=[])
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if SESSION_COOKIE_SECURE else 0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # no credential in a log line (config/logmask.py); the Celery worker's handlers get it too (config/celery.py)
    "filters": {"secrets": {"()": "config.logmask.SecretsFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["secrets"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "axes": {"level": "WARNING"},  # lockouts; not a line for every login
    },
}
