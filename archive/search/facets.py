"""Facet counts for a query: which chats, senders, sources and years its matches fall in,
each with the operator that narrows the search to it, and how many messages match: exactly
when every match was counted, else at least the number counted and, when the matches came
from a window of the newest, about how many in all."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import connection

from archive.search.compiler import Compiled
from archive.search.senders import exact_operator
from archive.store.models import Account, Chat, Identity

FACET_SAMPLE = 10_000  # matches counted at most (a common word matches most of an archive)
# ... when the search is windowed: the newest this many candidates of each index
FACET_WINDOW = 4_000
TOP = 8


@dataclass(frozen=True)
class FacetValue:
    label: str
    count: int
    operator: str | None  # what to add to the query; None when no operator can say it


@dataclass
class Facets:
    chat: list[FacetValue] = field(default_factory=list)
    sender: list[FacetValue] = field(default_factory=list)
    source: list[FacetValue] = field(default_factory=list)
    year: list[FacetValue] = field(default_factory=list)
    sampled: bool = False  # True when the counts cover only some of the matches
    size: int = FACET_SAMPLE
    counted: int = 0  # the matches counted: all of them unless `sampled`
    # When sampled from the newest window: about how many match in all, from the share of
    # the archive the window covers (None when it cannot be told).
    estimate: int | None = None

    @property
    def total(self) -> int | None:
        """How many messages match, when every match was counted."""
        return None if self.sampled else self.counted

    def groups(self) -> list[tuple[str, list[FacetValue]]]:
        return [
            ("Chat", self.chat),
            ("Sender", self.sender),
            ("Source", self.source),
            ("Year", self.year),
        ]


def _operator(name: str, value: str) -> str | None:
    """`name:value`, quoted when it holds spaces; None when the grammar cannot hold it."""
    if not value.strip() or '"' in value:
        return None
    if any(char.isspace() for char in value) or any(char in value for char in "()"):
        return f'{name}:"{value}"'
    return f"{name}:{value}"


def estimated(counted: int, lowest: int, top: int) -> int:
    """About how many match in all, when `counted` matches have rowids above `lowest` up to
    `top` (the newest message's): as many per message in the rest of the archive, rounded
    to two significant figures, and never fewer than counted."""
    covered = top - lowest
    if counted <= 0 or lowest <= 0 or covered <= 0:
        return counted
    guess = counted * top / covered
    magnitude = 10 ** max(len(str(int(guess))) - 2, 0)
    return max(round(guess / magnitude) * magnitude, counted)


def message_facets(
    compiled: Compiled, sample: tuple[str, list[str | int]] | None = None, size: int = FACET_SAMPLE
) -> Facets:
    """Counts over the messages `compiled` matches (tombstones as the search treats them):
    the first `size` of them (SQL of at most `size` + 1 rows: more means sampled), or those
    of `sample`, a window of the newest matches (`windows.facet_sample`) whose `lo` column
    is the rowid it stops above (0: it covers them all). One query."""
    if sample is None:
        deleted = "" if compiled.include_deleted else " AND m.deleted_at IS NULL"
        sample = (
            "SELECT m.chat_id, m.sender_id, m.account_id, substr(m.sent_at, 1, 4) AS year,"
            f" 0 AS lo FROM archive_message AS m WHERE {compiled.where}{deleted}"
            f" LIMIT {size + 1}",
            list(compiled.params),
        )
        capped = size
    else:
        capped = None  # a window is bounded by its size: every candidate in it counts
    sample_sql, sample_params = sample
    sql = (
        f"WITH hits AS ({sample_sql}) "
        "SELECT 'chat', chat_id, count(*) FROM hits GROUP BY chat_id "
        "UNION ALL SELECT 'sender', sender_id, count(*) FROM hits"
        " WHERE sender_id IS NOT NULL GROUP BY sender_id "
        "UNION ALL SELECT 'account', account_id, count(*) FROM hits GROUP BY account_id "
        "UNION ALL SELECT 'year', year, count(*) FROM hits GROUP BY year "
        "UNION ALL SELECT 'total', max(lo), count(*) FROM hits "
        "UNION ALL SELECT 'top', (SELECT max(id) FROM archive_message), 0"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, sample_params)
        rows = cursor.fetchall()
    counts: dict[str, dict[object, int]] = {}
    total, lowest, newest = 0, 0, 0
    for kind, key, count in rows:
        if kind == "total":
            total, lowest = int(count), int(key or 0)
        elif kind == "top":
            newest = int(key or 0)
        else:
            counts.setdefault(kind, {})[key] = count
    if capped is not None and total > capped:  # the first `size` matches of more
        facets = Facets(sampled=True, size=size, counted=capped)
    elif lowest > 0:  # the newest window of more
        facets = Facets(
            sampled=True, size=size, counted=total, estimate=estimated(total, lowest, newest)
        )
    else:
        facets = Facets(size=size, counted=total)

    def top(kind: str) -> list[tuple[object, int]]:
        found = sorted(counts.get(kind, {}).items(), key=lambda pair: (-pair[1], str(pair[0])))
        return found[:TOP]

    chats = Chat.objects.select_related("account").in_bulk([k for k, _ in top("chat")])
    for key, count in top("chat"):
        chat = chats.get(int(str(key)))
        if chat is not None:
            label = chat.title or chat.external_id
            operator = _operator("in", chat.title) if chat.title else None
            facets.chat.append(
                FacetValue(label, count, operator or _operator("chat", chat.external_id))
            )
    people = Identity.objects.in_bulk([k for k, _ in top("sender")])
    for key, count in top("sender"):
        identity = people.get(int(str(key)))
        if identity is not None:
            # Quoted: exactly this sender (an unquoted `from:` is any word's prefix).
            by = identity.display_name or identity.handle or identity.external_id
            facets.sender.append(FacetValue(str(identity), count, exact_operator(by)))
    providers: dict[str, int] = {}
    accounts = Account.objects.in_bulk([int(str(key)) for key in counts.get("account", {})])
    for key, count in counts.get("account", {}).items():
        account = accounts.get(int(str(key)))
        if account is not None:
            providers[account.provider] = providers.get(account.provider, 0) + count
    for provider, count in sorted(providers.items(), key=lambda pair: (-pair[1], pair[0])):
        facets.source.append(FacetValue(provider, count, _operator("source", provider)))
    for key, count in sorted(
        counts.get("year", {}).items(), key=lambda pair: str(pair[0]), reverse=True
    ):
        facets.year.append(FacetValue(str(key), count, _operator("on", str(key))))
    return facets
