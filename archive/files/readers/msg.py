"""An Outlook mail (.msg): extract-msg. Read like a .eml (eml.py): its subject, sender,
recipients and date, its own text (plain, else its HTML read as text), then each
attachment's text (nested.py), an embedded mail read the same way, down to `limits.depth`."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import extract_msg
from extract_msg.enums import AttachmentType

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library, tidy
from archive.files.readers.html import html_text
from archive.files.readers.nested import attachment_text, deeper, header
from archive.files.readers.text import decode

LIBRARY = "extract-msg"
_HEADERS = (("Subject", "subject"), ("From", "sender"), ("To", "to"), ("Cc", "cc"))


def _own_text(message: Any) -> str:
    body = getattr(message, "body", None)
    if isinstance(body, str) and body.strip():
        return tidy(body)
    markup = getattr(message, "htmlBody", None)
    if isinstance(markup, bytes) and markup:
        return html_text(decode(markup))
    return ""


def _name(attachment: Any, number: int) -> str:
    for field in ("longFilename", "shortFilename", "displayName", "name"):
        value = getattr(attachment, field, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return f"attachment {number}"


def message_text(message: Any, limits: Limits, folder: Path) -> tuple[str, list[str]]:
    """The .msg's text and its attachments', and notes of what was left unread."""
    lines = [
        f"{label}: {value}" for label, field in _HEADERS if (value := getattr(message, field, None))
    ]
    if getattr(message, "date", None):
        lines.append(f"Date: {message.date}")
    parts = ["\n".join(lines), _own_text(message)]
    notes: list[str] = []
    for number, attachment in enumerate(getattr(message, "attachments", []), start=1):
        used = sum(len(p) for p in parts)
        name = _name(attachment, number)
        if limits.depth <= 0:
            parts.append(header(name, "not read: attached too deep"))
            notes.append("attachments deeper than the depth limit not read")
            continue
        if used > limits.chars:
            break
        inner = deeper(limits, used)
        data = attachment.data
        if attachment.type == AttachmentType.MSG and data is not None:
            text, more = message_text(data, inner, folder)
            parts.append(header(name) + "\n" + text)
            notes += more
        elif isinstance(data, bytes):
            mime = getattr(attachment, "mimetype", None) or ""
            parts.append(
                attachment_text(
                    data, name=name, mime=mime, limits=inner, folder=folder, number=number
                )
            )
    return "\n\n".join(p for p in parts if p), sorted(set(notes))


def read_msg(path: Path, limits: Limits) -> Extracted:
    logging.getLogger("extract_msg").setLevel(logging.ERROR)  # it warns of every odd property
    message = extract_msg.openMsg(str(path))
    try:
        with tempfile.TemporaryDirectory(prefix="wirecat-mail-") as folder:
            text, notes = message_text(message, limits, Path(folder))
    finally:
        message.close()
    return finish(text, limits=limits, extractor=library(LIBRARY), notes=notes)
