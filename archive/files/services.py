"""The only writers of a file's text (AttachmentText): a reading of its stored blob, in a
child process (`archive.files.sandbox`), and the text the owner's agent writes back.

A reading is slow, so it happens outside any transaction; its row is written after, in a
short one that looks at the row again (an agent may have written meanwhile). An agent's
text is never replaced by a reading, and a reading that came out worse (a failed OCR)
never replaces good text of the same bytes.
"""

from __future__ import annotations

import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from archive.files.domain import Extracted, Limits, TextOrigin, TextState
from archive.files.models import AttachmentText
from archive.files.sandbox import extract
from archive.files.selectors import (
    OCR_NOTES,
    OCR_NOTHING,
    ocr_enabled,
    stored_files,
    waiting_for_text,
)
from archive.store.models import Attachment
from wirecat.errors import Invalid, NotFound, TooLarge

log = logging.getLogger(__name__)

TEXT_MAX = 5_000_000  # characters an agent may write back (a long book, never a dump)
MODEL_MAX = 120
AGENT_MAX = 100
SOURCE_MAX = 60
REASON_MAX = 500
# What a voice note's transcript names its source by: "whisper", "whisper-large-v3", …
SOURCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}")

_MB = 1024 * 1024
# Where the blob store keeps a file's bytes (archive/store/blobs.py): nothing else is read.
BLOB_PATH = re.compile(r"blobs/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{64}")


def text_limits() -> Limits:
    """The bounds of reading one file, from the settings (docs/operations.md)."""
    return Limits(
        seconds=settings.FILE_TEXT_SECONDS,
        memory_bytes=settings.FILE_TEXT_MEMORY_MB * _MB,
        file_bytes=settings.FILE_TEXT_MAX_MB * _MB,
        pages=settings.FILE_TEXT_PAGES,
    )


def _stored(attachment_id: int) -> Attachment | None:
    """The attachment when its bytes are stored and its message stands (a tombstoned
    message's files keep no text); else None."""
    return (
        Attachment.objects.select_related("message")
        .filter(stored_files(), pk=attachment_id)
        .first()
    )


def _current(row: AttachmentText | None, attachment: Attachment, *, ocr: bool) -> bool:
    """Whether `row` already says all a reading could: an agent's text always; an
    extraction of the same bytes, unless OCR is asked for a file that needs it."""
    if row is None:
        return False
    if row.origin == TextOrigin.AGENT:
        return True
    if row.sha256 != attachment.sha256:
        return False
    return not (ocr and row.state in (TextState.NEEDS_TEXT, TextState.FAILED))


def _reading(attachment: Attachment, *, ocr: bool) -> Extracted:
    """Read the attachment's blob in the sandbox; a blob gone from disk or a reader that
    broke is a failed reading with its reason (the next file goes on)."""
    path = Path(settings.STATE_DIR) / str(attachment.path)
    if not BLOB_PATH.fullmatch(str(attachment.path)) or not path.is_file():
        return Extracted(
            text="",
            state=TextState.FAILED,
            extractor="",
            reason="the file is not on disk (swept or never stored)",
        )
    try:
        return extract(
            path,
            mime=attachment.mime_type,
            name=attachment.file_name,
            limits=text_limits(),
            ocr=ocr,
        )
    except Exception as exc:  # a reader's bug must not stop the files after this one
        log.exception("reading attachment %s failed", attachment.public_id)
        return Extracted(
            text="", state=TextState.FAILED, extractor="", reason=f"the reader broke: {exc}"
        )


def _worse(reading: Extracted, row: AttachmentText, sha256: str) -> bool:
    """A reading that would replace good text of the same bytes with less (a failed or
    empty OCR of a file whose text was read)."""
    return row.sha256 == sha256 and row.state == TextState.DONE and reading.state != TextState.DONE


def _unchanged(reading: Extracted, row: AttachmentText, sha256: str) -> bool:
    return (
        row.origin == TextOrigin.EXTRACTED
        and row.sha256 == sha256
        and row.extractor == reading.extractor[:120]
        and row.state == reading.state
        and row.text == reading.text
        and row.reason == reading.reason[:REASON_MAX]
    )


def attachment_text_extract(*, attachment_id: int, ocr: bool = False) -> AttachmentText | None:
    """Read one stored attachment's text and keep it. Returns its text row as it stands
    after (a reading kept, or the row that stayed: an agent's, a better one), or None when
    there is nothing to read (no stored bytes, the message tombstoned, the attachment
    gone). Idempotent: the same bytes already read are not read again (unless `ocr` is
    asked for a file that needs it). Call it outside any transaction: the reading is slow."""
    attachment = _stored(attachment_id)
    if attachment is None:
        return None
    row = AttachmentText.objects.filter(attachment_id=attachment_id).first()
    if row is not None and _current(row, attachment, ocr=ocr):
        return row
    reading = _reading(attachment, ocr=ocr)
    noted = any(note in reading.reason for note in OCR_NOTES)
    if ocr and reading.state == TextState.NEEDS_TEXT and not noted:
        # Said, so that the next slices do not hand the file to OCR again.
        reason = "; ".join(part for part in (reading.reason, OCR_NOTHING) if part)
        reading = replace(reading, reason=reason)
    with transaction.atomic():
        fresh = _stored(attachment_id)
        if fresh is None or fresh.sha256 != attachment.sha256:
            return None  # tombstoned, purged or stored again meanwhile: its own reading
        row = AttachmentText.objects.select_for_update().filter(attachment_id=attachment_id).first()
        if row is not None and (
            row.origin == TextOrigin.AGENT
            or _worse(reading, row, attachment.sha256)
            or _unchanged(reading, row, attachment.sha256)
        ):
            return row
        row, _ = AttachmentText.objects.update_or_create(
            attachment_id=attachment_id,
            defaults={
                "text": reading.text,
                "state": reading.state.value,
                "reason": reading.reason[:REASON_MAX],
                "origin": TextOrigin.EXTRACTED.value,
                "extractor": reading.extractor[:120],
                "model": "",
                "sha256": attachment.sha256,
                "pages": reading.pages,
                "made_at": timezone.now(),
            },
        )
    return row


@dataclass
class ExtractRun:
    """What one slice of readings did: how many files were read, their states, and
    whether any wait still (`left`, counted after the slice)."""

    read: int = 0
    states: dict[str, int] = field(default_factory=dict)
    left: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> int:
        return self.states.get(TextState.FAILED.value, 0)


def attachment_texts_extract(*, limit: int, budget_seconds: float) -> ExtractRun:
    """Read up to `limit` stored attachments that have no text (or a text of other bytes),
    newest message first, until the budget is spent (the file being read when it runs out
    is finished). OCR when the owner turned it on."""
    started = time.monotonic()
    deadline = started + budget_seconds
    ocr = ocr_enabled()
    ids = list(
        Attachment.objects.filter(waiting_for_text(ocr=ocr))
        .order_by("-message__sent_at", "-pk")
        .values_list("pk", flat=True)[:limit]
    )
    states: Counter[str] = Counter()
    read = 0
    for attachment_id in ids:
        if time.monotonic() >= deadline:
            break
        row = attachment_text_extract(attachment_id=attachment_id, ocr=ocr)
        read += 1
        if row is not None:
            states[row.state] += 1
    left = Attachment.objects.filter(waiting_for_text(ocr=ocr)).count()
    return ExtractRun(read=read, states=dict(states), left=left, seconds=time.monotonic() - started)


def attachment_text_set(
    *, public_id: str, text: str, agent: str, model: str, source: str | None = None
) -> AttachmentText:
    """Keep the text the owner's agent read (a scan, a photo) or transcribed (a voice
    note: `source` names the speech reader, kept as "speech:<source>"), with the `model`
    it used. It replaces any earlier text of the file, read or written, and no later
    reading replaces it. Pages of a paged text are separated by form feeds ("\\f")."""
    agent = agent.strip()
    model = " ".join(model.split())
    if not agent or len(agent) > AGENT_MAX:
        raise Invalid(f"agent: 1 to {AGENT_MAX} characters")
    if not model or len(model) > MODEL_MAX:
        raise Invalid(f"model: the model that read the file, 1 to {MODEL_MAX} characters")
    if source is not None and not SOURCE.fullmatch(source):
        raise Invalid(
            f"source: 1 to {SOURCE_MAX} letters, digits, dots, dashes or underscores"
            " (the speech reader, e.g. whisper)"
        )
    if len(text) > TEXT_MAX:
        raise TooLarge(
            f"text of attachment {public_id}: at most {TEXT_MAX:,} characters, not {len(text):,}"
        )
    text = text.replace("\x00", "")
    extractor = f"speech:{source}" if source is not None else f"agent:{agent}"
    with transaction.atomic():
        attachment = (
            Attachment.objects.select_related("message")
            .filter(public_id=public_id, message__deleted_at__isnull=True)
            .first()
        )
        if attachment is None:
            raise NotFound(f"attachment {public_id} does not exist")
        row, _ = AttachmentText.objects.update_or_create(
            attachment_id=attachment.pk,
            defaults={
                "text": text,
                "state": (TextState.DONE if text.strip() else TextState.EMPTY).value,
                "reason": "",
                "origin": TextOrigin.AGENT.value,
                "extractor": extractor,
                "model": model,
                "sha256": attachment.sha256,
                "pages": text.count("\f") + 1 if "\f" in text else None,
                "made_at": timezone.now(),
            },
        )
    return row
