"""The text of files for agents: the files waiting for an agent's eyes or ears (scans,
photos, voice notes), a file's text, and the text an agent writes back (scope
attachments.text)."""

from __future__ import annotations

from typing import Annotated

from django.db import transaction
from django.http import HttpRequest
from ninja import Query, Router

from archive.files.models import AttachmentText
from archive.files.schemas import (
    FileTextIn,
    FileTextOut,
    StoredFileOut,
    StoredFilesOut,
)
from archive.files.search_index import file_stems_drain
from archive.files.selectors import LIST_MAX, attachment_text, attachments_needing_text
from archive.files.services import attachment_text_set
from archive.gateway.selectors import agent_chat_check
from archive.store.models import Attachment
from archive.web.api import answers, caller_agent, limit_query, public_id, requires, scope
from archive.web.schemas import ErrorOut, Format
from wirecat.errors import Forbidden, NotFound

router = Router(tags=["attachments"])

# An agent's text is stemmed right after it is stored, within this budget (the rest waits
# for the files' job; the words index answers for it meanwhile).
STEMS_BUDGET_SECONDS = 5.0

CURSOR_MAX = 200


def _attachment_out(attachment: Attachment) -> StoredFileOut:
    message = attachment.message
    row: AttachmentText | None = getattr(attachment, "text_row", None)
    return StoredFileOut(
        id=attachment.public_id,
        file_name=attachment.file_name,
        mime_type=attachment.mime_type,
        size=attachment.size,
        sha256=attachment.sha256,
        message=message.public_id,
        sent_at=message.sent_at,
        chat_id=message.chat_id,
        chat_title=str(message.chat),
        state=row.state if row is not None else None,
    )


def _text_out(row: AttachmentText) -> FileTextOut:
    attachment = row.attachment
    return FileTextOut(
        attachment=attachment.public_id,
        file_name=attachment.file_name,
        mime_type=attachment.mime_type,
        message=attachment.message.public_id,
        text=row.text,
        state=row.state,
        reason=row.reason,
        origin=row.origin,
        extractor=row.extractor,
        model=row.model,
        pages=row.pages,
        sha256=row.sha256,
        made_at=row.made_at,
    )


@router.get(
    "/attachments",
    response=answers(StoredFilesOut),
    summary="Stored files, newest first; those that need an agent's text with needs_text",
    **scope("messages.read"),
)
@requires("messages.read")
def attachments_list(
    request: HttpRequest,
    needs_text: bool = Query(
        True, description="only scans, photos and voice notes without text (false: every file)"
    ),
    cursor: Annotated[str, Format("wirecat-attachments-cursor", most=CURSOR_MAX)] | None = Query(
        None, description="a page's `next_cursor`"
    ),
    limit: int = limit_query(50, LIST_MAX),
) -> StoredFilesOut:
    """Files whose bytes are stored, newest message first, each with its name, type, size,
    SHA-256, message and chat and its text's state. With `needs_text` (the default): the
    ones no reader here can read (scans and photos without OCR, voice notes), which the
    agent can fetch (`GET /api/attachments/{id}`, scope attachments.read), read or
    transcribe, and write back (`PUT /api/attachments/{id}/text`). An agent limited to
    some chats sees only theirs. `next_cursor` pages on."""
    page = attachments_needing_text(
        limit=limit, cursor=cursor or None, agent=caller_agent(request), needing=needs_text
    )
    return StoredFilesOut(
        attachments=[_attachment_out(a) for a in page.attachments],
        next_cursor=page.next_cursor,
    )


def _visible_text(request: HttpRequest, att_id: str) -> AttachmentText:
    row = attachment_text(att_id)  # NotFound: no such attachment, or its message deleted
    if row is None:
        raise NotFound(f"attachment {att_id} has no text yet: its file waits to be read")
    agent_chat_check(caller_agent(request), row.attachment.message.chat, f"attachment {att_id}")
    return row


@router.get(
    "/attachments/{att_id}/text",
    response=answers(FileTextOut),
    summary="A file's text, and where it came from",
    **scope("messages.read"),
)
@requires("messages.read")
def attachment_text_show(
    request: HttpRequest, att_id: str = public_id("att", "attachment")
) -> FileTextOut:
    """The text read from the file (or written by an agent), its state and reason, its
    origin, extractor and model, the pages read and when. 404 while the file has none yet
    (not read, or its bytes not stored)."""
    return _text_out(_visible_text(request, att_id))


@router.put(
    "/attachments/{att_id}/text",
    response={**answers(FileTextOut), 413: ErrorOut},
    summary="Write back the text the agent read or heard in a file",
    **scope("attachments.text"),
)
@requires("attachments.text")
def attachment_text_put(
    request: HttpRequest, body: FileTextIn, att_id: str = public_id("att", "attachment")
) -> FileTextOut:
    """For a file the agent read (a scan, a photo: OCR of its own) or transcribed (a voice
    note: `source` names the speech reader): the `text` and the `model`. Kept with the
    agent's name (from its token) as origin agent; it replaces the file's earlier text,
    and no later reading of the file replaces it. Searchable with `content:` (a voice
    note's with `transcript:`). A text over 5,000,000 characters is 413. Only an agent's
    token may call it."""
    agent = caller_agent(request)
    if agent is None:
        raise Forbidden("a file's text from an agent: call with the agent's token")
    attachment = Attachment.objects.select_related("message__chat").filter(public_id=att_id).first()
    if attachment is None:
        raise NotFound(f"attachment {att_id} does not exist")
    agent_chat_check(agent, attachment.message.chat, f"attachment {att_id}")
    row = attachment_text_set(
        public_id=att_id, text=body.text, agent=agent.name, model=body.model, source=body.source
    )
    row.attachment = attachment
    transaction.on_commit(
        lambda: file_stems_drain(budget_seconds=STEMS_BUDGET_SECONDS), robust=True
    )
    return _text_out(row)
