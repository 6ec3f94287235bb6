"""Facet counts for a query: which chats, senders, sources and years its matches fall in,
each with the operator that narrows the search to it."""

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
    sampled: bool = False  # True when the counts cover only the first `size` matches
    size: int = FACET_SAMPLE

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


def message_facets(
    compiled: Compiled, sample: tuple[str, list[str | int]] | None = None, size: int = FACET_SAMPLE
) -> Facets:
    """Counts over the messages `compiled` matches (tombstones as the search treats them):
    the first `size` of them, or those of `sample`, SQL of (chat_id, sender_id, account_id,
    year) rows of at most `size` + 1 matches."""
    if sample is None:
        deleted = "" if compiled.include_deleted else " AND m.deleted_at IS NULL"
        sample = (
            "SELECT m.chat_id, m.sender_id, m.account_id, substr(m.sent_at, 1, 4) AS year"
            f" FROM archive_message AS m WHERE {compiled.where}{deleted}"
            f" LIMIT {size + 1}",
            list(compiled.params),
        )
    sample_sql, sample_params = sample
    sql = (
        f"WITH hits AS ({sample_sql}) "
        "SELECT 'chat', chat_id, count(*) FROM hits GROUP BY chat_id "
        "UNION ALL SELECT 'sender', sender_id, count(*) FROM hits"
        " WHERE sender_id IS NOT NULL GROUP BY sender_id "
        "UNION ALL SELECT 'account', account_id, count(*) FROM hits GROUP BY account_id "
        "UNION ALL SELECT 'year', year, count(*) FROM hits GROUP BY year "
        "UNION ALL SELECT 'total', NULL, count(*) FROM hits"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, sample_params)
        rows = cursor.fetchall()
    counts: dict[str, dict[object, int]] = {}
    total = 0
    for kind, key, count in rows:
        if kind == "total":
            total = count
        else:
            counts.setdefault(kind, {})[key] = count
    facets = Facets(sampled=total > size, size=size)

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
