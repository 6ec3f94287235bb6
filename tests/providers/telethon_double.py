"""A Telethon client double: the few TelegramClient methods the connector calls, answering
with Telethon's own TL objects (types.User, types.Message, …) built here, as the library
hands them over after talking MTProto. FloodWait and a revoked session are Telethon's own
errors, raised where Telethon raises them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from telethon import errors, types, utils

T0 = datetime(2025, 9, 1, 12, 0, tzinfo=UTC)
ME = types.User(
    id=111,
    is_self=True,
    first_name="Owner",
    last_name="Person",
    username="owner",
    phone="15550001111",
)
ANNA = types.User(id=222, first_name="Anna", username="anna")
GROUP = types.Channel(
    id=333, title="Hikers", photo=types.ChatPhotoEmpty(), date=T0, megagroup=True, access_hash=9
)


@dataclass
class Dialog:
    entity: Any


@dataclass
class ClientDouble:
    messages: dict[int, list[Any]] = field(default_factory=dict)  # peer id -> messages
    flood_wait_on: set[int] = field(default_factory=set)  # get_messages call numbers
    revoked: bool = False
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    sent: list[tuple[Any, str, int | None]] = field(default_factory=list)
    connected: bool = False

    async def connect(self) -> None:
        self.connected = True

    async def disconnect(self) -> None:
        self.connected = False

    async def is_user_authorized(self) -> bool:
        return not self.revoked

    async def get_me(self) -> Any:
        if self.revoked:
            raise errors.AuthKeyUnregisteredError(request=None)
        return ME

    async def get_dialogs(self, limit: Any = None) -> list[Dialog]:
        return [Dialog(ANNA), Dialog(GROUP)]

    async def get_messages(self, entity: Any, **options: Any) -> list[Any]:
        self.calls.append(("get_messages", {"peer": utils.get_peer_id(entity), **options}))
        if len(self.calls) in self.flood_wait_on:
            raise errors.FloodWaitError(request=None, capture=7)
        if self.revoked:
            raise errors.AuthKeyUnregisteredError(request=None)
        found = [
            m
            for m in self.messages.get(utils.get_peer_id(entity), [])
            if m.id > options.get("min_id", 0)
        ]
        since = options.get("offset_date")
        if since is not None:
            found = [m for m in found if m.date >= since]
        return found[: options.get("limit", 100)]

    async def send_message(self, entity: Any, text: str, reply_to: int | None = None) -> Any:
        self.sent.append((entity, text, reply_to))
        return types.Message(
            id=9000 + len(self.sent),
            peer_id=utils.get_peer(entity),
            date=T0,
            message=text,
            out=True,
        )

    # what the chats do -------------------------------------------------------------------

    def say(self, chat: Any, sender: Any, number: int, text: str, **extra: Any) -> Any:
        peer = utils.get_peer(chat)
        message = types.Message(
            id=number,
            peer_id=peer,
            date=T0 + timedelta(minutes=number),
            message=text,
            out=sender is ME,
            from_id=types.PeerUser(sender.id)
            if not isinstance(chat, types.User) or sender is not ME
            else None,
            **extra,
        )
        message._sender = sender  # what Telethon sets from the update's users
        self.messages.setdefault(utils.get_peer_id(chat), []).append(message)
        return message


@dataclass
class _Session:
    value: str

    def save(self) -> str:
        return self.value


@dataclass
class LoginDouble:
    """The TelegramClient of a login, for `archive.connectors.telegram.login.login_client`:
    Telethon's own answers and errors for each step. `two_step` turns on the password."""

    session_in: str
    api_id: int
    api_hash: str
    two_step: bool = True
    known_phone: str = "+15550001111"
    code: str = "24680"
    password: str = "correct horse"

    def __post_init__(self) -> None:
        self.session = _Session(self.session_in or "session-new")

    async def connect(self) -> None:
        if self.api_id != 12345:
            raise errors.ApiIdInvalidError(request=None)

    async def disconnect(self) -> None:
        pass

    async def send_code_request(self, phone: str) -> Any:
        if phone != self.known_phone:
            raise errors.PhoneNumberInvalidError(request=None)
        self.session.value = "session-code-sent"
        return types.auth.SentCode(
            type=types.auth.SentCodeTypeApp(length=5), phone_code_hash="hash-abc"
        )

    async def sign_in(
        self, phone: str | None = None, code: str | None = None, *, password: str | None = None,
        phone_code_hash: str | None = None,
    ) -> Any:  # fmt: skip
        if password is not None:
            if self.session.value != "session-needs-password" or password != self.password:
                raise errors.PasswordHashInvalidError(request=None)
            self.session.value = "session-logged-in"
            return ME
        if phone_code_hash != "hash-abc" or code != self.code:
            raise errors.PhoneCodeInvalidError(request=None)
        if self.two_step:
            self.session.value = "session-needs-password"
            raise errors.SessionPasswordNeededError(request=None)
        self.session.value = "session-logged-in"
        return ME
