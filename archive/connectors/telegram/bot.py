"""Telegram bot, live: the Bot API (https://core.telegram.org/bots/api) over HTTPS.

`getUpdates` with `offset` is the cursor: an update is confirmed to Telegram only by asking
for a later offset, which happens after the page's batch (and the offset inside it) is
committed, so a run killed in between reads the same updates again and records nothing
twice. Messages, channel posts and their edits are kept; the Bot API reports no
deletions. `sendMessage` sends. The token is part of every URL, so no URL is ever logged
or put in an error message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from archive.connectors.http import BotAccount, HttpApi, bot_token
from archive.connectors.live import Capabilities, Connected, LiveError, Page, TokenForm
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import Batch, ChatRecord, IdentityRecord, MessageRecord

API_URL = "https://api.telegram.org"
MAX_LIMIT = 100  # getUpdates returns at most 100 updates
CHAT_KINDS = {"private": "dm", "group": "group", "supergroup": "group", "channel": "channel"}
MESSAGE_KEYS = ("message", "edited_message", "channel_post", "edited_channel_post")


def _name(user: Mapping[str, Any]) -> str:
    parts = [str(user.get("first_name") or ""), str(user.get("last_name") or "")]
    return " ".join(p for p in parts if p) or str(user.get("title") or user.get("username") or "")


def _text(message: Mapping[str, Any]) -> str:
    text = message.get("text")
    if text is None:
        text = message.get("caption")
    return str(text or "")


class TelegramBot:
    kind: ClassVar[str] = "telegram_bot"
    provider: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram bot (Bot API token)"
    capabilities: ClassVar[Capabilities] = Capabilities(live=True, send=True, edits=True)
    token_form: ClassVar[TokenForm] = TokenForm(
        title="Telegram bot",
        help="A token from @BotFather. The bot sees the chats it is a member of, from the"
        " moment it joined.",
        api=API_URL.removeprefix("https://"),
    )

    def __init__(self, credentials: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        self._token = bot_token(credentials, where="from @BotFather")
        # Telegram's apps show a bot as "@username" and its messages as from "user<id>".
        self._bot = BotAccount.kept(
            self.provider, settings, name_prefix="@", sender_prefix="user", name_is_handle=True
        )
        # The Bot API answers 404 "Not Found" to a token it does not know.
        self._api = HttpApi(
            "Telegram",
            str(settings.get("api_url") or API_URL),
            secret=self._token,
            credential_statuses=(401, 404),
        )

    def close(self) -> None:
        self._api.close()

    # the wire -----------------------------------------------------------------------------

    def _call(self, method: str, payload: Mapping[str, Any]) -> Any:
        # The token is part of the path: errors name the method only.
        _, body = self._api.call(
            "POST", f"/bot{self._token}/{method}", label=method, json=dict(payload)
        )
        if not isinstance(body, dict):
            raise self._api.unexpected(method)
        return body.get("result")

    # the port -----------------------------------------------------------------------------

    def connect(self) -> Connected:
        me = self._call("getMe", {})
        if not isinstance(me, dict) or "id" not in me:
            raise self._api.unexpected("getMe")
        return self._bot.connected(str(me["id"]), str(me.get("username") or _name(me)))

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        offset = int(cursor.get("offset") or 0)
        limit = max(1, min(limit, MAX_LIMIT))
        payload: dict[str, Any] = {
            "limit": limit,
            "timeout": 0,
            "allowed_updates": list(MESSAGE_KEYS),
        }
        if offset:
            payload["offset"] = offset
        updates = self._call("getUpdates", payload) or []
        if not updates:
            return Page(batch=None, cursor={"offset": offset}, more=False)
        chats: dict[str, ChatRecord] = {}
        people: dict[str, IdentityRecord] = {}
        messages: list[MessageRecord] = []
        for update in updates:
            offset = max(offset, int(update["update_id"]) + 1)
            for key in MESSAGE_KEYS:
                if key in update:
                    record = self._message(update[key], chats, people)
                    if record is not None:
                        messages.append(record)
        batch = Batch(
            account=self._bot.record(),
            chats=tuple(chats.values()),
            identities=tuple(people.values()),
            messages=tuple(messages),
            cursor={"offset": offset},
            cursor_stream=self.kind,
        )
        return Page(batch=batch, cursor={"offset": offset}, more=len(updates) >= limit)

    def _message(
        self,
        raw: Mapping[str, Any],
        chats: dict[str, ChatRecord],
        people: dict[str, IdentityRecord],
    ) -> MessageRecord | None:
        chat = raw.get("chat") or {}
        if "id" not in chat or "message_id" not in raw or "date" not in raw:
            return None
        chat_id = str(chat["id"])
        chats[chat_id] = ChatRecord(
            external_id=chat_id,
            kind=CHAT_KINDS.get(str(chat.get("type")), "group"),
            title=str(chat.get("title") or _name(chat)),
            metadata={"telegram_type": str(chat.get("type") or "")},
        )
        sender = raw.get("from") or raw.get("sender_chat")
        sender_id = None
        if isinstance(sender, Mapping) and "id" in sender:
            prefix = (
                "user" if "first_name" in sender or sender.get("is_bot") is not None else "chat"
            )
            sender_id = f"{prefix}{sender['id']}"
            people[sender_id] = IdentityRecord(
                external_id=sender_id,
                display_name=_name(sender),
                handle=str(sender.get("username") or ""),
            )
        reply = raw.get("reply_to_message") or {}
        edited = raw.get("edit_date")
        metadata: dict[str, Any] = {}
        for name in ("entities", "caption_entities", "forward_origin", "sticker", "poll"):
            if name in raw:
                metadata[name] = raw[name]
        service = not _text(raw) and any(
            key in raw
            for key in ("new_chat_members", "left_chat_member", "new_chat_title", "pinned_message")
        )
        return MessageRecord(
            chat_external_id=chat_id,
            external_id=str(raw["message_id"]),
            sent_at=datetime.fromtimestamp(int(raw["date"]), UTC),
            text=_text(raw),
            sender_external_id=sender_id,
            direction="out" if sender_id == self._bot.sender_id else "in",
            kind="service" if service else "text",
            reply_to_external_id=str(reply.get("message_id") or ""),
            edited_at=datetime.fromtimestamp(int(edited), UTC) if edited else None,
            raw_json=json.dumps(raw, ensure_ascii=False),
            metadata=metadata,
        )

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return None  # getUpdates is a queue: what was confirmed is gone from it

    def send(self, message: OutboundMessage) -> str:
        payload: dict[str, Any] = {"chat_id": message.chat_external_id, "text": message.text}
        if message.reply_to_external_id:
            payload["reply_parameters"] = {
                "message_id": int(message.reply_to_external_id),
                "allow_sending_without_reply": True,
            }
        try:
            sent = self._call("sendMessage", payload)
        except LiveError as exc:
            raise SendError(str(exc)) from None
        return str(sent["message_id"])
