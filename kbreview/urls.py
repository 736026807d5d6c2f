from django.contrib import admin
from django.http import HttpResponse, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from conflicts.api import api


def healthz(request):
    """Liveness for load balancers and supervisors: the process answers (no database, no login)."""
    return HttpResponse("ok", content_type="text/plain")


@csrf_exempt  # API clients send no CSRF token: an unknown path is a JSON 404, not the console's CSRF page
def api_not_found(request, rest=""):
    # API clients get JSON for paths the API does not have, never the console's HTML page.
    detail = f"no API path {request.path}"
    if request.path.endswith("/") and request.path != "/api/v1/":
        detail += f"; API paths have no trailing slash (did you mean {request.path.rstrip('/')}?)"
    return JsonResponse({"detail": detail}, status=404)


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("", include("conflicts.urls")),
]
