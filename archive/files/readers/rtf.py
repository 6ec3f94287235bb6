"""RTF: striprtf drops the control words and decodes the escapes in the code page the file
names (\\ansicpgN), Windows-1252 when it names none."""

from __future__ import annotations

from pathlib import Path

from striprtf.striprtf import rtf_to_text

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library, tidy

LIBRARY = "striprtf"


def read_rtf(path: Path, limits: Limits) -> Extracted:
    # RTF itself is 7-bit: what is not ASCII comes as escapes, decoded by striprtf
    source = path.read_bytes().decode("latin-1")
    text = rtf_to_text(source, encoding="cp1252", errors="replace")
    return finish(tidy(text), limits=limits, extractor=library(LIBRARY))
