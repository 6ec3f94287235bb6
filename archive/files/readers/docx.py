"""Word (.docx): mammoth's raw text, a paragraph to a line (tables, lists and text boxes
included; no formatting)."""

from __future__ import annotations

from pathlib import Path

import mammoth

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library, tidy

LIBRARY = "mammoth"


def read_docx(path: Path, limits: Limits) -> Extracted:
    with path.open("rb") as handle:
        text = mammoth.extract_raw_text(handle).value
    return finish(tidy(text), limits=limits, extractor=library(LIBRARY))
