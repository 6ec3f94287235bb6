"""Every export reader WireCat has, named in one table and imported when needed."""

from __future__ import annotations

import importlib
from pathlib import Path

from archive.connectors.base import ExportReader
from wirecat.errors import Invalid

# Every export format WireCat reads: name -> (what the owner calls it, the module whose
# READER reads it). A module is imported only when its reader is needed, so an import's
# process never loads a live connector's library (Telethon: 41 MB).
EXPORT_FORMATS: dict[str, tuple[str, str]] = {
    "discord": ("DiscordChatExporter JSON export", "archive.connectors.discord.export"),
    "imessage": (
        "Apple Messages chat.db (macOS or iOS backup sms.db)",
        "archive.connectors.imessage.export",
    ),
    "mail": ("Mail (mbox, Maildir, .eml)", "archive.connectors.mail.export"),
    "slack": ("Slack workspace export (folder or zip)", "archive.connectors.slack.export"),
    "telegram": (
        "Telegram Desktop export (result.json or its folder)",
        "archive.connectors.telegram.export",
    ),
    "whatsapp": ("WhatsApp chat export (.txt or .zip)", "archive.connectors.whatsapp.export"),
}

# How each provider's stored message text marks its formatting, for the pages that draw it
# (archive/web/formatting.py knows each kind by this name; only this table knows providers).
TEXT_MARKUP: dict[str, str] = {
    "discord": "markdown",
    "slack": "mrkdwn",
    "telegram": "entities",
    "whatsapp": "mrkdwn",
}


def text_markup(provider: str) -> str:
    """The markup of `provider`'s message text ("plain" when it marks none)."""
    return TEXT_MARKUP.get(provider, "plain")


def reader(name: str) -> ExportReader:
    """The reader of format `name` (its module imported now)."""
    _label, module = EXPORT_FORMATS[name]
    found: ExportReader = importlib.import_module(module).READER
    return found


def readers() -> list[ExportReader]:
    return [reader(name) for name in EXPORT_FORMATS]


def formats() -> dict[str, str]:
    """Format name → what the owner calls it."""
    return {name: label for name, (label, _module) in EXPORT_FORMATS.items()}


def accepted() -> str:
    return "; ".join(f"{name} ({label})" for name, label in formats().items())


def reader_for(path: Path, format_name: str | None = None) -> ExportReader:
    """The reader named by `format_name`, or the one whose format `path`'s content is."""
    if not path.exists():
        raise Invalid(f"{path}: no such file or folder")
    if format_name:
        if format_name in EXPORT_FORMATS:
            return reader(format_name)
        raise Invalid(f"unknown format {format_name!r}; accepted: {', '.join(formats())}")
    for candidate in readers():
        if candidate.detect(path):
            return candidate
    raise Invalid(f"{path.name}: not an export WireCat can read. Accepted: {accepted()}")
