"""The text of files in a browser: a file's text badge on the chat page, "Show text" with its
pages and a search's words marked, the files that need text (reached from the menu), at
1280 and 390 px, light and dark, with no sideways scroll. Screenshots:
tests/artifacts/file-text-*.png."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from PIL import Image

from archive.files.domain import TextState
from archive.files.models import AttachmentText
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment, Chat
from archive.store.sink import batch_record
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}

CONTRACT = (
    "SERVICE AGREEMENT\n\nBetween Northwind Traders and Contoso Ltd.\n"
    "The supplier delivers the quarterly budget report by the 5th of each month.\n"
    "\fPayment terms\n\nInvoices are due within 30 days. A late payment of the budget "
    "share carries a fee of 2% per month.\n"
    "\fSignatures\n\nSigned in Lisbon, 3 March 2024."
)


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


def photo() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (640, 420), (90, 120, 160)).save(out, format="PNG")
    return out.getvalue()


def files_in_a_chat() -> Chat:
    batch_record(
        batch=batch(
            message(
                "1",
                "The signed agreement and the whiteboard",
                attachments=(
                    stored("service-agreement-2024.pdf", b"%PDF agreement", "application/pdf"),
                    stored("whiteboard.png", photo(), "image/png"),
                    stored("minutes.docx", b"PK broken", "application/msword"),
                ),
            ),
        )
    )
    rows = [
        ("service-agreement-2024.pdf", TextState.DONE, CONTRACT, "", "pypdf 6.1.0", 3),
        ("whiteboard.png", TextState.NEEDS_TEXT, "", "an image", "", None),
        ("minutes.docx", TextState.FAILED, "", "not a DOCX: the zip is broken", "mammoth", None),
    ]
    for name, state, text, reason, extractor, pages in rows:
        attachment = Attachment.objects.get(file_name=name)
        AttachmentText.objects.create(
            attachment=attachment,
            text=text,
            state=state.value,
            reason=reason,
            extractor=extractor,
            sha256=attachment.sha256,
            pages=pages,
            made_at=timezone.now(),
        )
    return Chat.objects.get()


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


def scroll_width(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [
        ((DESKTOP, "light"), "desktop"),
        ((DESKTOP, "dark"), "desktop-dark"),
        ((PHONE, "light"), "phone"),
        ((PHONE, "dark"), "phone-dark"),
    ],
    indirect=["tab"],
)
def test_badges_show_text_and_needs_text(
    live_server: Any, tab: Any, suffix: str, artifacts_dir: Path, settings: Any
) -> None:
    settings.OCR = "off"
    chat = files_in_a_chat()
    width = (PHONE if suffix.startswith("phone") else DESKTOP)["width"]
    sign_in(tab, live_server)

    # The chat page: each file's text state beside its name.
    tab.goto(f"{live_server.url}/chats/{chat.pk}/")
    contract = tab.locator(".file-chip", has_text="service-agreement-2024.pdf")
    text_link = contract.get_by_role("link", name="Text", exact=True)
    assert text_link.is_visible()
    failed = tab.locator(".file-chip", has_text="minutes.docx").locator(".text-state")
    assert failed.inner_text() == "Failed"
    assert failed.get_attribute("title") == "not a DOCX: the zip is broken"
    assert tab.locator(".media-image .text-state").inner_text() == "Needs text"
    assert scroll_width(tab) <= width
    tab.locator(".media").first.scroll_into_view_if_needed()
    tab.screenshot(path=str(artifacts_dir / f"file-text-chat-{suffix}.png"))

    # Show text: the pages, the reader, the words of a search marked.
    text_link.click()
    tab.wait_for_url("**/text/")
    assert tab.get_by_role("heading", name="service-agreement-2024.pdf").is_visible()
    assert tab.get_by_role("heading", name="Page 3").is_visible()
    assert tab.get_by_text("pypdf 6.1.0").is_visible()
    tab.goto(tab.url + "?q=content%3Abudget")
    marks = tab.locator(".file-text-body mark")
    assert marks.all_inner_texts() == ["budget", "budget"]
    assert tab.get_by_role("status").inner_text().startswith("2 matches of budget")
    assert scroll_width(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"file-text-show-{suffix}.png"), full_page=True)
    tab.get_by_role("link", name="Back to the message").click()
    tab.wait_for_url(f"**/chats/{chat.pk}/**")

    # Needs text, from the menu's "More".
    tab.locator("details.more-menu > summary").click()
    tab.locator(".more-panel").get_by_role("link", name="Files", exact=True).click()
    tab.wait_for_url("**/files/needs-text/")
    row = tab.get_by_role("row").filter(has_text="whiteboard.png")
    assert row.is_visible() and "image/png" in row.inner_text()
    assert tab.get_by_text("OCR is off").is_visible()
    assert scroll_width(tab) <= width
    tab.screenshot(path=str(artifacts_dir / f"file-text-needs-{suffix}.png"), full_page=True)

    # The dashboard counts them.
    tab.goto(live_server.url + "/")
    counts = tab.locator("#files-counts")
    assert " ".join(counts.inner_text().split()) == "Files: 1 with text · 1 need text · 1 failed"
    counts.get_by_role("link", name="1 need text").click()
    tab.wait_for_url("**/files/needs-text/")
    tab.goto(live_server.url + "/")
    assert scroll_width(tab) <= width
    tab.locator("#files-h").scroll_into_view_if_needed()
    tab.screenshot(path=str(artifacts_dir / f"file-text-dashboard-{suffix}.png"))
