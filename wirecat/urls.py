from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from archive.owner import views as owner_views
from wirecat.api import api

admin.site.site_header = "WireCat administration"
admin.site.site_title = "WireCat admin"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("login/code/<str:code>/", owner_views.login_with_code, name="login_code"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("tasks/", include("tasks.urls")),
    path("", include("archive.urls")),
]
