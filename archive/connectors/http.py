"""What the HTTP live connectors (the bots) share: one httpx client for a connector's life,
one call that turns a provider's answer into its JSON body or the port's errors, and the
bot's account: checked against the API when connecting, kept in the account's settings."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from archive.connectors.live import (
    Connected,
    CredentialError,
    LiveError,
    RateLimitedError,
    TransientError,
)
from archive.connectors.reach import (
    rate_limited,
    reach_error,
    refused_token,
    server_error,
    unexpected_answer,
)
from archive.store.domain import AccountRecord, IdentityRecord

TIMEOUT = httpx.Timeout(30.0, connect=10.0)
DEFAULT_WAIT_SECONDS = 5.0
REFUSED_CHECK = "check that it is the bot's current token, copied whole"


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
        credential_statuses: tuple[int, ...] = (401,),
    ) -> None:
        self.provider = provider
        self.base = base.rstrip("/")
        self._secret = secret
        self._credential_statuses = credential_statuses
        self._client: httpx.Client | None = None
        self.last_response: httpx.Response | None = None  # its headers, even on an error

    def _address(self) -> tuple[str, int | None]:
        """The API's host and port, for sentences (never its path: a path can hold a token)."""
        try:
            url = httpx.URL(self.base)
        except httpx.InvalidURL:
            return "the API address", None
        return url.host or "the API address", url.port or (443 if url.scheme == "https" else 80)

    def unexpected(self, what: str) -> LiveError:
        """The answer to `what` lacks what connecting needs (an id, a name)."""
        return LiveError(unexpected_answer(self.provider, what))

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
        named = label or f"{method} {path}"
        shown = f"{self.provider} {named}"
        if self._client is None:
            self._client = httpx.Client(timeout=TIMEOUT)
        self.last_response = None
        try:
            response = self._client.request(
                method, self.base + path, headers=dict(headers or {}), **kwargs
            )
            self.last_response = response
        except httpx.InvalidURL:
            raise LiveError(
                f"{self.provider}: the API address {self.base!r} is not a URL — check it"
                " under Advanced (empty: the provider's own)"
            ) from None
        except httpx.UnsupportedProtocol:
            raise LiveError(
                f"{self.provider}: the API address must start with https:// (or http://)"
            ) from None
        except httpx.HTTPError as exc:
            # str(exc) can hold the URL, and a URL can hold the token: the sentence names
            # the host and port only.
            host, port = self._address()
            raise reach_error(self.provider, exc, host=host, port=port) from None
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        detail = _detail(body).replace(self._secret, "…") if self._secret else _detail(body)
        status = response.status_code
        what = f"{shown}: {detail or f'HTTP {status}'}"
        if status == 429 or (isinstance(body, dict) and body.get("error_code") == 429):
            wait = _retry_after(response, body)
            raise RateLimitedError(rate_limited(self.provider, detail, wait), wait)
        if status in self._credential_statuses and (status == 401 or isinstance(body, dict)):
            raise CredentialError(
                refused_token(self.provider, detail or "Unauthorized", check=REFUSED_CHECK)
            )
        if status >= 500:
            raise TransientError(server_error(self.provider, status, detail))
        if status >= 400 and body is None:
            raise LiveError(unexpected_answer(self.provider, named, status=status))
        if status >= 400 or (isinstance(body, dict) and body.get("ok") is False):
            raise LiveError(what)
        if body is None and response.content:
            raise LiveError(unexpected_answer(self.provider, named))
        return response, body


def bot_token(credentials: Mapping[str, Any], *, where: str) -> str:
    """The bot token among `credentials`; CredentialError, saying `where` it comes from,
    when there is none."""
    token = str(credentials.get("token") or "").strip()
    if not token:
        raise CredentialError(f"a bot token is needed ({where})")
    return token


@dataclass
class BotAccount:
    """A bot connector's account: the bot as its provider names it. Connecting asks the API
    who the bot is (a refused token is the port's CredentialError) and keeps the answer in
    the account's settings; every page names the account and the bot's messages from it.

    The naming differs by provider: Telegram shows a bot as "@username", names it among a
    chat's senders "user<id>", and its username is its handle."""

    provider: str
    id: str = ""
    name: str = ""
    name_prefix: str = ""
    sender_prefix: str = ""
    name_is_handle: bool = False

    @classmethod
    def kept(
        cls,
        provider: str,
        settings: Mapping[str, Any],
        *,
        name_prefix: str = "",
        sender_prefix: str = "",
        name_is_handle: bool = False,
    ) -> BotAccount:
        """The bot an earlier connect learnt, from the account's settings."""
        return cls(
            provider=provider,
            id=str(settings.get("bot_id") or ""),
            name=str(settings.get("bot_name") or ""),
            name_prefix=name_prefix,
            sender_prefix=sender_prefix,
            name_is_handle=name_is_handle,
        )

    @property
    def sender_id(self) -> str:
        """The bot among a chat's senders (its messages are the account's own)."""
        return f"{self.sender_prefix}{self.id}"

    def connected(self, bot_id: str, bot_name: str) -> Connected:
        """What connecting learnt, given the API's answer to "who am I"."""
        self.id, self.name = bot_id, bot_name
        return Connected(
            account_external_id=f"bot{self.id}",
            account_name=f"{self.name_prefix}{self.name}",
            settings={"bot_id": self.id, "bot_name": self.name},
        )

    def record(self) -> AccountRecord:
        return AccountRecord(
            provider=self.provider,
            external_id=f"bot{self.id}",
            name=f"{self.name_prefix}{self.name}",
            owner=IdentityRecord(
                external_id=self.sender_id,
                display_name=self.name,
                handle=self.name if self.name_is_handle else "",
            ),
        )
