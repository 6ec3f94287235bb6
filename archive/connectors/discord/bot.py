"""Discord bot, live: the REST API v10 (https://discord.com/developers/docs/reference).

The bot reads the text and announcement channels of the guilds it is in, and its DMs with
whoever wrote to it are not listed by REST (Discord gives those to the gateway only). Per
channel the cursor is the newest message id recorded: `GET /channels/{id}/messages?after=`
pages forward from it (from the channel's first message on a first sync: history). Rate
limits are honoured both ways: a 429 answers `RateLimitedError` with its `retry_after`, and
a bucket that says `X-RateLimit-Remaining: 0` is waited out (up to a few seconds) before the
next request. `POST /channels/{id}/messages` sends. The token travels only in the
`Authorization` header and is never put in a log line or an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from archive.connectors.http import BotAccount, HttpApi, bot_token
from archive.connectors.live import Capabilities, Connected, LiveError, Page, Span, TokenForm
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import (
    AttachmentRecord,
    Batch,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

API_URL = "https://discord.com/api/v10"
MAX_LIMIT = 100
TEXT_CHANNELS = {0: "channel", 5: "channel"}  # GUILD_TEXT, GUILD_ANNOUNCEMENT
SERVICE_TYPES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 18, 24, 46}
DISCORD_EPOCH_MS = 1_420_070_400_000  # 2015-01-01, where snowflake time starts
MAX_BUCKET_WAIT = 5.0  # seconds a spent bucket is waited for before the next request
END = 2**63 - 1  # above every snowflake


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _name(user: Mapping[str, Any]) -> str:
    return str(user.get("global_name") or user.get("username") or user.get("id") or "")


class DiscordBot:
    kind: ClassVar[str] = "discord_bot"
    provider: ClassVar[str] = "discord"
    label: ClassVar[str] = "Discord bot (bot token)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        history=True, live=True, send=True, edits=True
    )
    token_form: ClassVar[TokenForm] = TokenForm(
        title="Discord bot",
        help="A bot token from the Discord developer portal (Bot → Reset Token), with the"
        " Message Content intent on. The first sync reads the whole history of every text"
        " channel of the servers the bot is in.",
        api=API_URL.removeprefix("https://"),
    )

    def __init__(
        self,
        credentials: Mapping[str, Any],
        settings: Mapping[str, Any],
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._token = bot_token(credentials, where="Discord developer portal → Bot")
        self._bot = BotAccount.kept(self.provider, settings)
        self._sleep = sleep
        self._resume_at = 0.0  # a spent bucket's reset (monotonic clock)
        self._channels: list[tuple[str, dict[str, Any], str]] | None = None  # (id, raw, guild)
        self._drained: set[str] = set()  # channels with nothing newer, in this run
        self._repairing = False  # reading again from a rewound cursor
        self._api = HttpApi("Discord", str(settings.get("api_url") or API_URL), secret=self._token)

    def close(self) -> None:
        self._api.close()

    # the wire -----------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        wait = self._resume_at - time.monotonic()
        if wait > 0:
            self._sleep(min(wait, MAX_BUCKET_WAIT))
        headers = {"Authorization": f"Bot {self._token}", "User-Agent": "WireCat (sync, 1)"}
        try:
            _, body = self._api.call(method, path, headers=headers, **kwargs)
        finally:
            self._note_bucket()
        return body

    def _note_bucket(self) -> None:
        """A bucket that says it is spent is waited for before the next request."""
        response = self._api.last_response
        if response is not None and response.headers.get("X-RateLimit-Remaining") == "0":
            reset_after = float(response.headers.get("X-RateLimit-Reset-After") or 0)
            self._resume_at = time.monotonic() + reset_after

    # the port -----------------------------------------------------------------------------

    def connect(self) -> Connected:
        me = self._request("GET", "/users/@me")
        if not isinstance(me, dict) or "id" not in me:
            raise self._api.unexpected("GET /users/@me")
        return self._bot.connected(str(me["id"]), _name(me))

    def _channel_list(self) -> list[tuple[str, dict[str, Any], str]]:
        if self._channels is None:
            found: list[tuple[str, dict[str, Any], str]] = []
            for guild in self._request("GET", "/users/@me/guilds") or []:
                for channel in self._request("GET", f"/guilds/{guild['id']}/channels") or []:
                    if channel.get("type") in TEXT_CHANNELS:
                        found.append((str(channel["id"]), channel, str(guild.get("name") or "")))
            self._channels = sorted(found, key=lambda item: int(item[0]))
        return self._channels

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        after: dict[str, str] = dict(cursor.get("after") or {})
        limit = max(1, min(limit, MAX_LIMIT))
        for channel_id, channel, guild in self._channel_list():
            if channel_id in self._drained:
                continue
            since = after.get(channel_id, "0")
            raw = self._request(
                "GET", f"/channels/{channel_id}/messages", params={"after": since, "limit": limit}
            )
            messages = sorted(raw or [], key=lambda m: int(m["id"]))
            if len(messages) < limit:
                self._drained.add(channel_id)
            if not messages:
                if self._repairing:  # nothing since the window's start: all of it was deleted
                    more = any(c not in self._drained for c, _, _ in self._channel_list())
                    return Page(
                        batch=Batch(account=self._bot.record(), cursor_stream=self.kind),
                        cursor={"after": after},
                        more=more,
                        spans=(Span(chat=channel_id, after=int(since), through=END),),
                    )
                continue
            after[channel_id] = str(messages[-1]["id"])
            chat = ChatRecord(
                external_id=channel_id,
                kind=TEXT_CHANNELS[channel["type"]],
                title=f"{guild} #{channel.get('name', channel_id)}"
                if guild
                else str(channel.get("name")),
                metadata={
                    "guild_id": str(channel.get("guild_id") or ""),
                    "discord_type": channel["type"],
                },
            )
            people: dict[str, IdentityRecord] = {}
            records = [self._message(m, channel_id, people) for m in messages]
            batch = Batch(
                account=self._bot.record(),
                chats=(chat,),
                identities=tuple(people.values()),
                messages=tuple(records),
                cursor={"after": after},
                cursor_stream=self.kind,
            )
            more = any(c not in self._drained for c, _, _ in self._channel_list())
            # `after=` answers the messages right after `since`: none between is missing.
            # A page shorter than asked for is the channel's end: nothing after it either.
            through = int(messages[-1]["id"]) if channel_id not in self._drained else END
            span = Span(chat=channel_id, after=int(since), through=through)
            return Page(batch=batch, cursor={"after": after}, more=more, spans=(span,))
        return Page(batch=None, cursor={"after": after}, more=False)

    def _message(
        self, raw: Mapping[str, Any], channel_id: str, people: dict[str, IdentityRecord]
    ) -> MessageRecord:
        author = raw.get("author") or {}
        sender = str(author.get("id") or "") or None
        if sender:
            people[sender] = IdentityRecord(
                external_id=sender,
                display_name=_name(author),
                handle=str(author.get("username") or ""),
            )
        reference = raw.get("message_reference") or {}
        reply_to = ""
        if str(reference.get("channel_id") or channel_id) == channel_id:
            reply_to = str(reference.get("message_id") or "")
        attachments = tuple(
            AttachmentRecord(
                external_id=str(a.get("id") or ""),
                file_name=str(a.get("filename") or ""),
                mime_type=str(a.get("content_type") or ""),
                size=a.get("size"),
                metadata={"url": str(a.get("url") or "")},
            )
            for a in raw.get("attachments") or []
        )
        metadata = {
            name: raw[name]
            for name in ("embeds", "reactions", "mentions", "sticker_items", "poll")
            if raw.get(name)
        }
        sent = _time(str(raw["timestamp"]))
        assert sent is not None
        return MessageRecord(
            chat_external_id=channel_id,
            external_id=str(raw["id"]),
            sent_at=sent,
            text=str(raw.get("content") or ""),
            sender_external_id=sender,
            direction="out" if sender == self._bot.sender_id else "in",
            kind="service" if raw.get("type") in SERVICE_TYPES else "text",
            reply_to_external_id=reply_to,
            edited_at=_time(raw.get("edited_timestamp")),
            raw_json=json.dumps(raw, ensure_ascii=False),
            metadata=metadata,
            attachments=attachments,
        )

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        """Every channel from the first snowflake of `since` (a snowflake is milliseconds
        since Discord's epoch, shifted left 22 bits), never past where it already was."""
        self._repairing = True
        floor = max(0, int(since.timestamp() * 1000) - DISCORD_EPOCH_MS) << 22
        after = {
            channel: str(min(int(last), floor))
            for channel, last in dict(cursor.get("after") or {}).items()
        }
        return {"after": after}

    def send(self, message: OutboundMessage) -> str:
        # A nonce with enforce_nonce: Discord answers a repeated send with the first message.
        body: dict[str, Any] = {
            "content": message.text,
            "nonce": message.send_id[-25:],
            "enforce_nonce": True,
        }
        if message.reply_to_external_id:
            body["message_reference"] = {
                "message_id": message.reply_to_external_id,
                "fail_if_not_exists": False,
            }
        try:
            sent = self._request(
                "POST", f"/channels/{message.chat_external_id}/messages", json=body
            )
        except LiveError as exc:
            raise SendError(str(exc)) from None
        return str(sent["id"])
