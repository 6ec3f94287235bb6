"""How one message of a Slack export becomes records.

`ts` (seconds since 1970, UTC, as a string with microseconds) is a message's time and id;
a reply names its parent by `thread_ts`. Slack's markup (`<@U…>`, `<#C…|name>`, `<!here>`,
`<url|label>`, HTML-escaped `& < >`) becomes plain text. A message without a readable `ts`
is kept (archive/connectors/estimates.py): its id a content hash, its time that of its
neighbour in the day file, else the day file's date, marked estimated; an unreadable edit
time is left out; a message without a user or bot has no sender.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from archive.connectors.base import (
    FormatError,
    ImportItem,
    json_dict,
    json_id,
    json_list,
    json_text,
)
from archive.connectors.estimates import FROM_DAY_FILE, ContentIds, estimate_note
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord

SERVICE_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "group_join",
        "group_leave",
        "bot_add",
        "bot_remove",
        "bot_enable",
        "bot_disable",
        "app_conversation_join",
        "app_conversation_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "channel_archive",
        "channel_unarchive",
        "group_topic",
        "group_purpose",
        "group_name",
        "group_archive",
        "group_unarchive",
        "channel_convert_to_private",
        "channel_convert_to_public",
        "channel_posting_permissions",
        "channel_canvas_updated",
        "pinned_item",
        "unpinned_item",
        "reminder_add",
        "sh_room_created",
    }
)
FILE_FIELDS = (
    "title",
    "filetype",
    "pretty_type",
    "mode",
    "is_external",
    "external_type",
    "url_private",
    "url_private_download",
    "permalink",
    "permalink_public",
    "created",
)

_TS = re.compile(r"^\s*(\d{1,12})(?:\.(\d+))?\s*$")
_MARKUP = re.compile(r"<([^<>]*)>")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?://)?")


def ts_datetime(value: object) -> datetime:
    """A Slack `ts` ("1736478514.897649", seconds since 1970 in UTC) as an aware datetime."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a Slack ts: {value!r}")
    match = _TS.match(value if isinstance(value, str) else f"{value:.6f}")
    if match is None:
        raise ValueError(f"not a Slack ts: {value!r}")
    micros = int((match.group(2) or "")[:6].ljust(6, "0"))
    return datetime.fromtimestamp(int(match.group(1)), tz=UTC) + timedelta(microseconds=micros)


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def slack_text(raw: str, users: dict[str, str], channels: dict[str, str]) -> str:
    """Slack's message markup as plain text: `<@U1>` → `@Name`, `<#C1|general>` → `#general`,
    `<url|label>` → `label (url)`, `<!here>` → `@here`, and `&amp; &lt; &gt;` unescaped."""
    out: list[str] = []
    position = 0
    for match in _MARKUP.finditer(raw):
        out.append(_unescape(raw[position : match.start()]))
        out.append(_markup(match.group(1), users, channels))
        position = match.end()
    out.append(_unescape(raw[position:]))
    return "".join(out)


def _markup(body: str, users: dict[str, str], channels: dict[str, str]) -> str:
    target, _, label = body.partition("|")
    label = _unescape(label)
    if target.startswith("@"):
        return "@" + (users.get(target[1:]) or label.lstrip("@") or target[1:])
    if target.startswith("#"):
        return "#" + (channels.get(target[1:]) or label.lstrip("#") or target[1:])
    if target.startswith("!"):
        command = target[1:]
        if command.startswith("subteam^"):
            return label if label.startswith("@") else "@" + (label or command[8:])
        if command.startswith("date^"):
            return label or command
        return label or "@" + command
    url = _unescape(target)
    bare = _SCHEME.sub("", url, count=1)
    if not label:
        return bare if url.lower().startswith("mailto:") else url
    if label in (url, bare):
        return label
    return f"{label} ({url})"


def _ts_or_none(value: object) -> datetime | None:
    """A `ts` as a datetime; None when it is missing or cannot be read."""
    if value is None or value == "":
        return None
    try:
        return ts_datetime(value)
    except (ValueError, OverflowError, OSError):
        return None


@dataclass
class Translation:
    """Messages of the day files into ImportItems: the people and channels the lists named
    (shared with the workspace, which fills them), and the skips it counts."""

    identities: dict[str, IdentityRecord]
    names: dict[str, str]  # user id -> name shown for a mention
    channel_names: dict[str, str]
    skipped: Counter[str]
    content_ids: ContentIds = field(default_factory=ContentIds)

    def sender(self, raw: dict[str, Any]) -> IdentityRecord | None:
        # Old file_comment messages name their author only in the comment.
        user = json_id(raw.get("user")) or json_id(json_dict(raw.get("comment")).get("user"))
        if user:
            known = self.identities.get(user)
            if known is not None:
                return known
            profile = json_dict(raw.get("user_profile"))
            display = (
                json_text(profile.get("real_name"))
                or json_text(profile.get("display_name"))
                or json_text(raw.get("username"))
            )
            return IdentityRecord(
                external_id=user,
                display_name=display or ("Slackbot" if user == "USLACKBOT" else ""),
                handle=json_text(profile.get("name")),
            )
        bot = json_dict(raw.get("bot_profile"))
        bot_id = json_id(raw.get("bot_id")) or json_id(bot.get("id"))
        if bot_id:
            name = json_text(raw.get("username")) or json_text(bot.get("name"))
            return IdentityRecord(external_id=bot_id, display_name=name, handle=name)
        return None

    def item(
        self, chat: ChatRecord, raw: Any, relative: str, where: str, day: datetime
    ) -> ImportItem | None:
        """The message `raw` of a day file (`relative`, whose date is `day`), or None for
        an item that is no message."""
        if not isinstance(raw, dict):
            raise FormatError(relative, where, "a message must be a JSON object")
        if raw.get("type", "message") != "message":
            self.skipped[f"Slack item of type {raw.get('type')!r}"] += 1
            return None
        subtype = json_text(raw.get("subtype"))
        if subtype == "message_deleted":
            self.skipped["Slack message_deleted event"] += 1
            return None
        outer = raw
        if subtype == "message_changed" and isinstance(raw.get("message"), dict):
            raw = raw["message"]
        ts = raw.get("ts")
        message_id = json_id(ts)
        sent_at = _ts_or_none(ts)
        estimated = sent_at is None
        if sent_at is None:
            sent_at = day  # provisional: a neighbour's time in the day file replaces it
        edited = json_dict(raw.get("edited"))
        edited_at = _ts_or_none(edited.get("ts"))
        if outer is not raw and edited_at is None:
            edited_at = _ts_or_none(outer.get("ts"))

        sender = self.sender(raw)
        identities: dict[str, IdentityRecord] = {}
        if sender is not None:
            identities[sender.external_id] = sender
        raw_text = json_text(raw.get("text"))
        for mentioned in re.findall(r"<@([A-Z0-9]+)", raw_text):
            if mentioned in self.identities:
                identities.setdefault(mentioned, self.identities[mentioned])
        if sender is not None and sender.display_name:
            # Known from the message alone (not in users.json): mentions of them read well.
            self.names.setdefault(sender.external_id, sender.display_name)
        text = slack_text(raw_text, self.names, self.channel_names)

        metadata: dict[str, Any] = {}
        if subtype:
            metadata["subtype"] = subtype
        if raw_text and raw_text != text:
            metadata["raw_text"] = raw_text
        for key in ("bot_id", "username", "parent_user_id", "client_msg_id"):
            if json_id(raw.get(key)):
                metadata[key] = json_id(raw[key])
        if edited.get("user"):
            metadata["edited_by"] = json_id(edited["user"])
        reactions = [
            {
                "name": json_text(r.get("name")),
                "count": r.get("count") if isinstance(r.get("count"), int) else 1,
                "users": [json_id(u) for u in json_list(r.get("users")) if json_id(u)],
            }
            for r in map(json_dict, json_list(raw.get("reactions")))
            if json_text(r.get("name"))
        ]
        if reactions:
            metadata["reactions"] = reactions
        thread_ts = json_id(raw.get("thread_ts"))
        reply_to = thread_ts if thread_ts and thread_ts != message_id else ""
        if thread_ts and not reply_to and raw.get("reply_count"):
            metadata["thread"] = {
                "reply_count": raw.get("reply_count"),
                "reply_users": [json_id(u) for u in json_list(raw.get("reply_users"))],
                "latest_reply": json_id(raw.get("latest_reply")),
            }
        if legacy := [
            json_dict(a) for a in json_list(raw.get("attachments")) if isinstance(a, dict)
        ]:
            metadata["attachments"] = [
                {k: a[k] for k in ("fallback", "title", "title_link", "text") if a.get(k)}
                for a in legacy
            ]
        if raw.get("pinned_to"):
            metadata["pinned_to"] = [json_id(c) for c in json_list(raw.get("pinned_to"))]
        if estimated:
            estimate_note(metadata, FROM_DAY_FILE)
        if not message_id:
            sender_id = sender.external_id if sender else None
            message_id = self.content_ids(chat.external_id, sender_id, relative, text)
            metadata["id_missing"] = True

        deleted_at = None
        if subtype == "tombstone" or raw.get("is_deleted"):
            # The export does not say when; the time the message was sent is the only bound.
            deleted_at = edited_at or sent_at
            metadata["deleted_time_unknown"] = True

        files = [f for f in json_list(raw.get("files")) if isinstance(f, dict)]
        if isinstance(raw.get("file"), dict):  # old exports: one file, singular
            files.append(raw["file"])
        attachments = tuple(self.file(f, index) for index, f in enumerate(files))
        message = MessageRecord(
            chat_external_id=chat.external_id,
            external_id=message_id,
            sent_at=sent_at,
            text=text,
            sender_external_id=sender.external_id if sender else None,
            kind="service" if subtype in SERVICE_SUBTYPES else "text",
            reply_to_external_id=reply_to,
            edited_at=edited_at,
            deleted_at=deleted_at,
            raw_json=json.dumps(outer, ensure_ascii=False, separators=(",", ":")),
            metadata=metadata,
            attachments=attachments,
            date_estimated=estimated,
        )
        return ImportItem(chat=chat, message=message, identities=tuple(identities.values()))

    def file(self, raw: dict[str, Any], index: int) -> AttachmentRecord:
        size = raw.get("size")
        return AttachmentRecord(
            external_id=json_id(raw.get("id")) or f"#{index}",
            file_name=json_text(raw.get("name")) or json_text(raw.get("title")),
            mime_type=json_text(raw.get("mimetype")),
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            metadata={k: raw[k] for k in FILE_FIELDS if raw.get(k) not in (None, "")},
        )
