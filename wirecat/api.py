"""The one NinjaAPI, mounted at /api/ with its docs at /api/docs.

Every operation needs authentication: the owner's session (with CSRF) now, agent tokens
when the agent gateway lands. Domain errors map to HTTP here, once.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.security import django_auth

from archive.api import router as archive_router
from wirecat.errors import WireCatError

api = NinjaAPI(
    title="WireCat API",
    version="1",
    description="The owner's archive for their agents: read, search, send through a guard.",
    auth=django_auth,
    urls_namespace="api",
    docs_decorator=login_required,
)


@api.exception_handler(WireCatError)
def wirecat_error(request: HttpRequest, exc: WireCatError) -> HttpResponse:
    body: dict[str, object] = {"error": type(exc).__name__, "detail": str(exc)}
    position = getattr(exc, "position", None)
    if isinstance(position, int):  # a query syntax error says where
        body["position"] = position
    return api.create_response(request, body, status=exc.http_status)


api.add_router("/", archive_router)
