"""Legacy Word (.doc, the binary format of Word 97-2003): no local reader.

There is no well-kept Python reader of the format: antiword and catdoc, the command-line
readers, are unmaintained (their last releases are a decade and more old), and converting
through LibreOffice would bring a whole office suite into the worker. So a .doc waits for
the owner's agent (`needs_text`), which can read it with whatever it has."""

from __future__ import annotations

from pathlib import Path

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import needs_text

REASON = "a legacy Word .doc: no well-kept local reader; an agent can read it"


def read_doc(path: Path, limits: Limits) -> Extracted:
    return needs_text(REASON)
