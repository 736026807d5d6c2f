"""Logging filters named in settings.LOGGING."""
from __future__ import annotations

import logging


class RefusalInOneLine(logging.Filter):
    """A refused request (403: a viewer's forced post, another knowledge base's page) is routine, not a
    fault: Django logs it with the PermissionDenied's traceback; this keeps the line and its reason and
    drops the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403 and record.exc_info:
            reason = str(record.exc_info[1] or "").strip()
            record.msg = f"{record.getMessage()}{f' ({reason})' if reason else ''}"
            record.args = ()
            record.exc_info = record.exc_text = None
        return True
