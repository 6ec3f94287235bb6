"""The one NinjaAPI, mounted at /api/ with its docs at /api/docs.

Every operation needs authentication: an agent's token (with the operation's scope) or the
owner's session (with CSRF). Every error, whichever step raises it (authentication, reading
the body, the schemas, a service, a bug), answers the one JSON shape here, once; the
schemas (archive/web/schemas.py) make the OpenAPI say exactly what the server accepts.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.security import django_auth

from archive.conversations.api import router as conversations_router
from archive.files.api import router as files_router
from archive.gateway.api import router as gateway_router
from archive.meaning.api import router as meaning_router
from archive.owner.api import router as owner_router
from archive.people.api import router as people_router
from archive.search.api import router as search_router
from archive.stats.api import router as stats_router
from archive.store.api import router as store_router
from archive.tags.api import router as tags_router
from archive.web.api import AgentToken
from meetings.api import router as meetings_router
from notes.api import router as notes_router
from tasks.api import router as tasks_router
from wirecat.db.faults import store_fault
from wirecat.errors import RateLimited, WireCatError

log = logging.getLogger(__name__)


def docs_access(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The docs page (/api/docs) is the owner's; the schema (/api/openapi.json) is also an
    agent's to read with its token, so that it can learn what it may call. A bad token
    answers 401 in the API's shape; no credentials at all, the login page."""

    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        match = request.resolver_match
        schema = match is not None and match.url_name == "openapi-json"
        if schema and "Authorization" in request.headers:
            try:
                agent = AgentToken()(request)
            except RateLimited as exc:
                return wirecat_error(request, exc)
            if agent is None:
                return authentication_error(request, AuthenticationError())
            return view(request, *args, **kwargs)
        return redirect_to_login(request.get_full_path())

    return guarded


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
    docs_decorator=docs_access,
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


def _problem(error: dict[str, Any]) -> str:
    """One problem of a request that breaks the schema: where (`query.limit`, `body.name`,
    `header.Idempotency-Key`) and what, in the services' words where a check is ours."""
    loc = [str(part) for part in error.get("loc", ())]
    if len(loc) >= 2 and loc[0] == "body" and loc[1] == "body":
        loc = loc[1:]  # ninja names the body parameter itself: body.body.name
    where = ".".join(loc) or "request"
    cause = (error.get("ctx") or {}).get("error")
    what = str(cause) if error.get("type") == "value_error" and cause else error.get("msg")
    return f"{where}: {what or 'invalid'}"


@api.exception_handler(NinjaValidationError)
def validation_error(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    problems = [_problem(error) for error in exc.errors]
    return _error(request, "Invalid", "; ".join(problems) or "invalid request", 422)


@api.exception_handler(AuthenticationError)
def authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _error(
        request, "Unauthorized", "a valid agent token or the owner's session is needed", 401
    )


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:  # ninja could not read the body as JSON
        return _error(request, "Invalid", f"body: not JSON ({exc})", 400)
    kind = {403: "Forbidden", 404: "NotFound"}.get(exc.status_code, "HttpError")  # 403: CSRF
    return _error(request, kind, str(exc), exc.status_code)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, "NotFound", str(exc) or "not found", 404)


@api.exception_handler(MultiPartParserError)
@api.exception_handler(BadRequest)
@api.exception_handler(SuspiciousOperation)
def unreadable_request(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A request Django cannot read (a multipart body without a boundary, too many fields,
    a body over DATA_UPLOAD_MAX_MEMORY_SIZE): 400, whichever step of the API reads it first
    (the session's CSRF check reads a form body before ninja reads the JSON)."""
    return _error(request, "Invalid", f"the request cannot be read: {exc}", 400)


@api.exception_handler(OverflowError)
def overflow(request: HttpRequest, exc: OverflowError) -> HttpResponse:
    """A number the schema let through that SQLite cannot hold (the schemas bound every
    integer, so this is a missing bound: still the API's shape, never a 500 page)."""
    log.warning("integer overflow in %s: %s", request.path, exc)
    return _error(request, "Invalid", "a number is too large for the archive", 422)


@api.exception_handler(Exception)
def server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    """A bug: logged with its traceback, answered in the API's shape (not an HTML page).
    A read-only or full state folder's OSError (a blob, an upload) is its sentence."""
    fault = store_fault(exc)
    if fault is not None:
        return wirecat_error(request, fault)
    log.error("%s %s failed", request.method, request.path, exc_info=exc)
    return _error(
        request, "ServerError", "the server failed; the owner can read why in its log", 500
    )


# The gateway's routes come before the store's: `/messages/send` is literal and must win
# over `/messages/{message_id}`.
for router in (
    owner_router,
    search_router,
    tags_router,
    people_router,
    gateway_router,
    store_router,
    files_router,
    conversations_router,
    meaning_router,
    stats_router,
    tasks_router,
    meetings_router,
    notes_router,
):
    api.add_router("/", router)
