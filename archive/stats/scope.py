"""What statistics are about: a range of local days and at most one account, chat or
person (`StatsScope`), and the SQL every statistic starts from: the scope's counted
messages (not tombstoned, not service events, not sends that never left) and their
counts per UTC hour, turned into local time per hour rather than per message."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import connection
from django.utils import timezone

from archive.store.models import Account, Chat, Person
from wirecat.errors import Invalid, NotFound

UNITS = ("day", "week", "month")
DEFAULT_DAYS = 365
MAX_YEARS = 20
FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(2999, 12, 31)
# Sends an agent asked for that never left (or wait for the owner) are not the owner's words.
_UNSENT = ("awaiting", "refused", "failed")


def local_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def _midnight(day: date) -> datetime:
    """The start of a local day, as an aware datetime."""
    return datetime.combine(day, time(), tzinfo=local_zone())


def db_time(moment: datetime) -> str:
    """A moment as the store keeps `sent_at` (UTC text), for comparisons in SQL."""
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(" ")


def _day_text(day: date) -> str:
    return f"{day.day} {day:%b %Y}"


@dataclass(frozen=True)
class StatsScope:
    """What the numbers are about: a range of time and at most one account, chat, person."""

    since: datetime  # aware, inclusive
    until: datetime  # aware, exclusive
    account: Account | None = None
    chat: Chat | None = None
    person: Person | None = None

    @property
    def first_day(self) -> date:
        return self.since.astimezone(local_zone()).date()

    @property
    def last_day(self) -> date:
        """The range's last local day (`until` is the midnight after it)."""
        return (self.until.astimezone(local_zone()) - timedelta(microseconds=1)).date()

    def describe(self) -> str:
        """In words, for a page heading: "all chats, 1 Dec 2025 - 1 Dec 2026"."""
        if self.chat is not None:
            what = f"chat {self.chat.title or self.chat.external_id}"
        elif self.account is not None:
            what = f"account {self.account.name or self.account.external_id}"
        else:
            what = "all chats"
        if self.person is not None:
            what += f", messages of {self.person.name}"
        return f"{what}, {_day_text(self.first_day)} \u2013 {_day_text(self.last_day)}"


def stats_scope(
    *,
    since: date | None = None,
    until: date | None = None,
    account: int | None = None,
    chat: int | None = None,
    person: int | None = None,
    cut: bool = False,
) -> StatsScope:
    """The scope for these days (settings.TIME_ZONE), `until` included; by default the
    last 365 days up to today. Invalid names the field (until before since, a range over
    20 years, a date out of range); NotFound names a missing account, chat or person (or
    a chat outside the account named).

    With `cut` (the API's way, as the meetings' window: every request its schema allows
    is answered) a date out of range is moved to the nearest allowed, a range over 20
    years is cut to the 20 years up to `until`, and `until` before `since` is an empty
    range; the scope says what was answered."""
    last = until or timezone.localdate()
    first = since or last - timedelta(days=DEFAULT_DAYS - 1)
    if cut:
        last = min(max(last, FIRST_DAY), LAST_DAY)
        first = min(max(first, FIRST_DAY), LAST_DAY)
        first = max(first, last - timedelta(days=MAX_YEARS * 366 - 1))
    for name, day in (("until", last), ("since", first)):
        if not FIRST_DAY <= day <= LAST_DAY:
            raise Invalid(f"{name}: {day.isoformat()} is out of range ({FIRST_DAY} to {LAST_DAY})")
    if last < first and not cut:
        raise Invalid(f"until: {last.isoformat()} is before since ({first.isoformat()})")
    if (last - first).days >= MAX_YEARS * 366:
        raise Invalid(f"since: the range is over {MAX_YEARS} years; choose a shorter one")
    found_account = found_chat = found_person = None
    if account is not None:
        found_account = Account.objects.filter(pk=account).first()
        if found_account is None:
            raise NotFound(f"account: no account {account}")
    if chat is not None:
        found_chat = Chat.objects.select_related("account").filter(pk=chat).first()
        if found_chat is None:
            raise NotFound(f"chat: no chat {chat}")
        if found_account is not None and found_chat.account_id != found_account.pk:
            raise NotFound(f"chat: no chat {chat} in account {account}")
    if person is not None:
        found_person = Person.objects.filter(pk=person).first()
        if found_person is None:
            raise NotFound(f"person: no person {person}")
    return StatsScope(
        since=_midnight(first),
        until=_midnight(max(first, last + timedelta(days=1))),
        account=found_account,
        chat=found_chat,
        person=found_person,
    )


# -- the messages a scope holds, in SQL ---------------------------------------------------------


def counted_where(
    scope: StatsScope, *, until: datetime | None = None, person: bool = True
) -> tuple[str, list[Any]]:
    """The WHERE of the scope's counted messages (alias `m`): not tombstoned, not service
    events, not sends that never left; in the range (to `until` when given), the account,
    chat and (unless `person` is False) the person's identities."""
    parts = [
        "m.deleted_at IS NULL",
        "m.kind = 'text'",
        "m.delivery_status NOT IN (%s, %s, %s)",
        "m.sent_at >= %s",
        "m.sent_at < %s",
    ]
    params: list[Any] = [*_UNSENT, db_time(scope.since), db_time(until or scope.until)]
    if scope.chat is not None:
        parts.append("m.chat_id = %s")
        params.append(scope.chat.pk)
    elif scope.account is not None:
        parts.append("m.account_id = %s")
        params.append(scope.account.pk)
    if person and scope.person is not None:
        parts.append("m.sender_id IN (SELECT id FROM archive_identity WHERE person_id = %s)")
        params.append(scope.person.pk)
    return " AND ".join(parts), params


def fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return list(cursor.fetchall())


def _whole_hours(scope: StatsScope) -> bool:
    """Whether the zone's offset is whole hours all through the range (then UTC hours map
    onto local hours; else quarter hours are counted)."""
    zone = local_zone()
    moment = scope.since
    while moment <= scope.until:
        offset = moment.astimezone(zone).utcoffset() or timedelta()
        if offset.total_seconds() % 3600:
            return False
        moment += timedelta(days=14)
    return True


@lru_cache(maxsize=65_536)
def _slot_start(key: str) -> datetime:
    """The UTC start of a slot key: "YYYY-MM-DD HH" or "YYYY-MM-DD HH:q" (quarter q)."""
    hour, _, quarter = key.partition(":")
    start = datetime.strptime(hour, "%Y-%m-%d %H").replace(tzinfo=UTC)
    return start + timedelta(minutes=15 * int(quarter or 0))


def slots(scope: StatsScope, extra: str = "") -> Iterable[tuple[datetime, int, int]]:
    """(local start, messages, the owner's messages) per UTC hour (or quarter hour) of the
    scope: one GROUP BY over the range's index, the local time worked out per slot."""
    where, params = counted_where(scope)
    key = "substr(m.sent_at, 1, 13)"
    if not _whole_hours(scope):
        key += " || ':' || (CAST(substr(m.sent_at, 15, 2) AS INTEGER) / 15)"
    rows = fetch(
        f"SELECT {key} AS slot, count(*), sum(m.direction = 'out') FROM archive_message AS m"
        f" WHERE {where}{extra} GROUP BY slot",
        params,
    )
    zone = local_zone()
    for slot, count, sent in rows:
        yield _slot_start(slot).astimezone(zone), int(count), int(sent or 0)


def bucket_of(day: date, unit: str) -> date:
    if unit == "week":
        return day - timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    return day


def buckets(scope: StatsScope, unit: str) -> list[date]:
    """Every bucket start from the range's first day to its last (none when it is empty)."""
    out: list[date] = []
    if scope.until <= scope.since:
        return out
    current = bucket_of(scope.first_day, unit)
    last = scope.last_day
    while current <= last:
        out.append(current)
        if unit == "month":
            current = (current.replace(day=28) + timedelta(days=4)).replace(day=1)
        else:
            current += timedelta(days=7 if unit == "week" else 1)
    return out


def unit_checked(unit: str) -> str:
    if unit not in UNITS:
        raise Invalid(f"unit: {unit!r} is not one of {', '.join(UNITS)}")
    return unit
