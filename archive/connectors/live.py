"""The live connector port: what a provider's live half implements for `account_sync`.

A live connector is built from an account's opened credentials and settings, says what it
can do, and fetches from a cursor one bounded page at a time: the records of the page as
a `Batch` (the sink's own shape, the cursor after the page inside it), and whether more is
waiting. It translates the provider's objects and errors; it never touches the ORM, so the
sync service decides what is written, when, and in which transaction.

Errors it raises, each fit to show the owner (never a credential inside):
- `RateLimitedError(retry_after)`: the provider said wait (HTTP 429 with Retry-After,
  Telegram's `retry_after`, FloodWait); the run waits or ends and resumes later.
- `TransientError`: the network or a 5xx; retried with backoff.
- `CredentialError`: the token or password is refused; the account stops until the owner
  acts on the Sync page.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from archive.connectors.sending import OutboundMessage
from archive.store.domain import Batch


class LiveError(Exception):
    """A live connector's failure, with a message fit to show (no secret in it)."""


class RateLimitedError(LiveError):
    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(0.0, retry_after)


class TransientError(LiveError):
    pass


class CredentialError(LiveError):
    pass


@dataclass(frozen=True)
class Capabilities:
    history: bool = False  # can fetch messages from before it was connected
    live: bool = True  # can fetch what arrives after the cursor
    send: bool = False
    edits: bool = False  # reports edits
    deletions: bool = False  # reports deletions


@dataclass(frozen=True)
class Span:
    """Every message of chat `chat` with an id above `after` and up to `through` (ids
    compared as numbers) is in the page: what the store holds in that range and the page
    lacks was deleted. Connectors that page by id say so; a repair pass uses it."""

    chat: str
    after: int
    through: int


@dataclass(frozen=True)
class Page:
    """One bounded fetch: `batch` (None when nothing new) carries the cursor after it."""

    batch: Batch | None
    cursor: dict[str, Any]
    more: bool
    spans: tuple[Span, ...] = ()


@dataclass(frozen=True)
class Connected:
    """What connecting learnt: the account as the provider names it, and the settings to keep."""

    account_external_id: str
    account_name: str
    settings: dict[str, Any]


class LiveConnector(Protocol):
    kind: ClassVar[str]  # "telegram_bot", ...
    provider: ClassVar[str]  # the provider its messages belong to ("telegram")
    label: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    secret_fields: ClassVar[tuple[str, ...]]  # what is sealed, never shown back

    def connect(self) -> Connected:
        """Check the credentials with the provider (CredentialError when refused)."""
        ...

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page: ...

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        """A cursor from which `fetch` reads again what arrived since `since` (the repair
        pass re-reads a trailing window for edits the live pass missed); None when the
        provider cannot re-read."""
        ...

    def send(self, message: OutboundMessage) -> str:
        """Deliver; returns the provider's id for the sent message (SendError when refused)."""
        ...

    def close(self) -> None:
        """Let go of connections (the sync service calls it when a run or a send ends)."""
        ...


# kind -> "module:Class" of every live connector; a module is imported when its kind is
# first needed (the Sync page, a run), so no process loads a library it does not use.
LIVE_CONNECTORS: dict[str, str] = {
    "discord_bot": "archive.connectors.discord.bot:DiscordBot",
    "imap": "archive.connectors.mail.imap:Imap",
    "imessage": "archive.connectors.imessage.live:IMessageLive",
    "max_bot": "archive.connectors.max.bot:MaxBot",
    "telegram_bot": "archive.connectors.telegram.bot:TelegramBot",
    "telegram_user": "archive.connectors.telegram.user:TelegramUser",
}
# kind -> the connector's class, called as factory(credentials, settings)
Factory = Callable[[Mapping[str, Any], Mapping[str, Any]], LiveConnector]
_CONNECTORS: dict[str, Factory] = {}


def _load(kind: str) -> Factory | None:
    if kind not in _CONNECTORS and kind in LIVE_CONNECTORS:
        module, _, name = LIVE_CONNECTORS[kind].partition(":")
        _CONNECTORS[kind] = getattr(importlib.import_module(module), name)
    return _CONNECTORS.get(kind)


def register_live(kind: str, factory: Factory) -> None:
    """Put `factory` in place of kind's connector (the tests' doubles at a library's edge)."""
    _CONNECTORS[kind] = factory


def live_connector_class(kind: str) -> Any:
    """The class of `kind` (its label, capabilities, secret fields), or None."""
    return _load(kind)


def live_connector(
    kind: str, credentials: Mapping[str, Any], settings: Mapping[str, Any]
) -> LiveConnector:
    factory = _load(kind)
    if factory is None:
        raise LiveError(f"no live connector of kind {kind!r}")
    return factory(credentials, settings)
