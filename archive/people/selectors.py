"""Reads for people: the people list, a person's page, unlinked identities, suggestions
from shared phone numbers and e-mail addresses, and activity per week for the charts."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import connection
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Lower

from archive.people.models import IdentityLink
from archive.store.models import Chat, Identity, Message, Person
from archive.tags.models import Tag
from archive.tags.selectors import tags_of
from wirecat.errors import NotFound

PEOPLE_SORTS = ("recent", "name")
CHART_WEEKS = 104  # at most two years of weeks in a chart
CHART_MIN_WEEKS = 12  # and at least a quarter, so a short history still reads as a chart


def contact_key(identity: Identity) -> set[str]:
    """What makes two identities the same human for a suggestion: the phone number's
    digits (seven or more) and the e-mail address, lowercased. Never the name."""
    keys: set[str] = set()
    digits = re.sub(r"\D", "", identity.phone or "")
    if len(digits) >= 7:
        keys.add(f"phone:{digits}")
    email = (identity.email or "").strip().lower()
    if "@" in email:
        keys.add(f"email:{email}")
    return keys


def _last_message(outer: str) -> Subquery:
    return Subquery(
        Message.objects.filter(**{outer: OuterRef("pk")}).order_by("-sent_at").values("sent_at")[:1]
    )


def _matching(q: str) -> Q:
    """People or identities whose name, handle, phone or e-mail holds `q`."""
    text = q.strip()
    return (
        Q(display_name__icontains=text)
        | Q(handle__icontains=text)
        | Q(phone__icontains=text)
        | Q(email__icontains=text)
        | Q(external_id=text)
    )


def people_list(*, q: str = "", sort: str = "recent") -> QuerySet[Person]:
    """People, each with `identity_count` and `last_at` (their newest message), found by
    their name or any identity's name, handle, phone or e-mail."""
    qs = Person.objects.annotate(
        identity_count=Count("identities", distinct=True),
        last_at=_last_message("sender__person"),
    )
    if q.strip():
        inner = Identity.objects.filter(_matching(q)).values("person_id")
        qs = qs.filter(Q(name__icontains=q.strip()) | Q(pk__in=inner))
    if sort == "name":
        return qs.order_by(Lower("name"), "pk")
    return qs.order_by("-last_at", Lower("name"), "pk")


def unlinked_identities(*, q: str = "") -> QuerySet[Identity]:
    """Identities no person holds yet (the owner's own included), newest activity first."""
    qs = Identity.objects.filter(person=None).annotate(last_at=_last_message("sender"))
    if q.strip():
        qs = qs.filter(_matching(q))
    return qs.order_by("-last_at", "pk")


@dataclass(frozen=True)
class IdentityRow:
    identity: Identity
    messages: int
    last_at: datetime | None


@dataclass(frozen=True)
class ChatRow:
    chat: Chat
    messages: int
    last_at: datetime | None


@dataclass
class PersonPage:
    person: Person
    identities: list[IdentityRow]
    chats: list[ChatRow]
    tags: list[Tag]
    latest: list[Message]
    weeks: list[tuple[date, int]]
    audit: list[IdentityLink] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(row.messages for row in self.identities)


def _parse_time(value: object) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def person_page(*, person_id: int, latest: int = 20) -> PersonPage:
    person = Person.objects.filter(pk=person_id).first()
    if person is None:
        raise NotFound(f"person {person_id} does not exist")
    identities = list(person.identities.order_by("provider", "display_name", "pk"))
    ids = [identity.pk for identity in identities]
    counts: dict[int, tuple[int, datetime | None]] = {}
    chats: list[ChatRow] = []
    latest_messages: list[Message] = []
    if ids:
        marks = ",".join(["%s"] * len(ids))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sender_id, count(*), max(sent_at) FROM archive_message"
                f" WHERE sender_id IN ({marks}) GROUP BY sender_id",
                ids,
            )
            for sender, count, last in cursor.fetchall():
                counts[int(sender)] = (int(count), _parse_time(last))
            cursor.execute(
                "SELECT chat_id, count(*), max(sent_at) FROM archive_message"
                f" WHERE sender_id IN ({marks}) GROUP BY chat_id ORDER BY max(sent_at) DESC"
                " LIMIT 100",
                ids,
            )
            chat_rows = cursor.fetchall()
        by_id = Chat.objects.select_related("account").in_bulk([row[0] for row in chat_rows])
        chats = [
            ChatRow(by_id[chat_id], int(count), _parse_time(last))
            for chat_id, count, last in chat_rows
            if chat_id in by_id
        ]
        latest_messages = list(
            Message.objects.visible()
            .filter(sender_id__in=ids)
            .select_related("chat", "sender")
            .order_by("-sent_at", "-id")[:latest]
        )
    return PersonPage(
        person=person,
        identities=[
            IdentityRow(identity, *counts.get(identity.pk, (0, None))) for identity in identities
        ],
        chats=chats,
        tags=tags_of("person", [person.pk]).get(person.pk, []),
        latest=latest_messages,
        weeks=activity_weeks(sender_ids=ids) if ids else [],
        audit=list(IdentityLink.objects.filter(person=person).select_related("identity")[:50]),
    )


def activity_weeks(
    *, sender_ids: list[int] | None = None, chat_id: int | None = None, weeks: int = CHART_WEEKS
) -> list[tuple[date, int]]:
    """Messages per week (Monday first) up to the newest message of these senders or of
    this chat, every week present (zeros included): from the first message's week, or
    `weeks` weeks back when the history is longer, and never fewer than CHART_MIN_WEEKS
    (nor more than `weeks`)."""
    if chat_id is not None:
        where, params = "chat_id = %s", [chat_id]
    elif sender_ids:
        where = f"sender_id IN ({','.join(['%s'] * len(sender_ids))})"
        params = list(sender_ids)
    else:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT min(sent_at), max(sent_at) FROM archive_message WHERE {where}", params
        )
        oldest_raw, newest_raw = cursor.fetchone()
        oldest, newest = _parse_time(oldest_raw), _parse_time(newest_raw)
        if oldest is None or newest is None:
            return []
        last_monday = newest.date() - timedelta(days=newest.weekday())
        span = (last_monday - (oldest.date() - timedelta(days=oldest.weekday()))).days // 7 + 1
        weeks = min(weeks, max(span, CHART_MIN_WEEKS))
        first_monday = last_monday - timedelta(weeks=weeks - 1)
        # julianday of a Monday: days since then, // 7, gives the week's index.
        cursor.execute(
            "SELECT CAST((julianday(date(sent_at)) - julianday(%s)) / 7 AS INTEGER), count(*)"
            f" FROM archive_message WHERE {where} AND sent_at >= %s GROUP BY 1",
            [first_monday.isoformat(), *params, first_monday.isoformat()],
        )
        per_week: dict[int, int] = defaultdict(int)
        for index, count in cursor.fetchall():
            if 0 <= int(index) < weeks:
                per_week[int(index)] += int(count)
    return [(first_monday + timedelta(weeks=i), per_week.get(i, 0)) for i in range(weeks)]


@dataclass(frozen=True)
class Suggestion:
    key: str  # "phone:…" or "email:…"
    identities: list[Identity]


def suggestions(*, limit: int = 100) -> list[Suggestion]:
    """Identities on different providers sharing a phone number or an e-mail address and
    not yet all held by one person, for the owner to accept. Names never count."""
    groups: dict[str, list[Identity]] = defaultdict(list)
    candidates = Identity.objects.filter(~Q(phone="") | ~Q(email="")).select_related("person")
    for identity in candidates.iterator(chunk_size=2000):
        for key in contact_key(identity):
            groups[key].append(identity)
    out: list[Suggestion] = []
    seen: set[frozenset[int]] = set()
    for key, members in sorted(groups.items()):
        if len({identity.provider for identity in members}) < 2:
            continue
        people = {identity.person_id for identity in members}
        if len(people) == 1 and None not in people:
            continue  # already one person
        ids = frozenset(identity.pk for identity in members)
        if ids in seen:
            continue
        seen.add(ids)
        out.append(Suggestion(key, sorted(members, key=lambda i: (i.provider, i.pk))))
        if len(out) >= limit:
            break
    return out


def identity_find(*, q: str, exclude_person: int | None = None, limit: int = 20) -> list[Identity]:
    """Identities whose name, handle, phone or e-mail holds `q` (for linking by hand)."""
    if not q.strip():
        return []
    qs = Identity.objects.filter(_matching(q)).select_related("person")
    if exclude_person is not None:
        qs = qs.exclude(person_id=exclude_person)
    return list(qs.order_by(Lower("display_name"), "pk")[:limit])
