"""The one NinjaAPI, mounted at /api/ with its docs at /api/docs.

Every operation needs authentication: the owner's session (with CSRF) now, agent tokens
when the agent gateway lands. Domain errors map to HTTP here, once.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import django_auth

from archive.gateway.api import router as gateway_router
from archive.owner.api import router as owner_router
from archive.people.api import router as people_router
from archive.search.api import router as search_router
from archive.store.api import router as store_router
from archive.tags.api import router as tags_router
from archive.web.api import AgentToken
from tasks.api import router as tasks_router
from wirecat.errors import RateLimited, WireCatError

api = NinjaAPI(
    title="WireCat API",
    version="1",
    description=(
        "The owner's archive for their agents: read, search, tag, send through a guard.\n\n"
        "Authenticate with an agent's token (`Authorization: Bearer wct_…`, made on the "
        "Agents page) or the owner's session. Each operation names the scope an agent needs "
        '(`x-scope`). Every error answers the same JSON shape: `{"error": kind, '
        '"detail": what and where}` (plus `position` for a query syntax error); 429 comes '
        "with `Retry-After`."
    ),
    auth=[AgentToken(), django_auth],
    urls_namespace="api",
    docs_decorator=login_required,
)


def _error(
    request: HttpRequest, kind: str, detail: str, status: int, **extra: object
) -> HttpResponse:
    return api.create_response(request, {"error": kind, "detail": detail, **extra}, status=status)


@api.exception_handler(WireCatError)
def wirecat_error(request: HttpRequest, exc: WireCatError) -> HttpResponse:
    extra: dict[str, object] = {}
    position = getattr(exc, "position", None)
    if isinstance(position, int):  # a query syntax error says where
        extra["position"] = position
    response = _error(request, type(exc).__name__, str(exc), exc.http_status, **extra)
    if isinstance(exc, RateLimited):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(NinjaValidationError)
def validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    problems = []
    for error in exc.errors:
        where = ".".join(str(part) for part in error.get("loc", ()))
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return _error(request, "Invalid", "; ".join(problems) or "invalid request", 422)


@api.exception_handler(AuthenticationError)
def authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(
        request, "Unauthorized", "a valid agent token or the owner's session is needed", 401
    )


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return _error(request, "HttpError", str(exc), exc.status_code)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, "NotFound", str(exc) or "not found", 404)


# The gateway's routes come before the store's: `/messages/send` is literal and must win
# over `/messages/{message_id}`.
for router in (
    owner_router,
    search_router,
    tags_router,
    people_router,
    gateway_router,
    store_router,
    tasks_router,
):
    api.add_router("/", router)
