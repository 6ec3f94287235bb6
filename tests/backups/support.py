"""What the backup tests share: a small store with messages, blobs and notes, and a way
to read another store file through Django's own connection."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connections

from archive.backups.services.parts import store_counts, store_open
from archive.search.selectors import message_search
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.factories import batch, message

QUERIES = ("fox", "boiler OR plumber", "invoice", "from:bob dog")


def store_fill() -> list[bytes]:
    """Messages (two with files), notes; returns the files' bytes."""
    files = [b"%PDF-1.4 the invoice for March\n" * 40, b"\x89PNG not really a picture" * 30]
    stored = [blob_put(io.BytesIO(data)) for data in files]
    attachments = [
        AttachmentRecord(
            external_id=f"a{n}", file_name=name, sha256=s.sha256, size=s.size, blob_path=s.path
        )
        for n, (name, s) in enumerate(zip(("invoice.pdf", "photo.png"), stored, strict=True))
    ]
    batch_record(
        batch=batch(
            message("1", "the quick brown fox jumps", attachments=(attachments[0],)),
            message("2", "over the lazy dog", sender="bob", minutes=1),
            message("3", "the plumber fixed the old boiler", minutes=2),
            message(
                "4", "here is the invoice", sender="bob", minutes=3, attachments=(attachments[1],)
            ),
            message("5", "a fox again, in another chat", chat="chat-2", minutes=4),
        )
    )
    note_create(title="Boiler", body="Joe the plumber knows the old boiler.")
    note_create(title="Invoices", body="Pay the March invoice by Friday.")
    return files


def search_answers() -> dict[str, list[str]]:
    """What the message search answers, per query, through Django's connection."""
    return {
        query: [hit.message.public_id for hit in message_search(query=query, limit=50).hits]
        for query in QUERIES
    }


def live_store() -> Path:
    return Path(str(connections["default"].settings_dict["NAME"]))


def counts_of(path: Path) -> dict[str, int]:
    db = store_open(path, readonly=True)
    try:
        return store_counts(db)
    finally:
        db.close()


@contextmanager
def django_on(path: Path) -> Iterator[None]:
    """Django's default connection on the store file `path` for the block."""
    conn = connections["default"]
    conn.close()
    name = conn.settings_dict["NAME"]
    conn.settings_dict["NAME"] = str(path)
    try:
        yield
    finally:
        conn.close()
        conn.settings_dict["NAME"] = name
