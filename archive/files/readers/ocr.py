"""OCR of images and scanned PDF pages with Debian's tesseract, when the owner turns it on
(`WIRECAT_OCR=tesseract`, in the languages of `WIRECAT_OCR_LANGUAGES`).

It runs inside the reader's child process, whose memory limit bounds it (and tesseract, a
child of that child, inherits the limit). What bounds it here: the pixels of an image (as
the thumbnails do), the pixels a PDF page is rendered to, the pages read, and the time,
which is spent page by page so that what was read before the budget ran out is kept.

It reports honestly and decides nothing: a reading with no words says `needs_text`, and
the service keeps any good text a file already has."""

from __future__ import annotations

import math
import os
import re
import shutil
import time
import warnings
from pathlib import Path

from django.conf import settings
from PIL import Image, UnidentifiedImageError

from archive.files.domain import Extracted, Limits, TextState

# The same bound as the thumbnails': an image of more pixels is not decoded.
MAX_PIXELS = 40_000_000
# The pictures messengers send. No TIFF, as for the thumbnails: libtiff's many codecs are
# the largest decoder surface, and a scan sent in a chat is a JPEG, a PNG or a PDF.
RASTER = ("JPEG", "PNG", "GIF", "WEBP", "BMP")
MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM")
# A scanned PDF: at most this many pages are read (and at most `limits.pages`).
MAX_PDF_PAGES = 20
# Pages are rendered at 300 dpi, the resolution tesseract reads best, shrunk so that no
# page (whatever size it declares) is drawn to more than this many pixels (A4 is 8.7 M).
PDF_DPI = 300
MAX_PAGE_PIXELS = 12_000_000
# Of the file's time limit, the part OCR spends; the rest is for the reader before it, the
# child's start and the answer's way back, so the child is not killed with pages read and
# not yet handed over.
TIME_SHARE = 0.8
# Less time than this left: the next page is not started.
MIN_PAGE_SECONDS = 1.0
WORD = re.compile(r"\w\w")
LANGUAGE = re.compile(r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")


def ocr_enabled() -> bool:
    """Whether the owner turned OCR on and tesseract is installed here."""
    return getattr(settings, "OCR", "off") == "tesseract" and bool(shutil.which("tesseract"))


def ocr_read(path: Path, *, mime: str, limits: Limits) -> Extracted | None:
    """The text tesseract reads in an image or a PDF's pages ("\\f" between pages); None
    when OCR is off or the file is neither an image nor a PDF (by its bytes, else `mime`)."""
    if not ocr_enabled():
        return None
    # By the first bytes, as the readers' registry tells kinds apart; then the type sent.
    with path.open("rb") as handle:
        head = handle.read(1024)
    if b"%PDF-" in head:
        reading = _pdf
    elif head.startswith(MAGIC) or head[8:12] == b"WEBP" or mime.startswith("image/"):
        reading = _image
    else:
        return None
    # pytesseract imported only here: OCR off, the reader never loads it.
    import pytesseract

    languages = str(getattr(settings, "OCR_LANGUAGES", "eng")).strip() or "eng"
    extractor = f"tesseract {pytesseract.get_tesseract_version()} ({languages})"
    if not LANGUAGE.match(languages):
        return _failed(
            extractor, f"WIRECAT_OCR_LANGUAGES is not a list like eng+rus: {languages!r}"
        )
    missing = sorted(set(languages.split("+")) - set(pytesseract.get_languages(config="")))
    if missing:
        packages = ", ".join(f"tesseract-ocr-{name}" for name in missing)
        return _failed(
            extractor, f"tesseract has no data for {', '.join(missing)}: install {packages}"
        )
    # One core per tesseract: the worker runs other jobs beside it.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    deadline = time.monotonic() + limits.seconds * TIME_SHARE
    return reading(path, languages=languages, extractor=extractor, limits=limits, deadline=deadline)


def _failed(extractor: str, reason: str) -> Extracted:
    return Extracted(text="", state=TextState.FAILED, extractor=extractor, reason=reason)


def _too_large(extractor: str, reason: str, pages: int | None = None) -> Extracted:
    return Extracted(
        text="", state=TextState.TOO_LARGE, extractor=extractor, reason=reason, pages=pages
    )


class _OutOfTime(Exception):
    pass


def _recognize(image: Image.Image, *, languages: str, deadline: float) -> str:
    """One picture's text; _OutOfTime when the budget is spent before or while reading."""
    import pytesseract

    left = deadline - time.monotonic()
    if left < MIN_PAGE_SECONDS:
        raise _OutOfTime
    try:
        text = pytesseract.image_to_string(image, lang=languages, timeout=left)
    except RuntimeError as exc:
        if "timeout" in str(exc).lower():
            raise _OutOfTime from exc
        raise
    return str(text).replace("\f", "\n").strip()


def _image(
    path: Path, *, languages: str, extractor: str, limits: Limits, deadline: float
) -> Extracted:
    too_many = f"more than {MAX_PIXELS // 1_000_000} megapixels"
    with warnings.catch_warnings():
        # Pillow's own bound (whatever this process set it to) only warns below twice its
        # size; the bound below is the one that holds, before anything is decoded.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(path, formats=RASTER) as image:
                if image.width * image.height > MAX_PIXELS:
                    size = f"{image.width}x{image.height}"
                    return _too_large(extractor, f"an image of {size} pixels is {too_many}")
                # The first frame of a GIF or WebP; grey is all tesseract reads.
                grey = image.convert("L")
        except Image.DecompressionBombError as exc:
            return _too_large(extractor, f"the image is {too_many} ({exc})")
        except UnidentifiedImageError as exc:
            return _failed(extractor, f"not an image OCR reads: {exc}")
        except Exception as exc:  # untrusted bytes: decoders fail in many ways
            return _failed(
                extractor, f"the image could not be decoded: {type(exc).__name__}: {exc}"
            )
    try:
        text = _recognize(grey, languages=languages, deadline=deadline)
    except _OutOfTime:
        spent = f"{limits.seconds * TIME_SHARE:.0f} s"
        return _too_large(extractor, f"OCR took longer than its time limit ({spent})")
    except Exception as exc:  # tesseract's own failure, said in its words
        return _failed(extractor, f"tesseract failed: {exc}")
    return _result([text], extractor=extractor, limits=limits, notes=[])


def _pdf(
    path: Path, *, languages: str, extractor: str, limits: Limits, deadline: float
) -> Extracted:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(path)
    except Exception as exc:  # a broken or encrypted PDF: pdfium says which
        return _failed(extractor, f"the PDF could not be opened: {exc}")
    texts: list[str] = []
    notes: list[str] = []
    try:
        total = len(document)
        wanted = min(total, limits.pages, MAX_PDF_PAGES)
        for number in range(wanted):
            page = document[number]
            try:
                width, height = page.get_size()
                scale = PDF_DPI / 72
                if width * height * scale * scale > MAX_PAGE_PIXELS:
                    scale = math.sqrt(MAX_PAGE_PIXELS / max(width * height, 1.0))
                bitmap = page.render(scale=scale, grayscale=True)
                try:
                    picture = bitmap.to_pil()
                    texts.append(_recognize(picture, languages=languages, deadline=deadline))
                finally:
                    bitmap.close()
            except _OutOfTime:
                notes.append(f"OCR stopped after {len(texts)} of {total} pages (time limit)")
                break
            except Exception as exc:  # one page that will not render or read ends the file
                if not texts:
                    return _failed(extractor, f"page 1 could not be read: {exc}")
                notes.append(f"OCR stopped after {len(texts)} of {total} pages: {exc}")
                break
            finally:
                page.close()
        else:
            if wanted < total:
                notes.append(f"OCR read the first {wanted} of {total} pages")
    finally:
        document.close()
    if total == 0:
        return Extracted(
            text="", state=TextState.EMPTY, extractor=extractor, reason="the PDF has no pages"
        )
    if not texts:
        return _too_large(extractor, notes[0], pages=0)
    return _result(texts, extractor=extractor, limits=limits, notes=notes, paged=True)


def _result(
    texts: list[str], *, extractor: str, limits: Limits, notes: list[str], paged: bool = False
) -> Extracted:
    text = "\f".join(texts)
    pages = len(texts) if paged else None
    if not WORD.search(text):
        reason = "; ".join(["OCR found no text", *notes])
        return Extracted(
            text="", state=TextState.NEEDS_TEXT, extractor=extractor, reason=reason, pages=pages
        )
    if len(text) > limits.chars:
        text = text[: limits.chars]
        notes.append(f"the text was cut at {limits.chars:,} characters")
    return Extracted(
        text=text, state=TextState.DONE, extractor=extractor, reason="; ".join(notes), pages=pages
    )
