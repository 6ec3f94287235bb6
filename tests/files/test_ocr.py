"""OCR with Debian's tesseract: pictures with words drawn by Pillow, scanned PDFs made by
fpdf2 from such pictures, read page by page; off, missing or out of bounds, it says so."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

from archive.files.domain import Limits, TextState
from archive.files.readers.ocr import ocr_enabled, ocr_read
from archive.files.sandbox import extract

LIMITS = Limits()


@pytest.fixture
def ocr_on(settings: Any) -> None:
    if shutil.which("tesseract") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's tesseract-ocr and tesseract-ocr-eng for OCR")
        pytest.skip("tesseract is not installed here; CI installs Debian's tesseract-ocr")
    settings.OCR = "tesseract"
    settings.OCR_LANGUAGES = "eng"


def words(text: str) -> set[str]:
    return {word.lower() for word in re.findall(r"\w+", text)}


def picture(*lines: str, size: tuple[int, int] = (1400, 420)) -> Image.Image:
    """Black words on white in a large, clear font, a line each."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=48)
    for number, line in enumerate(lines):
        draw.text((40, 40 + 110 * number), line, font=font, fill=0)
    return image


def scanned_pdf(path: Path, *pages: Image.Image) -> Path:
    """A PDF whose pages are pictures only: no text layer, as a scanner makes it."""
    pdf = FPDF()
    for image in pages:
        pdf.add_page()
        pdf.image(image, x=10, y=10, w=190)
    pdf.output(str(path))
    return path


def test_an_image_is_read_in_the_owners_languages(ocr_on: None, tmp_path: Path) -> None:
    path = tmp_path / "whiteboard.png"
    picture("Invoice number 2024", "Quarterly budget approved").save(path)

    read = ocr_read(path, mime="image/png", limits=LIMITS)

    assert read is not None
    assert read.state == TextState.DONE, read
    assert {"invoice", "2024", "quarterly", "budget", "approved"} <= words(read.text)
    assert re.fullmatch(r"tesseract \d+\.\d+\S* \(eng\)", read.extractor), read.extractor
    assert read.pages is None and read.reason == ""


def test_a_scanned_pdf_is_read_page_by_page(ocr_on: None, tmp_path: Path) -> None:
    path = scanned_pdf(
        tmp_path / "scan.pdf",
        picture("Contract between parties", "Signed in March"),
        picture("Appendix with prices", "Delivery by truck"),
    )

    read = ocr_read(path, mime="application/pdf", limits=LIMITS)

    assert read is not None
    assert read.state == TextState.DONE, read
    assert read.pages == 2
    first, second = read.text.split("\f")
    assert {"contract", "parties", "signed", "march"} <= words(first)
    assert {"appendix", "prices", "delivery", "truck"} <= words(second)
    assert not {"appendix", "truck"} & words(first)


def test_pages_past_the_limit_are_noted_not_read(ocr_on: None, tmp_path: Path) -> None:
    path = scanned_pdf(
        tmp_path / "long.pdf", picture("First page here"), picture("Second page there")
    )

    read = ocr_read(path, mime="application/pdf", limits=Limits(pages=1))

    assert read is not None and read.state == TextState.DONE, read
    assert read.pages == 1 and "\f" not in read.text
    assert {"first", "page"} <= words(read.text) and "second" not in words(read.text)
    assert read.reason == "OCR read the first 1 of 2 pages"


def test_the_time_limit_keeps_the_pages_read_before_it(ocr_on: None, tmp_path: Path) -> None:
    # Page 1 reads in about a second; each page of noise takes tesseract several, so the
    # four seconds OCR may spend of a five-second limit run out on the noise.
    noise = Image.effect_noise((1600, 2200), 120).convert("L")
    path = scanned_pdf(tmp_path / "slow.pdf", picture("Minutes of the meeting"), *[noise] * 3)

    read = ocr_read(path, mime="application/pdf", limits=Limits(seconds=5))

    assert read is not None and read.state == TextState.DONE, read
    assert {"minutes", "meeting"} <= words(read.text.split("\f")[0])
    assert read.pages is not None and 1 <= read.pages < 4
    assert read.reason == f"OCR stopped after {read.pages} of 4 pages (time limit)"


def test_no_time_left_reads_nothing(ocr_on: None, tmp_path: Path) -> None:
    image_path = tmp_path / "note.png"
    picture("Nothing will be read").save(image_path)
    pdf_path = scanned_pdf(tmp_path / "scan.pdf", picture("Nor here"))
    no_time = Limits(seconds=1)

    image = ocr_read(image_path, mime="image/png", limits=no_time)
    pdf = ocr_read(pdf_path, mime="application/pdf", limits=no_time)

    assert image is not None and image.state == TextState.TOO_LARGE and image.text == ""
    assert "time limit" in image.reason
    assert pdf is not None and pdf.state == TextState.TOO_LARGE and pdf.pages == 0
    assert pdf.reason == "OCR stopped after 0 of 1 pages (time limit)"


def test_a_picture_without_words_still_needs_text(ocr_on: None, tmp_path: Path) -> None:
    path = tmp_path / "sky.jpg"
    Image.new("RGB", (900, 600), (120, 170, 230)).save(path)

    read = ocr_read(path, mime="image/jpeg", limits=LIMITS)

    assert read is not None
    assert read.state == TextState.NEEDS_TEXT and read.text == ""
    assert read.reason == "OCR found no text"


def test_an_image_of_too_many_pixels_is_not_decoded(ocr_on: None, tmp_path: Path) -> None:
    path = tmp_path / "huge.png"
    Image.new("1", (8000, 6000), 1).save(path)  # 48 megapixels, a few kilobytes

    read = ocr_read(path, mime="image/png", limits=LIMITS)

    assert read is not None and read.state == TextState.TOO_LARGE
    assert read.reason == "an image of 8000x6000 pixels is more than 40 megapixels"


def test_bytes_that_are_no_image_fail_with_the_reason(ocr_on: None, tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'></svg>")

    read = ocr_read(path, mime="image/jpeg", limits=LIMITS)

    assert read is not None and read.state == TextState.FAILED
    assert read.reason.startswith("not an image OCR reads")


def test_a_language_without_its_data_is_named(ocr_on: None, settings: Any, tmp_path: Path) -> None:
    settings.OCR_LANGUAGES = "eng+xyz"
    path = tmp_path / "note.png"
    picture("Hello").save(path)

    read = ocr_read(path, mime="image/png", limits=LIMITS)

    assert read is not None and read.state == TextState.FAILED
    assert read.reason == "tesseract has no data for xyz: install tesseract-ocr-xyz"
    assert read.extractor.endswith("(eng+xyz)")


def test_a_picture_is_known_by_its_bytes(ocr_on: None, tmp_path: Path) -> None:
    path = tmp_path / "download"
    picture("Boarding pass gate").save(path, format="PNG")
    scan = scanned_pdf(tmp_path / "scan.bin", picture("Receipt total paid"))

    image = ocr_read(path, mime="application/octet-stream", limits=LIMITS)
    pdf = ocr_read(scan, mime="application/octet-stream", limits=LIMITS)

    assert image is not None and {"boarding", "pass", "gate"} <= words(image.text)
    assert pdf is not None and pdf.pages == 1 and {"receipt", "paid"} <= words(pdf.text)


def test_off_or_not_a_picture_is_not_read(ocr_on: None, settings: Any, tmp_path: Path) -> None:
    text = tmp_path / "note.txt"
    text.write_text("Hello there, plain words\n")
    path = tmp_path / "note.png"
    picture("Hello there").save(path)
    assert ocr_enabled()
    assert ocr_read(text, mime="text/plain", limits=LIMITS) is None

    settings.OCR = "off"

    assert not ocr_enabled()
    assert ocr_read(path, mime="image/png", limits=LIMITS) is None


def test_without_tesseract_installed_ocr_is_off(
    settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings.OCR = "tesseract"
    path = tmp_path / "note.png"
    picture("Hello there").save(path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    assert not ocr_enabled()
    assert ocr_read(path, mime="image/png", limits=LIMITS) is None


def test_the_sandbox_gives_ocr_the_scans_its_reader_could_not_read(
    ocr_on: None, tmp_path: Path
) -> None:
    path = scanned_pdf(
        tmp_path / "scan.pdf", picture("Lease agreement signed"), picture("Deposit returned")
    )

    without = extract(path, mime="application/pdf", name="scan.pdf", limits=LIMITS, ocr=False)
    read = extract(path, mime="application/pdf", name="scan.pdf", limits=LIMITS, ocr=True)

    assert without.state == TextState.NEEDS_TEXT and without.text == ""
    assert read.state == TextState.DONE and read.extractor.startswith("tesseract ")
    first, second = read.text.split("\f")
    assert {"lease", "agreement"} <= words(first) and {"deposit", "returned"} <= words(second)


def test_why_ocr_read_nothing_reaches_the_reading(
    ocr_on: None, settings: Any, tmp_path: Path
) -> None:
    settings.OCR_LANGUAGES = "xyz"
    path = tmp_path / "notice.png"
    picture("Boiler service").save(path)
    reading = extract(path, mime="image/png", name="notice.png", limits=Limits(), ocr=True)
    assert reading.state is TextState.NEEDS_TEXT
    assert "OCR: tesseract has no data for xyz" in reading.reason
