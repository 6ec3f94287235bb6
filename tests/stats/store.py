"""A small hand-made store for the statistics' tests, recorded through the sink: a direct
chat with Alice and a group with Alice and Bob, the owner answering some messages in time,
one late and one never; a tombstoned question, a service event and a message with an
estimated date. The numbers every test expects are worked out by hand in the docstrings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from archive.people.services import person_create
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Chat, Identity, Person
from archive.store.sink import batch_record

ACCOUNT = AccountRecord(
    provider="testnet",
    external_id="acct-stats",
    name="Stats account",
    owner=IdentityRecord(external_id="me", display_name="Me", handle="owner_h"),
)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment of March 2024, UTC (1 March is a Friday)."""
    return datetime(2024, 3, day, hour, minute, tzinfo=UTC)


def said(
    ext: str, chat: str, sender: str, text: str, when: datetime, **extra: Any
) -> MessageRecord:
    out = sender == "me"
    return MessageRecord(
        chat_external_id=chat,
        external_id=ext,
        sent_at=when,
        text=text,
        sender_external_id=sender,
        direction="out" if out else "in",
        **extra,
    )


MESSAGES = (
    said("g0", "grp", "me", "hi all", at(1, 12)),
    said("d1", "dm", "alice", "are you there", at(1, 13)),
    said("do1", "dm", "me", "yes", at(1, 14)),  # d1 answered in 3600 s
    said("g1", "grp", "bob", "what time is the meeting?", at(2, 12)),
    said("g2", "grp", "me", "at noon", at(2, 12, 30)),  # g1 answered in 1800 s
    said("g3", "grp", "alice", "a remark", at(2, 23, 30)),  # Sunday 00:30 in Berlin
    said("g4", "grp", "bob", "hey @Owner_H can you check", at(3, 13)),  # a mention
    said("d2", "dm", "alice", "ping", at(4, 12)),
    said("d3", "dm", "alice", "hello?", at(4, 12, 10)),
    said("g5", "grp", "alice", "anyone know why?", at(5, 12)),
    said("g6", "grp", "me", "done", at(6, 12)),  # g4 late (2 d 23 h), g5 in time (1 d)
    said("e1", "grp", "alice", "undated", at(7, 3), date_estimated=True),
    said("g7", "grp", "bob", "is it done?", at(8, 12)),  # never answered
    said("g8", "grp", "alice", "gone?", at(8, 13), deleted_at=at(8, 14)),  # tombstoned
    said("g9", "grp", "bob", "Bob renamed the group?", at(8, 14), kind="service"),
    said("do2", "dm", "me", "sorry, late", at(9, 12)),  # d2 answered in 5 days
)


def stats_store() -> dict[str, Any]:
    """Record the store; Alice's identity is linked to a person "Alice", Bob's is not."""
    batch_record(
        batch=Batch(
            account=ACCOUNT,
            chats=(
                ChatRecord(external_id="dm", kind="dm", title="Alice"),
                ChatRecord(external_id="grp", kind="group", title="The group"),
            ),
            identities=(
                IdentityRecord(external_id="alice", display_name="Alice A"),
                IdentityRecord(external_id="bob", display_name="Bob B"),
            ),
            messages=MESSAGES,
        )
    )
    alice = person_create(name="Alice", identity_ids=[Identity.objects.get(external_id="alice").pk])
    return {
        "dm": Chat.objects.get(external_id="dm"),
        "grp": Chat.objects.get(external_id="grp"),
        "alice": alice,
        "bob": Identity.objects.get(external_id="bob"),
        "owner": Person.objects.get(is_owner=True),
    }
