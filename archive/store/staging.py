"""Attachment bytes into the blob store before a batch's transaction (no file I/O inside a
write transaction), for imports and live sync alike.

One failure policy: an attachment whose bytes cannot be read (a file missing from an
export, a damaged zip member, a part that changed since it was listed) is kept as its
metadata without bytes, marked `file_missing`, and counted by the caller; it never fails
its message or the batch.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from archive.connectors.base import ZIP_READ_ERRORS
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord, Batch, MessageRecord
from wirecat.db.faults import store_fault

log = logging.getLogger(__name__)


def _waiting(attachment: AttachmentRecord) -> bool:
    """Bytes handed over (an opener) and not yet in the store."""
    return attachment.content is not None and not attachment.blob_path


def _attachment_staged(attachment: AttachmentRecord) -> tuple[AttachmentRecord, bool]:
    """(the attachment with its bytes in the store, True), or (its metadata marked
    `file_missing`, False) when the bytes cannot be read."""
    assert attachment.content is not None
    try:
        with attachment.content() as stream:
            stored = blob_put(stream)
    except ZIP_READ_ERRORS as exc:
        if store_fault(exc) is not None:  # the blob store full or read-only: not the file's
            raise
        log.info("attachment %r not readable: %s", attachment.file_name, exc)
        missing = {**attachment.metadata, "file_missing": True}
        return replace(attachment, content=None, metadata=missing), False
    staged = replace(
        attachment, content=None, sha256=stored.sha256, size=stored.size, blob_path=stored.path
    )
    return staged, True


def message_staged(message: MessageRecord) -> tuple[MessageRecord, int]:
    """`message` with its attachments' bytes in the blob store, and how many of them could
    not be read."""
    if not any(_waiting(a) for a in message.attachments):
        return message, 0
    attachments = []
    unreadable = 0
    for attachment in message.attachments:
        if _waiting(attachment):
            attachment, read = _attachment_staged(attachment)
            if not read:
                unreadable += 1
        attachments.append(attachment)
    return replace(message, attachments=tuple(attachments)), unreadable


def batch_staged(batch: Batch) -> tuple[Batch, int]:
    """`batch` with every attachment's bytes in the blob store, and how many could not be
    read."""
    if not any(_waiting(a) for m in batch.messages for a in m.attachments):
        return batch, 0
    messages = []
    unreadable = 0
    for message in batch.messages:
        staged, missing = message_staged(message)
        messages.append(staged)
        unreadable += missing
    return replace(batch, messages=tuple(messages)), unreadable
