from django.contrib import admin
from django.http import HttpResponse
from django.urls import include, path

from conflicts.api import api


def healthz(request):
    """Liveness for load balancers and supervisors: the process answers (no database, no login)."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("", include("conflicts.urls")),
]
