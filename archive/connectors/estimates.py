"""What every export reader does with a message whose date or id is missing or unreadable:
keep it, with the best evidence there is.

An importer never drops a message because a field is missing or odd.

- **No usable date.** The reader takes its format's own evidence first (mail: the mbox
  `From ` line, the newest `Received:` header, an invitation's `DTSTAMP`) and marks the
  record `date_estimated`, naming the evidence in `metadata[DATE_ESTIMATED_FROM]` in words
  the page shows. With none, it gives the record a provisional time (the file's modification
  time, or a Slack day file's date) named by one of `PROVISIONAL`; `neighbours_dated` then
  takes the time of the message before it in the same scope (the same chat, or the same
  mbox file), else of the message after it, and keeps the provisional time only when the
  scope has no dated message at all. Neighbours are the stream's own order, so a resumed
  import (which reads the stream again from its start) estimates exactly as the first run.
- **No id.** `ContentIds` gives a stable content hash of the chat, the sender, the real time
  (when there is one; an estimate depends on the file's surroundings and time, not on the
  message, so the time as written stands in) and the text, with an ordinal for an identical
  message earlier in the same export: importing the same file again finds the same ids and
  adds nothing, and where the message sits among the others does not change its id.
- **No sender.** The record has `sender_external_id=None`; the store keeps such messages
  with no sender, and pages call it "unknown".
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from archive.connectors.base import ImportItem
from archive.store.domain import DATE_ESTIMATED_FROM, MessageRecord

# Provisional times, given when the message itself holds no evidence: a neighbour's time
# replaces them.
FROM_FILE_TIME = "the export file's modification time"
FROM_DAY_FILE = "the date of the day file holding it"
PROVISIONAL = frozenset({FROM_FILE_TIME, FROM_DAY_FILE})
FROM_PREVIOUS = "the message before it in the export"
FROM_NEXT = "the message after it in the export"

# Undated messages at the start of a scope held back waiting for a dated one; past this,
# they keep their provisional time (memory stays bounded whatever the file).
MAX_WAITING = 1_000
# Content hashes remembered for ordinals (only messages without an id are counted); past
# this, the count starts again (about 30 MB).
MAX_HASHES = 200_000

HASH_PREFIX = "hash-"


def file_time(path: Path) -> datetime:
    """The modification time of `path`, as an aware UTC datetime (now, if it cannot be read)."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except (OSError, OverflowError, ValueError):
        return datetime.now(UTC)


def member_time(info: zipfile.ZipInfo) -> datetime:
    """A zip member's time (the zip stores the packing computer's local time, read as UTC)."""
    try:
        return datetime(*info.date_time, tzinfo=UTC)
    except (TypeError, ValueError):
        return datetime(1980, 1, 1, tzinfo=UTC)


def estimate_note(metadata: dict[str, Any], evidence: str) -> dict[str, Any]:
    """`metadata` naming `evidence` as the source of the message's estimated time."""
    metadata[DATE_ESTIMATED_FROM] = evidence
    return metadata


def _redated(item: ImportItem, when: datetime, evidence: str) -> ImportItem:
    """The item at its neighbour's time; a deletion or edit time that only repeated the
    provisional time (the export did not say when) moves with it."""
    message = item.message
    metadata = {**message.metadata, DATE_ESTIMATED_FROM: evidence}
    provisional = message.sent_at
    redated = dataclasses.replace(
        message,
        sent_at=when,
        metadata=metadata,
        edited_at=when if message.edited_at == provisional else message.edited_at,
        deleted_at=when if message.deleted_at == provisional else message.deleted_at,
    )
    return dataclasses.replace(item, message=redated)


def _provisional(message: MessageRecord) -> bool:
    return message.date_estimated and message.metadata.get(DATE_ESTIMATED_FROM) in PROVISIONAL


def by_chat(item: ImportItem) -> Hashable:
    return item.chat.external_id


def neighbours_dated(
    items: Iterable[ImportItem],
    scope: Callable[[ImportItem], Hashable] = by_chat,
    *,
    wait: int = MAX_WAITING,
) -> Iterator[ImportItem]:
    """`items` in the same order, each provisionally dated one given the time of the dated
    message before it in its scope, else of the one after it (scopes are contiguous runs:
    a chat of an export, an mbox file); only a scope without any dated message keeps the
    provisional times."""
    last_scope: Hashable = None
    last_time: datetime | None = None
    waiting: list[ImportItem] = []
    for item in items:
        key = scope(item)
        if key != last_scope:
            yield from waiting  # their scope has ended without a dated message
            waiting = []
            last_scope, last_time = key, None
        message = item.message
        if _provisional(message):
            if last_time is not None:
                yield _redated(item, last_time, FROM_PREVIOUS)
                continue
            waiting.append(item)
            if len(waiting) >= wait:
                yield from waiting
                waiting = []
            continue
        if waiting:
            yield from (_redated(held, message.sent_at, FROM_NEXT) for held in waiting)
            waiting = []
        last_time = message.sent_at
        yield item
    yield from waiting


class ContentIds:
    """Stable ids for messages an export gives none: a hash of what the message says, with
    an ordinal for an identical message (same chat, sender, time and text) earlier in the
    export."""

    def __init__(self) -> None:
        self._seen: Counter[bytes] = Counter()

    def __call__(
        self, chat: str, sender: str | None, when: datetime | str | None, text: str
    ) -> str:
        if len(self._seen) >= MAX_HASHES:
            self._seen.clear()
        moment = when.astimezone(UTC).isoformat() if isinstance(when, datetime) else when or ""
        digest = hashlib.sha256(
            "\x00".join((chat, sender or "", moment, text)).encode("utf-8", "surrogatepass")
        ).digest()[:16]
        ordinal = self._seen[digest]
        self._seen[digest] += 1
        suffix = f"-{ordinal + 1}" if ordinal else ""
        return f"{HASH_PREFIX}{digest.hex()}{suffix}"
