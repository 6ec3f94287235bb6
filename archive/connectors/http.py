"""What the HTTP live connectors share: one httpx client for a connector's life, and one
call that turns a provider's answer into its JSON body or the port's errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx

from archive.connectors.live import CredentialError, LiveError, RateLimitedError, TransientError

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
DEFAULT_WAIT_SECONDS = 5.0


def _detail(body: Any) -> str:
    """The provider's own words for what went wrong (Telegram: description; Discord, MAX:
    message, code)."""
    if not isinstance(body, dict):
        return ""
    return str(body.get("description") or body.get("message") or body.get("code") or "")


def _retry_after(response: httpx.Response, body: Any) -> float:
    if isinstance(body, dict):
        nested = (body.get("parameters") or {}).get("retry_after")  # Telegram
        for value in (nested, body.get("retry_after")):  # Discord
            if value is not None:
                return float(value)
    return float(response.headers.get("Retry-After") or DEFAULT_WAIT_SECONDS)


class HttpApi:
    """A provider's HTTP API. One client serves the connector's whole life: a connection
    kept alive, and the CA bundle loaded once (loading it per request was 33 ms, half of
    a page's time)."""

    def __init__(
        self,
        provider: str,
        base: str,
        *,
        secret: str,
        credential: str = "bot token",
        credential_statuses: tuple[int, ...] = (401,),
    ) -> None:
        self.provider = provider
        self.base = base.rstrip("/")
        self._secret = secret
        self._credential = credential
        self._credential_statuses = credential_statuses
        self._client: httpx.Client | None = None
        self.last_response: httpx.Response | None = None  # its headers, even on an error

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def call(
        self,
        method: str,
        path: str,
        *,
        label: str | None = None,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> tuple[httpx.Response, Any]:
        """(the answer, its JSON body). `label` names the call in errors where `path`
        must not show (a Bot API path holds the token)."""
        shown = f"{self.provider} {label or f'{method} {path}'}"
        if self._client is None:
            self._client = httpx.Client(timeout=TIMEOUT)
        self.last_response = None
        try:
            response = self._client.request(
                method, self.base + path, headers=dict(headers or {}), **kwargs
            )
            self.last_response = response
        except httpx.InvalidURL:
            where = f"{self.provider}: the API address {self.base!r}"
            raise LiveError(f"{where} is not a URL") from None
        except httpx.UnsupportedProtocol:
            raise LiveError(f"{self.provider}: the API address must be http(s)") from None
        except httpx.HTTPError as exc:
            # str(exc) can hold the URL, and a URL can hold the token.
            raise TransientError(f"{shown}: {type(exc).__name__}") from None
        try:
            body = response.json()
        except json.JSONDecodeError:
            body = None
        detail = _detail(body).replace(self._secret, "…") if self._secret else _detail(body)
        status = response.status_code
        what = f"{shown}: {detail or f'HTTP {status}'}"
        if status == 429 or (isinstance(body, dict) and body.get("error_code") == 429):
            raise RateLimitedError(what, _retry_after(response, body))
        if status in self._credential_statuses:
            refused = detail or "Unauthorized"
            raise CredentialError(f"{self.provider} refused the {self._credential} ({refused})")
        if status >= 500:
            raise TransientError(what)
        if status >= 400 or (isinstance(body, dict) and body.get("ok") is False):
            raise LiveError(what)
        if body is None and response.content:
            raise LiveError(f"{shown}: the answer is not JSON")
        return response, body
