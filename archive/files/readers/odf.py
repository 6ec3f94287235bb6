"""OpenDocument text, spreadsheet and presentation (.odt, .ods, .odp): odfpy. A text's
paragraphs and headings in order; a spreadsheet's tables and a presentation's slides each a
page ("\\f" between them), a spreadsheet's cells tab-separated. Repeated rows and cells are
read once (their repeat counts are not expanded)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from odf import teletype
from odf.namespaces import DRAWNS, TABLENS, TEXTNS
from odf.opendocument import load

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import Parts, finish, library, tidy

LIBRARY = "odfpy"

_PARAGRAPHS = {(TEXTNS, "p"), (TEXTNS, "h")}
_TABLE = (TABLENS, "table")
_ROW = (TABLENS, "table-row")
_CELL = (TABLENS, "table-cell")
_SLIDE = (DRAWNS, "page")


def _elements(node: Any) -> Iterator[Any]:
    for child in node.childNodes:
        if child.nodeType == child.ELEMENT_NODE:
            yield child


def _paragraphs(node: Any) -> Iterator[str]:
    """The text of every paragraph and heading under `node`, in order."""
    for child in _elements(node):
        if child.qname in _PARAGRAPHS:
            yield teletype.extractText(child)
        else:
            yield from _paragraphs(child)


def _rows(table: Any) -> Iterator[str]:
    for node in _elements(table):
        if node.qname == _ROW:
            cells = [
                " ".join("\n".join(_paragraphs(cell)).split())
                for cell in _elements(node)
                if cell.qname == _CELL
            ]
            while cells and not cells[-1]:
                cells.pop()
            if cells:
                yield "\t".join(cells)
        else:  # row groups, header rows
            yield from _rows(node)


def _pages(node: Any, qname: tuple[str, str]) -> Iterator[Any]:
    for child in _elements(node):
        if child.qname == qname:
            yield child
        else:
            yield from _pages(child, qname)


def read_odf(path: Path, limits: Limits) -> Extracted:
    document = load(str(path))
    kind = str(document.mimetype)
    notes: list[str] = []
    pages = Parts(limits)
    sheet = "opendocument.spreadsheet" in kind
    if sheet or "opendocument.presentation" in kind:
        found = list(_pages(document.body, _TABLE if sheet else _SLIDE))
        if len(found) > limits.pages:
            what = "sheets" if sheet else "slides"
            notes.append(f"read the first {limits.pages} of {len(found)} {what}")
        for page in found[: limits.pages]:
            text = "\n".join(_rows(page)) if sheet else tidy("\n".join(_paragraphs(page)))
            if not pages.add(text):
                break
        return finish(
            pages.joined("\f"),
            limits=limits,
            extractor=library(LIBRARY),
            pages=len(pages.parts),
            notes=notes,
        )
    for paragraph in _paragraphs(document.body):
        if not pages.add(paragraph):
            break
    return finish(tidy(pages.joined("\n")), limits=limits, extractor=library(LIBRARY))
