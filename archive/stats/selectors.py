"""Reads for the statistics: messages over time, the hour-of-week heatmap, top chats and
people, messages to the owner left unanswered, and the owner's response times, over the
whole store or one account, chat or person, for any range of days.

What counts: messages that are not tombstoned (`deleted_at` empty) and not service events.
The owner's own messages are the outbound ones (`Message.direction`)."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Q
from django.utils import timezone

from archive.stats.scope import (
    UNITS,
    StatsScope,
    bucket_of,
    buckets,
    counted_where,
    db_time,
    fetch,
    local_zone,
    slots,
    stats_scope,
    unit_checked,
)
from archive.store.models import Account, Chat, Identity, Message, Person
from wirecat.errors import Invalid

__all__ = [
    "UNITS",
    "Heatmap",
    "ResponseRow",
    "Responses",
    "StatsScope",
    "Top",
    "Unanswered",
    "UnansweredPage",
    "Volume",
    "heatmap",
    "response_times",
    "stats_scope",
    "top_chats",
    "top_people",
    "unanswered",
    "volume",
]
MOST_MAX = 100
# Response times look this far past the range's end for the owner's answer.
HORIZON = timedelta(days=30)
WITHIN_MAX = timedelta(hours=720)


@dataclass(frozen=True)
class Volume:
    """Messages per day, week (starting Monday) or month: every bucket in the range, zeros
    included; `sent` counts the owner's own, `sent_buckets` them per bucket."""

    unit: str
    buckets: list[tuple[date, int]]
    total: int
    sent: int
    sent_buckets: list[tuple[date, int]] = field(default_factory=list)


def volume(scope: StatsScope, unit: str = "week") -> Volume:
    """Messages in the scope per `unit` (one of UNITS), by local day."""
    unit_checked(unit)
    counts: dict[date, int] = defaultdict(int)
    owned: dict[date, int] = defaultdict(int)
    for start, count, own in slots(scope):
        day = bucket_of(start.date(), unit)
        counts[day] += count
        owned[day] += own
    every = buckets(scope, unit)
    return Volume(
        unit=unit,
        buckets=[(day, counts.get(day, 0)) for day in every],
        total=sum(counts.values()),
        sent=sum(owned.values()),
        sent_buckets=[(day, owned.get(day, 0)) for day in every],
    )


@dataclass(frozen=True)
class Heatmap:
    """Messages by hour of the week, local time: 7 rows Monday..Sunday x 24 hours. Messages
    whose date is estimated are left out (their hour says nothing)."""

    cells: list[list[int]]
    peak: int
    total: int


def heatmap(scope: StatsScope) -> Heatmap:
    """Messages in the scope by local weekday and hour."""
    cells = [[0] * 24 for _ in range(7)]
    for start, count, _ in slots(scope, " AND m.date_estimated = 0"):
        cells[start.weekday()][start.hour] += count
    return Heatmap(
        cells=cells, peak=max(max(row) for row in cells), total=sum(sum(row) for row in cells)
    )


@dataclass(frozen=True)
class Top:
    """One chat or person with their messages in the scope. For a chat `sent` counts the
    owner's own messages there; for a person, the owner's messages in the direct chats
    that person wrote in. Someone whose identity no person holds yet is listed as kind
    "identity" (id: the identity's)."""

    kind: str  # "chat" | "person" | "identity"
    id: int
    name: str
    count: int
    sent: int


def _most(most: int) -> int:
    if not 1 <= most <= MOST_MAX:
        raise Invalid(f"most: {most} is not between 1 and {MOST_MAX}")
    return most


def top_chats(scope: StatsScope, most: int = 10) -> list[Top]:
    """The chats with the most messages in the scope, most first."""
    where, params = counted_where(scope)
    rows = fetch(
        "SELECT m.chat_id, count(*) AS n, sum(m.direction = 'out') FROM archive_message AS m"
        f" WHERE {where} GROUP BY m.chat_id ORDER BY n DESC, m.chat_id LIMIT %s",
        [*params, _most(most)],
    )
    chats = Chat.objects.in_bulk([row[0] for row in rows])
    return [
        Top("chat", chat_id, str(chats[chat_id]), int(n), int(sent or 0))
        for chat_id, n, sent in rows
        if chat_id in chats
    ]


def _owner_identities() -> set[int]:
    """The owner's own identities: their person's, and each account's own."""
    mine = set(Identity.objects.filter(person__is_owner=True).values_list("pk", flat=True))
    mine |= {
        pk
        for pk in Account.objects.exclude(owner_identity=None).values_list(
            "owner_identity_id", flat=True
        )
        if pk is not None
    }
    return mine


def top_people(scope: StatsScope, most: int = 10) -> list[Top]:
    """The people (other than the owner) who wrote the most messages in the scope.

    Three reads, none sorting the range's messages by chat: messages per sender (the
    range's index order, grouped by sender only), then for the `most` ranked alone the
    direct chats they wrote in and the owner's messages there."""
    _most(most)
    where, params = counted_where(scope)
    mine = _owner_identities()
    owner_people = set(Person.objects.filter(is_owner=True).values_list("pk", flat=True))
    rows = fetch(
        "SELECT g.sender_id, i.person_id, g.n FROM (SELECT m.sender_id, count(*) AS n"
        f" FROM archive_message AS m WHERE {where} AND m.direction != 'out'"
        " AND m.sender_id IS NOT NULL GROUP BY m.sender_id) AS g"
        " LEFT JOIN archive_identity AS i ON i.id = g.sender_id",
        params,
    )
    counts: dict[tuple[str, int], int] = defaultdict(int)
    key_of: dict[int, tuple[str, int]] = {}
    for sender_id, person_id, n in rows:
        if sender_id in mine or person_id in owner_people:
            continue
        key = ("person", person_id) if person_id else ("identity", sender_id)
        counts[key] += int(n)
        key_of[sender_id] = key
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:most]
    shown = {key for key, _ in ranked}
    direct, owner_sent = _direct_sent(
        where, params, {pk: key for pk, key in key_of.items() if key in shown}
    )
    people = dict(
        Person.objects.filter(pk__in=[k[1] for k, _ in ranked if k[0] == "person"]).values_list(
            "pk", "name"
        )
    )
    identities = Identity.objects.in_bulk([k[1] for k, _ in ranked if k[0] == "identity"])
    tops: list[Top] = []
    for (kind, pk), count in ranked:
        if kind == "person":
            name = people.get(pk, "")
        else:
            found = identities.get(pk)
            name = (found.display_name or found.handle or found.external_id) if found else ""
        sent = sum(owner_sent.get(chat_id, 0) for chat_id in direct[(kind, pk)])
        tops.append(Top(kind, pk, name, count, sent))
    return tops


def _direct_sent(
    where: str, params: list[Any], key_of: dict[int, tuple[str, int]]
) -> tuple[dict[tuple[str, int], set[int]], dict[int, int]]:
    """For the senders `key_of` names (sender id -> person or identity key): the direct
    chats each key wrote in within `where`, and the owner's messages in those chats."""
    direct: dict[tuple[str, int], set[int]] = defaultdict(set)
    if not key_of:
        return direct, {}
    senders = sorted(key_of)
    marks = ", ".join(["%s"] * len(senders))
    for chat_id, sender_id in fetch(
        "SELECT DISTINCT m.chat_id, m.sender_id FROM archive_message AS m"
        " JOIN archive_chat AS c ON c.id = m.chat_id"
        f" WHERE {where} AND m.direction != 'out' AND c.kind = 'dm'"
        f" AND m.sender_id IN ({marks})",
        [*params, *senders],
    ):
        direct[key_of[sender_id]].add(chat_id)
    chats = sorted(set().union(*direct.values()))
    if not chats:
        return direct, {}
    marks = ", ".join(["%s"] * len(chats))
    owner_sent = {
        chat_id: int(n)
        for chat_id, n in fetch(
            "SELECT m.chat_id, count(*) FROM archive_message AS m"
            f" WHERE {where} AND m.direction = 'out' AND m.chat_id IN ({marks})"
            " GROUP BY m.chat_id",
            [*params, *chats],
        )
    }
    return direct, owner_sent


# -- messages to the owner, and the owner's answers -------------------------------------------


@dataclass(frozen=True)
class Unanswered:
    """The newest message of a run the owner left waiting in one chat; `waiting` counts
    the run's messages to the owner that were left unanswered."""

    message_id: int
    public_id: str
    chat_id: int
    chat_title: str
    sender: str
    sent_at: datetime
    text: str
    why: str  # "direct message" | "mention" | "question"
    waiting: int = 1


@dataclass(frozen=True)
class UnansweredPage:
    items: list[Unanswered]
    total: int  # runs left waiting, of which `items` are the newest
    within: timedelta


WHY = {1: "direct message", 2: "mention", 3: "question"}
TEXT_MAX = 300  # characters of a waiting message's text shown


def _mention_sql() -> tuple[str, list[Any]]:
    """SQL true when message `m` mentions the owner: "@handle" of one of the owner's
    identities in its text, `<@id>` (Slack, Discord), or the owner's id in its metadata's
    `mentions` (Discord) or its text entities (Telegram's mention by name)."""
    mine = Identity.objects.filter(
        Q(person__is_owner=True) | Q(pk__in=Account.objects.values("owner_identity_id"))
    ).values_list("handle", "external_id")
    in_text: list[str] = []  # each needs an "@" in the text: looked for first, cheaply
    text_params: list[Any] = []
    ids: set[str] = set()
    for handle, external_id in mine:
        name = handle.strip().lstrip("@").lower()
        if name:
            in_text.append("m.text LIKE %s ESCAPE '\\'")
            escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            text_params.append(f"%@{escaped}%")
        if external_id:
            ids.add(external_id)
            if external_id.startswith("user") and external_id[4:].isdigit():
                ids.add(external_id[4:])  # Telegram's entities name the bare number
    for external_id in sorted(ids):
        in_text.append("instr(m.text, %s) > 0")
        text_params.append(f"<@{external_id}>")
        in_text.append("instr(m.text, %s) > 0")
        text_params.append(f"<@!{external_id}>")
    if not ids and not in_text:
        return "0", []
    parts = [f"(instr(m.text, '@') > 0 AND ({' OR '.join(in_text)}))"]
    params = text_params
    if ids:
        marks = ", ".join(["%s"] * len(ids))
        parts.append(
            "(instr(m.provider_metadata, '\"mentions\"') > 0 AND EXISTS (SELECT 1 FROM"
            " json_each(m.provider_metadata, '$.mentions') AS j"
            f" WHERE CAST(json_extract(j.value, '$.id') AS TEXT) IN ({marks})))"
        )
        params.extend(sorted(ids))
        parts.append(
            "(instr(m.provider_metadata, '\"user_id\"') > 0 AND EXISTS (SELECT 1 FROM"
            " json_each(m.provider_metadata, '$.entities') AS j"
            f" WHERE CAST(json_extract(j.value, '$.user_id') AS TEXT) IN ({marks})))"
        )
        params.extend(sorted(ids))
    return " OR ".join(parts), params


def _why(scope: StatsScope) -> tuple[str, list[Any]]:
    """SQL for why message `m` (in chat `c`) is to the owner: 1 direct message, 2 mention,
    3 question; NULL when it is not a message to the owner in the range."""
    mention, mention_params = _mention_sql()
    why = "CASE WHEN m.direction != 'in' OR m.sent_at >= %s THEN NULL"
    params: list[Any] = [db_time(scope.until)]
    if scope.person is not None:
        why += (
            " WHEN m.sender_id IS NULL OR m.sender_id NOT IN"
            " (SELECT id FROM archive_identity WHERE person_id = %s) THEN NULL"
        )
        params.append(scope.person.pk)
    why += f" WHEN c.kind = 'dm' THEN 1 WHEN ({mention}) THEN 2"
    why += " WHEN instr(m.text, '?') > 0 THEN 3 END"
    return why, [*params, *mention_params]


def _seq(scope: StatsScope, ahead: timedelta) -> tuple[str, list[Any]]:
    """The CTE `seq`: the owner's counted messages (`out` 1) and the counted messages to
    the owner in the range (`out` 0, as `_why` says) in the scope, with `next_out` (the
    owner's next message in that chat, looked for up to `ahead` past the range), `run` (how
    many of the owner's messages in the chat are newer: the messages to the owner between
    two of the owner's share it) and `pos` (how many newer messages of these the chat
    holds: 0 the newest). The other messages change no answer and take no part.

    One ordered pass per chat, a window function with one frame (so one pass, not one
    per function), no lookup per message. CROSS JOIN keeps the chats the outer loop, each
    one's messages read in (chat, time) index order, and the window partitions by `c.id`:
    the rows come in the window's order, so nothing is sorted. `why` is worked out once
    per message, in the WHERE (the few shown ask for it again by id)."""
    where, params = counted_where(scope, until=scope.until + ahead, person=False)
    why, why_params = _why(scope)
    sql = (
        "WITH base AS (SELECT m.id, c.id AS chat_id, m.sent_at, m.sender_id,"
        " m.direction = 'out' AS out FROM archive_chat AS c CROSS JOIN archive_message AS m"
        f" ON m.chat_id = c.id WHERE {where} AND (m.direction = 'out' OR ({why}) IS NOT NULL)),"
        " seq AS (SELECT id, chat_id, sent_at, sender_id, out,"
        " min(CASE WHEN out THEN sent_at END) OVER newest AS next_out,"
        " count(CASE WHEN out THEN 1 END) OVER newest AS run,"
        " count(*) OVER newest AS pos FROM base"
        " WINDOW newest AS (PARTITION BY chat_id ORDER BY sent_at DESC, id DESC"
        " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))"
    )
    return sql, [*params, *why_params]


def _within(within: timedelta) -> timedelta:
    if not timedelta(hours=1) <= within <= WITHIN_MAX:
        raise Invalid("within: between 1 and 720 hours")
    return within


def unanswered(
    scope: StatsScope, within: timedelta = timedelta(days=2), most: int = 50
) -> UnansweredPage:
    """Messages to the owner the owner did not answer within `within`, newest first.

    A message is to the owner when it is inbound and in a direct chat ("direct message"),
    or mentions one of the owner's handles or ids ("mention"), or, in any other chat, asks
    a question: holds a "?" ("question"). It is answered when the owner wrote in the same
    chat within `within` after it (a send that never left does not count). Only messages
    whose `within` has passed are judged. One item per chat run (the messages between two
    of the owner's in a chat): its newest waiting message, with how many were waiting."""
    _within(within)
    _most(most)
    seq, params = _seq(scope, within)
    cutoff = min(scope.until, timezone.now() - within)
    # Per run the newest late message (the least `pos`: SQLite takes the other columns
    # from the row holding the min()) and how many were late.
    rows = fetch(
        f"{seq}, late AS (SELECT id, sent_at, min(pos), count(*) AS waiting FROM seq"
        " WHERE NOT out AND sent_at < %s AND (next_out IS NULL"
        " OR (julianday(next_out) - julianday(sent_at)) * 86400.0 > %s)"
        " GROUP BY chat_id, next_out)"
        " SELECT id, waiting, count(*) OVER () FROM late"
        " ORDER BY sent_at DESC, id DESC LIMIT %s",
        [*params, db_time(cutoff), within.total_seconds(), most],
    )
    ids = [row[0] for row in rows]
    found = Message.objects.select_related("chat", "sender").in_bulk(ids)
    reasons = _reasons(scope, ids)
    items: list[Unanswered] = []
    for pk, waiting, _ in rows:
        message = found[pk]
        sender = message.sender
        items.append(
            Unanswered(
                message_id=pk,
                public_id=message.public_id,
                chat_id=message.chat_id,
                chat_title=str(message.chat),
                sender=(sender.display_name or sender.handle or sender.external_id)
                if sender
                else "",
                sent_at=message.sent_at,
                text=message.text[:TEXT_MAX],
                why=WHY[reasons[pk]],
                waiting=int(waiting),
            )
        )
    return UnansweredPage(items=items, total=int(rows[0][2]) if rows else 0, within=within)


def _reasons(scope: StatsScope, ids: list[int]) -> dict[int, int]:
    """`_why` of these messages, by id (only the shown ones: the text is read again for
    them alone)."""
    if not ids:
        return {}
    why, params = _why(scope)
    marks = ", ".join(["%s"] * len(ids))
    return {
        pk: int(reason)
        for pk, reason in fetch(
            f"SELECT m.id, {why} FROM archive_message AS m"
            f" JOIN archive_chat AS c ON c.id = m.chat_id WHERE m.id IN ({marks})",
            [*params, *ids],
        )
    }


@dataclass(frozen=True)
class ResponseRow:
    """Response times for one chat or person (or identity no person holds), in seconds."""

    kind: str  # "chat" | "person" | "identity"
    id: int
    name: str
    count: int
    median: float | None
    p90: float | None


@dataclass(frozen=True)
class Responses:
    """The owner's response times in seconds: overall, per chat and per person (the most
    answered first, at most 100 each), and per unit (bucket start, median, p90, count),
    every bucket in the range."""

    count: int
    median: float | None
    p90: float | None
    by_chat: list[ResponseRow]
    by_person: list[ResponseRow]
    over_time: list[tuple[date, float | None, float | None, int]]


def _spread(values: list[float]) -> tuple[float | None, float | None]:
    """The median and the 90th percentile (nearest rank: the value at rank ceil(0.9 n))."""
    if not values:
        return None, None
    ordered = sorted(values)
    return statistics.median(ordered), ordered[math.ceil(0.9 * len(ordered)) - 1]


def _rows_of(kind: str, groups: dict[int, list[float]]) -> list[ResponseRow]:
    """The MOST_MAX most answered of `groups`, named (only those are read)."""
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))[:MOST_MAX]
    ids = [pk for pk, _ in ranked]
    names: dict[int, str]
    if kind == "chat":
        names = {pk: str(chat) for pk, chat in Chat.objects.in_bulk(ids).items()}
    elif kind == "person":
        names = dict(Person.objects.filter(pk__in=ids).values_list("pk", "name"))
    else:
        names = {
            pk: i.display_name or i.handle or i.external_id
            for pk, i in Identity.objects.in_bulk(ids).items()
        }
    return [
        ResponseRow(kind, pk, names.get(pk, ""), len(values), *_spread(values))
        for pk, values in ranked
    ]


def response_times(scope: StatsScope, unit: str = "month") -> Responses:
    """How long the owner took to answer: from the first message to the owner (as
    `unanswered` says: a direct message, a mention, a question) the owner had not answered
    yet to the owner's next message in that chat, for runs starting in the range (the
    answer looked for up to 30 days past it). Per person: by who wrote that first message."""
    unit_checked(unit)
    seq, params = _seq(scope, HORIZON)
    # Per run its first message (the greatest `pos`: SQLite takes the other columns from
    # the row holding the max()), the one the answer is timed from.
    rows = fetch(
        f"{seq}, first AS (SELECT chat_id, sender_id, sent_at, next_out, max(pos) FROM seq"
        " WHERE NOT out GROUP BY chat_id, run)"
        " SELECT f.chat_id, f.sender_id, i.person_id, substr(f.sent_at, 1, 16),"
        " (julianday(f.next_out) - julianday(f.sent_at)) * 86400.0 FROM first AS f"
        " LEFT JOIN archive_identity AS i ON i.id = f.sender_id WHERE f.next_out IS NOT NULL",
        params,
    )
    zone = local_zone()
    everything: list[float] = []
    by_chat: dict[int, list[float]] = defaultdict(list)
    by_person: dict[int, list[float]] = defaultdict(list)
    by_identity: dict[int, list[float]] = defaultdict(list)
    by_bucket: dict[date, list[float]] = defaultdict(list)
    for chat_id, sender_id, person_id, minute, seconds in rows:
        value = max(0.0, round(float(seconds), 3))
        everything.append(value)
        by_chat[chat_id].append(value)
        if person_id is not None:
            by_person[person_id].append(value)
        elif sender_id is not None:
            by_identity[sender_id].append(value)
        by_bucket[_local_bucket(minute, unit, zone)].append(value)
    people_rows = _rows_of("person", by_person) + _rows_of("identity", by_identity)
    people_rows.sort(key=lambda row: (-row.count, row.kind, row.id))
    over_time = []
    for day in buckets(scope, unit):
        values = by_bucket.get(day, [])
        over_time.append((day, *_spread(values), len(values)))
    return Responses(
        len(everything),
        *_spread(everything),
        by_chat=_rows_of("chat", by_chat),
        by_person=people_rows[:MOST_MAX],
        over_time=over_time,
    )


@lru_cache(maxsize=65_536)
def _local_bucket(minute: str, unit: str, zone: ZoneInfo) -> date:
    """The bucket of a UTC minute ("YYYY-MM-DD HH:MM", as the store writes `sent_at`) in
    local time: worked out once per minute, not once per message."""
    when = datetime.strptime(minute, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    return bucket_of(when.astimezone(zone).date(), unit)
