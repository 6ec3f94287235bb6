"""Domain records for tests, in the shape connectors produce them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord

T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


ACCOUNT = AccountRecord(
    provider="testnet",
    external_id="acct-1",
    name="Test account",
    owner=IdentityRecord(external_id="me", display_name="Owner Person"),
)


def message(
    external_id: str,
    text: str = "hello",
    *,
    chat: str = "chat-1",
    sender: str | None = "alice",
    minutes: int = 0,
    **extra: Any,
) -> MessageRecord:
    return MessageRecord(
        chat_external_id=chat,
        external_id=external_id,
        sent_at=T0 + timedelta(minutes=minutes),
        text=text,
        sender_external_id=sender,
        **extra,
    )


def batch(*messages: MessageRecord, **extra: Any) -> Batch:
    chats = {m.chat_external_id for m in messages} or {"chat-1"}
    return Batch(
        account=ACCOUNT,
        chats=tuple(
            ChatRecord(external_id=c, kind="group", title=f"Chat {c}") for c in sorted(chats)
        ),
        identities=(
            IdentityRecord(external_id="alice", display_name="Alice", phone="+15550001"),
            IdentityRecord(external_id="bob", display_name="Bob"),
        ),
        messages=messages,
        **extra,
    )
