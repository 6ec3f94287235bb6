"""DiscordChatExporter JSON exports: one file per channel, thread or DM.

A file is `{"guild": {...}, "channel": {...}, "dateRange": {...}, "messages": [...],
"messageCount": N}`. Files reach gigabytes, so the messages are streamed one by one with
ijson, through a guard that refuses nesting, a value and a message past their caps before
the parser sees them (json_guard.py); `guild` and `channel` come before `messages` in every
real file (a file where they do not is still read, at the cost of one extra pass).
`messageCount` is written last; it is read from the file's tail and only used as the
expected total. A string longer than WIRECAT_IMPORT_MAX_JSON_VALUE (a huge `content`) reaches
the reader as its first part and a marker, the whole of it set aside (json_strings.py).

Quirks taken care of: 1 to 7 fractional digits and any UTC offset in timestamps; service
message types (GuildMemberJoin, ThreadCreated, Call, ChannelNameChange…); a Reply whose
`reference.messageId` is null; reaction emoji ids null, "" or a snowflake; a missing
`author.nickname`; the same message id twice in a file (passed on: the sink keeps the last);
`--media` exports whose attachment urls are local paths (often with backslashes) relative to
the JSON file's folder. Remote urls are kept as metadata and never fetched. A message
without an id, a time or an author is kept (estimates.py): a content hash for its id, the
time of its neighbour in the file (else the file's time, marked estimated), no sender.

Owner: the file does not say who exported it, so messages are "in" unless a one-to-one DM
tells. A DM channel is named after the other side: when exactly two people wrote in it and
exactly one of them goes by the channel's name (username, nickname or `name#discriminator`,
compared case-insensitively after trimming), the other one exported it — the owner, whose
messages are "out" and who becomes the account's own identity. `--account NAME` naming one
of the DM's two authors (by id, username or nickname) picks the owner instead; an account
name that names neither is only the account's name. Finding the authors costs one extra
pass over a DM's file before the messages are read (stopped at a third author). Group DMs,
threads and guild channels name no owner: names are neither unique nor stable there.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar
from urllib.parse import unquote

import ijson

from archive.connectors.base import (
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    export_account,
    file_opener,
    json_dict,
    json_id,
    json_list,
    json_text,
    safe_member,
)
from archive.connectors.discord.json_file import (
    BUFFER,
    DETECT_EVENTS,
    PARSE_ERRORS,
    Tracked,
    problem,
    read_all_top_level,
    read_header,
    tail_message_count,
)
from archive.connectors.estimates import (
    FROM_FILE_TIME,
    ContentIds,
    estimate_note,
    file_time,
    neighbours_dated,
)
from archive.connectors.json_guard import Events, open_guarded
from archive.store.domain import AttachmentRecord, ChatRecord, IdentityRecord, MessageRecord

# Message types that are somebody writing something; every other type is a service event.
TEXT_TYPES = frozenset(
    {"Default", "Reply", "ChatInputCommand", "ContextMenuCommand", "0", "19", "20", "23"}
)
DM_TYPES = frozenset({"DirectTextChat", "DM", "1"})
GROUP_TYPES = frozenset({"DirectGroupTextChat", "GroupDM", "3"})
THREAD_TYPES = frozenset(
    {
        "GuildPublicThread",
        "GuildPrivateThread",
        "GuildNewsThread",
        "PublicThread",
        "PrivateThread",
        "AnnouncementThread",
        "10",
        "11",
        "12",
    }
)
SERVICE_TEXT = {
    "RecipientAdd": "Added a recipient to the group.",
    "RecipientRemove": "Removed a recipient from the group.",
    "Call": "Started a call.",
    "ChannelNameChange": "Changed the channel name.",
    "ChannelIconChange": "Changed the channel icon.",
    "ChannelPinnedMessage": "Pinned a message.",
    "GuildMemberJoin": "Joined the server.",
    "ThreadCreated": "Started a thread.",
}

_TIMESTAMP = re.compile(
    r"^\s*(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})[Tt ]"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?(?:[.,](?P<fraction>\d+))?"
    r"\s*(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?\s*$"
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def parse_timestamp(value: object) -> datetime:
    """An ISO 8601 time as DiscordChatExporter writes it (1 to 7 fractional digits, any
    offset; none means UTC), as an aware UTC datetime. Digits past microseconds are dropped."""
    if not isinstance(value, str):
        raise ValueError(f"expected a timestamp string, got {value!r}")
    match = _TIMESTAMP.match(value)
    if match is None:
        raise ValueError(f"not a timestamp: {value!r}")
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    zone = match["zone"]
    offset = timedelta(0)
    if zone and zone not in "Zz":
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        if zone[0] == "-":
            offset = -offset
    moment = datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        int(match["hour"]),
        int(match["minute"]),
        int(match["second"] or 0),
        int(fraction),
        tzinfo=timezone(offset),
    )
    return moment.astimezone(UTC)


def _time_or_none(value: object) -> datetime | None:
    """A timestamp field; None when it is missing or cannot be read."""
    if value is None or value == "":
        return None
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError):
        return None


def _type_name(value: object) -> str:
    if value is None or value == "":
        return "Default"
    return json_id(value)


def _identity(user: dict[str, Any]) -> IdentityRecord | None:
    external_id = json_id(user.get("id"))
    if not external_id:
        return None
    name = json_text(user.get("name"))
    return IdentityRecord(
        external_id=external_id,
        display_name=json_text(user.get("nickname")) or name,
        handle=name,
    )


def _chat_kind(channel_type: str, guild_id: str) -> str:
    if channel_type in DM_TYPES:
        return "dm"
    if channel_type in GROUP_TYPES:
        return "group"
    if channel_type in THREAD_TYPES:
        return "thread"
    if guild_id == "0":  # Direct Messages, type not written (old exports)
        return "dm"
    return "channel"


def _chat(path: Path, header: dict[str, Any]) -> ChatRecord:
    guild = header.get("guild")
    channel = header.get("channel")
    if not isinstance(channel, dict) or not json_id(channel.get("id")):
        raise FormatError(path, "channel", "the export names no channel (no channel id)")
    guild = json_dict(guild)
    guild_id = json_id(guild.get("id"))
    channel_type = json_id(channel.get("type"))
    kind = _chat_kind(channel_type, guild_id)
    name = json_text(channel.get("name"))
    # DiscordChatExporter writes a thread's parent channel as its "category".
    category = json_text(channel.get("category"))
    category_id = json_id(channel.get("categoryId"))
    metadata: dict[str, Any] = {
        "guild_id": guild_id,
        "guild_name": json_text(guild.get("name")),
        "channel_type": channel_type,
    }
    if kind == "thread":
        metadata.update(parent_id=category_id, parent_name=category)
    elif category_id or category:
        metadata.update(category_id=category_id, category=category)
    if json_text(channel.get("topic")):
        metadata["topic"] = channel["topic"]
    if kind in ("dm", "group"):
        title = name
    else:
        title = " / ".join(part for part in (json_text(guild.get("name")), category, name) if part)
    return ChatRecord(
        external_id=json_id(channel["id"]), kind=kind, title=title or name, metadata=metadata
    )


def _authors(path: Path, most: int) -> list[dict[str, Any]] | None:
    """The file's message authors (one per id, in order of their first message), or None
    once there are more than `most`. A file that breaks off gives those read until then:
    the messages before the break are the ones imported."""
    handle, guard = open_guarded(path)
    found: dict[str, dict[str, Any]] = {}
    with handle:
        try:
            for author in ijson.items(guard, "messages.item.author", use_float=True):
                author = json_dict(author)
                key = json_id(author.get("id"))
                if key and key not in found:
                    found[key] = author
                    if len(found) > most:
                        return None
        except (FormatError, *PARSE_ERRORS):
            pass  # the main pass reports where and why
    return list(found.values())


def _names(author: dict[str, Any]) -> set[str]:
    """The names an author goes by, trimmed and case-folded."""
    name = json_text(author.get("name")).strip()
    names = {name, json_text(author.get("nickname")).strip()}
    discriminator = json_id(author.get("discriminator"))
    if name and discriminator.strip("0"):
        names.add(f"{name}#{discriminator}")  # how exports before 2023 named a DM
    return {each.casefold() for each in names if each}


def _dm_owner(path: Path, header: dict[str, Any], options: ReadOptions) -> IdentityRecord | None:
    """The owner of a one-to-one DM: the author `--account` names, else the one of its two
    authors who is not the one the channel is named after; None when that is not clear."""
    authors = _authors(path, most=2)
    if authors is None or len(authors) != 2:
        return None
    wanted = (options.account_name or "").strip().casefold()
    if wanted:
        named = [a for a in authors if wanted in _names(a) | {json_id(a.get("id")).casefold()}]
        if len(named) == 1:
            return _identity(named[0])
    peer = json_text(json_dict(header.get("channel")).get("name")).strip().casefold()
    if not peer:
        return None
    others = [author for author in authors if peer not in _names(author)]
    return _identity(others[0]) if len(others) == 1 else None


def _reactions(raw: list[Any]) -> list[dict[str, Any]]:
    reactions = []
    for reaction in raw:
        if not isinstance(reaction, dict):
            continue
        emoji = json_dict(reaction.get("emoji"))
        entry: dict[str, Any] = {
            "emoji": json_text(emoji.get("name")) or json_text(emoji.get("code")),
            # null and "" both mean a Unicode emoji; a snowflake means a custom one.
            "emoji_id": json_id(emoji.get("id")) or None,
            "count": reaction.get("count") if isinstance(reaction.get("count"), int) else 1,
        }
        if emoji.get("isAnimated"):
            entry["animated"] = True
        users = [json_id(json_dict(user).get("id")) for user in json_list(reaction.get("users"))]
        if any(users):
            entry["users"] = [user for user in users if user]
        reactions.append(entry)
    return reactions


def _users(raw: list[Any]) -> list[dict[str, Any]]:
    users = []
    for user in raw:
        user = json_dict(user)
        if not json_id(user.get("id")):
            continue
        entry = {"id": json_id(user.get("id")), "name": json_text(user.get("name"))}
        if json_text(user.get("nickname")):
            entry["nickname"] = user["nickname"]
        users.append(entry)
    return users


def _service_text(kind: str, mentions: list[dict[str, Any]]) -> str:
    names = ", ".join(m.get("nickname") or m["name"] for m in mentions if m.get("name"))
    if kind == "RecipientAdd" and names:
        return f"Added {names} to the group."
    if kind == "RecipientRemove" and names:
        return f"Removed {names} from the group."
    if kind in SERVICE_TEXT:
        return SERVICE_TEXT[kind]
    return _CAMEL.sub(" ", kind).capitalize() + "."


def _is_remote(url: str) -> bool:
    return bool(_SCHEME.match(url)) and not (len(url) > 1 and url[1] == ":")


def _escapes(folder: Path, relative: str) -> bool:
    """Whether `relative` points outside `folder` (rather than at a file that is missing)."""
    cleaned = relative.replace("\\", "/").strip()
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        return True
    if ".." in PurePosixPath(cleaned).parts:
        return True
    candidate = folder / cleaned
    return candidate.exists() or candidate.is_symlink()  # there, yet refused: a link out


class _Reader:
    """Reads one opened file: turns its messages into ImportItems."""

    def __init__(
        self, path: Path, chat: ChatRecord, skipped: Counter[str], owner_id: str | None = None
    ) -> None:
        self.path = path
        self.folder = path.parent
        self.chat = chat
        self.owner_id = owner_id  # whose messages are outbound, when known
        self.skipped = skipped
        self.content_ids = ContentIds()  # for messages without an id
        self.file_time = file_time(path)  # undated messages' provisional time

    def items(self) -> Iterator[ImportItem]:
        handle, guard = open_guarded(self.path)
        with handle:
            tracked = Tracked(guard)
            events = Events(tracked, guard=guard, buf_size=BUFFER)
            index = 0
            while True:
                try:
                    found = next(events, None)
                    if found is None:
                        return
                    prefix, event, value = found
                    if prefix != "messages.item":
                        continue
                    raw = events.build(prefix, event, value)
                except PARSE_ERRORS as exc:
                    raise FormatError(
                        self.path, f"message #{index + 1}, {tracked.where}", problem(exc)
                    ) from exc
                index += 1
                # Bytes it spans, at most: past the text cap, its source JSON is set aside.
                yield self.item(raw, index)

    def item(self, raw: Any, index: int) -> ImportItem:
        if not isinstance(raw, dict):
            raise FormatError(self.path, f"message #{index}", "a message must be a JSON object")
        # A missing or unreadable field never costs the message (estimates.py): no id, a
        # content hash; no time, a neighbour's; an unreadable edit or call end, none.
        message_id = json_id(raw.get("id"))
        sent_at = _time_or_none(raw.get("timestamp"))
        estimated = sent_at is None
        if sent_at is None:
            sent_at = self.file_time  # provisional: a neighbour's time replaces it
        edited_at = _time_or_none(raw.get("timestampEdited"))
        call_ended_at = _time_or_none(raw.get("callEndedTimestamp"))

        message_type = _type_name(raw.get("type"))
        kind = "text" if message_type in TEXT_TYPES else "service"
        author = json_dict(raw.get("author"))
        sender = _identity(author)
        mentions = _users(json_list(raw.get("mentions")))
        identities: dict[str, IdentityRecord] = {}
        for user in [author, *json_list(raw.get("mentions"))]:
            identity = _identity(json_dict(user))
            if identity is not None:
                identities.setdefault(identity.external_id, identity)

        metadata: dict[str, Any] = {"type": message_type}
        if author:
            metadata["author"] = {
                key: value
                for key, value in (
                    ("name", json_text(author.get("name"))),
                    ("nickname", json_text(author.get("nickname"))),
                    ("discriminator", json_text(author.get("discriminator"))),
                    ("is_bot", bool(author.get("isBot"))),
                )
                if value or key == "is_bot"
            }
        if raw.get("isPinned"):
            metadata["pinned"] = True
        if reactions := _reactions(json_list(raw.get("reactions"))):
            metadata["reactions"] = reactions
        if mentions:
            metadata["mentions"] = mentions
        if embeds := [embed for embed in json_list(raw.get("embeds")) if isinstance(embed, dict)]:
            metadata["embeds"] = embeds
        if stickers := [s for s in json_list(raw.get("stickers")) if isinstance(s, dict)]:
            metadata["stickers"] = stickers
        if interaction := json_dict(raw.get("interaction")):
            metadata["interaction"] = interaction
        if call_ended_at is not None:
            metadata["call_ended_at"] = call_ended_at.isoformat()
            metadata["call_seconds"] = max(0, int((call_ended_at - sent_at).total_seconds()))

        reference = json_dict(raw.get("reference"))
        reply_to = ""
        if reference:
            metadata["reference"] = {
                key: json_id(value) or None for key, value in reference.items()
            }
            parent = json_id(reference.get("messageId"))
            channel = json_id(reference.get("channelId"))
            same_chat = not channel or channel == self.chat.external_id
            if kind == "text" and parent and same_chat and parent != message_id:
                reply_to = parent
            if message_type == "ThreadCreated" and channel:
                metadata["thread_id"] = channel

        text = json_text(raw.get("content"))
        if kind == "service" and not text.strip():
            text = _service_text(message_type, mentions)
        if estimated:
            estimate_note(metadata, FROM_FILE_TIME)
        if not message_id:
            when = json_text(raw.get("timestamp")) if estimated else sent_at
            sender_id = sender.external_id if sender else None
            message_id = self.content_ids(self.chat.external_id, sender_id, when, text)
            metadata["id_missing"] = True

        attachments = tuple(
            self.attachment(attachment, position)
            for position, attachment in enumerate(json_list(raw.get("attachments")))
            if isinstance(attachment, dict)
        )
        message = MessageRecord(
            chat_external_id=self.chat.external_id,
            external_id=message_id,
            sent_at=sent_at,
            text=text,
            sender_external_id=sender.external_id if sender else None,
            kind=kind,
            direction="out" if sender and sender.external_id == self.owner_id else "in",
            reply_to_external_id=reply_to,
            edited_at=edited_at,
            raw_json=json.dumps(raw, ensure_ascii=False, separators=(",", ":")),
            metadata=metadata,
            attachments=attachments,
            date_estimated=estimated,
        )
        return ImportItem(chat=self.chat, message=message, identities=tuple(identities.values()))

    def attachment(self, raw: dict[str, Any], position: int) -> AttachmentRecord:
        url = json_text(raw.get("url")).strip()
        name = json_text(raw.get("fileName")) or url.replace("\\", "/").rsplit("/", 1)[-1]
        size = raw.get("fileSizeBytes")
        metadata: dict[str, Any] = {}
        content = None
        if _is_remote(url):
            metadata["url"] = url  # kept, never fetched
        elif url:
            metadata["path"] = url
            found = safe_member(self.folder, url)
            if found is None and "%" in url:
                found = safe_member(self.folder, unquote(url))
            if found is not None:
                content = file_opener(found)
            elif _escapes(self.folder, url):
                metadata["path_refused"] = True
                self.skipped["attachment path outside the export refused"] += 1
            else:
                metadata["file_missing"] = True
                self.skipped["attachment file missing from the export"] += 1
        return AttachmentRecord(
            external_id=json_id(raw.get("id")) or f"#{position}",
            file_name=name,
            mime_type=mimetypes.guess_type(name)[0] or "",
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            metadata=metadata,
            content=content,
        )


class DiscordReader:
    format: ClassVar[str] = "discord"
    label: ClassVar[str] = "DiscordChatExporter JSON export"

    def detect(self, path: Path) -> bool:
        if not path.is_file():
            return False
        try:
            with path.open("rb") as handle:
                head = handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
            if not head.startswith(b"{"):
                return False
            header = read_header(path, limit=DETECT_EVENTS)
        except (OSError, FormatError, *PARSE_ERRORS):
            return False
        return (
            header.messages
            and isinstance(header.values.get("guild"), dict)
            and isinstance(header.values.get("channel"), dict)
        )

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        try:
            header = read_header(path)
            values = header.values
            if header.messages and not isinstance(values.get("channel"), dict):
                # Not where real files have it: look behind the messages.
                values = {**read_all_top_level(path), **values}
        except PARSE_ERRORS as exc:
            raise FormatError(path, "before the messages", problem(exc)) from exc
        if not header.messages:
            raise FormatError(path, "top level", 'no "messages" array')
        chat = _chat(path, values)
        count = values.get("messageCount")
        total = count if isinstance(count, int) else tail_message_count(path)
        owner = _dm_owner(path, values, options) if chat.kind == "dm" else None
        stream = ExportStream(
            format=self.format,
            account=replace(export_account("discord", options), owner=owner),
            items=iter(()),
            total=total,
        )
        owner_id = owner.external_id if owner else None
        stream.items = neighbours_dated(_Reader(path, chat, stream.skipped, owner_id).items())
        return stream


READER = DiscordReader()
