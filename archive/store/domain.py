"""Provider-neutral records. Connectors turn their provider's objects into these and hand
them, in bounded batches, to `archive.sink.batch_record`. Nothing here knows a messenger:
what only one provider has travels in `metadata` / `raw_json`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO, Protocol

MAX_BATCH_MESSAGES = 5_000
# The metadata key naming what an estimated `sent_at` was taken from, in words a page can
# show ("the newest Received header"); set by the connector with `date_estimated`.
DATE_ESTIMATED_FROM = "date_estimated_from"


CHAT_KINDS = ("dm", "group", "channel", "thread")
DIRECTIONS = ("in", "out")
MESSAGE_KINDS = ("text", "service")


@dataclass(frozen=True)
class IdentityRecord:
    external_id: str
    display_name: str = ""
    phone: str = ""
    email: str = ""
    handle: str = ""


@dataclass(frozen=True)
class AccountRecord:
    provider: str
    external_id: str
    name: str = ""
    owner: IdentityRecord | None = None  # the owner's own identity on this account


@dataclass(frozen=True)
class ChatRecord:
    external_id: str
    kind: str = "dm"
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AttachmentRecord:
    """An attachment. `blob_path`/`sha256` are set once its bytes are in the blob store;
    an importer sets `content` instead (an opener of the export's bytes) and the import
    service copies them into the store before the batch's transaction. Neither set: the
    export said the file was not included, and only this metadata row is kept."""

    external_id: str = ""
    file_name: str = ""
    mime_type: str = ""
    size: int | None = None
    sha256: str = ""
    blob_path: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    content: Callable[[], BinaryIO] | None = field(default=None, compare=False, repr=False)
    # The id this attachment had in the archive it was exported from; used when
    # well-formed and free, else a new one is made.
    public_id: str | None = None


@dataclass(frozen=True)
class MessageRecord:
    chat_external_id: str
    external_id: str
    sent_at: datetime  # timezone-aware
    text: str = ""
    sender_external_id: str | None = None  # an IdentityRecord in the same batch, or known
    direction: str = "in"
    kind: str = "text"
    reply_to_external_id: str = ""
    edited_at: datetime | None = None
    deleted_at: datetime | None = None
    raw_json: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[AttachmentRecord, ...] = ()
    # The export gave no usable date: `sent_at` is the best evidence there was (what, in
    # `metadata[DATE_ESTIMATED_FROM]`). A later record with a real date replaces it.
    date_estimated: bool = False
    # The id this message had in the archive it was exported from; used when well-formed
    # and free, else a new one is made. A message already stored keeps its own.
    public_id: str | None = None


@dataclass(frozen=True)
class DeletionRecord:
    """The provider says this message is gone: it becomes a tombstone, its text is kept."""

    chat_external_id: str
    external_id: str
    deleted_at: datetime


class Item(Protocol):
    """One message with its chat and the people it names, as a reader hands it over
    (archive.connectors.base.ImportItem)."""

    @property
    def chat(self) -> ChatRecord: ...

    @property
    def message(self) -> MessageRecord: ...

    @property
    def identities(self) -> tuple[IdentityRecord, ...]: ...


@dataclass(frozen=True)
class Batch:
    """What one transaction records. `cursor`, when set, advances with the batch or not at all."""

    account: AccountRecord
    chats: tuple[ChatRecord, ...] = ()
    identities: tuple[IdentityRecord, ...] = ()
    messages: tuple[MessageRecord, ...] = ()
    deletions: tuple[DeletionRecord, ...] = ()
    cursor: dict[str, Any] | None = None
    cursor_stream: str = ""

    @classmethod
    def from_items(
        cls,
        account: AccountRecord,
        items: Iterable[Item],
        *,
        cursor: dict[str, Any] | None = None,
        cursor_stream: str = "",
    ) -> Batch:
        """The batch of `items`: their messages in order, each chat and person once (as
        the last item to name it describes it)."""
        chats: dict[str, ChatRecord] = {}
        identities: dict[str, IdentityRecord] = {}
        messages: list[MessageRecord] = []
        for item in items:
            chats[item.chat.external_id] = item.chat
            for identity in item.identities:
                identities[identity.external_id] = identity
            messages.append(item.message)
        return cls(
            account=account,
            chats=tuple(chats.values()),
            identities=tuple(identities.values()),
            messages=tuple(messages),
            cursor=cursor,
            cursor_stream=cursor_stream,
        )


@dataclass
class BatchResult:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    tombstoned: int = 0

    def __iadd__(self, other: BatchResult) -> BatchResult:
        self.added += other.added
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.tombstoned += other.tombstoned
        return self
