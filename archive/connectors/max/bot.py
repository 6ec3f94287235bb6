"""MAX bot, live: the MAX Bot API (https://dev.max.ru/docs-api) over HTTPS.

`GET /updates` with `marker` is the cursor: each answer names the marker of the next
update, and asking with it confirms everything before, which happens only after the
page's batch (and that marker inside it) is committed. New and edited messages are kept,
and `message_removed` updates become tombstones. `POST /messages?chat_id=` sends. The
token travels only in the `Authorization` header (MAX no longer accepts it as a query
parameter) and is never put in a log line or an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from archive.connectors.http import BotAccount, HttpApi, bot_token
from archive.connectors.live import Capabilities, Connected, LiveError, Page, TokenForm
from archive.connectors.sending import OutboundMessage, SendError
from archive.store.domain import (
    Batch,
    ChatRecord,
    DeletionRecord,
    IdentityRecord,
    MessageRecord,
)

API_URL = "https://platform-api2.max.ru"
MAX_LIMIT = 1000
UPDATE_TYPES = ("message_created", "message_edited", "message_removed")
CHAT_KINDS = {"dialog": "dm", "chat": "group", "channel": "channel"}


def _when(milliseconds: Any) -> datetime:
    return datetime.fromtimestamp(int(milliseconds) / 1000, UTC)


def _name(user: Mapping[str, Any]) -> str:
    parts = [str(user.get("first_name") or ""), str(user.get("last_name") or "")]
    return " ".join(p for p in parts if p) or str(user.get("name") or user.get("username") or "")


class MaxBot:
    kind: ClassVar[str] = "max_bot"
    provider: ClassVar[str] = "max"
    label: ClassVar[str] = "MAX bot (Bot API token)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        live=True, send=True, edits=True, deletions=True
    )
    token_form: ClassVar[TokenForm] = TokenForm(
        title="MAX bot",
        help="A token from MAX for partners (Chat bots → ⋮ → Settings). The bot sees the"
        " chats it is in from the moment it joined.",
        api=API_URL.removeprefix("https://"),
    )

    def __init__(self, credentials: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        self._token = bot_token(credentials, where="MAX for partners → Chat bots")
        self._bot = BotAccount.kept(self.provider, settings)
        self._api = HttpApi("MAX", str(settings.get("api_url") or API_URL), secret=self._token)

    def close(self) -> None:
        self._api.close()

    # the wire -----------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        # MAX takes the token in `Authorization` only (no longer as a query parameter).
        _, body = self._api.call(method, path, headers={"Authorization": self._token}, **kwargs)
        return body

    # the port -----------------------------------------------------------------------------

    def connect(self) -> Connected:
        me = self._request("GET", "/me")
        if not isinstance(me, dict) or "user_id" not in me:
            raise self._api.unexpected("GET /me")
        return self._bot.connected(str(me["user_id"]), _name(me))

    def fetch(self, cursor: Mapping[str, Any], limit: int) -> Page:
        marker = cursor.get("marker")
        params: dict[str, Any] = {
            "limit": max(1, min(limit, MAX_LIMIT)),
            "timeout": 0,
            "types": ",".join(UPDATE_TYPES),
        }
        if marker is not None:
            params["marker"] = marker
        answer = self._request("GET", "/updates", params=params) or {}
        updates = answer.get("updates") or []
        after = answer.get("marker", marker)
        if not updates:
            return Page(batch=None, cursor={"marker": after}, more=False)
        chats: dict[str, ChatRecord] = {}
        people: dict[str, IdentityRecord] = {}
        messages: list[MessageRecord] = []
        deletions: list[DeletionRecord] = []
        for update in updates:
            kind = update.get("update_type")
            if kind in ("message_created", "message_edited") and update.get("message"):
                edited = _when(update.get("timestamp") or 0) if kind == "message_edited" else None
                record = self._message(update["message"], edited, chats, people)
                if record is not None:
                    messages.append(record)
            elif kind == "message_removed" and update.get("message_id"):
                deletions.append(
                    DeletionRecord(
                        chat_external_id=str(update.get("chat_id")),
                        external_id=str(update["message_id"]),
                        deleted_at=_when(update.get("timestamp") or 0),
                    )
                )
        batch = Batch(
            account=self._bot.record(),
            chats=tuple(chats.values()),
            identities=tuple(people.values()),
            messages=tuple(messages),
            deletions=tuple(deletions),
            cursor={"marker": after},
            cursor_stream=self.kind,
        )
        return Page(batch=batch, cursor={"marker": after}, more=len(updates) >= params["limit"])

    def _message(
        self,
        raw: Mapping[str, Any],
        edited: datetime | None,
        chats: dict[str, ChatRecord],
        people: dict[str, IdentityRecord],
    ) -> MessageRecord | None:
        body = raw.get("body") or {}
        recipient = raw.get("recipient") or {}
        if not body.get("mid") or recipient.get("chat_id") is None:
            return None
        chat_id = str(recipient["chat_id"])
        sender = raw.get("sender") or {}
        sender_id = str(sender.get("user_id")) if sender.get("user_id") is not None else None
        kind = CHAT_KINDS.get(str(recipient.get("chat_type")), "group")
        if chat_id not in chats:
            title = _name(sender) if kind == "dm" and sender_id != self._bot.sender_id else ""
            chats[chat_id] = ChatRecord(
                external_id=chat_id,
                kind=kind,
                title=title or f"MAX chat {chat_id}",
                metadata={"max_chat_type": str(recipient.get("chat_type") or "")},
            )
        if sender_id is not None:
            people[sender_id] = IdentityRecord(
                external_id=sender_id,
                display_name=_name(sender),
                handle=str(sender.get("username") or ""),
            )
        link = raw.get("link") or {}
        reply_to = ""
        if link.get("type") == "reply":
            reply_to = str((link.get("message") or {}).get("mid") or "")
        metadata = {name: body[name] for name in ("attachments", "markup") if body.get(name)}
        if link.get("type") == "forward":
            metadata["forward"] = link
        sent = _when(raw.get("timestamp") or 0)
        return MessageRecord(
            chat_external_id=chat_id,
            external_id=str(body["mid"]),
            sent_at=sent,
            text=str(body.get("text") or ""),
            sender_external_id=sender_id,
            direction="out" if sender_id == self._bot.sender_id else "in",
            reply_to_external_id=reply_to,
            edited_at=edited,
            raw_json=json.dumps(raw, ensure_ascii=False),
            metadata=metadata,
        )

    def rewind(self, cursor: Mapping[str, Any], since: datetime) -> dict[str, Any] | None:
        return None  # updates are a queue: what was confirmed is gone from it

    def send(self, message: OutboundMessage) -> str:
        body: dict[str, Any] = {"text": message.text}
        if message.reply_to_external_id:
            body["link"] = {"type": "reply", "mid": message.reply_to_external_id}
        try:
            sent = self._request(
                "POST", "/messages", params={"chat_id": message.chat_external_id}, json=body
            )
        except LiveError as exc:
            raise SendError(str(exc)) from None
        return str(((sent or {}).get("message") or {}).get("body", {}).get("mid") or "")
