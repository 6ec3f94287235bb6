"""Telegram user account, live: MTProto through Telethon, with the owner's own session.

The owner logs in on the Sync page (login.py: phone, code, the two-step password when
set); the session string Telethon makes is sealed like any credential. A run lists the
dialogs, then reads each one forward from the last message id recorded for it (`min_id`),
oldest first: history on the first run, what is new afterwards. The repair pass reads
each dialog again from a date (`offset_date`), which records edits. Chats, senders and
message ids are named as a Telegram Desktop export names them, so live messages and
imported history are one archive. A FloodWait is the provider's "wait"; a revoked session
stops the account.

Telethon is asynchronous; each connector runs its own event loop, so the sync service
stays synchronous. Tests hand the connector a client double (`client=`) that answers with
Telethon's own TL objects; nothing else differs.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from telethon import TelegramClient, errors, types, utils
from telethon.sessions import StringSession

from archive.connectors.live import (
    Capabilities,
    Connected,
    CredentialError,
    LiveError,
    Page,
    RateLimitedError,
    Span,
    TransientError,
)
from archive.connectors.reach import reach_sentence
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord

MAX_LIMIT = 100
T = TypeVar("T")
_REVOKED = (
    errors.AuthKeyUnregisteredError,
    errors.SessionRevokedError,
    errors.SessionExpiredError,
    errors.UserDeactivatedError,
    errors.UserDeactivatedBanError,
    errors.AuthKeyDuplicatedError,
)
# What Telethon raises when Telegram cannot be reached, or when something that is not
# Telegram answers (a proxy, a captive portal): the network's errors, MTProto's garbled ones.
_GARBLED = (
    errors.InvalidBufferError,
    errors.InvalidChecksumError,
    errors.SecurityError,
    errors.TypeNotFoundError,
    errors.AuthKeyNotFound,
)
UNREACHABLE = (OSError, EOFError, *_GARBLED)


def unreachable(exc: BaseException) -> str:
    """The sentence for one of UNREACHABLE: what happened, and what to check."""
    if isinstance(exc, _GARBLED):
        exc = EOFError()  # something answered, but not as Telegram does
    return reach_sentence("Telegram", exc, host="Telegram's servers", fixed=True)


def _when(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _peer_text(peer: Any) -> str | None:
    """A sender as an export names it: "user123", "channel123" ("chat123" for groups)."""
    if isinstance(peer, types.PeerUser):
        return f"user{peer.user_id}"
    if isinstance(peer, types.PeerChannel):
        return f"channel{peer.channel_id}"
    if isinstance(peer, types.PeerChat):
        return f"chat{peer.chat_id}"
    return None


def _bare_id(peer: Any) -> str:
    """A chat's id as a Telegram Desktop export writes it (no -100 prefix)."""
    if isinstance(peer, types.PeerUser):
        return str(peer.user_id)
    if isinstance(peer, types.PeerChannel):
        return str(peer.channel_id)
    if isinstance(peer, types.PeerChat):
        return str(peer.chat_id)
    return str(utils.get_peer_id(peer))


def _name(entity: Any) -> str:
    if isinstance(entity, types.User):
        parts = [entity.first_name or "", entity.last_name or ""]
        return " ".join(p for p in parts if p) or (entity.username or f"user{entity.id}")
    return str(getattr(entity, "title", "") or "")


def _chat_kind(entity: Any) -> str:
    if isinstance(entity, types.User):
        return "dm"
    if isinstance(entity, types.Channel) and entity.broadcast:
        return "channel"
    return "group"


def _service_text(action: Any) -> str:
    """What a service message says, in words (the export's own wording differs by app)."""
    name = type(action).__name__.removeprefix("MessageAction")
    words = {
        "ChatAddUser": "added members",
        "ChatDeleteUser": "removed a member",
        "ChatJoinedByLink": "joined by link",
        "ChatEditTitle": f"changed the title to {getattr(action, 'title', '')!r}",
        "PinMessage": "pinned a message",
        "PhoneCall": "call",
        "ChatCreate": f"created the group {getattr(action, 'title', '')!r}",
        "ChannelCreate": f"created the channel {getattr(action, 'title', '')!r}",
    }
    return words.get(name, name)


class TelegramUser:
    kind: ClassVar[str] = "telegram_user"
    provider: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram account (your own, through MTProto)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        history=True, live=True, send=True, edits=True
    )

    def __init__(
        self,
        credentials: Mapping[str, Any],
        settings: Mapping[str, Any],
        client: Any = None,
    ) -> None:
        self._session = str(credentials.get("session") or "")
        self._api_id = int(credentials.get("api_id") or 0)
        self._api_hash = str(credentials.get("api_hash") or "")
        if client is None and not (self._session and self._api_id and self._api_hash):
            raise CredentialError("a Telegram session is needed: log in on the Sync page")
        self._client = client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connected = False
        self._me: Any = None
        self._dialogs: list[Any] | None = None
        self._drained: set[str] = set()

    # the library's edge --------------------------------------------------------------------

    def _run(self, make: Callable[[], Awaitable[T]]) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        try:
            return self._loop.run_until_complete(self._call(make))
        except errors.FloodWaitError as exc:
            raise RateLimitedError(
                f"Telegram asks to wait {exc.seconds} s (FloodWait)", exc.seconds
            ) from None
        except _REVOKED as exc:
            raise CredentialError(f"Telegram ended the session ({type(exc).__name__})") from None
        except errors.RPCError as exc:
            raise LiveError(f"Telegram: {type(exc).__name__}") from None
        except UNREACHABLE as exc:
            raise TransientError(unreachable(exc)) from None

    async def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        if self._client is None:
            self._client = TelegramClient(
                StringSession(self._session), self._api_id, self._api_hash
            )
        if not self._connected:
            await self._client.connect()
            if not await self._client.is_user_authorized():
                raise errors.AuthKeyUnregisteredError(request=None)
            self._connected = True
        return await make()

    def close(self) -> None:
        if self._loop is not None:
            if self._connected and self._client is not None:
                self._loop.run_until_complete(self._client.disconnect())
            self._loop.close()
            self._loop = None
            self._connected = False

    # the port -----------------------------------------------------------------------------

    def _whoami(self) -> Any:
        if self._me is None:
            self._me = self._run(lambda: self._client.get_me())
        return self._me

    def connect(self) -> Connected:
        me = self._whoami()
        return Connected(account_external_id=str(me.id), account_name=_name(me), settings={})

    def _account(self) -> AccountRecord:
        me = self._whoami()
        return AccountRecord(
            provider=self.provider,
            external_id=str(me.id),
            name=_name(me),
            owner=IdentityRecord(
                external_id=f"user{me.id}",
                display_name=_name(me),
                phone=f"+{me.phone}" if getattr(me, "phone", None) else "",
                handle=me.username or "",
            ),
        )

    def _dialog_list(self) -> list[Any]:
        if self._dialogs is None:
            dialogs = self._run(lambda: self._client.get_dialogs(limit=None))
            self._dialogs = sorted(dialogs, key=lambda d: utils.get_peer_id(d.entity))
        return self._dialogs

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        last: dict[str, int] = {k: int(v) for k, v in dict(cursor.get("dialogs") or {}).items()}
        since = cursor.get("since")  # the repair pass: read each dialog from this date
        limit = max(1, min(limit, MAX_LIMIT))
        for dialog in self._dialog_list():
            entity = dialog.entity
            key = str(utils.get_peer_id(entity))
            if key in self._drained:
                continue
            after = last.get(key, 0)
            options: dict[str, Any] = {"limit": limit, "reverse": True, "min_id": after}
            if since and not after:
                options["offset_date"] = datetime.fromisoformat(since)
            found = self._run(functools.partial(self._client.get_messages, entity, **options))
            messages = sorted(found, key=lambda m: m.id)
            if len(messages) < limit:
                self._drained.add(key)
            if not messages:
                if since:  # the repair pass: nothing since its start, so all of it was deleted
                    more = any(
                        str(utils.get_peer_id(d.entity)) not in self._drained
                        for d in self._dialog_list()
                    )
                    chat_id = _bare_id(utils.get_peer(entity))
                    return Page(
                        batch=Batch(account=self._account(), cursor_stream=self.kind),
                        cursor={"dialogs": last, "since": since},
                        more=more,
                        spans=(Span(chat=chat_id, after=after, through=2**63 - 1),),
                    )
                continue
            last[key] = max(after, messages[-1].id)
            chat = ChatRecord(
                external_id=_bare_id(utils.get_peer(entity)),
                kind=_chat_kind(entity),
                title=_name(entity),
                metadata={"telegram_peer": key},
            )
            people: dict[str, IdentityRecord] = {}
            records = [self._message(m, chat.external_id, people) for m in messages]
            cursor_after: dict[str, Any] = {"dialogs": last}
            if since:
                cursor_after["since"] = since
            batch = Batch(
                account=self._account(),
                chats=(chat,),
                identities=tuple(people.values()),
                messages=tuple(r for r in records if r is not None),
                cursor=cursor_after,
                cursor_stream=self.kind,
            )
            more = any(
                str(utils.get_peer_id(d.entity)) not in self._drained for d in self._dialog_list()
            )
            # Messages come in id order from `min_id` (or from the first one on or after
            # `offset_date`): between the first and the last of the page, none is missing.
            low = after if after else messages[0].id - 1
            through = messages[-1].id if key not in self._drained else 2**63 - 1
            span = Span(chat=chat.external_id, after=low, through=through)
            return Page(batch=batch, cursor=cursor_after, more=more, spans=(span,))
        return Page(batch=None, cursor={"dialogs": last}, more=False)

    def _message(
        self, message: Any, chat_id: str, people: dict[str, IdentityRecord]
    ) -> MessageRecord | None:
        sender = _peer_text(message.from_id) or (
            _peer_text(message.peer_id) if not message.out else None
        )
        me = self._whoami()
        if message.out:
            sender = f"user{me.id}"
        entity = getattr(message, "sender", None)
        if sender and entity is not None:
            people[sender] = IdentityRecord(
                external_id=sender,
                display_name=_name(entity),
                handle=getattr(entity, "username", None) or "",
            )
        service = isinstance(message, types.MessageService)
        reply = getattr(message, "reply_to", None)
        reply_to = ""
        # A reply to a message of another chat is no link within this one.
        if (
            isinstance(reply, types.MessageReplyHeader)
            and reply.reply_to_msg_id
            and reply.reply_to_peer_id is None
        ):
            reply_to = str(reply.reply_to_msg_id)
        metadata: dict[str, Any] = {}
        if service:
            metadata["action"] = type(message.action).__name__
        if getattr(message, "fwd_from", None) is not None:
            metadata["forwarded"] = True
        if getattr(message, "media", None) is not None:
            metadata["media"] = type(message.media).__name__
        entities = getattr(message, "entities", None)
        if entities:
            metadata["entities"] = [type(e).__name__ for e in entities]
        raw = message.to_dict()
        return MessageRecord(
            chat_external_id=chat_id,
            external_id=str(message.id),
            sent_at=_when(message.date) or datetime.now(UTC),
            text=_service_text(message.action) if service else (message.message or ""),
            sender_external_id=sender,
            direction="out" if message.out else "in",
            kind="service" if service else "text",
            reply_to_external_id=reply_to,
            edited_at=_when(getattr(message, "edit_date", None)),
            raw_json=json.dumps(raw, ensure_ascii=False, default=str),
            metadata=metadata,
        )

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return {"dialogs": {}, "since": since.isoformat()}

    def send(self, message: OutboundMessage) -> str:
        try:
            target = int(message.chat_external_id)
        except ValueError:
            raise SendError(
                f"chat {message.chat_external_id!r} is not a Telegram chat id"
            ) from None
        peer = next(
            (d.entity for d in self._dialog_list() if str(d.entity.id) == str(target)), None
        )
        if peer is None:
            raise SendError(f"chat {target} is not among the account's dialogs")
        reply = int(message.reply_to_external_id) if message.reply_to_external_id else None
        try:
            sent = self._run(lambda: self._client.send_message(peer, message.text, reply_to=reply))
        except LiveError as exc:
            raise SendError(str(exc)) from None
        return str(sent.id)
