"""Reading the store: the API's chat list (the Chats page's is chat_list.py), a chat's
messages by cursor (and by day), one message; how a window of messages reads (day
separators, one sender's runs)."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from functools import cached_property
from typing import Any

from django.db.models import Count, F, Prefetch, Q, QuerySet
from django.utils import timezone
from django.utils.formats import date_format

from archive.store.models import Attachment, Chat, DeliveryStatus, Message
from wirecat.errors import Invalid, NotFound

PAGE_SIZE = 50


CHAT_SORTS = {
    "recent": ("-last_message_at", "-id"),
    "oldest": ("last_message_at", "id"),
    "title": ("title", "id"),
    "messages": ("-message_count", "-id"),
}


def chat_list(*, sort: str = "recent") -> QuerySet[Chat]:
    order = CHAT_SORTS.get(sort, CHAT_SORTS["recent"])
    qs = Chat.objects.select_related("account")
    if order[0] == "-last_message_at":  # chats without messages go last
        return qs.order_by(F("last_message_at").desc(nulls_last=True), "-id")
    return qs.order_by(*order)


def recent_messages(*, limit: int = 10) -> list[Message]:
    """The newest messages (the dashboard). Their ids come first, from the time index
    alone: joined to their chats in one statement, a store with statistics (the nightly
    PRAGMA optimize) was read chat by chat and sorted whole, 1 s instead of 2 ms on a
    million messages."""
    newest = Message.objects.visible().order_by("-sent_at", "-id").values("pk")[:limit]
    return list(
        Message.objects.filter(pk__in=newest)
        .select_related("chat", "sender")
        .order_by("-sent_at", "-id")
    )


def chat_get(*, chat_id: int) -> Chat:
    chat = Chat.objects.select_related("account").filter(pk=chat_id).first()
    if chat is None:
        raise NotFound(f"chat {chat_id} does not exist")
    return chat


def message_get(*, public_id: str) -> Message:
    message = Message.objects.select_related("chat").filter(public_id=public_id).first()
    if message is None:
        raise NotFound(f"message {public_id!r} does not exist")
    return message


# --- cursors over (sent_at, id) ------------------------------------------------------------


def encode_cursor(message: Message) -> str:
    raw = json.dumps([message.sent_at.isoformat(), message.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        sent_at_raw, pk = json.loads(base64.urlsafe_b64decode(padded.encode()))
        sent_at = datetime.fromisoformat(sent_at_raw)
        if sent_at.tzinfo is None or not isinstance(pk, int) or not 0 <= pk < 2**62:
            raise ValueError("bad cursor")
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise Invalid(f"not a valid page cursor: {cursor[:40]!r}") from exc
    return sent_at, pk


@dataclass(frozen=True)
class MessageWindow:
    messages: list[Message]
    older: str | None  # cursor to fetch the messages before the first one
    newer: str | None  # cursor to fetch the messages after the last one
    focus: Message | None = None


# Sends that never went out: an agent's draft the owner refused, a send that failed. They
# stay in the store (the Sends page shows what was asked) but are not part of the chat.
NOT_IN_CHAT = (DeliveryStatus.REFUSED, DeliveryStatus.FAILED)


def _window_queryset(chat: Chat, include_deleted: bool) -> QuerySet[Message]:
    # Each attachment with its text's state (for its badge), never the text itself.
    attachments = (
        Attachment.objects.select_related("text_row").defer("text_row__text").order_by("id")
    )
    qs = (
        Message.objects.filter(chat=chat)
        .exclude(delivery_status__in=NOT_IN_CHAT)
        .select_related("sender", "reply_to", "reply_to__sender")
        .prefetch_related(Prefetch("attachments", queryset=attachments))
    )
    return qs if include_deleted else qs.visible()


def _before(
    qs: QuerySet[Message], sent_at: datetime, pk: int, limit: int
) -> tuple[list[Message], bool]:
    rows = list(
        qs.filter(Q(sent_at__lt=sent_at) | Q(sent_at=sent_at, id__lt=pk)).order_by(
            "-sent_at", "-id"
        )[: limit + 1]
    )
    more = len(rows) > limit
    return list(reversed(rows[:limit])), more


def _after(
    qs: QuerySet[Message], sent_at: datetime, pk: int, limit: int
) -> tuple[list[Message], bool]:
    rows = list(
        qs.filter(Q(sent_at__gt=sent_at) | Q(sent_at=sent_at, id__gt=pk)).order_by("sent_at", "id")[
            : limit + 1
        ]
    )
    return rows[:limit], len(rows) > limit


def chat_messages(
    *,
    chat: Chat,
    before: str | None = None,
    after: str | None = None,
    around: Message | None = None,
    limit: int = PAGE_SIZE,
    include_deleted: bool = False,
) -> MessageWindow:
    """A window of a chat's messages in time order: the newest by default, or the page
    before/after a cursor, or centred on one message (a permalink)."""
    limit = max(1, min(limit, 200))
    qs = _window_queryset(chat, include_deleted)
    if around is not None:
        if around.chat_id != chat.pk:
            raise NotFound("that message is not in this chat")
        half = limit // 2
        older_rows, more_older = _before(qs, around.sent_at, around.pk, half)
        newer_rows, more_newer = _after(qs, around.sent_at, around.pk, half)
        focus = qs.filter(pk=around.pk).first() or around
        rows = [*older_rows, focus, *newer_rows]
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if more_older else None,
            newer=encode_cursor(rows[-1]) if more_newer else None,
            focus=focus,
        )
    if after is not None:
        rows, more = _after(qs, *decode_cursor(after), limit)
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows else None,
            newer=encode_cursor(rows[-1]) if rows and more else None,
        )
    if before is not None:
        rows, more = _before(qs, *decode_cursor(before), limit)
        return MessageWindow(
            messages=rows,
            older=encode_cursor(rows[0]) if rows and more else None,
            newer=encode_cursor(rows[-1]) if rows else None,
        )
    rows = list(qs.order_by("-sent_at", "-id")[: limit + 1])
    more = len(rows) > limit
    rows = list(reversed(rows[:limit]))
    return MessageWindow(
        messages=rows, older=encode_cursor(rows[0]) if rows and more else None, newer=None
    )


def messages_full(ids: list[int]) -> list[Message]:
    """Messages with what message_out reads, in the order of `ids`, in four queries."""
    by_id = (
        Message.objects.select_related("chat", "chat__account", "sender", "reply_to")
        .prefetch_related(Prefetch("attachments", queryset=Attachment.objects.order_by("id")))
        .in_bulk(ids)
    )
    return [by_id[i] for i in ids if i in by_id]


# --- a chat by day ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DateJump:
    """Where "jump to a date" lands: the first message on or after `day`, and how that
    relates to the day asked for (`on` it, `after` it, the chat's `start` because the day
    is before it, its `end` because the day is after it, or `empty`)."""

    day: date
    message: Message | None
    where: str
    last_at: datetime | None = None


def _day_start(day: date) -> datetime:
    # Clamped: the first and last days a datetime holds cannot move to UTC in every zone.
    day = min(max(day, date(2, 1, 1)), date(9998, 12, 31))
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def local_day(moment: datetime) -> date:
    return timezone.localtime(moment).date()


def chat_date_jump(*, chat: Chat, day: date, include_deleted: bool = False) -> DateJump:
    """The first message of `chat` on or after `day` (in the archive's time zone)."""
    qs = Message.objects.filter(chat=chat).exclude(delivery_status__in=NOT_IN_CHAT)
    if not include_deleted:
        qs = qs.visible()
    start = _day_start(day)
    found = qs.filter(sent_at__gte=start).order_by("sent_at", "id").first()
    if found is None:
        last = qs.order_by("-sent_at", "-id").values_list("sent_at", flat=True).first()
        return DateJump(day=day, message=None, where="end" if last else "empty", last_at=last)
    if local_day(found.sent_at) == day:
        return DateJump(day=day, message=found, where="on")
    earlier = qs.filter(sent_at__lt=start).exists()
    return DateJump(day=day, message=found, where="after" if earlier else "start")


# --- how a window reads: days and runs -------------------------------------------------------

RUN_GAP = timedelta(minutes=5)  # one sender's messages closer than this read as one run
AVATAR_COLOURS = 8


@dataclass(frozen=True)
class MessageRow:
    """One message as the chat page lays it out: a day separator before it (`day_label`),
    whether it starts a run of one sender's messages (name and avatar shown) or continues
    one, the sender's colour (a stable hash, so a person keeps their colour), and what the
    page shows with it (its tags, the tasks made from it)."""

    message: Message
    day: date
    day_label: str
    run_start: bool
    sender_key: str
    sender_name: str
    colour: int
    tags: list[Any] = field(default_factory=list)
    tasks: list[Any] = field(default_factory=list)

    # Its time, formatted once here: date filters on 50 messages were a fifth of the page.
    @cached_property
    def local(self) -> datetime:
        return timezone.localtime(self.message.sent_at)

    @property
    def initial(self) -> str:
        return initial(self.sender_name)

    @property
    def day_iso(self) -> str:
        return self.day.isoformat()

    @property
    def timestamp(self) -> int:
        return int(self.message.sent_at.timestamp())

    @cached_property
    def times(self) -> tuple[str, str, str]:
        """(ISO time, "Friday, 1 March 2024, 12:05:00", "12:05") of the message."""
        at = self.local
        full = f"{at:%A}, {at.day} {at:%B %Y, %H:%M:%S}"
        return at.isoformat(), full, f"{at:%H:%M}"


def initial(name: str) -> str:
    """What an avatar shows: the first letter or digit of a name ("+1 555…" → "1"), else
    its first character (an emoji)."""
    for char in name:
        if char.isalnum():
            return char.upper()
    return name.strip()[:1]


def day_label(day: date, today: date) -> str:
    """The label of a day separator: "Today", "Yesterday", a weekday within the last
    week, else "12 March 2017"."""
    age = (today - day).days
    if age == 0:
        return "Today"
    if age == 1:
        return "Yesterday"
    if 1 < age < 7:
        return date_format(day, "l")
    return date_format(day, "j F Y")


def sender_name(message: Message) -> str:
    if message.sender is not None:
        return str(message.sender)
    named = message.provider_metadata.get("sender_name") if message.provider_metadata else None
    return named if isinstance(named, str) and named else "Unknown sender"


def _sender_key(message: Message) -> str:
    if message.direction == "out":
        return "you"
    if message.sender_id is not None:
        return f"s{message.sender_id}"
    return "n" + str(zlib.crc32(sender_name(message).encode()))


def _colour(message: Message, key: str) -> int:
    """A sender's colour: a hash of who they are at their provider, the same in every
    chat and every archive."""
    who = message.sender.external_id if message.sender is not None else key
    return zlib.crc32(who.encode()) % AVATAR_COLOURS


def message_rows(
    messages: list[Message],
    *,
    today: date | None = None,
    tags: Mapping[int, list[Any]] | None = None,
    tasks: Mapping[int, list[Any]] | None = None,
) -> list[MessageRow]:
    """The window's messages with their day separators and runs, computed within the
    window (the page mends the seams when it loads a neighbouring page), and each one's
    `tags` and `tasks` (by message id) when given."""
    today = today or timezone.localdate()
    rows: list[MessageRow] = []
    previous: Message | None = None
    previous_day: date | None = None
    for message in messages:
        day = local_day(message.sent_at)
        key = _sender_key(message)
        new_day = day != previous_day
        run_start = (
            new_day
            or previous is None
            or message.kind == "service"
            or previous.kind == "service"
            or _sender_key(previous) != key
            or message.sent_at - previous.sent_at > RUN_GAP
        )
        rows.append(
            MessageRow(
                message=message,
                day=day,
                day_label=day_label(day, today) if new_day else "",
                run_start=run_start,
                sender_key=key,
                sender_name=sender_name(message),
                colour=_colour(message, key),
                tags=(tags or {}).get(message.pk, []),
                tasks=(tasks or {}).get(message.pk, []),
            )
        )
        previous, previous_day = message, day
    return rows


MEMBERS_WINDOW = 5_000  # the latest messages read to tell who writes in a chat


@dataclass(frozen=True)
class ChatMembers:
    """Who writes in a chat: how many, the names of the most active, and whether only its
    latest messages were read (`recent`: a long chat is not scanned whole for a header)."""

    count: int
    names: list[str]
    recent: bool = False


def chat_members(*, chat: Chat, names: int = 5) -> ChatMembers:
    """The senders of a chat's latest MEMBERS_WINDOW messages (the owner not counted), the
    most active first: one query, walking the (chat, sent_at) index from the newest."""
    latest = (
        Message.objects.filter(chat=chat).order_by("-sent_at", "-id").values("id")[:MEMBERS_WINDOW]
    )
    rows = list(
        Message.objects.filter(pk__in=latest, sender__isnull=False)
        .exclude(direction="out")
        .values("sender_id", "sender__display_name", "sender__handle", "sender__external_id")
        .annotate(n=Count("id"))
        .order_by("-n", "sender_id")
    )
    shown = [
        r["sender__display_name"] or r["sender__handle"] or r["sender__external_id"]
        for r in rows[:names]
    ]
    return ChatMembers(count=len(rows), names=shown, recent=chat.message_count > MEMBERS_WINDOW)
