"""Telegram Desktop's JSON export ("Export chat history" / "Export Telegram data", JSON).

Three shapes are read: the `result.json` of one chat (`{"name", "type", "id", "messages"}`),
the `result.json` of a whole account (`{"personal_information", "contacts",
"chats": {"list": [chat, …]}, "left_chats": {"list": [...]}}`), and the export folder that
holds either (media paths in the JSON are relative to that folder).

Exports reach many gigabytes, so the file is never loaded: one pass of ijson events
(with prefixes, as `ijson.parse` gives them, but with a cap on nesting) walks it; each
chat's `name`/`type`/`id` are picked up as they pass (Telegram writes them before
`messages`) and each message is built on its own from its events. A short first pass reads
only what comes before the chats (the owner, the contacts' phone numbers) so the account
is known before any message is.
"""

from __future__ import annotations

import io
import json
import mimetypes
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, ClassVar

import ijson
from ijson.utils import sendable_list

from archive.connectors.base import (
    ExportStream,
    FormatError,
    ImportItem,
    ReadOptions,
    file_opener,
    read_head,
    safe_member,
)
from archive.store.domain import (
    AccountRecord,
    AttachmentRecord,
    ChatRecord,
    IdentityRecord,
    MessageRecord,
)

PROVIDER = "telegram"
RESULT_FILE = "result.json"
HEAD_BYTES = 16 * 1024
BOM = b"\xef\xbb\xbf"
MAX_CONTACT_PHONES = 200_000  # the contacts list is held in memory; bound it
MAX_SENDER_RECORDS = 50_000  # senders whose record is reused, a bounded cache
MAX_DEPTH = 64  # real exports nest about 8 deep

Event = tuple[str, str, Any]

CHAT_KINDS = {
    "personal_chat": "dm",
    "bot_chat": "dm",
    "saved_messages": "dm",
    "private_group": "group",
    "private_supergroup": "group",
    "public_supergroup": "group",
    "private_channel": "channel",
    "public_channel": "channel",
}
# Where chats sit in each layout: the prefix of a chat object in ijson's event stream, and
# whether the owner has left those chats.
SINGLE_CHAT_CONTAINERS = {"": False}
ACCOUNT_CONTAINERS = {"chats.list.item": False, "left_chats.list.item": True}

# Message fields that become MessageRecord fields; everything else travels in metadata.
CONSUMED = frozenset(
    {
        "id",
        "type",
        "date",
        "date_unixtime",
        "edited",
        "edited_unixtime",
        "from",
        "from_id",
        "actor",
        "actor_id",
        "action",
        "text",
        "text_entities",
        "reply_to_message_id",
        "photo",
        "file",
        "thumbnail",
        "contact_vcard",
    }
)
# Message fields that describe its media, copied onto the attachment's metadata as well.
MEDIA_FIELDS = (
    "media_type",
    "width",
    "height",
    "duration_seconds",
    "performer",
    "title",
    "sticker_emoji",
    "thumbnail",
    "media_spoiler",
)
CALL_ENDINGS = {"missed": "missed", "busy": "busy", "disconnect": "disconnected", "hangup": ""}


# --- reading the JSON -------------------------------------------------------------------


class _Tracked:
    """A binary file that remembers which bytes ijson has read, for error positions."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.start = 0
        self.end = 0
        if handle.read(len(BOM)) == BOM:
            self.start = self.end = len(BOM)
        else:
            handle.seek(0)

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.start = self.end
        self.end += len(data)
        return data

    def where(self, premature_end: bool) -> str:
        if premature_end:
            return f"byte {self.end} (end of file)"
        return f"bytes {self.start}-{self.end}"


# ijson's object builder fed with (prefix, event, value) events: C in the yajl2_c backend.
items_basecoro = ijson.get_backend(ijson.backend).items_basecoro


class _TooDeep(ijson.JSONError):
    """Nesting no export has; refused before prefixes or builders grow with it."""


STARTS = ("start_map", "start_array")
ENDS = ("end_map", "end_array")


class _Events:
    """`ijson.parse`'s (prefix, event, value) stream, refusing nesting deeper than
    MAX_DEPTH (every event's prefix costs time and memory in proportion to depth). The
    prefixes are made by ijson's C backend; `build` hands one whole value's events to
    ijson's C object builder, so a message costs no Python per JSON token."""

    def __init__(self, source: Any) -> None:
        self._events: Iterator[Event] = iter(ijson.parse(source, use_float=True))
        self._depth = 0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        found = next(self._events)
        event = found[1]
        if event in STARTS:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels")
        elif event in ENDS:
            self._depth -= 1
        return found

    def build(self, prefix: str, first: str, value: Any) -> Any:
        """The JSON value at `prefix` whose first event (`first`, just returned) starts it."""
        if first not in STARTS:
            return value
        built: list[Any] = sendable_list()
        builder = items_basecoro(built, prefix, map_type=None)
        builder.send((prefix, first, value))
        depth = 1
        room = MAX_DEPTH - self._depth + 1
        for found in self._events:
            builder.send(found)
            event = found[1]
            if event in STARTS:
                depth += 1
                if depth > room:
                    raise _TooDeep(f"the JSON nests deeper than {MAX_DEPTH} levels")
            elif event in ENDS:
                depth -= 1
                if depth == 0:
                    self._depth -= 1
                    return built[0]
        raise ijson.IncompleteJSONError("premature EOF")


def _json_problem(exc: Exception) -> tuple[str, bool]:
    """ijson's message, first line only (yajl adds a picture of the spot), and whether
    the file simply ended early."""
    if isinstance(exc, _TooDeep):
        return str(exc), False
    raw = exc.args[0] if exc.args else exc
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if "premature EOF" in first or "Incomplete JSON" in first:
        return "the JSON ends in the middle (truncated export?)", True
    return f"not valid JSON ({first})", False


JSON_ERRORS = (ijson.JSONError, UnicodeError)


# --- small conversions ------------------------------------------------------------------


def _id_text(value: Any) -> str | None:
    """A JSON id (number or string) as text, or None when there is none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _peer(value: Any) -> str | None:
    """`from_id`/`actor_id` as "user123"/"channel123"; a bare number (2020) is a user."""
    text = _id_text(value)
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return f"user{text}"
    return text


def _digits(value: Any) -> str:
    text = _id_text(value) or ""
    return text.lstrip("abcdefghijklmnopqrstuvwxyz_")


class _BadValue(ValueError):
    pass


def _time(message: dict[str, Any], unix_key: str, local_key: str) -> tuple[datetime | None, bool]:
    """(time, zone unknown). `*_unixtime` is UTC and wins; the other is local time without
    a zone, which is read as UTC and flagged."""
    unix = message.get(unix_key)
    if unix is not None and unix != "":
        try:
            seconds = unix if isinstance(unix, int) else int(float(str(unix).strip()))
            return datetime.fromtimestamp(seconds, tz=UTC), False
        except (TypeError, ValueError, OverflowError, OSError) as exc:
            raise _BadValue(f"{unix_key} {unix!r} is not a Unix time") from exc
    return _local_time(message.get(local_key), local_key)


def _local_time(local: Any, local_key: str) -> tuple[datetime | None, bool]:
    """A local time without zone, read as UTC; (time, zone unknown)."""
    if local is None or local == "":
        return None, False
    if not isinstance(local, str):
        raise _BadValue(f"{local_key} {local!r} is not a date")
    try:
        parsed = datetime.fromisoformat(local.strip())
    except ValueError as exc:
        raise _BadValue(f"{local_key} {local!r} is not a date") from exc
    if parsed.tzinfo is not None:
        return parsed, False
    return parsed.replace(tzinfo=UTC), True


def _local_offset(message: dict[str, Any], utc: datetime) -> timedelta | None:
    """The exporter's UTC offset, from a message's local `date` and its UTC time."""
    try:
        local, naive = _local_time(message.get("date"), "date")
    except _BadValue:
        return None
    if local is None or not naive:
        return None
    quarters = round((local - utc).total_seconds() / 900)
    if abs(quarters) > 18 * 4:
        return None
    return timedelta(minutes=15 * quarters)


def _fragments(value: Any) -> list[dict[str, Any]]:
    """`text` or `text_entities` as a list of entities ({"type", "text", …})."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [{"type": "plain", "text": value}]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return [{"type": "plain", "text": str(value)}]
    out: list[dict[str, Any]] = []
    for part in value:
        if isinstance(part, str):
            out.append({"type": "plain", "text": part})
        elif isinstance(part, dict):
            entity = dict(part)
            entity["type"] = str(entity.get("type") or "plain")
            entity["text"] = "" if entity.get("text") is None else str(entity["text"])
            out.append(entity)
        elif part is not None:
            out.append({"type": "plain", "text": str(part)})
    return out


def _flat(entities: list[dict[str, Any]]) -> str:
    return "".join(entity["text"] for entity in entities)


def _shape(entities: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str]]]:
    """What two entity lists must share to say the same thing."""
    marked = [(e["type"], e["text"]) for e in entities if e["type"] != "plain" and e["text"]]
    return _flat(entities), marked


def _names(value: Any) -> str:
    if not isinstance(value, list):
        return _name(value)
    names = [_name(member) for member in value]
    if not names:
        return "nobody"
    if len(names) == 1:
        return names[0]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def _name(value: Any) -> str:
    return str(value).strip() if value not in (None, "") else "a deleted account"


def _duration(seconds: Any) -> str:
    try:
        total = int(seconds)
    except (TypeError, ValueError):
        return ""
    if total < 60:
        return f"{total} s"
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"


def _quoted(value: Any) -> str:
    return f"“{value}”" if value not in (None, "") else ""


def _service_text(action: str, actor: str, details: dict[str, Any]) -> str:
    """A readable sentence for a service message."""
    title = _quoted(details.get("title"))
    if action == "phone_call":
        parts = [_duration(details["duration_seconds"])] if "duration_seconds" in details else []
        reason = details.get("discard_reason")
        if reason:
            parts.append(CALL_ENDINGS.get(str(reason), str(reason)))
        parts = [part for part in parts if part]
        return f"Call ({', '.join(parts)})" if parts else "Call"
    if action == "group_call":
        length = _duration(details.get("duration_seconds"))
        return f"{actor} started a voice chat" + (f" ({length})" if length else "")
    if action == "create_group":
        members = details.get("members")
        with_members = f" with {_names(members)}" if members else ""
        return f"{actor} created the group {title}".rstrip() + with_members
    if action == "create_channel":
        return f"{actor} created the channel {title}".rstrip()
    if action == "migrate_to_supergroup":
        return f"{actor} converted this group to a supergroup"
    if action == "migrate_from_group":
        return f"{actor} created this supergroup from the group {title}".rstrip()
    if action == "edit_group_title":
        return f"{actor} changed the group name to {title}".rstrip()
    if action == "edit_group_photo":
        return f"{actor} changed the group photo"
    if action == "delete_group_photo":
        return f"{actor} removed the group photo"
    if action == "invite_members":
        return f"{actor} added {_names(details.get('members'))}"
    if action == "remove_members":
        return f"{actor} removed {_names(details.get('members'))}"
    if action == "join_group_by_link":
        inviter = details.get("inviter")
        by = f" from {_name(inviter)}" if inviter else ""
        return f"{actor} joined the group via an invite link{by}"
    if action == "join_group_by_request":
        return f"{actor} was accepted into the group"
    if action == "pin_message":
        return f"{actor} pinned a message"
    if action in ("joined_telegram", "contact_signup"):
        return f"{actor} joined Telegram"
    if action == "clear_history":
        return "History was cleared"
    if action == "take_screenshot":
        return f"{actor} took a screenshot"
    if action == "score_in_game":
        return f"{actor} scored {details.get('score')} in a game"
    if action == "send_payment":
        amount = f" {details.get('amount')} {details.get('currency', '')}".rstrip()
        return f"{actor} paid{amount}"
    if action == "invite_to_group_call":
        return f"{actor} invited {_names(details.get('members'))} to the voice chat"
    if action == "group_call_scheduled":
        return f"{actor} scheduled a voice chat for {details.get('schedule_date', 'later')}"
    if action == "set_messages_ttl":
        period = _duration(details.get("period_seconds", details.get("period")))
        if not period or period == "0 s":
            return f"{actor} turned off auto-delete"
        return f"{actor} set messages to auto-delete after {period}"
    if action == "edit_chat_theme":
        return f"{actor} changed the chat theme to {details.get('emoticon', '')}".rstrip()
    if action == "topic_created":
        return f"{actor} created the topic {title}".rstrip()
    if action == "topic_edit":
        return f"{actor} edited the topic {_quoted(details.get('new_title'))}".rstrip()
    words = action.replace("_", " ").strip() or "service message"
    return f"{actor}: {words}"


def _not_included(value: str) -> bool:
    """Telegram writes "(File not included. …)", "(File exceeds maximum size. …)" and the
    like instead of a path."""
    stripped = value.strip()
    return stripped.startswith("(") and stripped.endswith(")")


def _unsafe(value: str) -> bool:
    cleaned = value.replace("\\", "/").strip()
    return (
        cleaned.startswith("/")
        or (len(cleaned) > 1 and cleaned[1] == ":")
        or ".." in PurePosixPath(cleaned).parts
    )


# --- the reader -------------------------------------------------------------------------


@dataclass
class _Head:
    """What comes before the chats: the layout, the owner, contacts' phone numbers."""

    layout: str  # "chat" or "account"
    personal: dict[str, Any] | None = None
    phones: dict[str, str] = field(default_factory=dict)


@dataclass
class _Chat:
    container: str
    index: int
    left: bool
    fields: dict[str, Any] = field(default_factory=dict)
    record: ChatRecord | None = None
    messages: int = 0
    last_id: str = ""

    def child(self, name: str) -> str:
        return f"{self.container}.{name}" if self.container else name

    def label(self) -> str:
        chat_id = _id_text(self.fields.get("id"))
        name = self.fields.get("name")
        described = f"chat {chat_id}" if chat_id else f"chat #{self.index + 1}"
        return f"{described} ({name!r})" if isinstance(name, str) and name else described

    def position(self) -> str:
        """Where the message being read (the one after the `messages` read) is."""
        return f"{self.label()}, message #{self.messages + 1}"

    def where(self) -> str:
        after = f", after message #{self.messages}" if self.messages else ""
        last = f" (id {self.last_id})" if self.last_id else ""
        return f"{self.label()}{after}{last}"


@dataclass
class _Context:
    json_path: Path
    root: Path
    owner_id: str | None
    phones: dict[str, str]
    skipped: Counter[str]
    # One record per sender as last seen: a chunk sent from the reader's process then
    # pickles each sender once, not once per message.
    senders: dict[tuple[str, str], tuple[IdentityRecord, ...]] = field(default_factory=dict)


class TelegramReader:
    format: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram Desktop export (result.json or its folder)"

    # detection ---------------------------------------------------------------------------

    def detect(self, path: Path) -> bool:
        json_path = path / RESULT_FILE if path.is_dir() else path
        if not json_path.is_file():
            return False
        return _looks_like_telegram(read_head(json_path, HEAD_BYTES))

    # opening ------------------------------------------------------------------------------

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        json_path = path / RESULT_FILE if path.is_dir() else path
        if not json_path.is_file():
            raise FormatError(path, "the folder", f"holds no {RESULT_FILE}")
        head = _scan_head(json_path)
        account = _account(head, options)
        skipped: Counter[str] = Counter()
        context = _Context(
            json_path=json_path,
            root=json_path.parent,
            owner_id=account.owner.external_id if account.owner else None,
            phones=head.phones,
            skipped=skipped,
        )
        containers = ACCOUNT_CONTAINERS if head.layout == "account" else SINGLE_CHAT_CONTAINERS
        return ExportStream(
            format=self.format,
            account=account,
            items=_items(context, containers),
            total=None,
            skipped=skipped,
        )


READER = TelegramReader()


def _looks_like_telegram(head: bytes) -> bool:
    """From the first 16 KB: a JSON object shaped like a Telegram chat or account export."""
    if head.startswith(BOM):
        head = head[len(BOM) :]
    if not head.lstrip().startswith(b"{"):
        return False
    keys: set[str] = set()
    chat_type: Any = None
    shapes: set[tuple[str, str]] = set()
    try:
        for prefix, event, value in _Events(io.BytesIO(head)):
            if prefix == "" and event == "map_key":
                keys.add(value)
            elif prefix == "type" and event == "string":
                chat_type = value
            elif event in ("start_map", "start_array") and prefix.count(".") <= 1:
                shapes.add((prefix, event))
    except JSON_ERRORS:
        pass  # the head ends mid-file; what was seen is enough
    if ("personal_information", "start_map") in shapes:
        return True
    if ("chats.list", "start_array") in shapes or ("left_chats.list", "start_array") in shapes:
        return True
    if "about" in keys and (
        ("contacts.list", "start_array") in shapes
        or ("frequent_contacts.list", "start_array") in shapes
    ):
        return True
    return chat_type in CHAT_KINDS and bool(keys & {"id", "messages"})


def _open_tracked(json_path: Path) -> tuple[BinaryIO, _Tracked]:
    handle = json_path.open("rb")
    return handle, _Tracked(handle)


def _scan_head(json_path: Path) -> _Head:
    """Read up to the first chat: the layout, `personal_information` and contacts."""
    handle, tracked = _open_tracked(json_path)
    personal: dict[str, Any] | None = None
    phones: dict[str, str] = {}
    with handle:
        events = _Events(tracked)
        try:
            first = next(events, None)
            if first is None:
                raise FormatError(json_path, "byte 0", "the file is empty")
            if first[:2] != ("", "start_map"):
                raise FormatError(
                    json_path, "byte 0", "not a JSON object, so not a Telegram Desktop export"
                )
            for prefix, event, value in events:
                if prefix == "" and event == "map_key":
                    if value in ("chats", "left_chats"):
                        return _Head("account", personal, phones)
                    if value == "messages":
                        return _Head("chat", personal, phones)
                elif prefix == "personal_information" and event == "start_map":
                    built = events.build(prefix, event, value)
                    personal = built if isinstance(built, dict) else None
                elif prefix == "contacts.list.item" and event == "start_map":
                    contact = events.build(prefix, event, value)
                    if isinstance(contact, dict) and len(phones) < MAX_CONTACT_PHONES:
                        user = _id_text(contact.get("user_id"))
                        phone = contact.get("phone_number")
                        if user and user != "0" and isinstance(phone, str) and phone:
                            phones[f"user{user}"] = phone
                elif prefix == "" and event == "end_map":
                    break
        except JSON_ERRORS as exc:
            problem, premature = _json_problem(exc)
            raise FormatError(json_path, tracked.where(premature), problem) from exc
    if personal is not None:
        return _Head("account", personal, phones)
    raise FormatError(
        json_path,
        "the whole file",
        "has neither `messages` nor `chats`: not a Telegram Desktop JSON export",
    )


def _account(head: _Head, options: ReadOptions) -> AccountRecord:
    personal = head.personal or {}
    user_id = _id_text(personal.get("user_id"))
    if head.layout == "account" and user_id:
        names = [personal.get("first_name"), personal.get("last_name")]
        full = " ".join(str(n).strip() for n in names if n and str(n).strip())
        username = personal.get("username")
        phone = personal.get("phone_number")
        owner = IdentityRecord(
            external_id=f"user{user_id}",
            display_name=full,
            phone=phone if isinstance(phone, str) else "",
            handle=username if isinstance(username, str) else "",
        )
        return AccountRecord(
            provider=PROVIDER,
            external_id=user_id,
            name=full or options.account_name or f"Telegram {user_id}",
            owner=owner,
        )
    return AccountRecord(
        provider=PROVIDER,
        external_id=options.account_name or "telegram-export",
        name=options.account_name or "Telegram export",
    )


def _items(context: _Context, containers: dict[str, bool]) -> Iterator[ImportItem]:
    """Every message of the export, chat by chat, as the file is read."""
    handle, tracked = _open_tracked(context.json_path)
    chat: _Chat | None = None
    seen: Counter[str] = Counter()
    with handle:
        events = _Events(tracked)
        try:
            for prefix, event, value in events:
                if event == "start_map" and prefix in containers:
                    chat = _Chat(container=prefix, index=seen[prefix], left=containers[prefix])
                    seen[prefix] += 1
                    continue
                if chat is None:
                    if event in VALUE_STARTS:
                        _check_shape(context.json_path, tracked, prefix, event)
                    continue
                if prefix == chat.container and event == "end_map":
                    chat = None
                    continue
                if event in ("string", "number", "null") and prefix in (
                    chat.child("name"),
                    chat.child("type"),
                    chat.child("id"),
                ):
                    chat.fields[prefix.rsplit(".", 1)[-1]] = value
                    continue
                messages = chat.child("messages")
                if prefix == messages:
                    if event == "start_array":
                        chat.record = _chat_record(context, chat)
                    elif event != "end_array":
                        raise FormatError(
                            context.json_path,
                            f"{chat.label()}, {tracked.where(False)}",
                            "`messages` is not a list",
                        )
                    continue
                if prefix == f"{messages}.item" and chat.record is not None:
                    if event != "start_map":
                        raise FormatError(
                            context.json_path,
                            f"{chat.position()}, {tracked.where(False)}",
                            "a message is not a JSON object",
                        )
                    built = events.build(prefix, event, value)
                    item = _item(context, chat, built)
                    chat.messages += 1
                    chat.last_id = item.message.external_id
                    yield item
        except JSON_ERRORS as exc:
            problem, premature = _json_problem(exc)
            where = tracked.where(premature)
            raise FormatError(
                context.json_path, f"{chat.where()}, {where}" if chat else where, problem
            ) from exc


VALUE_STARTS = frozenset({"start_map", "start_array", "string", "number", "boolean", "null"})
# Outside any chat, in the account layout: what each container must be.
SHAPES = {
    "chats": ("start_map", "an object"),
    "left_chats": ("start_map", "an object"),
    "chats.list": ("start_array", "a list"),
    "left_chats.list": ("start_array", "a list"),
    "chats.list.item": ("start_map", "an object"),
    "left_chats.list.item": ("start_map", "an object"),
}


def _check_shape(json_path: Path, tracked: _Tracked, prefix: str, event: str) -> None:
    expected = SHAPES.get(prefix)
    if expected is not None and event != expected[0]:
        raise FormatError(json_path, tracked.where(False), f"`{prefix}` is not {expected[1]}")


def _chat_record(context: _Context, chat: _Chat) -> ChatRecord:
    if _id_text(chat.fields.get("id")) is None or "type" not in chat.fields:
        # JSON does not promise key order; Telegram writes them first, a hand-edited
        # file may not. Look further into this chat's object without keeping messages.
        chat.fields = {**_chat_fields_later(context.json_path, chat), **chat.fields}
    chat_id = _id_text(chat.fields.get("id"))
    if chat_id is None:
        raise FormatError(context.json_path, chat.label(), "the chat has no `id`")
    chat_type = str(chat.fields.get("type") or "")
    name = chat.fields.get("name")
    title = name.strip() if isinstance(name, str) else ""
    if not title and chat_type == "saved_messages":
        title = "Saved Messages"
    metadata: dict[str, Any] = {"telegram_type": chat_type}
    if chat.left:
        metadata["left"] = True
    return ChatRecord(
        external_id=chat_id,
        kind=CHAT_KINDS.get(chat_type, "group"),
        title=title,
        metadata=metadata,
    )


def _chat_fields_later(json_path: Path, chat: _Chat) -> dict[str, Any]:
    """The scalar `name`/`type`/`id` of the `chat.index`-th chat at `chat.container`,
    wherever they sit in its object (a second streaming pass; messages are not built)."""
    found: dict[str, Any] = {}
    wanted = {chat.child(name): name for name in ("name", "type", "id")}
    index = -1
    inside = False
    handle, tracked = _open_tracked(json_path)
    with handle:
        try:
            for prefix, event, value in _Events(tracked):
                if prefix == chat.container and event == "start_map":
                    index += 1
                    inside = index == chat.index
                elif prefix == chat.container and event == "end_map" and inside:
                    break
                elif inside and prefix in wanted and event in ("string", "number", "null"):
                    found[wanted[prefix]] = value
        except JSON_ERRORS:
            pass  # the main pass reports where the JSON breaks
    return found


def _item(context: _Context, chat: _Chat, raw: Any) -> ImportItem:
    """The message just built, the chat's next, as an ImportItem."""
    assert chat.record is not None
    if not isinstance(raw, dict):
        raise FormatError(context.json_path, chat.position(), "a message is not a JSON object")
    try:
        return _convert(context, chat.record, raw)
    except FormatError:
        raise
    except (_BadValue, TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        ident = _id_text(raw.get("id"))
        position = chat.position()
        where = f"{position} (id {ident})" if ident else position
        raise FormatError(context.json_path, where, str(exc) or type(exc).__name__) from exc


def _convert(context: _Context, chat: ChatRecord, raw: dict[str, Any]) -> ImportItem:
    external_id = _id_text(raw.get("id"))
    if external_id is None:
        raise _BadValue("the message has no `id`")
    sent_at, zone_unknown = _time(raw, "date_unixtime", "date")
    if sent_at is None:
        raise _BadValue("the message has neither `date_unixtime` nor `date`")
    edited_at, edited_naive = _time(raw, "edited_unixtime", "edited")
    edited_zone_unknown = False
    if edited_at is not None and edited_naive and not zone_unknown:
        # `edited` is local time but `date_unixtime` told the truth: `date` minus it is
        # the exporting computer's UTC offset, which `edited` shares.
        offset = _local_offset(raw, sent_at)
        if offset is None:
            edited_zone_unknown = True
        else:
            edited_at -= offset

    telegram_type = str(raw.get("type") or "message")
    service = telegram_type == "service"
    if service:
        sender_id = _peer(raw.get("actor_id", raw.get("from_id")))
        sender_name = raw.get("actor", raw.get("from"))
    else:
        sender_id = _peer(raw.get("from_id"))
        sender_name = raw.get("from")
    display = sender_name.strip() if isinstance(sender_name, str) else ""

    text, entity_meta = _text(raw)
    rest = {key: value for key, value in raw.items() if key not in CONSUMED}
    metadata: dict[str, Any] = {}
    if service:
        action = str(raw.get("action") or "")
        metadata["action"] = action
        metadata["action_details"] = rest
        sentence = _service_text(action, display or "Someone", rest)
        text = f"{sentence}: {text}" if text and text not in sentence else sentence
    else:
        metadata.update(rest)
        if telegram_type != "message":
            metadata["telegram_type"] = telegram_type
    metadata.update(entity_meta)
    if display:
        metadata["sender_name"] = display
    if zone_unknown:
        metadata["time_zone_unknown"] = True
    elif edited_zone_unknown:
        metadata["edited_time_zone_unknown"] = True

    reply_to = _id_text(raw.get("reply_to_message_id")) or ""
    peer = raw.get("reply_to_peer_id")
    if reply_to and peer is not None and _digits(peer) != _digits(chat.external_id):
        metadata["reply_to_message_id"] = raw.get("reply_to_message_id")  # another chat
        reply_to = ""

    identities: tuple[IdentityRecord, ...] = ()
    if sender_id:
        identities = context.senders.get((sender_id, display), ())
        if not identities:
            if len(context.senders) >= MAX_SENDER_RECORDS:
                context.senders.clear()
            identities = context.senders[(sender_id, display)] = (
                IdentityRecord(
                    external_id=sender_id,
                    display_name=display,
                    phone=context.phones.get(sender_id, ""),
                ),
            )
    message = MessageRecord(
        chat_external_id=chat.external_id,
        external_id=external_id,
        sent_at=sent_at,
        text=text,
        sender_external_id=sender_id,
        direction="out" if sender_id and sender_id == context.owner_id else "in",
        kind="service" if service else "text",
        reply_to_external_id=reply_to,
        edited_at=edited_at,
        raw_json=json.dumps(raw, ensure_ascii=False),
        metadata=metadata,
        attachments=_attachments(context, raw),
    )
    return ImportItem(chat=chat, message=message, identities=identities)


def _text(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Plain text, and the metadata that keeps its formatting."""
    from_text = _fragments(raw.get("text"))
    has_entities = isinstance(raw.get("text_entities"), list)
    entities = _fragments(raw["text_entities"]) if has_entities else from_text
    text = _flat(entities) or _flat(from_text)
    metadata: dict[str, Any] = {}
    if any(entity["type"] != "plain" for entity in entities):
        metadata["entities"] = entities
    if has_entities and _shape(entities) != _shape(from_text):
        metadata["text_raw"] = raw.get("text")
    return text, metadata


def _attachments(context: _Context, raw: dict[str, Any]) -> tuple[AttachmentRecord, ...]:
    found: list[AttachmentRecord] = []
    for key in ("photo", "file", "contact_vcard"):
        value = raw.get(key)
        if value is None or value == "":
            continue
        found.append(_attachment(context, raw, key, str(value)))
    return tuple(found)


def _attachment(context: _Context, raw: dict[str, Any], key: str, value: str) -> AttachmentRecord:
    metadata: dict[str, Any] = {"field": key}
    metadata.update({name: raw[name] for name in MEDIA_FIELDS if name in raw})
    named = raw.get("file_name") if key == "file" else None
    size_value = raw.get("photo_file_size" if key == "photo" else "file_size")
    size = size_value if isinstance(size_value, int) and not isinstance(size_value, bool) else None
    location: Path | None = None
    if _not_included(value):
        metadata.update(not_included=True, export_note=value)
        file_name = named if isinstance(named, str) else ""
    else:
        metadata["export_path"] = value
        file_name = (
            named
            if isinstance(named, str) and named
            else PurePosixPath(value.replace("\\", "/")).name
        )
        if _unsafe(value):
            metadata.update(not_included=True, unsafe_path=True)
            context.skipped["media path outside the export refused"] += 1
        else:
            location = safe_member(context.root, value)
            if location is None:
                metadata.update(not_included=True, missing=True)
    mime = raw.get("mime_type") if key == "file" else None
    if not isinstance(mime, str) or not mime:
        if key == "contact_vcard":
            mime = "text/vcard"
        else:
            mime = mimetypes.guess_type(file_name)[0] or ("image/jpeg" if key == "photo" else "")
    return AttachmentRecord(
        external_id=key,
        file_name=file_name,
        mime_type=mime,
        size=size,
        metadata=metadata,
        content=file_opener(location) if location is not None else None,
    )
