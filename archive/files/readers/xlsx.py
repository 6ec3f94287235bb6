"""Excel (.xlsx): openpyxl in read-only mode (rows streamed, never the whole workbook in
memory), each sheet a page ("\\f" between them), a row to a line, cells tab-separated; the
cached values of formulas, not the formulas."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from openpyxl import load_workbook

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import Parts, finish, library

LIBRARY = "openpyxl"
MAX_CELLS = 2_000_000  # cells looked at in all, empty ones included


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime.datetime) and value.time() == datetime.time():
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return " ".join(str(value).split())


def read_xlsx(path: Path, limits: Limits) -> Extracted:
    book = load_workbook(path, read_only=True, data_only=True)
    notes: list[str] = []
    pages = Parts(limits)
    cells = 0
    try:
        sheets = book.worksheets
        if len(sheets) > limits.pages:
            notes.append(f"read the first {limits.pages} of {len(sheets)} sheets")
        for sheet in sheets[: limits.pages]:
            # the dimension a file declares may be the whole grid: read the rows it holds
            if hasattr(sheet, "reset_dimensions"):
                sheet.reset_dimensions()
            rows = Parts(limits)
            for row in sheet.iter_rows(values_only=True):
                cells += max(len(row), 1)
                values = [_cell(value) for value in row]
                while values and not values[-1]:
                    values.pop()
                if values and not rows.add("\t".join(values)):
                    break
                if cells >= MAX_CELLS:
                    break
            pages.add("\n".join(rows.parts))
            if cells >= MAX_CELLS:
                notes.append(f"stopped after {MAX_CELLS:,} cells")
                break
            if pages.full:
                break
    finally:
        book.close()
    return finish(
        pages.joined("\f"),
        limits=limits,
        extractor=library(LIBRARY),
        pages=len(pages.parts),
        notes=notes,
    )
