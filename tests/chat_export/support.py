"""A chat with what an export must get right: hostile text and file names, a reply, an
edit, a deletion, pictures and a file, recorded through the sink."""

from __future__ import annotations

import io
import zipfile
from datetime import timedelta

from django.test import Client
from PIL import Image

from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import ACCOUNT, T0, batch, message

HOSTILE_NAMES = [
    "../../etc/passwd",
    "con",
    "CON.txt",
    "x" * 300 + ".pdf",
    "отчёт 2024 ✓.pdf",
    "a/b\\c:d*e?.txt",
    "photo.png",  # twice, with other bytes: the second is "photo (2).png"
    "PHOTO.png",
    ".hidden",
]


def png(colour: tuple[int, int, int], width: int = 320, height: int = 200) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def stored(name: str, data: bytes, mime: str, key: str) -> AttachmentRecord:
    blob = blob_put(io.BytesIO(data))
    return AttachmentRecord(
        external_id=key,
        file_name=name,
        mime_type=mime,
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )


def hostile_chat() -> Chat:
    files = tuple(
        stored(name, f"bytes of file {i}".encode(), "application/octet-stream", f"f{i}")
        for i, name in enumerate(HOSTILE_NAMES)
    )
    batch_record(
        batch=batch(
            message("1", "<script>alert(1)</script>", minutes=0),
            message("2", "answering you", minutes=1, sender="bob", reply_to_external_id="1"),
            message("3", "first words", minutes=2),
            message("4", "gone soon", minutes=3, sender="bob"),
            message("5", "the files", minutes=60 * 24, attachments=files),
            message(
                "6",
                "a picture",
                minutes=60 * 24 + 1,
                sender="me",
                direction="out",
                attachments=(
                    stored("red.png", png((200, 40, 40)), "image/png", "p1"),
                    AttachmentRecord(
                        external_id="gone", file_name="left-out.mp4", mime_type="video/mp4"
                    ),
                ),
            ),
        )
    )
    batch_record(
        batch=batch(message("3", "second words", minutes=2, edited_at=T0 + timedelta(hours=1)))
    )
    batch_record(
        batch=batch(
            deletions=(
                DeletionRecord(
                    chat_external_id="chat-1", external_id="4", deleted_at=T0 + timedelta(hours=2)
                ),
            )
        )
    )
    return Chat.objects.get(account__external_id=ACCOUNT.external_id, external_id="chat-1")


def download(client: Client, chat: Chat) -> zipfile.ZipFile:
    response = client.get(f"/chats/{chat.pk}/export/")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/zip"
    data = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return zipfile.ZipFile(io.BytesIO(data))
