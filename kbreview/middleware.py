"""Refuse oversize API bodies up front with a JSON 413 (instead of Django's generic 400)."""
from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse


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
