"""The project's URLs: the shell's (signing in, the dashboard, switching knowledge base), then each app's screens
(articles.urls, conflicts.urls), the API and the admin. Each URL keeps its path and name wherever its view lives."""
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpResponse, JsonResponse
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import RedirectView

from conflicts.api import api
from kbreview.views import shell


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


# The console's shell; the tests walk these with articles.urls and conflicts.urls (tests/support/console_urls.py).
shell_urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page says; send them to the SVG icon.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", shell.home, name="home"),
    path("kb/switch/", shell.kb_switch, name="kb_switch"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    *shell_urlpatterns,
    path("", include("articles.urls")),
    path("", include("conflicts.urls")),
]
