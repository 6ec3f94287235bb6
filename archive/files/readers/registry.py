"""Which reader reads a file: by its first bytes (magic) first, then the type it was sent
with, then its name's extension; so a JPEG named invoice.pdf is read as an image. Zip-based
formats are told apart by their inner files (an ODF's or EPUB's `mimetype` entry, an Office
file's [Content_Types].xml), OLE2 files (.doc, .msg, old Excel) by their streams (olefile,
what extract-msg reads .msg with).

Runs in the sandbox's child (it opens the file). A reader's module is imported only when its
kind is asked for, so the child loads one library, not all of them."""

from __future__ import annotations

import functools
import importlib
import re
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePath

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import library, no_reader

Reader = Callable[[Path, Limits], Extracted]

_MODULE = "archive.files.readers"
# kind -> (module, function, the library whose name and version the `extractor` field says)
KINDS: dict[str, tuple[str, str, str]] = {
    "text": ("text", "read_text", "charset-normalizer"),
    "html": ("html", "read_html", "selectolax"),
    "rtf": ("rtf", "read_rtf", "striprtf"),
    "docx": ("docx", "read_docx", "mammoth"),
    "xlsx": ("xlsx", "read_xlsx", "openpyxl"),
    "pptx": ("pptx", "read_pptx", "python-pptx"),
    "odf": ("odf", "read_odf", "odfpy"),
    "epub": ("epub", "read_epub", "EbookLib"),
    "pdf": ("pdf", "read_pdf", "pypdf"),
    "eml": ("eml", "read_eml", "python"),
    "msg": ("msg", "read_msg", "extract-msg"),
    "ics": ("ics", "read_ics", "icalendar"),
    "image": ("media", "read_image", ""),
    "audio": ("media", "read_audio", ""),
    "video": ("media", "read_video", ""),
    "doc": ("doc", "read_doc", ""),
}

# kind -> what its extractor field says ("pypdf 7.1.1"); kinds read by no library (an image
# waiting for OCR or an agent) are not here
READERS: dict[str, str] = {kind: library(lib) for kind, (_m, _f, lib) in KINDS.items() if lib}

_MIMES: dict[str, str] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/rtf": "rtf",
    "application/rtf": "rtf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.template": "docx",
    "application/vnd.ms-word.document.macroenabled.12": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.presentationml.slideshow": "pptx",
    "application/vnd.ms-powerpoint.presentation.macroenabled.12": "pptx",
    "application/vnd.oasis.opendocument.text": "odf",
    "application/vnd.oasis.opendocument.spreadsheet": "odf",
    "application/vnd.oasis.opendocument.presentation": "odf",
    "application/epub+zip": "epub",
    "application/pdf": "pdf",
    "message/rfc822": "eml",
    "application/vnd.ms-outlook": "msg",
    "text/calendar": "ics",
    "application/ics": "ics",
    "application/msword": "doc",
    "application/json": "text",
    "application/xml": "text",
    "application/x-subrip": "text",
}
_EXTENSIONS: dict[str, str] = {
    **dict.fromkeys(
        (
            "txt",
            "text",
            "md",
            "markdown",
            "csv",
            "tsv",
            "log",
            "json",
            "xml",
            "yaml",
            "yml",
            "srt",
            "vtt",
            "ini",
            "cfg",
            "conf",
        ),
        "text",
    ),
    **dict.fromkeys(("htm", "html", "xhtml"), "html"),
    "rtf": "rtf",
    **dict.fromkeys(("docx", "docm", "dotx", "dotm"), "docx"),
    **dict.fromkeys(("xlsx", "xlsm", "xltx", "xltm"), "xlsx"),
    **dict.fromkeys(("pptx", "pptm", "ppsx", "ppsm", "potx"), "pptx"),
    **dict.fromkeys(("odt", "ods", "odp", "ott", "ots", "otp"), "odf"),
    "epub": "epub",
    "pdf": "pdf",
    "eml": "eml",
    "msg": "msg",
    **dict.fromkeys(("ics", "ical", "ifb", "vcs"), "ics"),
    **dict.fromkeys(
        ("jpg", "jpeg", "jpe", "png", "gif", "webp", "heic", "heif", "avif", "bmp", "tif", "tiff"),
        "image",
    ),
    **dict.fromkeys(
        ("ogg", "oga", "opus", "mp3", "m4a", "aac", "wav", "amr", "caf", "flac", "wma", "weba"),
        "audio",
    ),
    **dict.fromkeys(("mp4", "m4v", "mov", "webm", "mkv", "avi", "3gp", "wmv"), "video"),
    "doc": "doc",
}

_HEAD = 8192
_ZIP = b"PK\x03\x04"
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_IMAGES = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"II*\x00", b"MM\x00*")
_AUDIO = (b"OggS", b"ID3", b"fLaC", b"#!AMR", b"caff", b"\xff\xf1", b"\xff\xf9", b"\xff\xfb")
_OOXML_MAIN = (
    (re.compile(rb"(wordprocessingml|ms-word)[\w.-]*\.main\+xml", re.I), "docx"),
    (re.compile(rb"(spreadsheetml|ms-excel)[\w.-]*\.main\+xml", re.I), "xlsx"),
    (re.compile(rb"(presentationml|ms-powerpoint)[\w.-]*\.main\+xml", re.I), "pptx"),
)
# A mail saved without a name or type starts with one of its usual headers.
_MAIL_START = re.compile(
    rb"(return-path|received|delivered-to|message-id|mime-version|from|date|subject|to)"
    rb":[ \t]",
)
_OOXML_PARTS = (
    ("word/document.xml", "docx"),
    ("xl/workbook.xml", "xlsx"),
    ("ppt/presentation.xml", "pptx"),
)


def _by_magic(path: Path, head: bytes) -> tuple[str | None, str]:
    """(kind, "") when the first bytes name a format WireCat reads; (None, what the file is)
    when they name one it does not (a zip of something else); (None, "") when they say
    nothing (text, most likely)."""
    if b"%PDF-" in head[:1024]:
        return "pdf", ""
    if head.startswith(b"{\\rtf"):
        return "rtf", ""
    if head.startswith(_IMAGES) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP"):
        return "image", ""
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"heic", b"heix", b"mif1", b"msf1", b"avif"):
            return "image", ""
        return ("audio" if brand in (b"M4A ", b"M4B ") else "video"), ""
    if head.startswith(_AUDIO) or (head[:4] == b"RIFF" and head[8:12] == b"WAVE"):
        return "audio", ""
    if head.startswith(b"\x1a\x45\xdf\xa3") or (head[:4] == b"RIFF" and head[8:12] == b"AVI "):
        return "video", ""
    if head.startswith(_ZIP):
        return _zip_kind(path)
    if head.startswith(_OLE2):
        return _ole_kind(path)
    return None, ""


def _zip_kind(path: Path) -> tuple[str | None, str]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                with archive.open("mimetype") as member:
                    declared = member.read(100).decode("ascii", "replace").strip()
                if declared == "application/epub+zip":
                    return "epub", ""
                if declared.startswith("application/vnd.oasis.opendocument."):
                    kind = declared.rsplit(".", 1)[-1].removesuffix("-template")
                    if kind in ("text", "spreadsheet", "presentation"):
                        return "odf", ""
                    return None, declared
            if "[Content_Types].xml" in names:
                with archive.open("[Content_Types].xml") as member:
                    types = member.read(1 << 20)
                for pattern, kind in _OOXML_MAIN:
                    if pattern.search(types):
                        return kind, ""
                for part, kind in _OOXML_PARTS:
                    if part in names:
                        return kind, ""
    except (zipfile.BadZipFile, OSError, KeyError):
        pass
    return None, "a zip archive"


def _ole_kind(path: Path) -> tuple[str | None, str]:
    import olefile  # extract-msg's own OLE2 reader

    try:
        with olefile.OleFileIO(str(path)) as ole:
            if ole.exists("WordDocument"):
                return "doc", ""
            if ole.exists("__properties_version1.0"):
                return "msg", ""
            if ole.exists("Workbook") or ole.exists("Book"):
                return None, "a legacy Excel .xls"
            if ole.exists("PowerPoint Document"):
                return None, "a legacy PowerPoint .ppt"
    except OSError:
        pass
    return None, "an OLE2 file"


def _by_content(head: bytes) -> str | None:
    """What text-like content says of itself, when neither its type nor its name did."""
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:64].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "html"
    if start.startswith(b"begin:vcalendar"):
        return "ics"
    if _MAIL_START.match(start):
        return "eml"
    if b"\x00" in head:
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the head
            return None
    return "text"


def kind_of(path: Path, *, mime: str, name: str) -> tuple[str | None, str]:
    """(kind, "") of the file at `path`, or (None, what it is) when no reader takes it."""
    with path.open("rb") as handle:
        head = handle.read(_HEAD)
    kind, what = _by_magic(path, head)
    if kind is not None:
        return kind, ""
    declared = mime.split(";", 1)[0].strip().lower()
    extension = PurePath(name or path.name).suffix.lower().lstrip(".")
    found = _MIMES.get(declared) or _EXTENSIONS.get(extension)
    if found is None and declared:
        family = declared.split("/", 1)[0]
        found = {"image": "image", "audio": "audio", "video": "video"}.get(family)
        if family == "text" and not what:
            found = "text"
    if found is None and not what:
        found = _by_content(head)
    if found is not None:
        return found, ""
    if not what:
        informative = declared and declared != "application/octet-stream"
        what = declared if informative else (f".{extension} files" if extension else "this file")
    return None, what


def reader_for(path: Path, *, mime: str, name: str) -> tuple[str, Reader]:
    """(kind, the function that reads it) for the file at `path`, sent as `mime` and called
    `name`. A file no reader takes is kind "none", read as empty with the reason saying what
    it is."""
    kind, what = kind_of(path, mime=mime, name=name)
    if kind is None:
        return "none", functools.partial(_none, what=what)
    module, function, _library = KINDS[kind]
    found: Reader = getattr(importlib.import_module(f"{_MODULE}.{module}"), function)
    return kind, found


def _none(path: Path, limits: Limits, *, what: str) -> Extracted:
    return no_reader(what)
