"""PDF: pypdf reads the text layer of each page (at most `limits.pages`), "\\f" between
pages. A PDF whose pages hold no text at all is a scan: `needs_text`, for OCR (ocr.py,
opt-in) or the owner's agent. pypdf's own limits (stream sizes, page-tree depth, cycles)
stop most hostile files early; the sandbox's time and memory limits stop the rest."""

from __future__ import annotations

import logging
from pathlib import Path

from pypdf import PdfReader

from archive.files.domain import Extracted, Limits, TextState
from archive.files.readers.base import Parts, finish, library, tidy

LIBRARY = "pypdf"
SCAN = "a scan: no text layer"


def read_pdf(path: Path, limits: Limits) -> Extracted:
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a broken xref is not news
    extractor = library(LIBRARY)
    reader = PdfReader(path)
    if reader.is_encrypted and not reader.decrypt(""):
        return Extracted("", TextState.FAILED, extractor, "the PDF is locked with a password")
    total = len(reader.pages)
    notes: list[str] = []
    if total > limits.pages:
        notes.append(f"read the first {limits.pages} of {total} pages")
    pages = Parts(limits)
    for number in range(min(total, limits.pages)):
        if not pages.add(tidy(reader.pages[number].extract_text() or "")):
            break
    text = pages.joined("\f")
    if total and not text.strip():
        return Extracted("", TextState.NEEDS_TEXT, extractor, SCAN, len(pages.parts))
    return finish(text, limits=limits, extractor=extractor, pages=len(pages.parts), notes=notes)
