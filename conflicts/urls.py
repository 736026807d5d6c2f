from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.urls import path


def home(request):
    return HttpResponse("kbreview")


urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", home, name="home"),
]
