"""What every page answer goes through: domain errors mapped to the error page once, and
work that waits until the answer has been sent."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views import defaults

from archive.web.pages import error_page
from wirecat.db.faults import store_fault
from wirecat.errors import WireCatError

log = logging.getLogger(__name__)

_AFTER = "_wirecat_after_response"


class PageErrors:
    """A `WireCatError` a page raises becomes the error page with its message and its
    `http_status` (the htmx fragment for an htmx request), here, for every page. The API
    maps the same errors to JSON itself (wirecat/api.py) and never lets one through here;
    a read-only or full store's OSError (a blob, an upload) is its StoreFault's page; any
    other exception is left to Django (a bug is a 500, not a message)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, WireCatError):
            return error_page(request, exception)
        fault = store_fault(exception)
        if fault is not None:
            return error_page(request, fault)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 handler (`handler500` in wirecat/urls.py), for what fails outside a view
    (a session saved after the answer, the sign-in throttle's file): a store fault is its
    sentence, as a page or, under /api/, in the API's JSON shape; a bug stays Django's bare
    500. Called while the exception is being handled, so `sys.exc_info()` holds it."""
    fault = store_fault(sys.exc_info()[1] or Exception())
    if fault is None:
        return defaults.server_error(request)
    if request.path.startswith("/api/"):
        body = {"error": type(fault).__name__, "detail": str(fault)}
        return JsonResponse(body, status=fault.http_status)
    try:
        return error_page(request, fault)
    except Exception:  # the page needs the store too: the sentence alone, then
        return HttpResponse(str(fault), status=fault.http_status, content_type="text/plain")


def after_response(request: HttpRequest, work: Callable[[], object]) -> None:
    """Do `work` once this request's answer has been sent, so that it never holds the
    answer up (a short write the read does not need, such as recording a search). What
    `work` raises is logged, never shown: the answer is already gone."""
    request.__dict__.setdefault(_AFTER, []).append(work)


def _run(work: Callable[[], object]) -> None:
    try:
        work()
    except Exception:  # Django drops what a closer raises without a word: say it
        log.exception("work after the response failed")


class AfterResponse:
    """Runs the work `after_response` queued on a request when the server closes the
    response, after the last byte is written (the test client closes it before returning
    it). The closers are the ones Django uses for a file response's file."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        for work in request.__dict__.pop(_AFTER, ()):
            response._resource_closers.append(functools.partial(_run, work))  # type: ignore[attr-defined]
        return response
