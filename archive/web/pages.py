"""What every page shares: the htmx request type, the error page, where a plain form goes back
to."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.middleware import HtmxDetails

from wirecat.errors import WireCatError


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def error_page(request: HttpRequest, exc: WireCatError) -> HttpResponse:
    """The error page for `exc`: its message, its `http_status`; for an htmx request only
    the message, to be swapped in where the answer was going. PageErrors (middleware)
    calls this for every page, so a view raises and never maps an error by hand."""
    htmx = getattr(request, "htmx", None)
    template = "error.html" + ("#message" if htmx else "")
    return render(request, template, {"error": exc}, status=exc.http_status)


# --- tags ---------------------------------------------------------------------------------


def _back(request: HttpRequest, fallback: str) -> str:
    """Where a plain (no JavaScript) form returns: its `next` when it is one of ours."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
