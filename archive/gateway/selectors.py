"""Reads for agents: what an agent may see (its limits), its unread messages (per agent,
oldest first), the changes feed as it may see it, and search within its limits.

One rule decides what an agent may see: `agent_limits`. An agent limited to accounts
and/or chats sees the chats of those accounts and those chats, and their messages (with
their attachments, unread, feed rows and search hits); without limits (and for the owner)
everything. Every read path of the API asks it, through `agent_scope` (messages),
`agent_chat_scope` (chats), `agent_chat_get`/`agent_message_get`/`agent_chat_check` (one
row) and `agent_search`."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Exists, Max, OuterRef, Q
from django.db.models.expressions import RawSQL

from archive.connectors.sending import send_unready
from archive.gateway.models import Agent, SendAttempt, SendOutcome
from archive.search.selectors import SearchPage, message_search
from archive.store.changes import ChangeKind
from archive.store.models import Change, Chat, ChatKind, DeliveryStatus, Direction, Message
from archive.store.selectors import chat_get, message_get, messages_full
from notes.models import Note
from wirecat.db.values import db_time
from wirecat.errors import Invalid, NotFound

# --- limits -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The accounts and chats an agent is limited to (it sees the union of both)."""

    accounts: tuple[int, ...]
    chats: tuple[int, ...]

    def allows(self, chat: Chat) -> bool:
        return chat.pk in self.chats or chat.account_id in self.accounts


def agent_limits(agent: Agent | None) -> Limits | None:
    """What `agent` is limited to; None when it sees everything (the owner, None, and an
    agent without limits)."""
    if agent is None or agent.pk is None:
        return None
    accounts = tuple(agent.limit_accounts.values_list("pk", flat=True))
    chats = tuple(agent.limit_chats.values_list("pk", flat=True))
    if not accounts and not chats:
        return None
    return Limits(accounts, chats)


def agent_chat_scope(agent: Agent | None) -> Q:
    """The chats `agent` may see, as a filter over Chat."""
    limits = agent_limits(agent)
    if limits is None:
        return Q()
    return Q(account_id__in=limits.accounts) | Q(pk__in=limits.chats)


def agent_scope(agent: Agent | None) -> Q:
    """The messages `agent` may see, as a filter over Message."""
    limits = agent_limits(agent)
    if limits is None:
        return Q()
    return Q(chat__account_id__in=limits.accounts) | Q(chat_id__in=limits.chats)


def _scope_sql(limits: Limits | None, alias: str = "m") -> tuple[str, list[str]]:
    """The same rule as SQL over a message row `alias` (for the raw unread scan)."""
    if limits is None:
        return "", []
    return (
        f" AND ({alias}.chat_id IN (SELECT value FROM json_each(%s))"
        f" OR {alias}.chat_id IN (SELECT c.id FROM archive_chat AS c"
        " WHERE c.account_id IN (SELECT value FROM json_each(%s))))",
        [json.dumps(list(limits.chats)), json.dumps(list(limits.accounts))],
    )


def agent_sees_chat(agent: Agent | None, chat: Chat) -> bool:
    limits = agent_limits(agent)
    return limits is None or limits.allows(chat)


def agent_chat_check(agent: Agent | None, chat: Chat, what: str) -> None:
    """NotFound naming `what` when `chat` is outside the agent's limits (as if it were not
    there: an agent learns nothing of what it may not see)."""
    if not agent_sees_chat(agent, chat):
        raise NotFound(f"{what} does not exist")


def agent_chat_get(*, agent: Agent | None, chat_id: int) -> Chat:
    chat = chat_get(chat_id=chat_id)
    agent_chat_check(agent, chat, f"chat {chat_id}")
    return chat


def agent_message_get(*, agent: Agent | None, public_id: str) -> Message:
    message = message_get(public_id=public_id)
    agent_chat_check(agent, message.chat, f"message {public_id!r}")
    return message


# --- unread -------------------------------------------------------------------------------

_UNREAD = (
    "SELECT m.id FROM archive_message AS m WHERE m.id > %s AND m.direction = 'in'"
    " AND m.deleted_at IS NULL AND m.sent_at >= %s"
    " AND NOT EXISTS (SELECT 1 FROM archive_agentread AS r"
    " WHERE r.agent_id = %s AND r.message_id = m.id)"
    " AND NOT EXISTS (SELECT 1 FROM archive_agentchatread AS c"
    " WHERE c.agent_id = %s AND c.chat_id = m.chat_id AND c.through_id >= m.id){scope}"
    " ORDER BY m.id LIMIT %s"
)


def _token(prefix: str, value: int) -> str:
    return base64.urlsafe_b64encode(f"{prefix}{value}".encode()).decode().rstrip("=")


def _value(prefix: str, cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode("ascii")
        value = int(raw.removeprefix(prefix))
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise Invalid("cursor: not a cursor this endpoint gave out") from exc
    if not raw.startswith(prefix) or not 0 <= value < 2**62:
        raise Invalid("cursor: not a cursor this endpoint gave out")
    return value


def _unread_ids(agent: Agent, after: int, limit: int) -> list[int]:
    scope, scope_params = _scope_sql(agent_limits(agent))
    start = max(after, agent.read_through)
    with connection.cursor() as cursor:
        cursor.execute(
            _UNREAD.format(scope=scope),
            [start, db_time(agent.since), agent.pk, agent.pk, *scope_params, limit],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def first_unread_id(agent: Agent) -> int | None:
    found = _unread_ids(agent, 0, 1)
    return found[0] if found else None


@dataclass(frozen=True)
class UnreadPage:
    messages: list[Message]
    next_cursor: str | None


def unread_page(*, agent: Agent, cursor: str | None = None, limit: int = 50) -> UnreadPage:
    """Inbound messages this agent has not marked read, oldest first."""
    if not 1 <= limit <= 200:
        raise Invalid("limit: between 1 and 200")
    ids = _unread_ids(agent, _value("u", cursor), limit + 1)
    more = len(ids) > limit
    ids = ids[:limit]
    by_id = Message.objects.select_related("chat", "chat__account", "sender").in_bulk(ids)
    messages = [by_id[i] for i in ids if i in by_id]
    return UnreadPage(messages, _token("u", ids[-1]) if more and ids else None)


@dataclass(frozen=True)
class ChangesPage:
    changes: list[Change]
    # message pk -> msg_… (absent when purged): of each row's message, and of the last
    # message of a "messages.imported" row (its `target_id`)
    public_ids: dict[int, str]
    cursor: str  # always given: poll again with it
    # change pk -> note_… of a note's change (kept in its row) or of a tag on a note
    notes: dict[int, str] = field(default_factory=dict)


NOTE_KINDS = frozenset({ChangeKind.NOTE_CREATED, ChangeKind.NOTE_UPDATED, ChangeKind.NOTE_DELETED})


# A feed read for an agent looks at this many rows at most (its cursor then moves past
# them), so an agent that may see little of a large import still gets a quick answer.
FEED_SCAN = 50_000


def _feed_visible(agent: Agent) -> Q:
    """The feed rows `agent` may see: its own sends' status only, a note's rows with
    notes.read only, and within its limits only the rows of the chats it sees (their
    messages, sends and tags) and the notes'."""
    own = SendAttempt.objects.filter(agent=agent).values("pk")
    visible = ~Q(kind=ChangeKind.SEND_STATUS) | Q(target_id__in=own)
    # A note's rows (its changes, tags on it) are for agents that may read notes; notes
    # are in no chat, so an agent's limits leave them be.
    reads_notes = "notes.read" in agent.scopes
    if not reads_notes:
        visible &= ~Q(target_kind="note")
    limits = agent_limits(agent)
    if limits is not None:
        chats = Chat.objects.filter(agent_chat_scope(agent)).values("pk")
        of_message = Message.objects.filter(pk=OuterRef("message_pk"), chat_id__in=chats)
        seen = (
            Q(chat_pk__in=chats)
            | Q(chat_pk__isnull=True, message_pk__isnull=False) & Exists(of_message)
            | Q(target_kind="chat", target_id__in=chats)
        )
        visible &= (seen | Q(target_kind="note")) if reads_notes else seen
    return visible


def _note_ids(changes: list[Change]) -> dict[int, str]:
    """The note each row names: a note's change keeps its id in `tag`; a tag on a note
    names the note by its pk (absent when the note is deleted since)."""
    out = {c.pk: c.tag for c in changes if c.kind in NOTE_KINDS and c.tag}
    tagged = {c.target_id for c in changes if c.target_kind == "note" and c.pk not in out}
    if tagged:
        found = dict(Note.objects.filter(pk__in=tagged).values_list("pk", "public_id"))
        for c in changes:
            if c.target_kind == "note" and c.pk not in out and c.target_id in found:
                out[c.pk] = found[c.target_id]
    return out


def changes_page(
    *, agent: Agent | None = None, cursor: str | None = None, limit: int = 100
) -> ChangesPage:
    """What changed after `cursor`, in order: all of it for the owner, what `agent` may see
    for an agent. The cursor returned resumes exactly after the last change returned (or
    after the rows looked at, none of which the agent may see; or stays put when there is
    nothing new)."""
    if not 1 <= limit <= 1000:
        raise Invalid("limit: between 1 and 1000")
    after = _value("c", cursor)
    rows = Change.objects.filter(pk__gt=after).order_by("pk")
    if agent is None:
        changes = list(rows[:limit])
        last = changes[-1].pk if changes else after
    else:
        # Rows up to the newest one now are all committed (one writer at a time).
        top = min(Change.objects.aggregate(top=Max("pk"))["top"] or 0, after + FEED_SCAN)
        changes = list(rows.filter(_feed_visible(agent), pk__lte=top)[:limit])
        last = changes[-1].pk if len(changes) == limit else max(top, after)
    ids = {c.message_pk for c in changes if c.message_pk}
    ids |= {c.target_id for c in changes if c.kind == ChangeKind.MESSAGES_IMPORTED and c.target_id}
    public = dict(Message.objects.filter(pk__in=ids).values_list("pk", "public_id"))
    return ChangesPage(changes, public, _token("c", last), _note_ids(changes))


@dataclass(frozen=True)
class ImportedPage:
    messages: list[Message]  # in the order they were stored (by id)
    next_cursor: str | None


def imported_messages_page(
    *, agent: Agent | None, seq: int, cursor: str | None = None, limit: int = 100
) -> ImportedPage:
    """The messages a "messages.imported" row `seq` counts, as many as are still stored
    (tombstoned ones too), in the order they were stored: its chat's messages from its
    first to its last message by id. NotFound for a row that is not one, or that `agent`
    may not see in the feed."""
    if not 1 <= limit <= 200:
        raise Invalid("limit: between 1 and 200")
    after = _value("i", cursor)
    rows = Change.objects.filter(pk=seq, kind=ChangeKind.MESSAGES_IMPORTED)
    if agent is not None:
        rows = rows.filter(_feed_visible(agent))
    change = rows.first()
    chat, first, last = (None, None, None)
    if change is not None:
        chat, first, last = change.chat_pk, change.message_pk, change.target_id
    if chat is None or first is None or last is None:
        raise NotFound(f"change {seq}: no messages.imported row of that number")
    with connection.cursor() as db:
        # By the id range (`+chat_id` keeps the planner off the chat's whole time index,
        # which it would read and sort: every message of a large chat).
        db.execute(
            "SELECT id FROM archive_message WHERE id BETWEEN %s AND %s AND +chat_id = %s"
            " ORDER BY id LIMIT %s",
            [max(first, after + 1), last, chat, limit + 1],
        )
        ids = [row[0] for row in db.fetchall()]
    more = len(ids) > limit
    ids = ids[:limit]
    return ImportedPage(messages_full(ids), _token("i", ids[-1]) if more else None)


# --- search -------------------------------------------------------------------------------

SEARCH_SCAN_PAGES = 20  # pages of the whole archive looked at for one limited agent's page


def agent_search(
    *,
    agent: Agent | None,
    query: str,
    sort: str = "relevance",
    cursor: str | None = None,
    limit: int = 20,
    facets: bool = False,
) -> SearchPage:
    """`message_search` as `agent` may see it. Within limits: only hits in its chats (a
    page may hold fewer than `limit`; follow `next_cursor` while there is one), and no
    facets or "did you mean" (they count or name what is outside them)."""
    limits = agent_limits(agent)
    if limits is None:
        return message_search(query=query, sort=sort, cursor=cursor, limit=limit, facets=facets)
    page = message_search(query=query, sort=sort, cursor=cursor, limit=limit)
    hits = [hit for hit in page.hits if limits.allows(hit.message.chat)]
    scanned = 1
    while not hits and page.next_cursor and scanned < SEARCH_SCAN_PAGES:
        page = message_search(query=query, sort=sort, cursor=page.next_cursor, limit=limit)
        hits = [hit for hit in page.hits if limits.allows(hit.message.chat)]
        scanned += 1
    page.hits, page.facets, page.suggestion = hits, None, None
    page.senders = []  # the senders a from: names come from the whole archive
    return page


# --- the Sends page -----------------------------------------------------------------------

CONTEXT_MESSAGES = 5  # the chat's last messages shown beside a send waiting for approval
_CHATS_PER_QUERY = 400  # SQLite joins at most 500 SELECTs in one compound statement


@dataclass(frozen=True)
class AwaitingSend:
    """A send waiting for the owner, with what the owner needs to decide: who it goes to,
    the chat's last messages (oldest first; drafts left out), and why it could not go out
    now ("" when it could)."""

    attempt: SendAttempt
    recipient: str
    recent: list[Message]
    unready: str


def _recent_messages(chat_ids: list[int], count: int) -> dict[int, list[Message]]:
    """The last `count` messages of each chat, in one query per 400 chats (one, in
    practice): each chat's newest read through the (chat, sent_at, id) index, not a scan of
    its whole history. Drafts waiting for approval and refused ones are not the chat's."""
    meta = Message._meta
    table = connection.ops.quote_name(meta.db_table)
    found: dict[int, list[Message]] = {}
    for start in range(0, len(chat_ids), _CHATS_PER_QUERY):
        chunk = chat_ids[start : start + _CHATS_PER_QUERY]
        one = (
            f"SELECT * FROM (SELECT id FROM {table} WHERE chat_id = %s AND deleted_at IS NULL"
            " AND delivery_status NOT IN (%s, %s) ORDER BY sent_at DESC, id DESC LIMIT %s)"
        )
        sql = " UNION ALL ".join([one] * len(chunk))
        params: list[object] = []
        for chat_id in chunk:
            params += [chat_id, DeliveryStatus.AWAITING, DeliveryStatus.REFUSED, count]
        rows = (
            Message.objects.filter(id__in=RawSQL(sql, params))  # noqa: S611 - values bound
            .select_related("sender", "chat__account")  # the provider: how text is marked
            .prefetch_related("attachments")
            .order_by("sent_at", "id")
        )
        for message in rows:
            found.setdefault(message.chat_id, []).append(message)
    return found


def _recipient(chat: Chat | None, recent: list[Message]) -> str:
    """Who a message sent to `chat` reaches, in words."""
    if chat is None:
        return "a chat that no longer exists"
    title = chat.title or chat.external_id
    others = list(
        dict.fromkeys(
            str(m.sender)
            for m in reversed(recent)
            if m.direction == Direction.INBOUND and m.sender is not None
        )
    )
    if chat.kind == ChatKind.DM:
        return f"{others[0] if others else title}, in a direct chat"
    kind = chat.get_kind_display().lower()
    lately = f"; lately {', '.join(others[:3])}" if others else ""
    return f"everyone in the {kind} “{title}”{lately}"


def sends_awaiting(*, context: int = CONTEXT_MESSAGES) -> list[AwaitingSend]:
    """The sends waiting for the owner, oldest first, each with its context. A fixed
    number of queries, whatever the number of sends: the sends, the chats' last messages
    (with their attachments), and each account's readiness once."""
    attempts = list(
        SendAttempt.objects.filter(outcome=SendOutcome.AWAITING)
        .select_related("agent", "account", "chat", "message")
        .order_by("at", "id")
    )
    chat_ids = sorted({a.chat_id for a in attempts if a.chat_id is not None})
    recent = _recent_messages(chat_ids, context) if chat_ids else {}
    unready: dict[int, str] = {}
    for attempt in attempts:
        account = attempt.account
        if account is not None and account.pk not in unready:
            unready[account.pk] = send_unready(account.provider, account.external_id)
    return [
        AwaitingSend(
            attempt=attempt,
            recipient=_recipient(attempt.chat, recent.get(attempt.chat_id or 0, [])),
            recent=recent.get(attempt.chat_id or 0, []),
            unready=unready.get(attempt.account_id or 0, ""),
        )
        for attempt in attempts
    ]


def sends_queued_count() -> int:
    """Approved or allowed sends not yet handed to their provider (the worker does that)."""
    return SendAttempt.objects.filter(outcome=SendOutcome.QUEUED).count()
