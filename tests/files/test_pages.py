"""The files pages through the test client: each stored file's text state on the chat page
(within the page's query budget, never reading the text itself), "Show text" with its
pages and a search's words marked, the files that need text and the OCR button, the
dashboard's counts. Hostile names, reasons and texts come out escaped."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from PIL import Image, ImageDraw, ImageFont

from archive.files.domain import TextOrigin, TextState
from archive.files.models import AttachmentText
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment, Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

HOSTILE_NAME = '<img src=x onerror="alert(1)">.pdf'
HOSTILE_REASON = "<script>alert('reason')</script> broke"


def stored(name: str, data: bytes, mime: str) -> AttachmentRecord:
    blob = blob_put(io.BytesIO(data))
    return AttachmentRecord(
        external_id=name,
        file_name=name,
        mime_type=mime,
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )


def text_row(name: str, state: TextState, text: str = "", **extra: Any) -> AttachmentText:
    attachment = Attachment.objects.get(file_name=name)
    return AttachmentText.objects.create(
        attachment=attachment,
        text=text,
        state=state.value,
        sha256=attachment.sha256,
        made_at=extra.pop("made_at", timezone.now()),
        **extra,
    )


def badges(html: str) -> dict[str, str]:
    """Each file's name on the chat page and the text badge drawn after it."""
    found = re.findall(
        r'class="att-name"[^>]*>([^<]*)</a>\s*<span class="muted">[^<]*</span>\s*'
        r'(?:<(?:a|span) class="text-state ([a-z-]+)"[^>]*>([^<]*)<)?',
        html,
    )
    return {name: label for name, _, label in found}


@pytest.fixture
def files_chat(db: None) -> Chat:
    batch_record(
        batch=batch(
            message(
                "1",
                "the files",
                attachments=(
                    stored("contract.pdf", b"%PDF contract", "application/pdf"),
                    stored("scan.pdf", b"%PDF scan", "application/pdf"),
                    stored("blank.txt", b"   ", "text/plain"),
                    stored(HOSTILE_NAME, b"%PDF hostile", "application/pdf"),
                    stored("huge.pdf", b"%PDF huge", "application/pdf"),
                    stored("unread.txt", b"not read yet", "text/plain"),
                ),
            )
        )
    )
    text_row("contract.pdf", TextState.DONE, "The contract\fPage two", extractor="pypdf 6")
    text_row("scan.pdf", TextState.NEEDS_TEXT, reason="a scan without a text layer")
    text_row("blank.txt", TextState.EMPTY, reason="the file holds no text")
    text_row(HOSTILE_NAME, TextState.FAILED, reason=HOSTILE_REASON)
    text_row("huge.pdf", TextState.TOO_LARGE, reason="more than 100 MB")
    return Chat.objects.get()


def test_chat_page_shows_each_files_text_state_escaped(
    owner_client: Client, files_chat: Chat
) -> None:
    html = owner_client.get(f"/chats/{files_chat.pk}/").content.decode()
    escaped_name = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;.pdf"
    assert badges(html) == {
        "contract.pdf": "Text",
        "scan.pdf": "Needs text",
        "blank.txt": "No text",
        escaped_name: "Failed",
        "huge.pdf": "Too large",
        "unread.txt": "",  # not read yet: no badge
    }
    contract = Attachment.objects.get(file_name="contract.pdf")
    assert f'<a class="text-state text-done" href="/attachments/{contract.public_id}/text/"' in html
    assert (
        'title="&lt;script&gt;alert(&#x27;reason&#x27;)&lt;/script&gt; broke">Failed</span>' in html
    )
    assert "<script>alert(" not in html and "<img src=x" not in html


def test_chat_page_reads_the_states_within_its_budget_and_never_the_text(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"m{i}",
                    minutes=i,
                    attachments=(stored(f"{i}.txt", f"file {i}".encode(), "text/plain"),),
                )
                for i in range(50)
            ]
        )
    )
    for i in range(50):
        text_row(f"{i}.txt", TextState.DONE, f"secret words of file {i}", extractor="plain")
    chat = Chat.objects.get()
    with CaptureQueriesContext(connection) as queries, django_assert_max_num_queries(13):
        html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert html.count('class="text-state text-done"') == 50
    assert "secret words" not in html
    read = [q["sql"] for q in queries.captured_queries if "archive_attachmenttext" in q["sql"]]
    assert len(read) == 1  # joined to the attachments' one query
    assert '"archive_attachmenttext"."text"' not in read[0]
    assert '"archive_attachmenttext"."state"' in read[0]


def test_show_text_draws_pages_and_marks_a_searchs_words_escaped(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message(
                "1",
                "the invoice",
                attachments=(stored("invoice.pdf", b"%PDF invoice", "application/pdf"),),
            )
        )
    )
    text_row(
        "invoice.pdf",
        TextState.DONE,
        "Invoice <b>2024</b>\nTotal due: 120 EUR\fTerms: the total is due in 30 days\f\fend",
        extractor="pypdf 6.1.0",
        pages=4,
    )
    attachment = Attachment.objects.select_related("message").get()
    url = f"/attachments/{attachment.public_id}/text/"
    html = owner_client.get(url).content.decode()
    assert '<h1 class="file-text-name">invoice.pdf</h1>' in html
    assert [int(n) for n in re.findall(r">Page (\d+)</h2>", html)] == [1, 2, 3, 4]
    assert "Invoice &lt;b&gt;2024&lt;/b&gt;" in html and "<b>2024" not in html
    assert "pypdf 6.1.0" in html and "application/pdf" in html
    assert f'href="/attachments/{attachment.public_id}/"' in html  # the original
    assert f'href="/m/{attachment.message.public_id}/"' in html  # back to the message
    assert "<mark>" not in html

    # Opened from a search hit: its words marked (a file-text operator's too), any case.
    html = owner_client.get(url, {"q": "content:total from:alice -days"}).content.decode()
    assert re.findall(r"<mark>([^<]*)</mark>", html) == ["Total", "total"]
    assert "2 matches of <strong>total</strong>" in html

    html = owner_client.get(url, {"q": '"<b>2024</b>'}).content.decode()
    assert "<mark>&lt;b&gt;2024&lt;/b&gt;</mark>" in html

    html = owner_client.get(url, {"q": '"<script>zzz"'}).content.decode()
    assert "No match of <strong>&lt;script&gt;zzz</strong> in this text." in html
    assert "<script>zzz" not in html


def test_show_text_says_who_wrote_it_and_what_became_of_the_file(
    owner_client: Client, files_chat: Chat
) -> None:
    scan = Attachment.objects.get(file_name="scan.pdf")
    AttachmentText.objects.filter(pk=scan.pk).update(
        state=TextState.DONE,
        text="Words the agent read",
        origin=TextOrigin.AGENT,
        extractor="agent:reader-bot",
        model="vision-9",
    )
    html = owner_client.get(f"/attachments/{scan.public_id}/text/").content.decode()
    assert "Written by" in html and "reader-bot, model vision-9" in html
    assert "Words the agent read" in html and ">Page 1<" not in html  # one page: no heading

    hostile = Attachment.objects.get(file_name=HOSTILE_NAME)
    html = owner_client.get(f"/attachments/{hostile.public_id}/text/").content.decode()
    assert "&lt;script&gt;alert(&#x27;reason&#x27;)&lt;/script&gt; broke" in html
    assert "<script>alert(" not in html and "<img src=x" not in html

    unread = Attachment.objects.get(file_name="unread.txt")
    html = owner_client.get(f"/attachments/{unread.public_id}/text/").content.decode()
    assert "has not been read yet" in html

    assert owner_client.get("/attachments/att_nope/text/").status_code == 404


def test_needs_text_lists_the_waiting_files_newest_first_in_pages(
    owner_client: Client, settings: Any
) -> None:
    settings.OCR = "off"
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    "a photo",
                    chat="chat-2" if i % 2 else "chat-1",
                    minutes=i + 1,
                    attachments=(stored(f"photo-{i}.png", f"png {i}".encode(), "image/png"),),
                )
                for i in range(52)
            ],
            message("done", "read", attachments=(stored("read.pdf", b"%PDF", "application/pdf"),)),
            message("new", "voice", minutes=60, attachments=(stored("hi.ogg", b"O", "audio/ogg"),)),
        )
    )
    for i in range(52):
        text_row(f"photo-{i}.png", TextState.NEEDS_TEXT, reason=f"an image <{i}>")
    text_row("read.pdf", TextState.DONE, "words")

    html = owner_client.get("/files/needs-text/").content.decode()
    names = re.findall(r'/text/">([^<]+)</a>', html)
    # The voice note not read yet comes first (newest), then the photos read as pictures.
    assert names == ["hi.ogg"] + [f"photo-{i}.png" for i in range(51, 2, -1)]
    assert "an image &lt;51&gt;" in html and "Not read yet" in html
    assert "read.pdf" not in html
    first = Attachment.objects.select_related("message").get(file_name="photo-51.png")
    assert f'href="/m/{first.message.public_id}/">Chat chat-2</a>' in html
    assert "image/png" in html and "OCR is off" in html and "WIRECAT_OCR=tesseract" in html
    assert "Read with OCR" not in html

    older = re.search(r'<a href="(\?cursor=[^"]+)">Older files', html)
    assert older is not None
    html = owner_client.get("/files/needs-text/" + older.group(1).replace("&amp;", "&"))
    page = html.content.decode()
    assert re.findall(r'/text/">([^<]+)</a>', page) == [f"photo-{i}.png" for i in (2, 1, 0)]
    assert "Older files" not in page and "Newest files" in page
    assert owner_client.get("/files/needs-text/", {"cursor": "nonsense"}).status_code == 422


def test_dashboard_counts_the_files_text(owner_client: Client, settings: Any) -> None:
    settings.OCR = "off"
    html = owner_client.get("/").content.decode()
    assert "No stored files yet" in html and 'id="files-counts"' not in html
    batch_record(
        batch=batch(
            message(
                "1",
                "files",
                attachments=tuple(
                    stored(f"f{i}.txt", f"file {i}".encode(), "text/plain") for i in range(7)
                ),
            )
        )
    )
    text_row("f0.txt", TextState.DONE, "a")
    text_row("f1.txt", TextState.DONE, "b")
    text_row("f2.txt", TextState.NEEDS_TEXT)
    text_row("f3.txt", TextState.FAILED, reason="broken")
    html = owner_client.get("/").content.decode()
    counts = re.search(r'id="files-counts">(.*?)</p>', html)
    assert counts is not None
    line = " ".join(re.sub(r"<[^>]+>", "", counts.group(1)).split())
    assert line == "Files: 2 with text · 1 need text · 1 failed"
    assert 'href="/files/needs-text/"' in html and 'href="/search/?q=has%3Atext"' in html
    progress = re.search(r'id="files-progress"[^>]*>(.*?)</p>', html)
    assert progress is not None
    text = " ".join(re.sub(r"<[^>]+>", "", progress.group(1)).split())
    assert text == "Reading files: 4 of 7 read, 3 waiting for the worker."
    assert "OCR is off" in html

    for i in (4, 5, 6):
        text_row(f"f{i}.txt", TextState.TOO_LARGE, reason="big")
    html = owner_client.get("/").content.decode()
    assert 'id="files-progress"' not in html and "3 too large" in html.replace("</span>", "")


def text_picture(words: str) -> bytes:
    font_file = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
    font = (
        ImageFont.truetype(str(font_file), 48)
        if font_file.exists()
        else ImageFont.load_default(size=48)
    )
    picture = Image.new("RGB", (900, 160), "white")
    ImageDraw.Draw(picture).text((30, 40), words, fill="black", font=font)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def test_read_with_ocr_reads_one_waiting_picture(owner_client: Client, settings: Any) -> None:
    if shutil.which("tesseract") is None:
        pytest.fail("Debian's tesseract-ocr must be installed for this test")
    settings.OCR = "tesseract"
    settings.OCR_LANGUAGES = "eng"
    batch_record(
        batch=batch(
            message(
                "1",
                "a whiteboard",
                attachments=(stored("board.png", text_picture("Quarterly budget"), "image/png"),),
            )
        )
    )
    text_row("board.png", TextState.NEEDS_TEXT, reason="an image")
    board = Attachment.objects.get(file_name="board.png")

    html = owner_client.get("/files/needs-text/").content.decode()
    assert "OCR is on" in html and "Read with OCR" in html
    response = owner_client.post(
        f"/files/{board.public_id}/ocr/", {"next": "/files/needs-text/"}, follow=True
    )
    assert response.redirect_chain == [("/files/needs-text/", 302)]
    html = response.content.decode()
    assert "board.png has its text now." in html
    assert "No file waits for text" in html
    row = AttachmentText.objects.get(pk=board.pk)
    assert row.state == TextState.DONE and "budget" in row.text.lower()
    assert row.extractor.startswith("tesseract")
    assert owner_client.post("/files/att_nope/ocr/").status_code == 404

    # Off again: the button is gone and a post reads nothing.
    settings.OCR = "off"
    response = owner_client.post(f"/files/{board.public_id}/ocr/", follow=True)
    assert "OCR is off" in response.content.decode()
    assert owner_client.get(f"/files/{board.public_id}/ocr/").status_code == 405
