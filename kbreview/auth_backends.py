"""Sign-in throttling (django-axes) for every sign-in that comes with a request."""
from __future__ import annotations

from axes.backends import AxesStandaloneBackend


class RequestThrottledBackend(AxesStandaloneBackend):
    """Axes' lockout check, skipped when there is no request to attribute the attempt to (Django's test
    client `login()`, scripts): every sign-in form and view passes its request, so those stay throttled."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
