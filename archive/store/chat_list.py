"""The Chats page's list: newest first, filtered by name, source and account, each chat with
its last message as a one-line preview, mail threads folded into one row per account.
(`archive.store.selectors.chat_list` is the API's plain list of chats.)"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import overload

from django.db import connection
from django.db.models import OuterRef, Subquery

from archive.store.models import Account, Attachment, Chat, DeliveryStatus, Message
from archive.store.selectors import AVATAR_COLOURS, sender_name
from wirecat.errors import NotFound

CHAT_LIST_PAGE = 50
PREVIEW_CHARS = 160  # of a preview's first line (the page cuts it to one line with "…")
# Not in the chat (yet): a draft waiting for the owner, a refused draft, a failed send.
_NOT_IN_CHAT = (DeliveryStatus.AWAITING, DeliveryStatus.REFUSED, DeliveryStatus.FAILED)
_LIST_ORDER = {
    "recent": "last IS NULL, last DESC, id DESC",
    "oldest": "last IS NULL, last, id",
    "title": "lower(title), id",
    "messages": "n DESC, id DESC",
}


@dataclass(frozen=True)
class ChatFilter:
    """What the chat list shows: chats whose title holds `q`, of one `source` (provider) or
    one `account`. A mail account's threads (chats of kind "thread") fold into one row per
    account, like an inbox, unless the list is narrowed to that account or searched by
    title: then each thread is a row of its own, titled by its subject."""

    q: str = ""
    source: str = ""
    account: int | None = None
    sort: str = "recent"

    @property
    def folds(self) -> bool:
        return not self.q and self.account is None


def chat_filter(*, q: str = "", source: str = "", account: str = "", sort: str = "") -> ChatFilter:
    """The list's filter from a request's raw values; anything unusable is left out."""
    return ChatFilter(
        q=" ".join(q.split())[:200],
        source=source.strip()[:32],
        account=int(account) if account.isdigit() and len(account) < 19 else None,
        sort=sort if sort in _LIST_ORDER else "recent",
    )


@dataclass(frozen=True)
class ChatEntry:
    """A row of the chat list: a chat, or an account's threads folded into one row (then
    `chat` is its newest thread and `threads` how many it holds), with the preview of the
    last message: who wrote it ("You" for the owner, nobody in a one-to-one chat) and its
    first line."""

    chat: Chat
    threads: int
    message_count: int
    last: Message | None
    who: str
    preview: str

    @property
    def folded(self) -> bool:
        return self.threads > 1

    @property
    def title(self) -> str:
        if self.folded:
            return self.chat.account.name or self.chat.account.external_id
        return self.chat.title or self.chat.external_id

    @property
    def colour(self) -> int:
        return (self.chat.account_id if self.folded else self.chat.pk) % AVATAR_COLOURS

    @property
    def initial(self) -> str:
        """The avatar's letter: a mail thread's (its last sender's, as a mail reader shows
        who wrote), else the title's."""
        name = self.who if self.chat.kind == "thread" and self.who and not self.folded else ""
        return (name or self.title or "?")[:1].upper()

    @property
    def at(self) -> datetime | None:
        """When the last message was sent (else the chat's latest time, as the sink kept it)."""
        return self.last.sent_at if self.last is not None else self.chat.last_message_at


def _first_line(text: str) -> str:
    for line in text.splitlines():
        cleaned = " ".join(line.split())
        if cleaned:
            return cleaned[:PREVIEW_CHARS]
    return ""


def _preview(chat: Chat, message: Message | None, folded: bool) -> tuple[str, str]:
    """(who, first line) of a chat's last message."""
    if message is None:
        return "", ""
    if message.direction == "out":
        who = "You"
    elif chat.kind == "dm" and not folded:
        who = ""  # a one-to-one chat: its title says who
    else:
        who = sender_name(message)
    line = _first_line(message.text)
    if not line:
        named = getattr(message, "first_file", None)
        line = f"📎 {named}" if named else ("📎 attachment" if named == "" else "")
    if folded:  # an inbox row: the thread's subject, then its last message
        subject = chat.title or chat.external_id
        line = f"{subject} — {line}" if line else subject
    return who, line


class ChatRows:
    """The chat list's rows for Django's Paginator: `count()` and a slice are one query
    each (over the chats table and its `last_message_at`, kept by the sink, so 10,000
    chats sort in milliseconds); a slice's previews are one more: every chat's last
    message, each found by the (chat, sent_at, id) index."""

    def __init__(self, where: ChatFilter) -> None:
        self.where = where
        conditions, params = ["1"], []
        if where.q:
            escaped = where.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            conditions.append("c.title LIKE %s ESCAPE '\\'")
            params.append(f"%{escaped}%")
        if where.source:
            conditions.append("a.provider = %s")
            params.append(where.source)
        if where.account is not None:
            conditions.append("c.account_id = %s")
            params.append(str(where.account))
        base = (
            "FROM archive_chat AS c JOIN archive_account AS a ON a.id = c.account_id"
            f" WHERE {' AND '.join(conditions)}"
        )
        if where.folds:
            self.sql = (
                "SELECT c.id AS id, 1 AS threads, c.message_count AS n,"
                f" c.last_message_at AS last, c.title AS title {base} AND c.kind <> 'thread'"
                " UNION ALL SELECT c.id, count(*), sum(c.message_count), max(c.last_message_at),"
                f" a.name {base} AND c.kind = 'thread' GROUP BY c.account_id"
            )
            self.params: list[str] = [*params, *params]
        else:
            self.sql = (
                "SELECT c.id AS id, 1 AS threads, c.message_count AS n,"
                f" c.last_message_at AS last, c.title AS title {base}"
            )
            self.params = params

    def count(self) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM ({self.sql})", self.params)
            return int(cursor.fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def __iter__(self) -> Iterator[ChatEntry]:
        return iter(self[0 : self.count()])

    @overload
    def __getitem__(self, index: int) -> ChatEntry: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChatEntry]: ...
    def __getitem__(self, index: int | slice) -> ChatEntry | list[ChatEntry]:
        if isinstance(index, int):
            return self[index : index + 1][0]
        start, stop = int(index.start or 0), int(index.stop or 0)
        order = _LIST_ORDER[self.where.sort]
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, threads, n FROM ({self.sql}) ORDER BY {order} LIMIT %s OFFSET %s",
                [*self.params, max(stop - start, 0), start],
            )
            rows = [(int(pk), int(threads), int(n or 0)) for pk, threads, n in cursor.fetchall()]
        return chat_entries(rows)


def chat_entries(rows: list[tuple[int, int, int]]) -> list[ChatEntry]:
    """(chat id, threads, messages) rows as entries with their previews: two queries."""
    chats = Chat.objects.select_related("account").in_bulk([pk for pk, _, _ in rows])
    last_id = (
        Message.objects.filter(chat=OuterRef("pk"), deleted_at__isnull=True)
        .exclude(delivery_status__in=_NOT_IN_CHAT)
        .order_by("-sent_at", "-id")
        .values("id")[:1]
    )
    first_file = Attachment.objects.filter(message=OuterRef("pk")).order_by("id")
    last = {
        m.chat_id: m
        for m in Message.objects.filter(
            pk__in=Chat.objects.filter(pk__in=list(chats))
            .annotate(last_id=Subquery(last_id))
            .values("last_id")
        )
        .select_related("sender")
        .annotate(first_file=Subquery(first_file.values("file_name")[:1]))
    }
    entries = []
    for pk, threads, count in rows:
        chat = chats.get(pk)
        if chat is None:
            continue
        message = last.get(pk)
        who, preview = _preview(chat, message, threads > 1)
        entries.append(ChatEntry(chat, threads, count, message, who, preview))
    return entries


def chat_sources() -> list[str]:
    """The providers the archive holds accounts of (the chat list's source filter)."""
    return sorted(set(Account.objects.values_list("provider", flat=True)))


def account_get(*, account_id: int) -> Account:
    account = Account.objects.filter(pk=account_id).first()
    if account is None:
        raise NotFound(f"account {account_id} does not exist")
    return account
