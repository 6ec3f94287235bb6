"""A chat's export drawn: templates/archive/chat_export.html in pieces, each message from
the same content the chat page draws (archive/templatetags/wirecat_messages.py), its media
linked into the zip's media/ folder; archive/store/chat_export.py writes the zip. The chat
page's "Export this chat" and `wirecat export_chat` both send what `chat_export_zip` yields.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from archive.connectors.registry import text_markup
from archive.store.chat_export import ExportBatch, ExportSummary, chat_zip
from archive.store.models import Chat
from archive.store.selectors import AVATAR_COLOURS, MessageRow, initial
from archive.templatetags.wirecat_messages import AttachmentView, content_context


def chat_export_zip(chat: Chat) -> Iterator[bytes]:
    """The zip of `chat` (its page and its media), in pieces as they are written."""

    def html(batches: Iterator[ExportBatch], summary: ExportSummary) -> Iterator[str]:
        return export_html(chat, batches, summary)

    return chat_zip(chat=chat, html=html)


@dataclass(frozen=True)
class _ExportedFile:
    view: AttachmentView
    href: str  # "media/<name>", quoted; "" when the bytes are not in the export


def export_html(
    chat: Chat, batches: Iterator[ExportBatch], summary: ExportSummary
) -> Iterator[str]:
    """templates/archive/chat_export.html in pieces: its head, each batch of messages
    (drawn from the same content as on the chat page), its foot."""
    markup = text_markup(chat.account.provider)
    context: dict[str, Any] = {
        "chat": chat,
        "title": chat.title or chat.external_id,
        "summary": summary,
        "chat_initial": initial(chat.title or chat.external_id),
        "chat_colour": chat.pk % AVATAR_COLOURS,
        "exported_at": timezone.now(),
        "time_zone": timezone.get_current_timezone_name(),
        "style": _export_style(),
    }
    yield render_to_string("archive/chat_export.html#head", context)
    for batch in batches:
        items = [_export_item(row, batch, markup) for row in batch.rows]
        yield render_to_string("archive/chat_export.html#rows", {**context, "items": items})
    yield render_to_string("archive/chat_export.html#foot", context)


@functools.cache
def _export_style() -> SafeString:
    """The export's stylesheet as the page's own <style> (the page is opened from disk,
    where it can fetch nothing)."""
    found = finders.find("wirecat/chat-export.css")
    css = Path(str(found)).read_text(encoding="utf-8")
    return format_html("<style>\n{}</style>", mark_safe(css))  # noqa: S308 - our own file


def _export_item(row: MessageRow, batch: ExportBatch, markup: str) -> dict[str, Any]:
    parts = content_context(row.message, markup=markup)
    files = []
    for view in parts["attachments"]:
        name = batch.media.get(view.attachment.pk)
        files.append(_ExportedFile(view=view, href=f"media/{quote(name)}" if name else ""))
    extras = ("forwarded", "mail", "quoted", "stickers", "embeds", "poll", "place", "contact")
    return {
        **parts,
        "row": row,
        "files": files,
        "revisions": batch.revisions.get(row.message.pk, []),
        "extras": any(parts[key] for key in extras),  # the template skips them in one test
    }
