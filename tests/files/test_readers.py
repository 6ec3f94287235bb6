"""Every format the readers take, made by the library that writes it (fixtures.py), read in
the sandbox's child process to its text and state; hostile files (a PDF that keeps pypdf
busy for minutes, one nested too deep, one whose page tree is a cycle, a DOCX zip bomb, an
ODT whose spaces inflate to gigabytes) stopped within small limits, the next file read fine
after each; and the child's own bounds (memory, files written, its temporary folder)."""

from __future__ import annotations

import os
import resource
import signal
import tempfile
import time
import wave
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from archive.files.domain import Extracted, Limits, TextState
from archive.files.readers.registry import READERS, kind_of, reader_for
from archive.files.sandbox import extract, run_bounded
from tests.files import fixtures as make

MIB = 1 << 20
LIMITS = Limits(
    seconds=20, memory_bytes=256 * MIB, file_bytes=20 * MIB, pages=50, chars=1_000_000, depth=3
)
HOSTILE = replace(LIMITS, seconds=2)  # what a hostile file gets in these tests
SLACK = 1.5  # seconds past the limit a stopped child may take to be killed and reaped


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files")


def read(path: Path, mime: str = "", limits: Limits = LIMITS, **options: Any) -> Extracted:
    return extract(path, mime=mime, name=path.name, limits=limits, **options)


def wav_file(folder: Path) -> Path:
    path = folder / "voice-note.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 8000)
    return path


# (what makes the file, its declared type, its kind, the state, the words, pages read)
CASES: list[tuple[Callable[[Path], Path], str, str, TextState, list[str], int | None]] = [
    (make.docx_file, "", "docx", TextState.DONE, make.WORDS["docx"], None),
    (make.pdf_file, "application/pdf", "pdf", TextState.DONE, make.WORDS["pdf"], 3),
    (make.xlsx_file, "", "xlsx", TextState.DONE, make.WORDS["xlsx"], 2),
    (make.pptx_file, "", "pptx", TextState.DONE, make.WORDS["pptx"], 2),
    (make.odt_file, "", "odf", TextState.DONE, make.WORDS["odt"], None),
    (make.ods_file, "", "odf", TextState.DONE, make.WORDS["ods"], 2),
    (make.odp_file, "", "odf", TextState.DONE, make.WORDS["odp"], 2),
    (make.epub_file, "", "epub", TextState.DONE, make.WORDS["epub"], None),
    (make.rtf_file, "", "rtf", TextState.DONE, make.WORDS["rtf"], None),
    (make.html_file, "text/html", "html", TextState.DONE, make.WORDS["html"], None),
    (
        lambda d: make.encoded_text_file(d, "cp1251"),
        "text/plain",
        "text",
        TextState.DONE,
        make.WORDS["cp1251"],
        None,
    ),
    (
        lambda d: make.encoded_text_file(d, "latin1"),
        "",
        "text",
        TextState.DONE,
        make.WORDS["latin1"],
        None,
    ),
    (
        lambda d: make.encoded_text_file(d, "utf16"),
        "",
        "text",
        TextState.DONE,
        make.WORDS["utf16"],
        None,
    ),
    (make.ics_file, "text/calendar", "ics", TextState.DONE, make.WORDS["ics"], None),
    (make.scanned_pdf_file, "application/pdf", "pdf", TextState.NEEDS_TEXT, [], 1),
    (make.image_file, "image/jpeg", "image", TextState.NEEDS_TEXT, [], None),
    (lambda d: make.image_file(d, "board.png", "PNG"), "", "image", TextState.NEEDS_TEXT, [], None),
    (wav_file, "audio/wav", "audio", TextState.NEEDS_TEXT, [], None),
]


@pytest.mark.parametrize(
    ("maker", "mime", "kind", "state", "words", "pages"),
    CASES,
    ids=[
        "docx",
        "pdf",
        "xlsx",
        "pptx",
        "odt",
        "ods",
        "odp",
        "epub",
        "rtf",
        "html",
        "cp1251",
        "latin1",
        "utf16",
        "ics",
        "scan",
        "jpeg",
        "png",
        "voice",
    ],
)
def test_each_format_reads_to_its_text(
    folder: Path,
    maker: Callable[[Path], Path],
    mime: str,
    kind: str,
    state: TextState,
    words: list[str],
    pages: int | None,
) -> None:
    path = maker(folder)
    assert kind_of(path, mime=mime, name=path.name) == (kind, "")
    reading = read(path, mime)
    assert reading.state is state, reading.reason
    for word in words:
        assert word in reading.text
    assert reading.extractor == READERS.get(kind, "")
    assert reading.pages == pages
    if pages:  # paged formats: a form feed between pages, none after the last
        assert reading.text.count("\f") == (pages - 1 if words else 0)


def test_what_a_file_without_text_is_waiting_for(folder: Path) -> None:
    assert read(make.scanned_pdf_file(folder)).reason == "a scan: no text layer"
    assert read(make.image_file(folder)).reason == "an image: OCR or an agent can read it"
    assert read(wav_file(folder)).reason == "a voice note: an agent can transcribe it"
    legacy = folder / "old.doc"
    legacy.write_bytes(b"not really Word 97")
    word = read(legacy, "application/msword")
    assert word.state is TextState.NEEDS_TEXT
    assert "legacy Word .doc" in word.reason


def test_html_drops_scripts_and_styles(folder: Path) -> None:
    reading = read(make.html_file(folder))
    assert reading.text == "Newsletter heading\nParagraph about turbines."


def test_each_sheet_and_slide_is_a_page(folder: Path) -> None:
    sheets = read(make.xlsx_file(folder)).text.split("\f")
    assert sheets == ["Budget\nTravel\t1200\nHotel\t800", "Second sheet notes"]
    slides = read(make.pptx_file(folder)).text.split("\f")
    assert slides[0] == "Roadmap review\nWhere we are\nspeaker reminder: smile"
    assert slides[1] == "Launch\nLaunch in March\nA text box"


def test_pages_past_the_limit_are_not_read(folder: Path) -> None:
    reading = read(make.pdf_file(folder), limits=replace(LIMITS, pages=2))
    assert reading.state is TextState.DONE
    assert reading.pages == 2
    assert reading.text.split("\f") == ["Invoice number 2024-117", "The second page bravo"]
    assert reading.reason == "read the first 2 of 3 pages"
    sheets = read(make.xlsx_file(folder), limits=replace(LIMITS, pages=1))
    assert (sheets.pages, sheets.reason) == (1, "read the first 1 of 2 sheets")


def test_text_past_the_limit_is_cut(folder: Path) -> None:
    reading = read(make.docx_file(folder), limits=replace(LIMITS, chars=30))
    assert reading.state is TextState.DONE
    assert reading.text == "Quarterly contract between Acm"
    assert reading.reason == "text cut at 30 characters"


def test_a_mail_is_read_with_its_attachments(folder: Path) -> None:
    reading = read(make.eml_file(folder), "message/rfc822")
    assert reading.state is TextState.DONE
    assert reading.extractor == READERS["eml"]
    text = reading.text
    assert text.startswith("Subject: Papers for the signing\nFrom: Alice <alice@example.com>")
    assert "Plain version of the covering note." in text
    pdf_at = text.index("[attachment: attached.pdf]\nInvoice number 2024-117")
    docx_at = text.index("[attachment: attached.docx]\nQuarterly contract between Acme")
    assert pdf_at < docx_at
    assert "\f" not in text  # the attached PDF's pages are not the mail's


def test_a_forwarded_mail_is_read_down_to_the_depth_limit(folder: Path) -> None:
    inner = make.eml_file(folder, "inner.eml")
    outer = folder / "outer.eml"
    from email.message import EmailMessage
    from email.parser import BytesParser
    from email.policy import default

    message = EmailMessage()
    message["Subject"] = "Fwd: papers"
    message.set_content("See the mail below.")
    message.add_attachment(BytesParser(policy=default).parsebytes(inner.read_bytes()))
    outer.write_bytes(bytes(message))

    deep = read(outer).text
    assert "Subject: Papers for the signing" in deep
    assert "[attachment: attached.pdf]\nInvoice number 2024-117" in deep

    shallow = read(outer, limits=replace(LIMITS, depth=1))
    assert "Subject: Papers for the signing" in shallow.text  # the forwarded mail, depth 1
    assert "[attachment: attached.pdf — not read: attached too deep]" in shallow.text
    assert "Invoice number" not in shallow.text
    assert shallow.reason == "attachments deeper than the depth limit not read"


def test_the_type_is_told_by_magic_then_by_mime_then_by_name(folder: Path) -> None:
    jpeg = make.image_file(folder, "invoice.pdf")
    assert kind_of(jpeg, mime="application/pdf", name="invoice.pdf") == ("image", "")
    reading = read(jpeg, "application/pdf")
    assert reading.state is TextState.NEEDS_TEXT
    assert reading.reason == "an image: OCR or an agent can read it"

    nameless = make.docx_file(folder, "no-name")
    assert kind_of(nameless, mime="application/octet-stream", name="") == ("docx", "")
    assert kind_of(make.odt_file(folder, "x.bin"), mime="", name="x.bin") == ("odf", "")
    assert kind_of(make.epub_file(folder, "book.zip"), mime="", name="book.zip") == ("epub", "")
    page = make.html_file(folder, "page.txt")
    assert kind_of(page, mime="text/html", name="page.txt") == ("html", "")
    assert kind_of(page, mime="", name="page.txt") == ("text", "")
    assert kind_of(page, mime="", name="page") == ("html", "")  # its content says so
    assert kind_of(make.eml_file(folder, "mail"), mime="", name="mail") == ("eml", "")
    assert kind_of(make.ics_file(folder, "invite"), mime="", name="") == ("ics", "")

    archive = folder / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("a.bin", b"\x00\x01")
    assert kind_of(archive, mime="application/zip", name=archive.name) == (None, "a zip archive")
    assert read(archive).reason == "no text reader for a zip archive"
    blob = folder / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    kind, function = reader_for(blob, mime="application/octet-stream", name="blob.bin")
    assert kind == "none"
    empty = function(blob, LIMITS)
    assert (empty.state, empty.reason) == (TextState.EMPTY, "no text reader for .bin files")
    assert read(blob, "application/x-thing").reason == "no text reader for application/x-thing"


def test_readers_name_their_library_and_its_version() -> None:
    from importlib.metadata import version

    assert READERS["pdf"] == f"pypdf {version('pypdf')}"
    assert READERS["docx"] == f"mammoth {version('mammoth')}"
    assert "image" not in READERS  # nothing reads an image locally (OCR names itself)


# --- hostile files and the child's bounds ---------------------------------------------------


def test_a_pdf_that_keeps_pypdf_busy_is_stopped_at_the_time_limit(folder: Path) -> None:
    spinning = make.spinning_pdf_file(folder)
    assert spinning.stat().st_size < 20_000
    started = time.monotonic()
    reading = read(spinning, limits=HOSTILE)
    took = time.monotonic() - started
    assert (reading.state, reading.reason) == (TextState.TOO_LARGE, "took longer than 2 s")
    assert HOSTILE.seconds <= took < HOSTILE.seconds + SLACK
    assert read(make.pdf_file(folder), limits=HOSTILE).state is TextState.DONE


def test_pdfs_that_recurse_or_cycle_fail_with_one_line(folder: Path) -> None:
    deep = read(make.deep_pdf_file(folder), limits=HOSTILE)
    assert deep.state is TextState.FAILED
    assert deep.reason.startswith("RecursionError: maximum recursion depth exceeded")
    cyclic = read(make.cyclic_pdf_file(folder), limits=HOSTILE)
    assert (cyclic.state, cyclic.reason) == (
        TextState.FAILED,
        "PdfReadError: Detected cyclic page references.",
    )
    assert read(make.pdf_file(folder), limits=HOSTILE).state is TextState.DONE


def test_a_docx_zip_bomb_is_stopped(folder: Path) -> None:
    bomb = make.docx_bomb_file(folder, inflated=200 * MIB)
    with zipfile.ZipFile(bomb) as archive:
        assert archive.getinfo("word/document.xml").file_size > 200 * MIB
    assert bomb.stat().st_size < 400_000
    started = time.monotonic()
    reading = read(bomb, limits=HOSTILE)
    assert reading.state is TextState.TOO_LARGE, reading.reason
    assert reading.reason in ("took longer than 2 s", "needed more than 256 MB of memory")
    assert time.monotonic() - started < HOSTILE.seconds + SLACK
    assert read(make.docx_file(folder), limits=HOSTILE).state is TextState.DONE


def test_a_file_that_swells_in_memory_is_stopped_by_the_memory_limit(folder: Path) -> None:
    bomb = make.odt_spaces_bomb_file(folder)  # two billion spaces, odfpy writes them out
    assert bomb.stat().st_size < 10_000
    reading = read(bomb, limits=HOSTILE)
    assert (reading.state, reading.reason) == (
        TextState.TOO_LARGE,
        "needed more than 256 MB of memory",
    )
    assert read(make.odt_file(folder), limits=HOSTILE).state is TextState.DONE


def _swell() -> Extracted:
    held = [bytearray(MIB) for _ in range(2048)]  # 2 GB, a megabyte at a time
    return Extracted(str(len(held)), TextState.DONE, "")


def _spin() -> Extracted:
    while True:
        pass


def test_the_child_memory_limit_holds_and_the_parent_is_fine(folder: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    swollen = run_bounded(_swell, HOSTILE)
    assert (swollen.state, swollen.reason) == (
        TextState.TOO_LARGE,
        "needed more than 256 MB of memory",
    )
    one_go = run_bounded(lambda: Extracted("x" * (1 << 30), TextState.DONE, ""), HOSTILE)
    assert one_go.state is TextState.TOO_LARGE
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert (after - before) * 1024 < 50 * MIB  # the parent never held what the child did
    assert read(make.docx_file(folder), limits=HOSTILE).state is TextState.DONE


def test_a_reader_that_never_returns_is_killed() -> None:
    started = time.monotonic()
    reading = run_bounded(_spin, replace(HOSTILE, seconds=1))
    assert (reading.state, reading.reason) == (TextState.TOO_LARGE, "took longer than 1 s")
    assert time.monotonic() - started < 1 + SLACK


def test_a_reader_error_is_one_line(folder: Path) -> None:
    reading = read(make.broken_docx_file(folder), limits=HOSTILE)
    assert reading.state is TextState.FAILED
    assert reading.reason.startswith("OSError: Could not find main document part")
    assert "\n" not in reading.reason and "Traceback" not in reading.reason


def test_a_file_over_the_size_limit_is_not_read(folder: Path) -> None:
    big = folder / "big.txt"
    big.write_bytes(b"word " * 300_000)  # 1.5 MB
    reading = read(big, limits=replace(LIMITS, file_bytes=MIB))
    assert reading.state is TextState.TOO_LARGE
    assert reading.reason == "larger than 1 MB (1.4 MB): not read"
    assert read(big).state is TextState.DONE


def _write(size: int) -> Extracted:
    with tempfile.NamedTemporaryFile(delete=False) as out:
        out.write(b"x" * size)
    return Extracted(out.name, TextState.DONE, "")


def test_the_child_writes_only_small_files_in_its_own_folder() -> None:
    limits = replace(HOSTILE, file_bytes=MIB)
    small = run_bounded(lambda: _write(1000), limits)
    written = Path(small.text)
    assert small.state is TextState.DONE
    assert written.parent.name.startswith("wirecat-read-")
    assert not written.parent.exists()  # removed with the child's folder
    big = run_bounded(lambda: _write(2 * MIB), limits)
    assert big.state is TextState.FAILED
    assert big.reason.startswith("OSError: [Errno 27] File too large")


def test_ocr_off_leaves_a_scan_waiting(folder: Path, settings: Any) -> None:
    settings.OCR = "off"
    reading = read(make.scanned_pdf_file(folder), ocr=True)
    assert (reading.state, reading.reason) == (TextState.NEEDS_TEXT, "a scan: no text layer")


def test_ocr_reads_an_image_in_the_child(folder: Path, settings: Any) -> None:
    settings.OCR = "tesseract"
    settings.OCR_LANGUAGES = "eng"
    reading = read(make.image_file(folder, "board.jpg"), "image/jpeg", ocr=True)
    assert reading.state is TextState.DONE, reading.reason
    assert "WHITEBOARD" in reading.text
    assert reading.extractor.startswith("tesseract ")
    # a JPEG sent as a PDF is given to OCR as the image it is
    named = read(make.image_file(folder, "board.pdf"), "application/pdf", ocr=True)
    assert "WHITEBOARD" in named.text


def _signalled(number: int) -> Callable[[], Extracted]:
    def die() -> Extracted:
        os.kill(os.getpid(), number)
        raise AssertionError("the signal did not end the child")

    return die


def test_how_the_child_ended_names_the_limit() -> None:
    # what the CPU cap (SIGXCPU) and a library that could not allocate (SIGSEGV) end with
    cpu = run_bounded(_signalled(signal.SIGXCPU), HOSTILE)
    assert (cpu.state, cpu.reason) == (TextState.TOO_LARGE, "took longer than 2 s")
    memory = run_bounded(_signalled(signal.SIGSEGV), HOSTILE)
    assert (memory.state, memory.reason) == (
        TextState.TOO_LARGE,
        "needed more than 256 MB of memory",
    )
    other = run_bounded(_signalled(signal.SIGTERM), HOSTILE)
    assert (other.state, other.reason) == (TextState.FAILED, "the reader was stopped by SIGTERM")
