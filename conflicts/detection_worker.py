"""The detection process (`python -m conflicts.detection_worker`), started by the web process when no
Celery broker is configured: reads turn ids, one per line, and checks each on a thread of its own."""
from __future__ import annotations

import json
import os
import sys


def main() -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections

    from conflicts.services.detection import detect_in_background, drain_background
    from conflicts.services.detection_process import CONFIG_ENV

    config = json.loads(os.environ.get(CONFIG_ENV, "{}"))
    if "database_name" in config:
        connections["default"].settings_dict["NAME"] = config.pop("database_name")
    for name, value in config.items():
        setattr(settings, name, value)
    for line in sys.stdin:
        line = line.strip()
        if line.isdigit():
            detect_in_background(turn_id=int(line))
    drain_background()  # stdin closed: finish what was handed over, then exit


if __name__ == "__main__":
    main()
