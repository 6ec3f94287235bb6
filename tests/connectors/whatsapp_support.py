"""Shared by the WhatsApp export tests: the fixture exports, and helpers to write chat texts
and zips and to read back what was imported."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from archive.imports.models import ImportJob, ImportStatus
from archive.store.models import Chat, Message
from tests.connectors.conftest import FIXTURES

Run = Callable[..., ImportJob]
HERE = FIXTURES / "whatsapp"
ANDROID = HERE / "WhatsApp Chat with Hiking Club.txt"
IOS = HERE / "ios_familie_chat.txt"
PHOTO = b"\xff\xd8\xff\xe0\x00\x10JFIF fake photo bytes " + bytes(range(256))
LRM = "\u200e"


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def author(message: Message) -> str | None:
    return message.sender.external_id if message.sender else None


def messages(chat: Chat | None = None) -> list[Message]:
    found = Message.objects.select_related("sender", "chat").order_by("sent_at", "id")
    return list(found.filter(chat=chat) if chat else found)


def write(folder: Path, name: str, lines: list[str], *, newline: str = "\n") -> Path:
    path = folder / name
    path.write_bytes(newline.join(lines).encode() + newline.encode())
    return path


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (2022, 1, 3, 18, 0, 0)), data)
    return path


def done(job: ImportJob) -> ImportJob:
    assert job.status == ImportStatus.DONE, job.errors
    return job
