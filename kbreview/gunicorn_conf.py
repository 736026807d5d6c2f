"""gunicorn settings for production: `gunicorn -c kbreview/gunicorn_conf.py kbreview.wsgi`.

Threaded workers, so a client that sends its body slowly holds one thread, not a whole worker: with the
sync worker two such clients stalled every request behind them (/healthz took 35 s). For clients on the
open internet put a buffering proxy in front as well (README, "Production"), which reads whole bodies
before gunicorn sees them. Every value can be overridden on the command line or with GUNICORN_CMD_ARGS.
"""
import os

bind = os.environ.get("WEB_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_WORKERS", "2"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "8"))
# A request (slow body included) that takes longer than this is ended and its worker replaced.
timeout = int(os.environ.get("WEB_TIMEOUT_S", "30"))
graceful_timeout = 20
keepalive = 5
# Header limits as gunicorn's defaults, stated: bigger headers are refused with 400 before any Django code.
limit_request_line = 8190
limit_request_fields = 100
