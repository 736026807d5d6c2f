"""Refuse oversize API bodies up front with a JSON 413 (instead of Django's generic 400), and answer
503 when the database is unreachable."""
from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpResponse, JsonResponse

logger = logging.getLogger(__name__)


class ApiBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return JsonResponse({"detail": "invalid Content-Length header"}, status=400)
            if length > settings.API_MAX_BODY_BYTES:
                return JsonResponse(
                    {"detail": f"request body of {length} bytes exceeds the limit of {settings.API_MAX_BODY_BYTES} bytes"},
                    status=413,
                )
        return self.get_response(request)


DATABASE_RETRY_AFTER_S = 5


def database_unavailable_response(request, exception) -> HttpResponse:
    """503 with Retry-After and the cause, for a request that lost the database."""
    logger.error("database unavailable during %s %s: %s", request.method, request.path, exception)
    detail = f"the database is unavailable; retry after {DATABASE_RETRY_AFTER_S} s"
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail, "cause": "database_unavailable"}, status=503)
    else:
        response = HttpResponse(f"Service unavailable: {detail}.", status=503, content_type="text/plain")
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    response["X-Unavailable-Cause"] = "database"
    return response


class DatabaseUnavailableMiddleware:
    """A request that loses the database answers 503 with Retry-After and the cause, never a 500 with a
    traceback. Its transaction was rolled back by PostgreSQL, so nothing is half-written."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from django.db import InterfaceError, OperationalError

        if isinstance(exception, (OperationalError, InterfaceError)):
            return database_unavailable_response(request, exception)
        return None
