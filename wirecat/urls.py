from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from archive.owner import views as owner_views
from wirecat.api import api

# A read-only or full store outside a view: its sentence, not a bare "Server Error (500)".
handler500 = "archive.web.middleware.server_error"

admin.site.site_header = "WireCat administration"
admin.site.site_title = "WireCat admin"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The code is posted in the body (the link holds it in its #fragment): see the view.
    path("login/code/", owner_views.login_with_code, name="login_code"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("tasks/", include("tasks.urls")),
    path("", include("archive.urls")),
]
