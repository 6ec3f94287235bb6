from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from archive.mcp.views import mcp_endpoint
from archive.owner import views as owner_views
from wirecat.api import api

# A read-only or full store outside a view: its sentence, not a bare "Server Error (500)".
handler500 = "archive.web.middleware.server_error"

admin.site.site_header = "WireCat administration"
admin.site.site_title = "WireCat admin"

# Browsers ask for /favicon.ico where a page names no icon (the API's JSON, a downloaded
# file, the sign-in page before it loads): the icon, to strangers too, as it holds nothing.
favicon = login_not_required(RedirectView.as_view(url=lazy(static, str)("wirecat/favicon.ico")))

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The code is posted in the body (the link holds it in its #fragment): see the view.
    path("login/code/", owner_views.login_with_code, name="login_code"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("mcp", mcp_endpoint, name="mcp"),  # MCP over streamable HTTP, agents only
    path("tasks/", include("tasks.urls")),
    path("meetings/", include("meetings.urls")),
    path("notes/", include("notes.urls")),
    path("", include("archive.urls")),
]
