"""Nothing is readable anonymously.

Pages: Django's LoginRequiredMiddleware sends an anonymous visitor to the login page.
The JSON API answers 401 itself (ninja auth), so the middleware leaves `/api/` routes to it;
the API's docs page still needs the owner's session, and its schema (openapi.json) the
owner's session or an agent's token (`wirecat.api.docs_access` checks both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.http import HttpRequest, HttpResponseBase

API_NAMESPACE = "api"
DOCS = {"openapi-view"}


class OwnerRequiredMiddleware(LoginRequiredMiddleware):
    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: Any,
        view_kwargs: Any,
    ) -> HttpResponseBase | None:
        match = request.resolver_match
        if match is not None and match.namespace == API_NAMESPACE and match.url_name not in DOCS:
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
