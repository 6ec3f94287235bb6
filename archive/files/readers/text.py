"""Plain text in whatever encoding it came: charset-normalizer tells UTF-8 from UTF-16 (by
its BOM), Windows-1251, Latin-1 and the rest."""

from __future__ import annotations

from pathlib import Path

from charset_normalizer import from_bytes

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library

LIBRARY = "charset-normalizer"
# When several encodings read the bytes equally well (French in Windows-1252 reads as
# well in Windows-1250: "Crème" or "Crčme"), the one most text is written in wins.
_COMMON = ("utf_8", "ascii", "cp1252", "latin_1", "iso8859_15")


def decode(data: bytes) -> str:
    """`data` as text in the encoding it most likely is (undecodable bytes replaced)."""
    if not data:
        return ""
    matches = list(from_bytes(data))
    if not matches:
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    best = matches[0]
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    for encoding in _COMMON:
        found = next((m for m in tied if m.encoding == encoding), None)
        if found is not None:
            best = found
            break
    text = str(best)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(path: Path, limits: Limits) -> Extracted:
    most = limits.chars * 4 + 4  # no encoding spends more than four bytes on a character
    with path.open("rb") as handle:
        data = handle.read(most + 1)
    notes = []
    if len(data) > most:
        data = data[:most]
        notes.append(f"read the first {most:,} bytes")
    return finish(decode(data), limits=limits, extractor=library(LIBRARY), notes=notes)
