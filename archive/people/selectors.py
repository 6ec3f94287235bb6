"""Reads for people: the people list, a person's page, unlinked identities with what tells
them apart, suggestions from shared phone numbers and e-mail addresses, the owner's person,
and activity per week or month for the charts."""

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
from wirecat.errors import Invalid, NotFound

PEOPLE_SORTS = ("recent", "name")
CHART_WEEKS = 104  # a history up to two years long is charted by week, a longer one by month
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


def owner_person() -> Person | None:
    """The owner's person (their own accounts' identities), once the archive has one."""
    return Person.objects.filter(is_owner=True).first()


def unlinked_identities(*, q: str = "") -> QuerySet[Identity]:
    """Identities no person holds yet, newest activity first. The owner's own are not among
    them: the sink links them to the owner's person as they arrive."""
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
    activity: Activity
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
        activity=activity(sender_ids=ids),
        audit=list(IdentityLink.objects.filter(person=person).select_related("identity")[:50]),
    )


@dataclass(frozen=True)
class Activity:
    """Messages per bucket, oldest first, every bucket present (zeros included): weeks
    (their Monday) for a history up to CHART_WEEKS long, months (their first day) beyond."""

    unit: str  # "week" or "month"
    buckets: list[tuple[date, int]]

    @property
    def total(self) -> int:
        return sum(count for _, count in self.buckets)


def _scope(sender_ids: list[int] | None, chat_id: int | None) -> tuple[str, list[int]] | None:
    if chat_id is not None:
        return "chat_id = %s", [chat_id]
    if sender_ids:
        return f"sender_id IN ({','.join(['%s'] * len(sender_ids))})", list(sender_ids)
    return None


def _span(where: str, params: list[int]) -> tuple[datetime, datetime] | None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT min(sent_at), max(sent_at) FROM archive_message WHERE {where}", params
        )
        oldest_raw, newest_raw = cursor.fetchone()
    oldest, newest = _parse_time(oldest_raw), _parse_time(newest_raw)
    if oldest is None or newest is None:
        return None
    return oldest, newest


def activity(*, sender_ids: list[int] | None = None, chat_id: int | None = None) -> Activity:
    """The whole history of these senders or of this chat, by week when it spans up to
    CHART_WEEKS weeks, else by month (a chart of 20 years stays 240 bars). Two queries."""
    scope = _scope(sender_ids, chat_id)
    span = _span(*scope) if scope is not None else None
    if scope is None or span is None:
        return Activity("week", [])
    oldest, newest = span
    first_monday = oldest.date() - timedelta(days=oldest.weekday())
    last_monday = newest.date() - timedelta(days=newest.weekday())
    if (last_monday - first_monday).days // 7 + 1 <= CHART_WEEKS:
        return Activity("week", _weeks(*scope, oldest, newest, CHART_WEEKS))
    where, params = scope
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT substr(sent_at, 1, 7), count(*) FROM archive_message WHERE {where} GROUP BY 1",
            params,
        )
        per_month = {str(month): int(count) for month, count in cursor.fetchall()}
    months = (newest.year - oldest.year) * 12 + newest.month - oldest.month + 1
    buckets = []
    for index in range(months):
        year, month = divmod(oldest.month - 1 + index, 12)
        start = date(oldest.year + year, month + 1, 1)
        buckets.append((start, per_month.get(f"{start:%Y-%m}", 0)))
    return Activity("month", buckets)


def activity_weeks(
    *, sender_ids: list[int] | None = None, chat_id: int | None = None, weeks: int = CHART_WEEKS
) -> list[tuple[date, int]]:
    """Messages per week (Monday first) up to the newest message of these senders or of
    this chat, every week present (zeros included): from the first message's week, or
    `weeks` weeks back when the history is longer, and never fewer than CHART_MIN_WEEKS
    (nor more than `weeks`). `activity` charts a whole history."""
    scope = _scope(sender_ids, chat_id)
    span = _span(*scope) if scope is not None else None
    if scope is None or span is None:
        return []
    return _weeks(*scope, *span, weeks)


def _weeks(
    where: str, params: list[int], oldest: datetime, newest: datetime, weeks: int
) -> list[tuple[date, int]]:
    with connection.cursor() as cursor:
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


# --- telling identities apart ---------------------------------------------------------------

TOP_CHATS = 2  # the chats an identity speaks in most, shown beside it


@dataclass(frozen=True)
class ChatShare:
    chat_id: int
    title: str
    messages: int


@dataclass(frozen=True)
class IdentityFacts:
    """What tells two identities of the same name apart: how much they wrote, when last,
    and the chats they speak in most."""

    messages: int = 0
    last_at: datetime | None = None
    chats: tuple[ChatShare, ...] = ()


def identity_facts(identity_ids: list[int]) -> dict[int, IdentityFacts]:
    """Facts of these identities (a page of them) in one query: per identity its message
    count, its last message's time and its TOP_CHATS busiest chats. Identities with no
    message are absent from the answer."""
    ids = sorted(set(identity_ids))
    if not ids:
        return {}
    marks = ",".join(["%s"] * len(ids))
    sql = (
        "WITH per AS (SELECT sender_id, chat_id, count(*) AS n, max(sent_at) AS last"
        f" FROM archive_message WHERE sender_id IN ({marks}) GROUP BY sender_id, chat_id),"
        " ranked AS (SELECT sender_id, chat_id, n, last,"
        " row_number() OVER (PARTITION BY sender_id ORDER BY n DESC, last DESC) AS place,"
        " sum(n) OVER (PARTITION BY sender_id) AS total,"
        " max(last) OVER (PARTITION BY sender_id) AS newest FROM per)"
        " SELECT r.sender_id, r.total, r.newest, r.chat_id, c.title, c.external_id, r.n"
        " FROM ranked AS r JOIN archive_chat AS c ON c.id = r.chat_id"
        " WHERE r.place <= %s ORDER BY r.sender_id, r.place"
    )
    facts: dict[int, IdentityFacts] = {}
    with connection.cursor() as cursor:
        cursor.execute(sql, [*ids, TOP_CHATS])
        for sender, total, newest, chat_id, title, external_id, count in cursor.fetchall():
            had = facts.get(int(sender))
            share = ChatShare(int(chat_id), str(title or external_id), int(count))
            facts[int(sender)] = IdentityFacts(
                messages=int(total),
                last_at=_parse_time(newest),
                chats=(*had.chats, share) if had else (share,),
            )
    return facts


@dataclass(frozen=True)
class IdentityEntry:
    """An identity as a list or the link picker shows it."""

    identity: Identity
    facts: IdentityFacts


def identity_entries(identities: list[Identity]) -> list[IdentityEntry]:
    """The identities of one page with their facts (one query for the whole page)."""
    facts = identity_facts([identity.pk for identity in identities])
    return [IdentityEntry(i, facts.get(i.pk, IdentityFacts())) for i in identities]


@dataclass(frozen=True)
class PersonRow:
    person: Person
    sources: list[str]  # the providers they have identities on


def people_rows(people: list[Person]) -> list[PersonRow]:
    """A page of people with the providers each has identities on, in one query."""
    found: dict[int, set[str]] = defaultdict(set)
    rows = Identity.objects.filter(person__in=people).values_list("person_id", "provider")
    for person_id, provider in rows.distinct():
        found[int(person_id)].add(str(provider))
    return [PersonRow(person, sorted(found.get(person.pk, ()))) for person in people]


def people_choices(*, limit: int = 1_000) -> list[Person]:
    """People to pick from when linking many identities at once, by name."""
    return list(Person.objects.order_by(Lower("name"), "pk")[:limit])


_PICKED = re.compile(r"\(#(\d+)\)\s*$")


def person_picked(text: str) -> Person | None:
    """The person a picker's text names: "Name (#12)" as the picker offers them, or a
    name only one person has (any case). None when no person has it (a new name);
    Invalid when several do."""
    cleaned = " ".join(str(text).split())
    found = _PICKED.search(cleaned)
    if found:
        person = Person.objects.filter(pk=int(found.group(1))).first()
        if person is None:
            raise NotFound(f"person {found.group(1)} does not exist")
        return person
    same = list(Person.objects.filter(name__iexact=cleaned)[:2])
    if len(same) > 1:
        raise Invalid(f"More than one person is called “{cleaned}”: pick one from the list.")
    return same[0] if same else None


@dataclass(frozen=True)
class SuggestionEntry:
    suggestion: Suggestion
    entries: list[IdentityEntry]

    @property
    def ids(self) -> str:
        """The identities' ids as the page's form sends them."""
        return ",".join(str(entry.identity.pk) for entry in self.entries)


def suggestion_entries(*, limit: int = 100) -> list[SuggestionEntry]:
    """The suggestions, each identity with its facts (one query for all of them)."""
    found = suggestions(limit=limit)
    facts = identity_facts([i.pk for s in found for i in s.identities])
    return [
        SuggestionEntry(
            s, [IdentityEntry(i, facts.get(i.pk, IdentityFacts())) for i in s.identities]
        )
        for s in found
    ]
