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

`LIVE_CONNECTORS` at the end is the one table of live connectors: where each class is,
which provider's sends it carries, how the owner connects it (a token form its class
describes, or a `LiveLogin` of steps in its provider's package). Modules are imported only
when their kind is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol

from archive.connectors.sending import OutboundMessage
from archive.store.domain import Batch
from meetings.domain import CalendarRead


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
class CalendarPull:
    """What a calendar's live connector read in one page: the changed objects' events
    (`read`, None when none changed) and the UIDs of events deleted from the calendar.
    The sync service hands them to meetings' services, in the transaction that records
    the page's batch (and so its cursor)."""

    kind: str  # meetings' calendar kind ("caldav")
    key: str  # the calendar's source (a collection's address)
    name: str = ""
    read: CalendarRead | None = None
    gone: tuple[str, ...] = ()
    fetched: int = 0  # objects fetched or found deleted (the run's figures and budget)


@dataclass(frozen=True)
class Page:
    """One bounded fetch: `batch` (None when nothing new) carries the cursor after it;
    a calendar's connector puts what it read in `calendars` (its batch has no messages)."""

    batch: Batch | None
    cursor: dict[str, Any]
    more: bool
    spans: tuple[Span, ...] = ()
    calendars: tuple[CalendarPull, ...] = ()


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


@dataclass(frozen=True)
class TokenForm:
    """The Sync page's form of a connector the owner connects with one API token (the
    connector class's `token_form`)."""

    title: str  # "Telegram bot": the page says "Connect a Telegram bot"
    help: str  # where the token comes from, and what the connector then reads
    api: str  # the API it talks to unless the owner names another (shown, not used)


# logging in step by step ------------------------------------------------------------------


class LoginError(LiveError):
    """A login step failed or was given a wrong field; the message says which, fit to show."""


@dataclass(frozen=True)
class LoginStep:
    """Where a login stands after a step. `step` names what the owner gives next ("code",
    "password", ...) or is "done"; `state` is what the next step needs, secrets among it
    (the sync service keeps it sealed between the owner's requests); once done,
    `credentials` are what the connector of the login's kind is built from."""

    step: str
    state: dict[str, Any] = field(default_factory=dict)
    credentials: dict[str, Any] | None = None


class LiveLogin(Protocol):
    """The steps of logging in to an account whose credential the owner cannot paste (a
    session made by talking to the provider). Each step gets the fields the page posted
    and raises LoginError when the provider or a field says no."""

    def start(self, fields: Mapping[str, str]) -> LoginStep: ...

    def advance(self, state: Mapping[str, Any], fields: Mapping[str, str]) -> LoginStep: ...


# the registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveKind:
    """One live connector. The table says what a process must know without importing the
    connector's module: which provider sends through it, how the owner connects it."""

    target: str  # "module:Class", imported when the kind is first needed
    provider: str  # the provider its messages belong to (its class says the same)
    sends: bool = False  # the send port hands it the outbound messages of its provider
    token: bool = False  # connected with one API token: the Sync page shows its token_form
    login: str = ""  # "module:NAME" of its LiveLogin, when the owner logs in step by step


# Every live connector, in the Sync page's order. A module is imported when its kind is
# first needed (the Sync page, a run, a send), so no process loads a library it does not
# use (Telethon: 41 MB).
LIVE_CONNECTORS: dict[str, LiveKind] = {
    "telegram_bot": LiveKind(
        "archive.connectors.telegram.bot:TelegramBot", "telegram", sends=True, token=True
    ),
    "discord_bot": LiveKind(
        "archive.connectors.discord.bot:DiscordBot", "discord", sends=True, token=True
    ),
    "max_bot": LiveKind("archive.connectors.max.bot:MaxBot", "max", sends=True, token=True),
    "telegram_user": LiveKind(
        "archive.connectors.telegram.user:TelegramUser",
        "telegram",
        sends=True,
        login="archive.connectors.telegram.login:LOGIN",
    ),
    "imap": LiveKind("archive.connectors.mail.imap:Imap", "mail"),
    "caldav": LiveKind("archive.connectors.caldav.live:CalDav", "caldav"),
    # Its class can send where Messages.app is (macOS); the send port does not offer it yet.
    "imessage": LiveKind("archive.connectors.imessage.live:IMessageLive", "imessage"),
}
# kind -> the connector's class, called as factory(credentials, settings)
Factory = Callable[[Mapping[str, Any], Mapping[str, Any]], LiveConnector]
_CONNECTORS: dict[str, Factory] = {}


def _imported(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _load(kind: str) -> Factory | None:
    if kind not in _CONNECTORS and kind in LIVE_CONNECTORS:
        _CONNECTORS[kind] = _imported(LIVE_CONNECTORS[kind].target)
    return _CONNECTORS.get(kind)


def register_live(kind: str, factory: Factory) -> None:
    """Put `factory` in place of kind's connector (the tests' doubles at a library's edge)."""
    _CONNECTORS[kind] = factory


def live_connector_class(kind: str) -> Any:
    """The class of `kind` (its label, capabilities, token form), or None."""
    return _load(kind)


def live_connector(
    kind: str, credentials: Mapping[str, Any], settings: Mapping[str, Any]
) -> LiveConnector:
    factory = _load(kind)
    if factory is None:
        raise LiveError(f"no live connector of kind {kind!r}")
    return factory(credentials, settings)


def sending_providers() -> list[str]:
    """Every provider the send port has a live connector for, each once."""
    return list(dict.fromkeys(k.provider for k in LIVE_CONNECTORS.values() if k.sends))


def token_forms() -> dict[str, TokenForm]:
    """kind -> its form, for every connector connected with one API token, in the table's
    order (their modules are imported now: the HTTP bots', which load nothing big)."""
    forms: dict[str, TokenForm] = {}
    for kind, entry in LIVE_CONNECTORS.items():
        if entry.token:
            forms[kind] = live_connector_class(kind).token_form
    return forms


def live_login(kind: str) -> LiveLogin:
    """The login of `kind` (its module imported now); LoginError when it has none."""
    entry = LIVE_CONNECTORS.get(kind)
    if entry is None or not entry.login:
        raise LoginError(f"no login for live connector {kind!r}")
    found: LiveLogin = _imported(entry.login)
    return found
