"""A detection process beside the web process: the embedded default's stand-in for a Celery worker.

Checks run in threads of one long-lived child process (`python -m conflicts.detection_worker`), so a
reply never shares the web process's interpreter lock with them (on threads of the web process they
slowed replies by a third or more under load). The web process only writes turn ids to its stdin.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

# The settings a check reads. The child is started with the parent's values, so a process whose
# settings were changed at run time (tests, benchmarks) never checks with stale ones.
CHECK_SETTINGS = (
    "LLM", "LLM_PURPOSES", "DETECTION_DETECTOR", "DETECTION_TIMEOUT_S", "CITATION_PATTERN",
    "MACR_MIN_COVERAGE", "MACR_MIN_SUPPORT", "MACR_ENTROPY_THRESHOLD",
)
CONFIG_ENV = "KBREVIEW_DETECTION_WORKER_CONFIG"
_ROOT = Path(__file__).resolve().parents[2]

_lock = threading.Lock()
_child: subprocess.Popen | None = None
_child_config: dict | None = None


def _current_config() -> dict:
    from django.conf import settings
    from django.db import connection

    return {"database_name": connection.settings_dict["NAME"], **{n: getattr(settings, n) for n in CHECK_SETTINGS}}


def _start(config: dict) -> subprocess.Popen:
    env = {**os.environ, CONFIG_ENV: json.dumps(config), "DJANGO_SETTINGS_MODULE": os.environ.get(
        "DJANGO_SETTINGS_MODULE", "kbreview.settings")}
    logger.info("starting the detection process")
    return subprocess.Popen(
        [sys.executable, "-m", "conflicts.detection_worker"], cwd=_ROOT, env=env, stdin=subprocess.PIPE, text=True
    )


def _stop(child: subprocess.Popen) -> None:
    """Closing stdin lets the child finish the checks it was given, then exit."""
    try:
        child.stdin.close()
    except OSError:
        pass


def submit_to_detection_process(*, turn_id: int) -> None:
    global _child, _child_config
    config = _current_config()
    with _lock:
        if _child is None or _child.poll() is not None or config != _child_config:
            if _child is not None:
                _stop(_child)
            _child, _child_config = _start(config), config
        try:
            _child.stdin.write(f"{turn_id}\n")
            _child.stdin.flush()
        except (BrokenPipeError, OSError):
            logger.warning("the detection process died; starting a new one")
            _child = _start(config)
            _child.stdin.write(f"{turn_id}\n")
            _child.stdin.flush()
