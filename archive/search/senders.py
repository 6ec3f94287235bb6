"""Who a `from:` names, resolved to identity ids before any message is read.

`from:ali` (unquoted) is every sender with a word starting so: a word of a person's name, of
an identity's display name, of its handle (`@` or not) or of its mail address's local part
(`alice.w` is "alice" then a word starting "w": alice.walker@example.com), case and accents
folded as the words index folds them; and, as before, an exact handle, phone, address or
external id. A matched identity held by a person brings all of that person's identities.
`from:"Alice Walker"` (quoted) is that whole name, handle, phone, address or id exactly,
as it always was. Either way the compiler's condition is `m.sender_id IN (ids)`: the words
are looked up in two small FTS5 tables (`search_identity_words`, `search_person_words`,
migration 0022) over identities and people, never in the messages.

`sender_matches` lists, for the page and the API, whom each `from:` of a query matched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from django.db import connection

from archive.search.parser import Filter, Group, Node

SHOWN = 20  # senders listed per `from:` at most (the rest are counted)
INLINE_MOST = 5_000  # resolved ids a statement takes inline; more are resolved in it again
ME = ("me", "myself")

# The same sender, exactly (the whole value): display name, handle, external id, phone,
# address, or a person's whole name.
_EXACT = (
    "{i}.display_name = %s COLLATE NOCASE OR {i}.handle = %s COLLATE NOCASE"
    " OR {i}.external_id = %s OR {i}.phone = %s OR {i}.email = %s COLLATE NOCASE"
)
_EXACT_PERSON = "SELECT p.id FROM archive_person AS p WHERE p.name = %s COLLATE NOCASE"
_IDENTITY_WORDS = "SELECT rowid FROM search_identity_words WHERE search_identity_words MATCH %s"
_PERSON_WORDS = "SELECT rowid FROM search_person_words WHERE search_person_words MATCH %s"


def words_match(value: str) -> str | None:
    """The sender-words MATCH of an unquoted value: its words as one phrase, the last a
    prefix (`alice.w` → alice, then w…; `@alice_w` → alice, then w…); None without a word."""
    text = value.lstrip("@")
    if not any(char.isalnum() for char in text):
        return None
    return '"' + text.replace('"', '""') + '"*'


def sender_ids_sql(value: str, *, exact: bool) -> tuple[str, list[str]]:
    """A SELECT of the ids of the identities `from:value` names (see the module)."""
    if exact:
        return (
            "SELECT i.id FROM archive_identity AS i WHERE "
            + _EXACT.format(i="i")
            + f" OR i.person_id IN ({_EXACT_PERSON})",
            [value] * 6,
        )
    match = words_match(value)
    # The identities matched themselves (exactly, or by a word of theirs), read once; then
    # every identity of the people they are held by or whose name matches.
    hit = "SELECT j.id, j.person_id FROM archive_identity AS j WHERE " + _EXACT.format(i="j")
    params = [value] * 5
    if match is not None:
        hit += f" OR j.id IN ({_IDENTITY_WORDS})"
        params.append(match)
    people = f"SELECT person_id FROM hit UNION {_EXACT_PERSON}"
    params.append(value)
    if match is not None:
        people += f" UNION {_PERSON_WORDS}"
        params.append(match)
    return (
        f"WITH hit AS MATERIALIZED ({hit}) SELECT id FROM hit UNION"
        f" SELECT i.id FROM archive_identity AS i WHERE i.person_id IN ({people})",
        params,
    )


@dataclass(frozen=True)
class Sender:
    """One human a `from:` matched: a person (all their identities), or an identity no
    person holds; `operator` names just them (a quoted, exact `from:`)."""

    label: str
    person_id: int | None
    identity_ids: tuple[int, ...]
    operator: str | None


@dataclass
class FromMatch:
    """Whom one `from:` of the query named (none: nothing matches it)."""

    value: str
    exact: bool
    negated: bool
    senders: list[Sender] = field(default_factory=list)
    more: int = 0  # matched beyond the `SHOWN` listed
    identity_ids: tuple[int, ...] = ()  # every identity it names, listed or not

    @property
    def operator(self) -> str:
        value = f'"{self.value}"' if self.exact else self.value
        return f"{'-' if self.negated else ''}from:{value}"


def exact_operator(value: str) -> str | None:
    """`from:"value"`, the one sender named so exactly; None when quotes cannot hold it."""
    if not value.strip() or '"' in value:
        return None
    return f'from:"{value}"'


def _from_filters(node: Node) -> list[Filter]:
    if isinstance(node, Filter):
        named = node.name == "from" and node.value.lower() not in ME
        return [node] if named else []
    if isinstance(node, Group):
        return [found for item in node.items for found in _from_filters(item)]
    return []


def sender_matches(tree: Node | None) -> list[FromMatch]:
    """For each `from:` of the query (but `from:me`), the senders it matched, people first
    grouped, by name; one statement for them all."""
    filters = list(dict.fromkeys(_from_filters(tree))) if tree is not None else []
    if not filters:
        return []
    parts: list[str] = []
    params: list[str | int] = []
    for index, node in enumerate(filters):
        sql, found = sender_ids_sql(node.value, exact=node.exact)
        parts.append(
            f"SELECT {index}, i.id, i.person_id, p.name, i.display_name, i.handle, i.email,"
            " i.phone, i.external_id"
            " FROM archive_identity AS i LEFT JOIN archive_person AS p ON p.id = i.person_id"
            f" WHERE i.id IN ({sql})"
        )
        params.extend(found)
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        rows = cursor.fetchall()
    groups: list[dict[tuple[str, int], list[tuple[int, str]]]] = [{} for _ in filters]
    for index, identity_id, person_id, person, *names in rows:
        if person_id is not None:
            key, label = ("person", int(person_id)), str(person)
        else:  # its display name, else handle, address, phone, external id
            key, label = ("identity", int(identity_id)), next((n for n in names if n), "")
        groups[int(index)].setdefault(key, []).append((int(identity_id), str(label)))
    out: list[FromMatch] = []
    for node, group in zip(filters, groups, strict=True):
        senders = sorted(
            (
                Sender(
                    label=members[0][1],
                    person_id=key[1] if key[0] == "person" else None,
                    identity_ids=tuple(sorted(identity for identity, _ in members)),
                    operator=exact_operator(members[0][1]),
                )
                for key, members in group.items()
            ),
            key=lambda sender: (sender.person_id is None, sender.label.casefold(), sender.label),
        )
        out.append(
            FromMatch(
                value=node.value,
                exact=node.exact,
                negated=node.negated,
                senders=senders[:SHOWN],
                more=max(0, len(senders) - SHOWN),
                identity_ids=tuple(sorted(i for members in group.values() for i, _ in members)),
            )
        )
    return out


# The identity ids each `from:` (value, quoted) was resolved to, for `compile_query`.
Senders = Mapping[tuple[str, bool], tuple[int, ...]]


def resolved(matches: list[FromMatch]) -> dict[tuple[str, bool], tuple[int, ...]]:
    """The ids `sender_matches` found, for the compiler to use instead of resolving each
    `from:` again in every statement (but not a list too long to inline)."""
    return {
        (match.value, match.exact): match.identity_ids
        for match in matches
        if len(match.identity_ids) <= INLINE_MOST
    }
