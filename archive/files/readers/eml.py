"""A mail (.eml, RFC 822): the standard library's `email` with its modern policy. Its own
text (plain, or its HTML read as text) after its subject, sender, recipients and date, then
the text of each attachment (nested.py), a forwarded mail read the same way, down to
`limits.depth` levels."""

from __future__ import annotations

import tempfile
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from pathlib import Path

from archive.files.domain import Extracted, Limits
from archive.files.readers.base import finish, library, tidy
from archive.files.readers.html import html_text
from archive.files.readers.nested import attachment_text, deeper, header

LIBRARY = "python"  # the standard library's email package
_HEADERS = ("Subject", "From", "To", "Cc", "Date")


def _own_text(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return ""
    try:
        content = body.get_content()
    except (LookupError, ValueError):  # an unknown charset: read it as UTF-8
        payload = body.get_payload(decode=True)
        content = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    if not isinstance(content, str):
        return ""
    if body.get_content_subtype() == "html":
        return html_text(content)
    return tidy(content)


def message_text(message: EmailMessage, limits: Limits, folder: Path) -> tuple[str, list[str]]:
    """A mail's text and its attachments', and notes of what was left unread."""
    lines = [f"{name}: {message[name]}" for name in _HEADERS if message[name]]
    parts = ["\n".join(lines), _own_text(message)]
    notes: list[str] = []
    for number, part in enumerate(message.iter_attachments(), start=1):
        used = sum(len(p) for p in parts)
        name = part.get_filename() or f"attachment {number}"
        if limits.depth <= 0:
            parts.append(header(name, "not read: attached too deep"))
            notes.append("attachments deeper than the depth limit not read")
            continue
        if used > limits.chars:
            break
        inner = deeper(limits, used)
        if part.get_content_type() == "message/rfc822":
            forwarded = part.get_content()
            if isinstance(forwarded, EmailMessage):
                text, more = message_text(forwarded, inner, folder)
                parts.append(header(part.get_filename() or "forwarded mail") + "\n" + text)
                notes += more
            continue
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes):
            continue
        parts.append(
            attachment_text(
                data,
                name=name,
                mime=part.get_content_type(),
                limits=inner,
                folder=folder,
                number=number,
            )
        )
    return "\n\n".join(p for p in parts if p), sorted(set(notes))


def read_eml(path: Path, limits: Limits) -> Extracted:
    with path.open("rb") as handle:
        parsed: Message = BytesParser(policy=policy.default).parse(handle)
    assert isinstance(parsed, EmailMessage)  # what policy.default makes
    with tempfile.TemporaryDirectory(prefix="wirecat-mail-") as folder:
        text, notes = message_text(parsed, limits, Path(folder))
    return finish(text, limits=limits, extractor=library(LIBRARY), notes=notes)
