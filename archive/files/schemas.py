"""The API's shapes of the text of files: the files waiting for an agent, a file's text, and
the text an agent writes back."""

from __future__ import annotations

from typing import Annotated

from ninja import Schema
from pydantic import Field

from archive.files.services import MODEL_MAX, SOURCE_MAX, TEXT_MAX
from archive.web.schemas import At, BodyIn, Matching, Text


class StoredFileOut(Schema):
    """A stored file: its id (att_…, for `GET /api/attachments/{id}` to fetch the bytes,
    which come with their SHA-256), name, type and size, the message and chat it came
    with, and its text's `state` (null: not read yet)."""

    id: str
    file_name: str
    mime_type: str
    size: int | None
    sha256: str
    message: str  # msg_…
    sent_at: At
    chat_id: int
    chat_title: str
    state: str | None  # done | empty | needs_text | failed | too_large; null: not read yet


class StoredFilesOut(Schema):
    attachments: list[StoredFileOut]
    next_cursor: str | None  # the next page's `cursor`; null at the end


class FileTextOut(Schema):
    """A file's text: `text` (pages of a paged format separated by form feeds, "\\f"),
    its `state` (done, empty, needs_text, failed, too_large) and why (`reason`), where it
    came from (`origin` extracted or agent; the `extractor` and its version, e.g. "pypdf
    5.4.0", or "agent:<name>" / "speech:<source>" with the agent's `model`), the `pages`
    read, when it was made, and the SHA-256 of the bytes it was read from."""

    attachment: str  # att_…
    file_name: str
    mime_type: str
    message: str  # msg_…
    text: str
    state: str
    reason: str
    origin: str
    extractor: str
    model: str
    pages: int | None
    sha256: str
    made_at: At


# The text's limit is the service's: over it, 413 with a sentence (too large, not malformed).
LongText = Annotated[str, Field(json_schema_extra={"maxLength": TEXT_MAX})]


class FileTextIn(BodyIn):
    """The text the agent read from a file (a scan, a photo) or heard in it (a voice note:
    name the speech reader in `source`, e.g. whisper). `model`: the model that did it.
    Pages may be separated by form feeds ("\\f"). An empty text says the file holds none."""

    text: LongText
    model: Annotated[str, Text("model", most=MODEL_MAX)]
    source: (
        Annotated[
            str,
            Matching(
                "source",
                f"[A-Za-z0-9][A-Za-z0-9._-]{{0,{SOURCE_MAX - 1}}}",
                f"1 to {SOURCE_MAX} letters, digits, dots, dashes or underscores",
            ),
        ]
        | None
    ) = None
