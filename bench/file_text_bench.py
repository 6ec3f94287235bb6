"""File text benchmark: how many files a second the worker reads the text of, per format,
each in its bounded child process, and the peak memory of doing it, against the same
readers called in-process in the same run.

    python bench/file_text_bench.py [--files 40] [--keep DIR] [--quick] [--no-ocr] [--preload]

Input is made in the run (seeded, so every run writes the same files) by the libraries
that write each format: `--files` files per format, each holding 120 to 200 lines of
../shared/corpora/ubuntu-irc (Kummerfeld et al., ACL 2019, CC-BY-4.0), about 8 KB of text:
plain text, HTML, RTF, DOCX (python-docx), XLSX (openpyxl), PPTX (python-pptx), ODT
(odfpy), EPUB (ebooklib), PDF with a text layer (fpdf2), .eml with a text attachment, ICS
(icalendar). When Debian's tesseract is installed, OCR's two kinds too: a PNG of a text
page and a two-page scanned PDF (a fifth as many files: OCR is tens of times slower).

Our path (timed, in a fresh process standing in for the worker: Django set up and the
Celery app loaded): `archive.files.sandbox.extract` on every file, one after another, each in its
child process with the default limits. Peak RSS: the worker's own, and the largest of its
children's (the reading child, and tesseract under it), from getrusage. Target: each at
most 300 MB.

Baseline (another fresh process): the same readers called in-process (the registry's
reader for the file, then OCR for what needs text), without the child process and its
limits, so the sandbox's cost shows as a ratio of the two rates. Both sides read the first
file of each format once untimed, so the baseline's libraries are imported before timing;
the sandbox's child imports its reader's library for every file, as it does in the worker.
`--preload` has the worker read one file of each format in-process first, so its children
inherit the libraries instead of importing them (what that saves, at what memory cost).
The figures vary with the machine's load: the run prints its load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "corpora" / "ubuntu-irc" / "train"
LINE = re.compile(r"^\[\d\d:\d\d\] <[^>]+> (.+)$")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
SEED = 20261201
OCR_SHARE = 5  # OCR formats get a fifth as many files
TARGET_MB = 300


# --- input ------------------------------------------------------------------------------


def corpus() -> list[str]:
    """Lines of real chat text with at least three words, in the order they were said."""
    lines: list[str] = []
    for raw in sorted(CORPUS.glob("*.raw.txt"))[:200]:
        for line in raw.read_text(errors="replace").splitlines():
            found = LINE.match(line)
            if found is None:
                continue
            # IRC's colour codes are control characters no XML format may hold.
            text = " ".join(CONTROL.sub("", found.group(1)).split())
            if len(text.split()) >= 3 and "-->" not in text:
                lines.append(text)
    if not lines:
        sys.exit(f"no corpus lines under {CORPUS}")
    return lines


def latin1(line: str) -> str:
    """What fpdf2's core fonts can draw."""
    return line.encode("latin-1", "replace").decode("latin-1")


def make_txt(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_html(path: Path, lines: list[str]) -> None:
    from html import escape

    body = "\n".join(f"<p>{escape(line)}</p>" for line in lines)
    path.write_text(
        f"<!doctype html><html><head><title>{escape(lines[0])}</title>"
        f"<style>p {{ margin: 0 }}</style></head><body>{body}</body></html>",
        encoding="utf-8",
    )


def make_rtf(path: Path, lines: list[str]) -> None:
    # No library writes RTF; its text is plain with \ { } escaped and \uN for the rest.
    def escaped(line: str) -> str:
        out = []
        for char in line:
            if char in "\\{}":
                out.append("\\" + char)
            elif ord(char) > 127:
                out.append(f"\\u{ord(char) if ord(char) < 32768 else ord(char) - 65536}?")
            else:
                out.append(char)
        return "".join(out)

    paragraphs = "\n".join(escaped(line) + "\\par" for line in lines)
    path.write_text(
        "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Helvetica;}}\\f0\\fs22\n" + paragraphs + "\n}",
        encoding="ascii",
    )


def make_docx(path: Path, lines: list[str]) -> None:
    import docx

    document = docx.Document()
    document.add_heading(lines[0][:60], level=1)
    for line in lines[1:]:
        document.add_paragraph(line)
    document.save(str(path))


def make_xlsx(path: Path, lines: list[str]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    for number, start in enumerate(range(0, len(lines), 60)):
        sheet = book.active if number == 0 else book.create_sheet()
        assert sheet is not None
        sheet.title = f"Sheet {number + 1}"
        for row, line in enumerate(lines[start : start + 60], start=1):
            words = line.split()
            sheet.cell(row=row, column=1, value=row)
            sheet.cell(row=row, column=2, value=" ".join(words[:3]))
            sheet.cell(row=row, column=3, value=" ".join(words[3:]))
    book.save(str(path))


def make_pptx(path: Path, lines: list[str]) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for start in range(0, len(lines), 12):
        slide = deck.slides.add_slide(deck.slide_layouts[6])
        box = slide.shapes.add_textbox(Inches(0.5), Inches(0.5), Inches(9), Inches(6))
        frame = box.text_frame
        frame.text = lines[start]
        for line in lines[start + 1 : start + 12]:
            frame.add_paragraph().text = line
    deck.save(str(path))


def make_odt(path: Path, lines: list[str]) -> None:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text=lines[0][:60]))
    for line in lines[1:]:
        document.text.addElement(P(text=line))
    document.save(str(path))


def make_epub(path: Path, lines: list[str]) -> None:
    from html import escape

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(f"bench-{path.stem}")
    book.set_title(lines[0][:60])
    book.set_language("en")
    chapters = []
    for number, start in enumerate(range(0, len(lines), 50), start=1):
        chapter = epub.EpubHtml(title=f"Part {number}", file_name=f"part{number}.xhtml")
        body = "".join(f"<p>{escape(line)}</p>" for line in lines[start : start + 50])
        chapter.content = f"<h1>Part {number}</h1>{body}"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.spine = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    epub.write_epub(str(path), book)


def make_pdf(path: Path, lines: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    for line in lines:
        pdf.multi_cell(0, 5, latin1(line), new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def make_eml(path: Path, lines: list[str]) -> None:
    message = EmailMessage()
    message["From"] = "Ann <ann@example.org>"
    message["To"] = "Bob <bob@example.org>"
    message["Subject"] = lines[0][:70]
    message["Date"] = "Tue, 01 Dec 2026 12:00:00 +0000"
    half = len(lines) // 2
    message.set_content("\n".join(lines[:half]) + "\n")
    message.add_attachment(
        ("\n".join(lines[half:]) + "\n").encode(),
        maintype="text",
        subtype="plain",
        filename="notes.txt",
    )
    path.write_bytes(bytes(message))


def make_ics(path: Path, lines: list[str]) -> None:
    import icalendar

    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//WireCat bench//EN")
    calendar.add("version", "2.0")
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    for number, first in enumerate(range(0, len(lines), 8)):
        event = icalendar.Event()
        event.add("uid", f"{path.stem}-{number}@bench")
        event.add("dtstamp", start)
        event.add("dtstart", start + timedelta(days=number))
        event.add("dtend", start + timedelta(days=number, hours=1))
        event.add("summary", lines[first][:80])
        event.add("description", "\n".join(lines[first + 1 : first + 8]))
        calendar.add_component(event)
    path.write_bytes(calendar.to_ical())


def page_picture(lines: list[str]) -> Any:
    """An A4 page at 150 dpi with the lines drawn in a clear font, as a phone scans it."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("L", (1240, 1754), 255)
    draw = ImageDraw.Draw(page)
    font = ImageFont.load_default(size=22)
    for row, line in enumerate(lines[:50]):
        draw.text((80, 80 + row * 32), line[:90], font=font, fill=0)
    return page


def make_png(path: Path, lines: list[str]) -> None:
    page_picture(lines).save(path)


def make_scan(path: Path, lines: list[str]) -> None:
    """Two pages of pictures (no text layer), half the lines each."""
    from fpdf import FPDF

    pdf = FPDF()
    half = len(lines) // 2
    for page in (lines[:half], lines[half:]):
        pdf.add_page()
        pdf.image(page_picture(page), x=0, y=0, w=210)
    pdf.output(str(path))


# (format, suffix, MIME type, maker)
FORMATS: list[tuple[str, str, str, Callable[[Path, list[str]], None]]] = [
    ("txt", ".txt", "text/plain", make_txt),
    ("html", ".html", "text/html", make_html),
    ("rtf", ".rtf", "application/rtf", make_rtf),
    (
        "docx",
        ".docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        make_docx,
    ),
    (
        "xlsx",
        ".xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        make_xlsx,
    ),
    (
        "pptx",
        ".pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        make_pptx,
    ),
    ("odt", ".odt", "application/vnd.oasis.opendocument.text", make_odt),
    ("epub", ".epub", "application/epub+zip", make_epub),
    ("pdf", ".pdf", "application/pdf", make_pdf),
    ("eml", ".eml", "message/rfc822", make_eml),
    ("ics", ".ics", "text/calendar", make_ics),
]
OCR_FORMATS: list[tuple[str, str, str, Callable[[Path, list[str]], None]]] = [
    ("png (OCR)", ".png", "image/png", make_png),
    ("scanned pdf (OCR)", ".pdf", "application/pdf", make_scan),
]


def make_files(
    folder: Path, count: int, *, ocr: bool, page_lines: int = 50
) -> list[dict[str, Any]]:
    """`count` files of each format (a fifth of it for OCR's, `page_lines` lines a page),
    written into `folder`."""
    lines = corpus()
    rng = random.Random(SEED)  # noqa: S311 - a fixed sample, not a secret
    files: list[dict[str, Any]] = []
    kinds = [(kind, count) for kind in FORMATS]
    if ocr:
        kinds += [(kind, max(1, count // OCR_SHARE)) for kind in OCR_FORMATS]
    for (label, suffix, mime, maker), many in kinds:
        slug = re.sub(r"\W+", "-", label).strip("-")
        for number in range(many):
            size = rng.randint(120, 200)
            if maker is make_png or maker is make_scan:
                size = page_lines * (2 if maker is make_scan else 1)
            start = rng.randrange(len(lines) - size)
            path = folder / f"{slug}-{number:04}{suffix}"
            maker(path, lines[start : start + size])
            files.append({"format": label, "path": str(path), "mime": mime, "name": path.name})
    return files


# --- reading (in the fresh processes) ------------------------------------------------------


def django_ready(state: Path, *, ocr: bool) -> None:
    os.environ["WIRECAT_STATE_DIR"] = str(state)
    os.environ["WIRECAT_OCR"] = "tesseract" if ocr else "off"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "wirecat.settings")
    import django

    django.setup()
    import wirecat.celery  # noqa: F401 - the worker has its Celery app loaded
    from archive.files import services  # noqa: F401 - and the job's own modules


def read_all(files: list[dict[str, Any]], read: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """Each file read once, timed per format; what each reading said, counted."""
    spent: dict[str, float] = {}
    counts: dict[str, int] = {}
    chars: dict[str, int] = {}
    states: dict[str, dict[str, int]] = {}
    for item in files:
        started = time.perf_counter()
        reading = read(item)
        label = item["format"]
        spent[label] = spent.get(label, 0.0) + time.perf_counter() - started
        counts[label] = counts.get(label, 0) + 1
        chars[label] = chars.get(label, 0) + len(reading.text)
        by_state = states.setdefault(label, {})
        by_state[str(reading.state)] = by_state.get(str(reading.state), 0) + 1
    return {"spent": spent, "counts": counts, "chars": chars, "states": states}


def peaks() -> dict[str, int]:
    import resource

    return {
        "self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024,
    }


def phase(name: str, manifest: Path) -> None:
    """One side of the comparison, in this (fresh) process; JSON on stdout."""
    job = json.loads(manifest.read_text())
    django_ready(Path(job["state"]), ocr=job["ocr"])
    from archive.files.domain import Limits

    limits = Limits()
    from archive.files.domain import TextState
    from archive.files.readers.ocr import ocr_read
    from archive.files.readers.registry import reader_for
    from archive.files.sandbox import extract

    def in_process(item: dict[str, Any]) -> Any:
        path = Path(item["path"])
        _kind, reader = reader_for(path, mime=item["mime"], name=item["name"])
        reading = reader(path, limits)
        if job["ocr"] and reading.state == TextState.NEEDS_TEXT:
            reading = ocr_read(path, mime=item["mime"], limits=limits) or reading
        return reading

    def in_sandbox(item: dict[str, Any]) -> Any:
        return extract(
            Path(item["path"]), mime=item["mime"], name=item["name"], limits=limits, ocr=job["ocr"]
        )

    read = in_sandbox if name == "sandbox" else in_process
    # The first file of each format read once untimed: a library imported once, as a
    # worker that has read files before has it (the sandbox's child imports it each time,
    # unless --preload read them in the worker first, so its children inherit them).
    # Not OCR's: tesseract is a program of its own, started for every page either way.
    warm = in_process if job.get("preload") else read
    firsts = {item["format"]: item for item in reversed(job["files"])}
    for label, item in firsts.items():
        if "OCR" not in label:
            warm(item)
    result = read_all(job["files"], read)
    print(json.dumps({**result, **peaks()}))


# --- the run ------------------------------------------------------------------------------


def run_phase(name: str, manifest: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--phase", name, str(manifest)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"the {name} phase failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(files: list[dict[str, Any]], ours: dict[str, Any], base: dict[str, Any]) -> None:
    labels = list(dict.fromkeys(item["format"] for item in files))
    width = max(len(label) for label in [*labels, "without OCR"])
    print(f"{'format':<{width}}  files  sandbox files/s  in-process files/s  ratio  states")

    def row(label: str, count: int, spent: float, plain: float, states: str = "") -> None:
        rate, baseline = count / spent, count / plain
        print(
            f"{label:<{width}}  {count:>5}  {rate:>15.1f}  {baseline:>18.1f}"
            f"  {rate / baseline:>5.2f}{'  ' + states if states else ''}"
        )

    for label in labels:
        states = ", ".join(f"{state} {n}" for state, n in sorted(ours["states"][label].items()))
        row(label, ours["counts"][label], ours["spent"][label], base["spent"][label], states)
    plain = [label for label in labels if "OCR" not in label]
    totals = [("without OCR", plain)] if plain != labels else []
    for name, chosen in [*totals, ("all", labels)]:
        row(
            name,
            sum(ours["counts"][label] for label in chosen),
            sum(ours["spent"][label] for label in chosen),
            sum(base["spent"][label] for label in chosen),
        )
    worst = max(ours["self_mb"], ours["children_mb"])
    verdict = "within" if worst <= TARGET_MB else "OVER"
    print(
        f"peak RSS: worker {ours['self_mb']} MB, largest reading child {ours['children_mb']} MB"
        f" ({verdict} the {TARGET_MB} MB target); in-process baseline {base['self_mb']} MB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=None, help="files per format (default 40)")
    parser.add_argument("--keep", type=Path, help="folder for the files (kept)")
    parser.add_argument(
        "--quick", action="store_true", help="a quick run: 5 files per format, short scans"
    )
    parser.add_argument("--no-ocr", action="store_true", help="leave out OCR's formats")
    parser.add_argument(
        "--preload",
        action="store_true",
        help="the worker imports the readers' libraries before its first child",
    )
    parser.add_argument("--phase", choices=("sandbox", "in-process"), help=argparse.SUPPRESS)
    parser.add_argument("manifest", nargs="?", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        phase(args.phase, args.manifest)
        return
    count = args.files if args.files is not None else (5 if args.quick else 40)
    ocr = not args.no_ocr and shutil.which("tesseract") is not None
    folder = args.keep or Path(tempfile.mkdtemp(prefix="wirecat-file-text-bench-"))
    try:
        (folder / "files").mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        page_lines = 12 if args.quick else 50
        files = make_files(folder / "files", count, ocr=ocr, page_lines=page_lines)
        size = sum(Path(item["path"]).stat().st_size for item in files)
        scans = f"{max(1, count // OCR_SHARE)} per OCR format" if ocr else "no OCR"
        print(
            f"input: {len(files)} files, {count} per format ({scans}),"
            f" {size / 1e6:.1f} MB, made in {time.perf_counter() - started:.1f} s"
        )
        print(
            f"text: ubuntu-irc (CC-BY-4.0), 120-200 lines a file, {page_lines} lines a scanned"
            f" page; load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        )
        print(
            "worker: "
            + (
                "the readers' libraries preloaded (--preload), inherited by each child"
                if args.preload
                else "each child imports its reader's library"
            )
        )
        manifest = folder / "manifest.json"
        manifest.write_text(
            json.dumps(
                {
                    "files": files,
                    "ocr": ocr,
                    "preload": args.preload,
                    "state": str(folder / "state"),
                }
            )
        )
        ours = run_phase("sandbox", manifest)
        base = run_phase("in-process", manifest)
        report(files, ours, base)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
