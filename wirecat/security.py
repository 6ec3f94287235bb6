"""Headers every answer carries: a strict Content-Security-Policy, and HSTS behind https.

Django 5.2 has no CSP of its own (6.0 brings one): the policy is one fixed string, so a
small middleware sends it. Pages load their scripts and styles from /static/ only; nothing
inline runs: no `<script>` without `src`, no `on…=` handlers, no `style="…"` attributes
(what a page needs dynamic, e.g. a tag's colour or a progress bar's width, it sets through
data attributes that static/wirecat/wirecat.js applies). htmx's own indicator style is
switched off in base.html's htmx-config and lives in wirecat.css instead, and htmx may not
eval. An answer that brings its own policy (an attachment: `sandbox`) keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

POLICY: Final = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        # data: for the small images stylesheets embed (the API docs' icons).
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class SecurityHeaders:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        # Django's SecurityMiddleware sends HSTS on requests it knows are secure (the
        # proxy header); an https base URL alone says the owner's browser comes over https.
        hsts = settings.SECURE_HSTS_SECONDS
        if hsts and settings.BASE_URL.lower().startswith("https://"):
            response.headers.setdefault("Strict-Transport-Security", f"max-age={hsts}")
        return response
