"""Files of every format the readers take, made by the libraries that write them (python-docx,
fpdf2, openpyxl, python-pptx, odfpy, EbookLib, Pillow, the standard library's email), and
hostile ones made byte by byte: each function writes one file into `folder` and returns its
path. The words each file holds are in WORDS, so a test can look for them."""

from __future__ import annotations

import io
import zipfile
import zlib
from email.message import EmailMessage
from pathlib import Path

import docx
import openpyxl
from ebooklib import epub
from fpdf import FPDF
from odf.draw import Frame, Page, TextBox
from odf.opendocument import OpenDocumentPresentation, OpenDocumentSpreadsheet, OpenDocumentText
from odf.style import MasterPage, PageLayout
from odf.table import Table, TableCell, TableRow
from odf.text import H, P, S
from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.util import Inches

WORDS = {
    "docx": ["Quarterly contract between Acme and Globex", "penalty clause"],
    "pdf": ["Invoice number 2024-117", "second page bravo", "third page charlie"],
    "xlsx": ["Budget", "Travel\t1200", "Hotel\t800", "Second sheet notes"],
    "pptx": ["Roadmap review", "Launch in March", "speaker reminder"],
    "odt": ["Minutes of the board", "approved unanimously"],
    "ods": ["Inventory", "Widgets\t42", "Archive sheet"],
    "odp": ["Opening slide words", "Closing slide words"],
    "epub": ["Chapter one: the harbour", "lighthouse keeper"],
    "rtf": ["Rich text memo", "déjà vu"],
    "html": ["Newsletter heading", "Paragraph about turbines"],
    "cp1251": ["Договор аренды квартиры"],
    "latin1": ["Crème brûlée à la française"],
    "utf16": ["Überweisung für März"],
    "ics": ["Design review", "Room 4B", "Bring the prototypes"],
}


def docx_file(folder: Path, name: str = "contract.docx") -> Path:
    document = docx.Document()
    document.add_heading("Quarterly contract between Acme and Globex", level=1)
    document.add_paragraph("The penalty clause applies after thirty days.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Signed"
    table.rows[0].cells[1].text = "Yes"
    path = folder / name
    document.save(str(path))
    return path


def pdf_file(folder: Path, name: str = "invoice.pdf") -> Path:
    """Three pages with a text layer."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=14)
    for line in ("Invoice number 2024-117", "The second page bravo", "The third page charlie"):
        pdf.add_page()
        pdf.cell(text=line)
    path = folder / name
    pdf.output(str(path))
    return path


def scan_image(text: str = "SCANNED RECEIPT 4711") -> Image.Image:
    image = Image.new("RGB", (900, 300), "white")
    ImageDraw.Draw(image).text((40, 120), text, fill="black", font_size=48)
    return image


def scanned_pdf_file(folder: Path, name: str = "scan.pdf") -> Path:
    """A page that is only a picture of text: no text layer."""
    pdf = FPDF()
    pdf.add_page()
    pdf.image(scan_image(), x=10, y=10, w=180)
    path = folder / name
    pdf.output(str(path))
    return path


def xlsx_file(folder: Path, name: str = "budget.xlsx") -> Path:
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Budget"
    sheet.append(["Budget"])
    sheet.append(["Travel", 1200])
    sheet.append(["Hotel", 800])
    book.create_sheet("Notes").append(["Second sheet notes"])
    path = folder / name
    book.save(path)
    return path


def pptx_file(folder: Path, name: str = "roadmap.pptx") -> Path:
    deck = Presentation()
    for title, body, note in (
        ("Roadmap review", "Where we are", "speaker reminder: smile"),
        ("Launch", "Launch in March", ""),
    ):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if note:
            slide.notes_slide.notes_text_frame.text = note
    deck.slides[1].shapes.add_textbox(
        Inches(1), Inches(5), Inches(4), Inches(1)
    ).text = "A text box"
    path = folder / name
    deck.save(str(path))
    return path


def odt_file(folder: Path, name: str = "minutes.odt") -> Path:
    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text="Minutes of the board"))
    document.text.addElement(P(text="The budget was approved unanimously."))
    path = folder / name
    document.save(str(path))
    return path


def ods_file(folder: Path, name: str = "stock.ods") -> Path:
    document = OpenDocumentSpreadsheet()
    for title, rows in (
        ("Stock", [["Inventory"], ["Widgets", "42"]]),
        ("Old", [["Archive sheet"]]),
    ):
        table = Table(name=title)
        for values in rows:
            row = TableRow()
            for value in values:
                cell = TableCell()
                cell.addElement(P(text=value))
                row.addElement(cell)
            table.addElement(row)
        document.spreadsheet.addElement(table)
    path = folder / name
    document.save(str(path))
    return path


def odp_file(folder: Path, name: str = "deck.odp") -> Path:
    document = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    document.automaticstyles.addElement(layout)
    master = MasterPage(name="Master", pagelayoutname=layout)
    document.masterstyles.addElement(master)
    for words in ("Opening slide words", "Closing slide words"):
        page = Page(masterpagename=master)
        document.presentation.addElement(page)
        frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
        page.addElement(frame)
        box = TextBox()
        frame.addElement(box)
        box.addElement(P(text=words))
    path = folder / name
    document.save(str(path))
    return path


def epub_file(folder: Path, name: str = "harbour.epub") -> Path:
    book = epub.EpubBook()
    book.set_identifier("wirecat-test-book")
    book.set_title("The Harbour")
    book.set_language("en")
    chapters = []
    for number, (title, body) in enumerate(
        (("Chapter one: the harbour", "Boats at dawn."), ("Chapter two", "The lighthouse keeper.")),
        start=1,
    ):
        chapter = epub.EpubHtml(title=title, file_name=f"chapter{number}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{title}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    path = folder / name
    epub.write_epub(str(path), book)
    return path


def rtf_file(folder: Path, name: str = "memo.rtf") -> Path:
    path = folder / name
    path.write_bytes(
        b"{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Arial;}}\n"
        b"\\f0\\fs24 {\\b Rich text memo}\\par\n"
        b"It was d\\'e9j\\'e0 vu.\\par\n}"
    )
    return path


def html_file(folder: Path, name: str = "newsletter.html") -> Path:
    path = folder / name
    path.write_text(
        "<!doctype html><html><head><title>T</title><style>body{color:red}</style>"
        "<script>var hidden = 'scriptword';</script></head><body>"
        "<h1>Newsletter heading</h1><p>Paragraph about <b>turbines</b>.</p>"
        "<script>console.log('scriptword')</script></body></html>",
        encoding="utf-8",
    )
    return path


def encoded_text_file(folder: Path, kind: str) -> Path:
    """Plain text in Windows-1251 (Russian), Latin-1 (French) or UTF-16 (German, with BOM)."""
    text, encoding = {
        "cp1251": (
            "Договор аренды квартиры заключён между сторонами. Арендатор обязуется "
            "вносить плату ежемесячно, не позднее пятого числа каждого месяца.\n",
            "cp1251",
        ),
        "latin1": (
            "Crème brûlée à la française : la recette préférée de ma grand-mère, "
            "servie après le dîner, avec un café très chaud.\n",
            "latin-1",
        ),
        "utf16": ("Überweisung für März: die Miete und die Nebenkosten.\n", "utf-16"),
    }[kind]
    path = folder / f"{kind}.txt"
    path.write_bytes(text.encode(encoding))
    return path


def ics_file(folder: Path, name: str = "invite.ics") -> Path:
    path = folder / name
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//WireCat tests//EN\r\n"
        "BEGIN:VEVENT\r\nUID:review-1@example.com\r\nDTSTAMP:20240101T090000Z\r\n"
        "DTSTART:20240105T150000Z\r\nDTEND:20240105T160000Z\r\n"
        "SUMMARY:Design review\r\nLOCATION:Room 4B\r\n"
        "DESCRIPTION:Bring the prototypes\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n",
        encoding="utf-8",
    )
    return path


def image_file(folder: Path, name: str = "photo.jpg", fmt: str = "JPEG") -> Path:
    path = folder / name
    scan_image("WHITEBOARD").save(path, format=fmt)
    return path


def eml_file(folder: Path, name: str = "forwarded.eml") -> Path:
    """A mail whose own text is HTML, with the PDF and the DOCX attached."""
    message = EmailMessage()
    message["Subject"] = "Papers for the signing"
    message["From"] = "Alice <alice@example.com>"
    message["To"] = "Bob <bob@example.com>"
    message.set_content("Plain version of the covering note.")
    message.add_alternative(
        "<html><body><p>Please find the <i>covering note</i>.</p></body></html>", subtype="html"
    )
    for path, kind in (
        (pdf_file(folder, "attached.pdf"), ("application", "pdf")),
        (
            docx_file(folder, "attached.docx"),
            ("application", "vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ),
    ):
        message.add_attachment(
            path.read_bytes(), maintype=kind[0], subtype=kind[1], filename=path.name
        )
    path = folder / name
    path.write_bytes(bytes(message))
    return path


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF of `objects` (object 1 the catalog) with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n%s\nendstream" % (len(data), extra, data)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def spinning_pdf_file(folder: Path, pages: int = 40, operators: int = 200_000) -> Path:
    """A PDF of about 10 KB that keeps pypdf busy for minutes: every page draws the same
    compressed content stream of `operators` text operators, within each of pypdf's own
    limits (stream size, tokens per stream), so pypdf parses them all, page after page
    (about 4 s a page on this machine: 40 pages, two and a half minutes)."""
    body = b"BT /F1 12 Tf " + b"(a) Tj " * operators + b"ET"
    kids = b" ".join(b"%d 0 R" % (5 + n) for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        _stream(zlib.compress(body, 9), b"/Filter /FlateDecode"),
        _FONT,
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 3 0 R "
        b"/Resources << /Font << /F1 4 0 R >> >> >>"
    ] * pages
    path = folder / "spinning.pdf"
    path.write_bytes(pdf_bytes(objects))
    return path


def deep_pdf_file(folder: Path, depth: int = 200_000) -> Path:
    """A page whose content nests arrays `depth` deep: pypdf recurses into them."""
    content = b"BT /F1 12 Tf 10 10 Td (deep) Tj ET " + b"[" * depth + b"]" * depth + b" TJ"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        _stream(content),
        _FONT,
    ]
    path = folder / "deep.pdf"
    path.write_bytes(pdf_bytes(objects))
    return path


def cyclic_pdf_file(folder: Path) -> Path:
    """/Pages whose /Kids is itself."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>",
    ]
    path = folder / "cyclic.pdf"
    path.write_bytes(pdf_bytes(objects))
    return path


def docx_bomb_file(folder: Path, inflated: int = 300 << 20) -> Path:
    """A DOCX made by python-docx whose word/document.xml is replaced by one paragraph of
    `inflated` repeated bytes: about 300 KB on disk."""
    plain = docx_file(folder, "plain-for-bomb.docx")
    path = folder / "bomb.docx"
    chunk = b"A" * (1 << 20)
    with (
        zipfile.ZipFile(plain) as source,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as target,
    ):
        for info in source.infolist():
            if info.filename != "word/document.xml":
                target.writestr(info, source.read(info))
                continue
            with target.open("word/document.xml", "w", force_zip64=True) as member:
                member.write(
                    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/'
                    b'2006/main"><w:body><w:p><w:r><w:t>'
                )
                for _ in range(inflated // len(chunk)):
                    member.write(chunk)
                member.write(b"</w:t></w:r></w:p></w:body></w:document>")
    plain.unlink()
    return path


def broken_docx_file(folder: Path) -> Path:
    """A zip that says it is Word ([Content_Types].xml) but holds no document."""
    path = folder / "broken.docx"
    with zipfile.ZipFile(path, "w") as target:
        target.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
    return path


def odt_spaces_bomb_file(folder: Path, spaces: int = 2_000_000_000) -> Path:
    """An ODT made by odfpy whose one paragraph says "`spaces` spaces here" (<text:s
    text:c=…/>): odfpy writes the spaces out, a few KB becoming gigabytes."""
    document = OpenDocumentText()
    paragraph = P(text="Before the spaces")
    paragraph.addElement(S(c=spaces))
    document.text.addElement(paragraph)
    path = folder / "spaces.odt"
    document.save(str(path))
    return path
