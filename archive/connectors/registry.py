"""Every export reader, found by looking for `READER` in this package's modules."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import archive.connectors as package
from archive.connectors.base import ExportReader
from wirecat.errors import Invalid

# Modules with no export reader: the ports, and the live connectors (found by live.py).
# Skipping them keeps an import's process from loading their libraries (Telethon: 41 MB).
_NOT_READERS = {
    "base",
    "registry",
    "sending",
    "live",
    "http",
    "discord_bot",
    "imap",
    "imessage_live",
    "max_bot",
    "telegram_bot",
    "telegram_user",
}


def readers() -> list[ExportReader]:
    found: list[ExportReader] = []
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module.name in _NOT_READERS or module.name.startswith("_"):
            continue
        reader = getattr(
            importlib.import_module(f"{package.__name__}.{module.name}"), "READER", None
        )
        if reader is not None:
            found.append(reader)
    return found


def formats() -> dict[str, str]:
    """Format name → what the owner calls it."""
    return {reader.format: reader.label for reader in readers()}


def accepted() -> str:
    return "; ".join(f"{name} ({label})" for name, label in formats().items())


def reader_for(path: Path, format_name: str | None = None) -> ExportReader:
    """The reader named by `format_name`, or the one whose format `path`'s content is."""
    if not path.exists():
        raise Invalid(f"{path}: no such file or folder")
    if format_name:
        for reader in readers():
            if reader.format == format_name:
                return reader
        raise Invalid(f"unknown format {format_name!r}; accepted: {', '.join(formats())}")
    for reader in readers():
        if reader.detect(path):
            return reader
    raise Invalid(f"{path.name}: not an export WireCat can read. Accepted: {accepted()}")
