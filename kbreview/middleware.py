"""Edge checks: oversize API bodies get a JSON 413 (instead of Django's generic 400); console query
strings the database cannot hold get a 400; a request that loses the database gets a 503."""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.cache import patch_cache_control

from kbreview.input_limits import text_problem

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

        if isinstance(exception, (OperationalError, InterfaceError)):
            return database_unavailable_response(request, exception)
        return None


class RefuseUnstorableQueryMiddleware:
    """Console query strings and form fields holding NUL or other control characters get a 400 naming
    the parameter, instead of reaching a database query that cannot carry them (a 500). The API checks
    its own input and answers 422."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith("/api/"):
            sources = [("Query parameter", request.GET)]
            if request.method == "POST" and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
                sources.append(("Form field", request.POST))
            for label, data in sources:
                for name, values in data.lists():
                    for value in (name, *values):
                        # Tabs and line breaks are text; NUL and other controls are not.
                        reason = text_problem(value, multiline=True, required=False)
                        if reason:
                            return HttpResponseBadRequest(
                                f"{label} {name[:50]!r} {reason}.", content_type="text/plain; charset=utf-8"
                            )
        return self.get_response(request)


class NoStoreWhenSignedInMiddleware:
    """Pages shown to a signed-in user hold a knowledge base's data: no shared or back-button caches."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.has_header("Cache-Control") or response.has_header("X-Unavailable-Cause"):
            return response
        user = getattr(request, "user", None)
        if user is None:
            return response
        try:
            signed_in = user.is_authenticated  # loads the session: a database read
        except DatabaseError:
            # The database went away during the request: no page of data was rendered, and this must not
            # turn the 503 (or whatever was built) into a 500.
            signed_in = True
        if signed_in:
            patch_cache_control(response, private=True, no_store=True)
        return response
