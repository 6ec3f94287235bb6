"""Telegram Desktop's JSON export ("Export chat history" / "Export Telegram data", JSON).

Three shapes are read: the `result.json` of one chat (`{"name", "type", "id", "messages"}`),
the `result.json` of a whole account (`{"personal_information", "contacts",
"chats": {"list": [chat, …]}, "left_chats": {"list": [...]}}`), and the export folder that
holds either (media paths in the JSON are relative to that folder).

Exports reach many gigabytes, so the file is never loaded: one pass of ijson events
(with prefixes, as `ijson.parse` gives them, over a guard that refuses nesting and values
past their caps before the parser sees them: json_guard.py) walks it; each
chat's `name`/`type`/`id` are picked up as they pass (Telegram writes them before
`messages`) and each message is built on its own from its events. A short first pass reads
only what comes before the chats (the owner, the contacts' phone numbers) so the account
is known before any message is.

Its parts: json_stream.py streams the JSON through the guard, remembering positions,
translation.py turns one message into records (times, text entities, service messages,
media). A string longer than WIRECAT_IMPORT_MAX_JSON_VALUE (a huge message text) reaches
translation as its first part and a marker, the whole of it set aside (json_strings.py).
"""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, ClassVar

from archive.connectors.base import (
    ExportStream,
    FormatError,
    ImportItem,
    Limits,
    ReadOptions,
    import_limits,
    read_head,
)
from archive.connectors.estimates import HASH_PREFIX, ContentIds, neighbours_dated
from archive.connectors.json_guard import BOM, JSON_ERRORS, Events, guarded_head, json_problem
from archive.connectors.telegram.json_stream import Tracked, open_tracked
from archive.connectors.telegram.translation import BadValue, Context, id_text, message_item
from archive.connectors.telegram.whole_file import (
    GiveWay,
    chats_in,
    message_depth,
    message_fits,
    whole_file_data,
)
from archive.store.domain import AccountRecord, ChatRecord, IdentityRecord

PROVIDER = "telegram"
RESULT_FILE = "result.json"
HEAD_BYTES = 16 * 1024
MAX_CONTACT_PHONES = 200_000  # the contacts list is held in memory; bound it

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
        chat_id = id_text(self.fields.get("id"))
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


class TelegramReader:
    format: ClassVar[str] = "telegram"
    label: ClassVar[str] = "Telegram Desktop export (result.json or its folder)"

    # detection ---------------------------------------------------------------------------

    def detect(self, path: Path) -> bool:
        json_path = path / RESULT_FILE if path.is_dir() else path
        if not json_path.is_file():
            return False
        # Cut before anything too deep or too long: only the beginning is looked at.
        return _looks_like_telegram(guarded_head(read_head(json_path, HEAD_BYTES), json_path))

    # opening ------------------------------------------------------------------------------

    def open(self, path: Path, options: ReadOptions) -> ExportStream:
        json_path = path / RESULT_FILE if path.is_dir() else path
        if not json_path.is_file():
            raise FormatError(path, "the folder", f"holds no {RESULT_FILE}")
        head = _scan_head(json_path)
        account = _account(head, options)
        skipped: Counter[str] = Counter()
        context = Context(
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
            # An undated message takes its neighbours' time (estimates.py).
            items=neighbours_dated(_items(context, containers)),
            total=None,
            skipped=skipped,
            held_whole=_small(context, import_limits()),
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
        for prefix, event, value in Events(io.BytesIO(head)):
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


def _scan_head(json_path: Path) -> _Head:
    """Read up to the first chat: the layout, `personal_information` and contacts."""
    handle, tracked = open_tracked(json_path)
    personal: dict[str, Any] | None = None
    phones: dict[str, str] = {}
    with handle:
        events = Events(tracked, guard=tracked.guard)
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
                        user = id_text(contact.get("user_id"))
                        phone = contact.get("phone_number")
                        if user and user != "0" and isinstance(phone, str) and phone:
                            phones[f"user{user}"] = phone
                elif prefix == "" and event == "end_map":
                    break
        except JSON_ERRORS as exc:
            problem, premature = json_problem(exc)
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
    user_id = id_text(personal.get("user_id"))
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


def _items(context: Context, containers: dict[str, bool]) -> Iterator[ImportItem]:
    """Every message of the export, chat by chat: parsed whole when the file is small and
    tame (whole_file.py), else, or from where that gives way, streamed."""
    limits = import_limits()
    data = (
        whole_file_data(context.json_path.read_bytes(), limits) if _small(context, limits) else None
    )
    handed = 0
    if data is not None:
        try:
            for item in _whole_items(context, containers, data, limits):
                handed += 1
                yield item
            return
        except GiveWay:
            data = None
            # Read again from the start: the counters start again too, so the messages
            # passed over count exactly once.
            context.skipped.clear()
            context.content_ids = ContentIds()
    yield from islice(_streamed_items(context, containers), handed, None)


def _small(context: Context, limits: Limits) -> bool:
    try:
        return context.json_path.stat().st_size <= limits.whole_file_bytes
    except OSError:
        return False  # the streaming reader says what is wrong with it


def _whole_items(
    context: Context, containers: dict[str, bool], data: dict[str, Any], limits: Limits
) -> Iterator[ImportItem]:
    """The messages of a file parsed whole, as streaming would give them; GiveWay at the
    first thing left to streaming (an odd shape, a message near a cap or refused)."""
    seen: Counter[str] = Counter()
    for container, chat_object in chats_in(data, containers, limits):
        chat = _Chat(container=container, index=seen[container], left=containers[container])
        seen[container] += 1
        chat.fields = {
            name: chat_object[name]
            for name in ("name", "type", "id")
            if name in chat_object and _scalar(chat_object[name])
        }
        if "messages" not in chat_object:
            continue
        messages = chat_object["messages"]
        if not isinstance(messages, list):
            raise GiveWay
        chat.record = _chat_record(context, chat)
        depth = message_depth(container)
        for raw in messages:
            if not isinstance(raw, dict):
                raise GiveWay
            try:
                item = _item(context, chat, raw)
            except FormatError as exc:
                raise GiveWay from exc
            if not message_fits(item.message.raw_json, depth, limits):
                raise GiveWay
            chat.messages += 1
            chat.last_id = item.message.external_id
            yield item


def _scalar(value: Any) -> bool:
    """What the streaming reader takes as a chat's name, type or id: a string, a number or
    null (ijson's events), not a boolean, list or object."""
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _streamed_items(context: Context, containers: dict[str, bool]) -> Iterator[ImportItem]:
    """Every message of the export, chat by chat, as the file is read."""
    handle, tracked = open_tracked(context.json_path)
    chat: _Chat | None = None
    seen: Counter[str] = Counter()
    with handle:
        events = Events(tracked, guard=tracked.guard)
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
            problem, premature = json_problem(exc)
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


def _check_shape(json_path: Path, tracked: Tracked, prefix: str, event: str) -> None:
    expected = SHAPES.get(prefix)
    if expected is not None and event != expected[0]:
        raise FormatError(json_path, tracked.where(False), f"`{prefix}` is not {expected[1]}")


def _chat_record(context: Context, chat: _Chat) -> ChatRecord:
    if id_text(chat.fields.get("id")) is None or "type" not in chat.fields:
        # JSON does not promise key order; Telegram writes them first, a hand-edited
        # file may not. Look further into this chat's object without keeping messages.
        chat.fields = {**_chat_fields_later(context.json_path, chat), **chat.fields}
    chat_id = id_text(chat.fields.get("id"))
    chat_type = str(chat.fields.get("type") or "")
    name = chat.fields.get("name")
    title = name.strip() if isinstance(name, str) else ""
    if chat_id is None:  # kept: an id from what the chat says, the same in every import
        named = f"{chat_type}\x00{title}\x00{chat.container}".encode("utf-8", "surrogatepass")
        chat_id = HASH_PREFIX + hashlib.sha256(named).hexdigest()[:32]
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
    handle, tracked = open_tracked(json_path)
    with handle:
        try:
            for prefix, event, value in Events(tracked, guard=tracked.guard):
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


# One-to-one chats: the chat's id is the other party's user id.
ONE_TO_ONE = ("personal_chat", "bot_chat")


def _owner_side(context: Context, chat: _Chat, item: ImportItem) -> ImportItem:
    """A one-to-one chat exported on its own names no owner, but its id is the other
    party's: what anyone else sent there, the owner sent (outbound, shown on the right)."""
    message = item.message
    if context.owner_id is not None or message.direction == "out" or not message.sender_external_id:
        return item
    chat_id = id_text(chat.fields.get("id"))
    if chat.fields.get("type") not in ONE_TO_ONE or chat_id is None:
        return item
    if message.sender_external_id == f"user{chat_id}":
        return item
    return replace(item, message=replace(message, direction="out"))


def _item(context: Context, chat: _Chat, raw: Any) -> ImportItem:
    """The message just built, the chat's next, as an ImportItem."""
    assert chat.record is not None
    if not isinstance(raw, dict):
        raise FormatError(context.json_path, chat.position(), "a message is not a JSON object")
    try:
        return _owner_side(context, chat, message_item(context, chat.record, raw))
    except FormatError:
        raise
    except (BadValue, TypeError, ValueError, KeyError, AttributeError, OverflowError) as exc:
        ident = id_text(raw.get("id"))
        position = chat.position()
        where = f"{position} (id {ident})" if ident else position
        raise FormatError(context.json_path, where, str(exc) or type(exc).__name__) from exc
