"""The writers of a file's text: a reading of its stored bytes (idempotent, newest first,
never over an agent's text, never worse over good text), the agent's text written back,
and the erasure of both with their message; the stems drain; what the dashboard counts."""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from docx import Document
from PIL import Image, ImageDraw, ImageFont

from archive.files.domain import TextOrigin, TextState
from archive.files.models import AttachmentText
from archive.files.search_index import file_stems_drain, file_stems_for_search
from archive.files.selectors import (
    attachment_text,
    attachments_needing_text,
    file_text_counts,
)
from archive.files.services import (
    TEXT_MAX,
    attachment_text_extract,
    attachment_text_set,
    attachment_texts_extract,
)
from archive.gateway.services.agents import agent_create, agent_limit
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record, message_purge
from tests.factories import T0, batch, message
from wirecat.errors import Invalid, NotFound, TooLarge

pytestmark = pytest.mark.django_db

NOTES = b"Quarterly invoice\nThe plumber charged for the boiler repair.\n"


def store_file(
    data: bytes,
    name: str,
    mime: str,
    *,
    msg: str | None = None,
    minutes: int = 0,
    chat: str = "chat-1",
) -> Attachment:
    """A message with one attached file whose bytes are stored, written by the sink."""
    blob = blob_put(io.BytesIO(data))
    record = AttachmentRecord(
        external_id=name,
        file_name=name,
        mime_type=mime,
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )
    batch_record(
        batch=batch(
            message(msg or name, "see attached", chat=chat, minutes=minutes, attachments=(record,))
        )
    )
    return Attachment.objects.get(file_name=name, message__external_id=msg or name)


def png() -> bytes:
    """A picture with no text a reader could take (a photo of a whiteboard, say)."""
    out = io.BytesIO()
    Image.new("RGB", (120, 80), "white").save(out, format="PNG")
    return out.getvalue()


def docx(*paragraphs: str) -> bytes:
    document = Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def unlink(attachment: Attachment) -> None:
    """Take a stored file's bytes off the disk (a swept blob, a disk restored without it)."""
    (Path(django_settings.STATE_DIR) / str(attachment.path)).unlink()


def words(query: str) -> list[int]:
    """Attachment ids whose text matches `query` in the words index."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rowid FROM attachment_words WHERE attachment_words MATCH %s ORDER BY rowid",
            [query],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def stems(stem: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rowid FROM attachment_stems WHERE attachment_stems MATCH %s ORDER BY rowid",
            [stem],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def queued() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM archive_attachment_stem_queue")
        return int(cursor.fetchone()[0])


def test_a_stored_file_is_read_and_its_words_are_indexed() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    row = attachment_text_extract(attachment_id=notes.pk)
    assert row is not None
    assert row.state == TextState.DONE and row.origin == TextOrigin.EXTRACTED
    assert "boiler repair" in row.text
    assert row.sha256 == notes.sha256 and row.extractor and row.model == ""
    assert words("plumber") == [notes.pk]


def test_a_docx_is_read_by_its_reader() -> None:
    letter = store_file(
        docx("Dear tenant,", "the rent rises in April."),
        "letter.docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    row = attachment_text_extract(attachment_id=letter.pk)
    assert row is not None and row.state == TextState.DONE
    assert "rent rises" in row.text
    assert words("tenant") == [letter.pk]


def test_reading_the_same_bytes_again_changes_nothing() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    first = attachment_text_extract(attachment_id=notes.pk)
    again = attachment_text_extract(attachment_id=notes.pk)
    assert first is not None and again is not None
    assert (again.made_at, again.text, again.extractor) == (
        first.made_at,
        first.text,
        first.extractor,
    )
    assert attachment_texts_extract(limit=10, budget_seconds=30).read == 0


def test_a_file_without_stored_bytes_or_of_a_deleted_message_has_nothing_to_read() -> None:
    batch_record(
        batch=batch(
            message(
                "1", "lost", attachments=(AttachmentRecord(external_id="x", file_name="x.pdf"),)
            )
        )
    )
    assert attachment_text_extract(attachment_id=Attachment.objects.get().pk) is None
    assert attachment_text_extract(attachment_id=10**9) is None


def test_a_picture_needs_text_and_is_listed_for_the_agent() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png", minutes=1)
    notes = store_file(NOTES, "notes.txt", "text/plain")
    listed = attachments_needing_text(limit=10).attachments
    assert [a.pk for a in listed] == [photo.pk]  # not read yet: listed by its type
    run = attachment_texts_extract(limit=10, budget_seconds=60)
    assert run.read == 2 and run.left == 0
    assert run.states == {TextState.NEEDS_TEXT.value: 1, TextState.DONE.value: 1}
    listed = attachments_needing_text(limit=10).attachments
    assert [a.pk for a in listed] == [photo.pk]  # read, and found to need an agent
    assert listed[0].text_row.state == TextState.NEEDS_TEXT
    every = attachments_needing_text(limit=10, needing=False).attachments
    assert [a.pk for a in every] == [photo.pk, notes.pk]


def test_an_agents_text_is_never_replaced_by_a_reading() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png")
    assert attachment_text_extract(attachment_id=photo.pk) is not None
    written = attachment_text_set(
        public_id=photo.public_id,
        text="Roadmap: ship the invoices page by May",
        agent="reader",
        model="vision-1",
    )
    assert written.origin == TextOrigin.AGENT and written.extractor == "agent:reader"
    assert written.state == TextState.DONE and written.model == "vision-1"
    assert words("roadmap") == [photo.pk]
    for ocr in (False, True):
        kept = attachment_text_extract(attachment_id=photo.pk, ocr=ocr)
        assert kept is not None and kept.text == written.text and kept.origin == "agent"
    # Even when the file is stored again with other bytes, the agent's text stays.
    Attachment.objects.filter(pk=photo.pk).update(sha256="0" * 64)
    assert attachment_texts_extract(limit=10, budget_seconds=30).read == 0
    assert AttachmentText.objects.get(pk=photo.pk).text == written.text
    assert [a.pk for a in attachments_needing_text(limit=10).attachments] == []


def test_good_text_is_not_replaced_by_a_worse_reading(settings: Any) -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    good = attachment_text_extract(attachment_id=notes.pk)
    assert good is not None and good.state == TextState.DONE
    settings.OCR = "tesseract"
    after = attachment_text_extract(attachment_id=notes.pk, ocr=True)
    assert after is not None and (after.text, after.made_at) == (good.text, good.made_at)


def test_other_bytes_of_the_same_file_are_read_again() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    attachment_text_extract(attachment_id=notes.pk)
    other = blob_put(io.BytesIO(b"A different shopping list: nails and a hammer"))
    Attachment.objects.filter(pk=notes.pk).update(sha256=other.sha256, path=other.path)
    run = attachment_texts_extract(limit=10, budget_seconds=30)
    assert run.read == 1
    row = AttachmentText.objects.get(pk=notes.pk)
    assert "hammer" in row.text and row.sha256 == other.sha256
    assert words("plumber") == [] and words("hammer") == [notes.pk]


def test_a_file_gone_from_disk_fails_with_its_reason_and_the_next_goes_on() -> None:
    gone = store_file(b"never to be read", "gone.txt", "text/plain", minutes=5)
    notes = store_file(NOTES, "notes.txt", "text/plain")
    unlink(gone)
    run = attachment_texts_extract(limit=10, budget_seconds=30)
    assert run.states == {"failed": 1, "done": 1} and run.failed == 1
    assert "not on disk" in AttachmentText.objects.get(pk=gone.pk).reason
    assert AttachmentText.objects.get(pk=notes.pk).state == "done"


def test_slices_go_newest_first_within_their_limit() -> None:
    old = store_file(b"the old letter", "old.txt", "text/plain", minutes=0)
    new = store_file(b"the new letter", "new.txt", "text/plain", minutes=60)
    run = attachment_texts_extract(limit=1, budget_seconds=30)
    assert run.read == 1 and run.left == 1
    assert list(AttachmentText.objects.values_list("pk", flat=True)) == [new.pk]
    assert attachment_texts_extract(limit=1, budget_seconds=30).left == 0
    assert AttachmentText.objects.filter(pk=old.pk).exists()
    # A spent budget reads nothing more.
    Attachment.objects.filter(pk=old.pk).update(sha256="1" * 64)
    assert attachment_texts_extract(limit=10, budget_seconds=0).read == 0


def test_the_agents_text_is_checked() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png")
    with pytest.raises(NotFound, match="att_nope"):
        attachment_text_set(public_id="att_nope", text="x", agent="a", model="m")
    with pytest.raises(Invalid, match="model"):
        attachment_text_set(public_id=photo.public_id, text="x", agent="a", model="  ")
    with pytest.raises(Invalid, match="source"):
        attachment_text_set(
            public_id=photo.public_id, text="x", agent="a", model="m", source="no spaces"
        )
    with pytest.raises(TooLarge, match="5,000,000"):
        attachment_text_set(
            public_id=photo.public_id, text="a" * (TEXT_MAX + 1), agent="a", model="m"
        )
    assert not AttachmentText.objects.exists()
    empty = attachment_text_set(public_id=photo.public_id, text="  ", agent="a", model="m")
    assert empty.state == TextState.EMPTY


def test_a_voice_notes_transcript_names_its_speech_reader() -> None:
    voice = store_file(b"OggS\x00not really audio", "voice.ogg", "audio/ogg")
    assert [a.pk for a in attachments_needing_text(limit=5).attachments] == [voice.pk]
    row = attachment_text_set(
        public_id=voice.public_id,
        text="Call me back about the boiler\fsecond part",
        agent="ears",
        model="whisper-large-v3",
        source="whisper",
    )
    assert row.extractor == "speech:whisper" and row.origin == "agent" and row.pages == 2
    shown = attachment_text(voice.public_id)
    assert shown is not None and shown.attachment.message.public_id
    assert attachments_needing_text(limit=5).attachments == []


def test_tombstoning_the_message_erases_its_files_text_and_words() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    attachment_text_extract(attachment_id=notes.pk)
    file_stems_drain()
    assert words("plumber") == [notes.pk] and stems("plumber") == [notes.pk]
    batch_record(
        batch=batch(
            deletions=(
                DeletionRecord(
                    chat_external_id="chat-1",
                    external_id="notes.txt",
                    deleted_at=T0 + timedelta(days=1),
                ),
            )
        )
    )
    assert Message.objects.get().deleted_at is not None
    assert not AttachmentText.objects.exists() and words("plumber") == []
    file_stems_drain()
    assert stems("plumber") == []
    # Nor is it read again, nor can an agent write it back.
    assert attachment_texts_extract(limit=10, budget_seconds=30).read == 0
    with pytest.raises(NotFound):
        attachment_text_set(public_id=notes.public_id, text="x", agent="a", model="m")
    with pytest.raises(NotFound):
        attachment_text(notes.public_id)


def test_purging_the_message_erases_its_files_text() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    attachment_text_extract(attachment_id=notes.pk)
    message_purge(message_ids=[notes.message_id])
    assert not AttachmentText.objects.exists() and words("plumber") == []


def test_the_stems_drain_fills_the_stems_of_files() -> None:
    notes = store_file(NOTES, "notes.txt", "text/plain")
    attachment_text_extract(attachment_id=notes.pk)
    assert queued() == 1 and file_stems_for_search().analyzer is None  # never made
    result = file_stems_drain(budget_seconds=10)
    assert result.indexed == 1 and result.left == 0 and queued() == 0
    assert stems("charg") == [notes.pk]  # "charged", stemmed
    reading = file_stems_for_search()
    assert reading.analyzer is not None and not reading.behind


def test_the_dashboard_counts_files_read_waiting_and_failed() -> None:
    store_file(NOTES, "notes.txt", "text/plain")
    store_file(png(), "whiteboard.png", "image/png")
    store_file(b"gone", "gone.txt", "text/plain")
    batch_record(batch=batch(message("no-bytes", attachments=(AttachmentRecord(external_id="y"),))))
    counts = file_text_counts()
    assert (counts.stored, counts.waiting, counts.read) == (3, 3, 0)
    unlink(Attachment.objects.get(file_name="gone.txt"))
    attachment_texts_extract(limit=10, budget_seconds=60)
    counts = file_text_counts()
    assert (counts.stored, counts.waiting, counts.read) == (3, 0, 3)
    assert (counts.done, counts.needs_text, counts.failed, counts.agent) == (1, 1, 1, 0)


def test_an_agent_limited_to_a_chat_sees_only_its_files() -> None:
    mine = store_file(png(), "mine.png", "image/png", chat="chat-1")
    store_file(png() + b"\x00", "theirs.png", "image/png", chat="chat-2", minutes=1)
    issued = agent_create(name="limited", scopes=["messages.read"])
    agent = agent_limit(
        public_id=issued.agent.public_id, chat_ids=[Chat.objects.get(external_id="chat-1").pk]
    )
    listed = attachments_needing_text(limit=10, agent=agent).attachments
    assert [a.pk for a in listed] == [mine.pk]


def test_pages_of_files_follow_their_cursor() -> None:
    made = [store_file(png() + bytes([n]), f"p{n}.png", "image/png", minutes=n) for n in range(5)]
    seen: list[int] = []
    cursor = None
    while True:
        page = attachments_needing_text(limit=2, cursor=cursor)
        seen += [a.pk for a in page.attachments]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [a.pk for a in reversed(made)]
    with pytest.raises(Invalid):
        attachments_needing_text(limit=2, cursor="not-a-cursor")


def picture(text: str) -> bytes:
    """Black words on white in a large, clear font (a photo of a notice, say)."""
    image = Image.new("L", (1400, 200), 255)
    ImageDraw.Draw(image).text((40, 60), text, font=ImageFont.load_default(size=48), fill=0)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_turning_ocr_on_reads_the_pictures_once(settings: Any) -> None:
    notice = store_file(picture("Boiler service on Friday"), "notice.png", "image/png")
    blank = store_file(png(), "blank.png", "image/png", minutes=1)
    assert attachment_texts_extract(limit=10, budget_seconds=60).states == {"needs_text": 2}
    settings.OCR, settings.OCR_LANGUAGES = "tesseract", "eng"
    run = attachment_texts_extract(limit=10, budget_seconds=120)
    assert run.read == 2 and run.left == 0
    read = AttachmentText.objects.get(pk=notice.pk)
    assert read.state == "done" and "boiler" in read.text.lower()
    assert read.extractor.startswith("tesseract")
    nothing = AttachmentText.objects.get(pk=blank.pk)
    assert nothing.state == "needs_text" and "OCR" in nothing.reason
    # What OCR read, or found nothing in, is not handed to it again.
    assert attachment_texts_extract(limit=10, budget_seconds=60).read == 0
    assert file_text_counts().waiting == 0
