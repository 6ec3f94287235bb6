"""The files pages: an attachment's text ("Show text", its pages, a search's words marked),
the files waiting for text with a button to read one with OCR when OCR is on."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from archive.files.domain import TextState
from archive.files.page_reads import file_text, ocr_available
from archive.files.selectors import attachments_needing_text
from archive.files.services import attachment_text_extract
from archive.store.services.attachments import attachment_get
from archive.web.pages import _back

NEEDS_TEXT_PAGE = 50


@require_GET
def attachment_text_view(request: HttpRequest, public_id: str) -> HttpResponse:
    shown = file_text(public_id=public_id, q=request.GET.get("q", ""))
    return render(request, "archive/files/text.html", {"f": shown, "a": shown.attachment})


@require_GET
def needs_text_view(request: HttpRequest) -> HttpResponse:
    cursor = request.GET.get("cursor", "")[:200] or None
    found = attachments_needing_text(limit=NEEDS_TEXT_PAGE, cursor=cursor)
    return render(
        request,
        "archive/files/needs_text.html",
        {"found": found, "first": cursor is None, "ocr": ocr_available()},
    )


@require_POST
def attachment_ocr_view(request: HttpRequest, public_id: str) -> HttpResponse:
    """Read one waiting file with OCR now (bounded like every reading: a child process with
    its time and memory limits), then back to the list with what became of it."""
    back = _back(request, reverse("archive:files_needs_text"))
    if not ocr_available():
        flash.error(request, "OCR is off: set WIRECAT_OCR=tesseract and install tesseract-ocr.")
        return redirect(back)
    attachment = attachment_get(public_id=public_id[:40])
    name = attachment.file_name or attachment.public_id
    row = attachment_text_extract(attachment_id=attachment.pk, ocr=True)
    if row is None:
        flash.error(request, f"{name} was not read: its bytes are not stored.")
    elif row.state == TextState.DONE:
        flash.success(request, f"{name} has its text now.")
    elif row.state in (TextState.FAILED, TextState.TOO_LARGE):
        flash.error(request, f"OCR could not read {name}: {row.reason or row.state}.")
    else:
        flash.warning(request, f"OCR found no text in {name}.")
    return redirect(back)
