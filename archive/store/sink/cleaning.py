"""What the sink takes: a batch checked (Invalid naming the record and the problem) and
cleaned of what SQLite cannot store (lone surrogates), and text as the store keeps it."""

from __future__ import annotations

import unicodedata
from dataclasses import replace
from datetime import datetime

from archive.store.domain import (
    CHAT_KINDS,
    DIRECTIONS,
    MAX_BATCH_MESSAGES,
    MESSAGE_KINDS,
    Batch,
    MessageRecord,
)
from wirecat.db.values import without_surrogates
from wirecat.errors import Invalid


def normalize_text(text: str) -> str:
    """NFC-normalise and drop NUL characters (SQLite functions stop at them)."""
    return unicodedata.normalize("NFC", text.replace("\x00", ""))


def batch_check(batch: Batch) -> None:
    """Invalid, naming the record and the problem, when the batch is unfit for the store."""
    where = f"batch for {batch.account.provider}:{batch.account.external_id}"
    if not batch.account.provider or not batch.account.external_id:
        raise Invalid(f"{where}: the account needs a provider and an external id")
    if len(batch.messages) + len(batch.deletions) > MAX_BATCH_MESSAGES:
        raise Invalid(
            f"{where}: {len(batch.messages) + len(batch.deletions)} records; "
            f"a batch holds at most {MAX_BATCH_MESSAGES}"
        )
    for chat in batch.chats:
        if not chat.external_id:
            raise Invalid(f"{where}: a chat has no external id")
        if chat.kind not in CHAT_KINDS:
            raise Invalid(f"{where}: chat {chat.external_id!r} has unknown kind {chat.kind!r}")
    for index, msg in enumerate(batch.messages):
        problem = _message_problem(msg)
        if problem:
            raise Invalid(f"{where}, message #{index} ({msg.external_id!r}): {problem}")
    for deletion in batch.deletions:
        if deletion.deleted_at.tzinfo is None:
            raise Invalid(f"{where}: deletion of {deletion.external_id!r} needs an aware time")


def _clean_message(msg: MessageRecord) -> MessageRecord:
    """The record with every lone surrogate in its text fields replaced by U+FFFD: Python
    strings can hold one (an export that cut an emoji in two), SQLite text cannot."""
    try:  # one C-speed check for the whole record; it fails only on a lone surrogate
        "".join(
            (
                msg.chat_external_id,
                msg.external_id,
                msg.text,
                msg.sender_external_id or "",
                msg.reply_to_external_id,
                msg.raw_json,
            )
        ).encode()
    except UnicodeEncodeError:
        return replace(
            msg,
            chat_external_id=without_surrogates(msg.chat_external_id),
            external_id=without_surrogates(msg.external_id),
            text=without_surrogates(msg.text),
            sender_external_id=msg.sender_external_id
            and without_surrogates(msg.sender_external_id),
            reply_to_external_id=without_surrogates(msg.reply_to_external_id),
            raw_json=without_surrogates(msg.raw_json),
        )
    return msg


def batch_cleaned(batch: Batch) -> Batch:
    """The batch with no lone surrogate in any text the sink looks up or stores as text
    (metadata is cleaned where it is encoded)."""
    messages = tuple(_clean_message(msg) for msg in batch.messages)
    if all(clean is msg for clean, msg in zip(messages, batch.messages, strict=True)):
        messages = batch.messages
    try:
        "".join(
            [d.chat_external_id + d.external_id for d in batch.deletions]
            + [c.external_id + c.title for c in batch.chats]
            + [
                i.external_id + i.display_name + i.phone + i.email + i.handle
                for i in batch.identities
            ]
        ).encode()
        people_ok = True
    except UnicodeEncodeError:
        people_ok = False
    if people_ok and messages is batch.messages:
        return batch
    if people_ok:
        return replace(batch, messages=messages)
    return replace(
        batch,
        messages=messages,
        deletions=tuple(
            replace(
                d,
                chat_external_id=without_surrogates(d.chat_external_id),
                external_id=without_surrogates(d.external_id),
            )
            for d in batch.deletions
        ),
        chats=tuple(
            replace(
                c, external_id=without_surrogates(c.external_id), title=without_surrogates(c.title)
            )
            for c in batch.chats
        ),
        identities=tuple(
            replace(
                i,
                **{
                    name: without_surrogates(getattr(i, name))
                    for name in ("external_id", "display_name", "phone", "email", "handle")
                },
            )
            for i in batch.identities
        ),
    )


def _message_problem(msg: MessageRecord) -> str:
    """What makes this record unfit for the store ("" when nothing)."""
    if not msg.external_id or not msg.chat_external_id:
        return "needs an external id and a chat"
    for name, value in (
        ("sent_at", msg.sent_at),
        ("edited_at", msg.edited_at),
        ("deleted_at", msg.deleted_at),
    ):
        if value is not None and (not isinstance(value, datetime) or value.tzinfo is None):
            return f"{name} must be a timezone-aware datetime"
    if msg.direction not in DIRECTIONS:
        return f"unknown direction {msg.direction!r}"
    if msg.kind not in MESSAGE_KINDS:
        return f"unknown kind {msg.kind!r}"
    return ""
