"""Reading the text of files: which stored files wait to be read, which need an agent's
eyes or ears (scans, photos, voice notes), one file's text, and the counts the dashboard
shows ("Reading files: 1,204 of 3,000 — 12 failed")."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from archive.files.domain import TextOrigin, TextState
from archive.files.models import AttachmentText
from archive.gateway.models import Agent
from archive.gateway.selectors import agent_chat_scope
from archive.store.models import Attachment, Chat
from archive.store.selectors import decode_cursor
from wirecat.errors import NotFound

LIST_MAX = 200
OCR_READER = "tesseract"  # how an OCR reading names its extractor ("tesseract 5.3.0 (eng)")
# What the reason of a file says once OCR found nothing in it, or failed on it (the sandbox
# notes the failures; the services note the nothing).
OCR_NOTHING = "OCR found no text"
# A reading's reason that holds one of these has been through OCR (OCR's reasons start so,
# and the sandbox prefixes any other with "OCR: "): the job does not hand it to OCR again.
OCR_NOTES = (OCR_NOTHING, "OCR: ", "OCR failed", "OCR needed", "OCR stopped", "OCR read")
# What no reader but OCR or an agent can read: pictures and sound (a voice note), when the
# reading has not said so yet (a file not read is listed by its type).
_PICTURE_OR_SOUND = Q(mime_type__istartswith="image/") | Q(mime_type__istartswith="audio/")


def ocr_enabled() -> bool:
    """Whether the owner turned OCR on (WIRECAT_OCR=tesseract) and tesseract is installed:
    the readers' own answer (archive/files/readers/ocr.py)."""
    from archive.files.readers.ocr import ocr_enabled as readers_ocr_enabled

    return readers_ocr_enabled()


def stored_files() -> Q:
    """Attachments (a filter over Attachment) whose bytes are stored, of a message that
    stands (a tombstoned message's files keep no text)."""
    return Q(path__isnull=False, message__deleted_at__isnull=True) & ~Q(path="")


def _any_of(lookup: str, values: tuple[str, ...]) -> Q:
    found = Q()
    for value in values:
        found |= Q(**{lookup: value})
    return found


def waiting_for_text(*, ocr: bool = False) -> Q:
    """Stored attachments with no text yet, or a text of other bytes; never one an agent
    wrote. With `ocr`, also the images and scans read before OCR was turned on (what OCR
    read once, or found nothing in, is not read again)."""
    kept = Q(sha256=OuterRef("sha256")) | Q(origin=TextOrigin.AGENT.value)
    if ocr:
        kept &= (
            ~Q(state=TextState.NEEDS_TEXT.value)
            | Q(extractor__startswith=OCR_READER)
            | _any_of("reason__contains", OCR_NOTES)
        )
    return stored_files() & ~Q(
        Exists(AttachmentText.objects.filter(kept, attachment_id=OuterRef("pk")))
    )


@dataclass(frozen=True)
class FileTextCounts:
    """What the dashboard says of the files' text: `stored` files (bytes kept, message
    standing), `read` of them (a text of their bytes, or an agent's), `waiting` (the rest),
    and the text rows by state."""

    stored: int
    waiting: int
    done: int
    empty: int
    needs_text: int
    failed: int
    too_large: int
    agent: int  # of the rows above, written by an agent
    ocr: bool  # OCR is on

    @property
    def read(self) -> int:
        return max(0, self.stored - self.waiting)


def file_text_counts() -> FileTextCounts:
    """Counts for the dashboard's progress line; a few counting queries."""
    ocr = ocr_enabled()
    by_state = dict(
        AttachmentText.objects.values_list("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    return FileTextCounts(
        stored=Attachment.objects.filter(stored_files()).count(),
        waiting=Attachment.objects.filter(waiting_for_text(ocr=ocr)).count(),
        done=by_state.get(TextState.DONE.value, 0),
        empty=by_state.get(TextState.EMPTY.value, 0),
        needs_text=by_state.get(TextState.NEEDS_TEXT.value, 0),
        failed=by_state.get(TextState.FAILED.value, 0),
        too_large=by_state.get(TextState.TOO_LARGE.value, 0),
        agent=AttachmentText.objects.filter(origin=TextOrigin.AGENT.value).count(),
        ocr=ocr,
    )


@dataclass(frozen=True)
class AttachmentPage:
    """One page of attachments, newest message first; `next_cursor` pages on (None at the
    end). Each attachment carries its message and chat, and `text_row` when it has one."""

    attachments: list[Attachment]
    next_cursor: str | None


def _encode(attachment: Attachment) -> str:
    raw = json.dumps([attachment.message.sent_at.isoformat(), attachment.pk]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def needs_text() -> Q:
    """Stored files only OCR or an agent can read: read and found to need it (a scan, a
    photo, a voice note), or pictures and sound not read yet."""
    has_row = Exists(AttachmentText.objects.filter(attachment_id=OuterRef("pk")))
    needing = Exists(
        AttachmentText.objects.filter(
            attachment_id=OuterRef("pk"), state=TextState.NEEDS_TEXT.value
        )
    )
    return stored_files() & (needing | (~has_row & _PICTURE_OR_SOUND))


def attachments_needing_text(
    *,
    limit: int,
    cursor: str | None = None,
    agent: Agent | None = None,
    needing: bool = True,
) -> AttachmentPage:
    """Stored files, newest message first, with their size, type, message and chat: those
    that need text (`needing`: scans, photos, voice notes without it) or all of them. An
    agent limited to some chats sees only theirs. `cursor`: a page's `next_cursor`
    (Invalid when it is not one)."""
    found = Attachment.objects.filter(needs_text() if needing else stored_files())
    if agent is not None:
        found = found.filter(message__chat__in=Chat.objects.filter(agent_chat_scope(agent)))
    if cursor:
        sent_at, pk = decode_cursor(cursor)
        found = found.filter(
            Q(message__sent_at__lt=sent_at) | Q(message__sent_at=sent_at, pk__lt=pk)
        )
    rows = list(
        found.select_related("message__chat", "text_row").order_by("-message__sent_at", "-pk")[
            : limit + 1
        ]
    )
    more = len(rows) > limit
    rows = rows[:limit]
    return AttachmentPage(
        attachments=rows, next_cursor=_encode(rows[-1]) if more and rows else None
    )


def attachment_text(public_id: str) -> AttachmentText | None:
    """The text of attachment `public_id` (with its attachment, message and chat), or None
    while it has none (not read yet, or its bytes not stored). NotFound for an attachment
    that does not exist or whose message was deleted."""
    attachment = (
        Attachment.objects.select_related("message__chat")
        .filter(public_id=public_id, message__deleted_at__isnull=True)
        .first()
    )
    if attachment is None:
        raise NotFound(f"attachment {public_id} does not exist")
    row = AttachmentText.objects.filter(attachment_id=attachment.pk).first()
    if row is not None:
        row.attachment = attachment
    return row
