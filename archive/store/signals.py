"""Signals the store sends inside the transaction of their cause, for apps built on it.

`people_named(person_ids=[…])`: these people were created, renamed, or had identities
linked to them (their names and aliases changed). The notes app resolves the links that
were waiting for such a name in the same write; the store knows nothing of notes.

`messages_written(grown=[…], rewritten=[…], removed=[…])`: chats that got new messages
(`grown`), chats whose stored messages were edited, tombstoned, re-dated or purged
(`rewritten`), and the messages tombstoned or about to be purged (`removed`). The
conversations mark what each chat's threads need in the same write; the meaning index
forgets the vectors of the chunks the removed messages were in.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.dispatch import Signal

people_named = Signal()


def people_named_send(person_ids: Iterable[int]) -> None:
    ids = sorted({int(pk) for pk in person_ids})
    if ids:
        people_named.send(sender=Signal, person_ids=ids)


messages_written = Signal()


def messages_written_send(
    *, grown: Iterable[int] = (), rewritten: Iterable[int] = (), removed: Iterable[int] = ()
) -> None:
    rewritten_ids = sorted({int(pk) for pk in rewritten})
    grown_ids = sorted({int(pk) for pk in grown} - set(rewritten_ids))
    removed_ids = sorted({int(pk) for pk in removed})
    if grown_ids or rewritten_ids or removed_ids:
        messages_written.send(
            sender=Signal, grown=grown_ids, rewritten=rewritten_ids, removed=removed_ids
        )
