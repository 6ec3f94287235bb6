"""A message's content on a page: its text (formatted), its media and, for mail, its card.

`{% message_content m %}` renders what goes inside a message's bubble: the chat page, a
search hit's context and a permalink all show a message the same way. The chat page's
layout (who, when, grouping, the actions menu) is the page's; this is only the content.
`{% message_preview m 140 %}` is the same message as one line of plain text (a reply's
quote of its parent).

It reads only what is on the message row and its prefetched attachments. The provider,
which says how the text marks its formatting (archive/connectors/registry.py), comes
from the message's chat when it was read with it, else from a `chat` in the template's
context, else from one query per chat per page (cached for the rest of the render).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import unescape
from typing import Any

from django import template
from django.template.loader import render_to_string
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from archive.connectors.registry import text_markup
from archive.files.models import AttachmentText
from archive.store import rendering
from archive.store.models import Attachment, Chat, Message
from archive.web.formatting import message_html, plain_html

register = template.Library()

_PROVIDERS = "wirecat_messages.providers"


@dataclass(frozen=True)
class AttachmentView:
    """An attachment as the page draws it."""

    attachment: Attachment
    kind: rendering.MediaKind
    stored: bool
    badge: str
    note: str  # why it is not stored ("" when it is)
    emoji: str  # a sticker's emoji
    duration: str
    spoiler: bool
    # The file's text row when it was read with the attachment (the chat page's window);
    # `text_known` False: not read with it, so no badge (never a query per attachment).
    text: AttachmentText | None = None
    text_known: bool = False

    @property
    def thumbnail(self) -> bool:
        """A picture the archive can draw a thumbnail of."""
        return self.stored and self.kind in ("image", "sticker") and _raster(self.attachment)

    @property
    def label(self) -> str:
        if self.attachment.file_name:
            return self.attachment.file_name
        named = {"image": "Photo", "audio": "Audio", "video": "Video", "sticker": "Sticker"}
        # No name and no type: what an export says of media it left out ("<Media omitted>").
        return named.get(self.kind, "File" if self.attachment.mime_type else "Media")


def _raster(attachment: Attachment) -> bool:
    mime = (attachment.mime_type or "").lower()
    return mime.startswith("image/") and not mime.startswith("image/svg")


def attachment_view(attachment: Attachment) -> AttachmentView:
    metadata = attachment.provider_metadata or {}
    kind = rendering.media_kind(attachment.mime_type, metadata)
    stored = bool(attachment.path)
    # Whether the page read the text rows with the attachments (never a query here).
    text_known = "text_row" in attachment._state.fields_cache
    return AttachmentView(
        attachment=attachment,
        kind=kind,
        stored=stored,
        badge=rendering.file_badge(attachment.file_name, attachment.mime_type),
        note="" if stored else rendering.media_note(metadata),
        emoji=rendering.text_of(metadata.get("sticker_emoji"), 16),
        duration=rendering.duration(metadata),
        spoiler=bool(metadata.get("media_spoiler"))
        or (attachment.file_name or "").upper().startswith("SPOILER_"),
        text=getattr(attachment, "text_row", None) if text_known else None,
        text_known=text_known,
    )


def _provider(context: template.Context, message: Message) -> str:
    if Message.chat.is_cached(message):
        chat = message.chat
        if Chat.account.is_cached(chat):
            return chat.account.provider
    page_chat = context.get("chat")
    if (
        isinstance(page_chat, Chat)
        and page_chat.pk == message.chat_id
        and Chat.account.is_cached(page_chat)
    ):
        return page_chat.account.provider
    known: dict[int, str] = context.render_context.get(_PROVIDERS) or {}
    if message.chat_id not in known:
        found = (
            Chat.objects.filter(pk=message.chat_id)
            .values_list("account__provider", flat=True)
            .first()
        )
        known[message.chat_id] = found or ""
        context.render_context[_PROVIDERS] = known
    return known[message.chat_id]


def content_context(message: Message, *, markup: str) -> dict[str, Any]:
    """What _message_content.html draws for `message` whose text is written in `markup`."""
    metadata = message.provider_metadata if isinstance(message.provider_metadata, dict) else {}
    text = message.text or ""
    mail = rendering.mail_header(metadata)
    quoted: SafeString | None = None
    if message.kind == "service":
        body = plain_html(text) if text.strip() else None
    elif mail is not None:
        parts = rendering.mail_split(text)
        body = plain_html(parts.new) if parts.new.strip() else None
        quoted = plain_html(parts.quoted) if parts.quoted.strip() else None
    else:
        body = message_html(text, markup=markup, metadata=metadata) if text.strip() else None
    attachments = [attachment_view(a) for a in message.attachments.all()]
    # A sticker the message's attachments already show is not shown twice.
    has_sticker = any(a.kind == "sticker" for a in attachments)
    stickers = [] if has_sticker else rendering.stickers(metadata)
    embeds = rendering.embeds(metadata)
    poll = rendering.poll(metadata)
    place = rendering.place(metadata)
    contact = rendering.contact(metadata)
    return {
        "m": message,
        "service": message.kind == "service",
        "body": body,
        "mail": mail,
        "quoted": quoted,
        "forwarded": rendering.forwarded_from(metadata),
        "stickers": stickers,
        "embeds": embeds,
        "poll": poll,
        "place": place,
        "contact": contact,
        "attachments": attachments,
        "empty": not (body or quoted or attachments or stickers or embeds or poll)
        and not (place or contact),
    }


@register.simple_tag(takes_context=True)
def message_content(context: template.Context, message: Message) -> SafeString:
    """The content of `message` (read with its attachments prefetched): its formatted
    text, or for an e-mail its card; its stickers, link cards, poll and media."""
    markup = text_markup(_provider(context, message))
    return mark_safe(  # noqa: S308 - a template with autoescape on; HTML parts through nh3
        render_to_string("archive/_message_content.html", content_context(message, markup=markup))
    )


def preview_text(message: Message, *, markup: str, limit: int = 140) -> str:
    """`message` in one short line of plain text: its text without markup (an e-mail's
    new text only), else what it holds ("Sticker 👍", "Photo", a file's name, a link's
    title)."""
    metadata = message.provider_metadata if isinstance(message.provider_metadata, dict) else {}
    text = message.text or ""
    if rendering.mail_header(metadata) is not None:
        text = rendering.mail_split(text).new
    elif text.strip() and message.kind != "service":
        html = message_html(text[: limit * 8], markup=markup, metadata=metadata)
        text = unescape(strip_tags(html.replace("<br>", " ")))
    text = " ".join(text.split())
    if not text:
        found = rendering.stickers(metadata)
        # Only attachments read with the message: a preview never costs a query of its own.
        prefetched = getattr(message, "_prefetched_objects_cache", {}).get("attachments")
        attachments = [attachment_view(a) for a in prefetched or []]
        if found or any(a.kind == "sticker" for a in attachments):
            emoji = next((s.emoji for s in found if s.emoji), "") or next(
                (a.emoji for a in attachments if a.emoji), ""
            )
            text = f"Sticker {emoji}".strip()
        elif attachments:
            text = ", ".join(a.label for a in attachments[:3])
        elif embeds := rendering.embeds(metadata):
            text = embeds[0].title or embeds[0].url
        elif prefetched is None and message.kind != "service":
            text = "Media"
    return Truncator(text).chars(limit)


@register.simple_tag(takes_context=True)
def message_preview(context: template.Context, message: Message | None, limit: int = 140) -> str:
    """`{% message_preview m.reply_to 140 %}`: a reply's quote of its parent, plain text
    (escaped by the template), at most `limit` characters; "" for no message."""
    if message is None:
        return ""
    return preview_text(message, markup=text_markup(_provider(context, message)), limit=limit)
