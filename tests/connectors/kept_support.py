"""Shared by the "nothing dropped" tests of every importer: one row of a test table says
how a message missing a field (a date, a sender, an id) is kept, and `assert_kept` checks
the stored message against it; `assert_idempotent` imports a file again and expects
nothing new."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from archive.connectors.estimates import FROM_FILE_TIME, FROM_NEXT, FROM_PREVIOUS, HASH_PREFIX
from archive.imports.models import ImportJob
from archive.store.models import Message

Run = Callable[..., ImportJob]

PREVIOUS, NEXT, FILE_TIME = FROM_PREVIOUS, FROM_NEXT, FROM_FILE_TIME
ANY = object()  # a field the row does not check
# A known modification time given to copied fixtures, so "the file's time" is checkable.
FILE_MTIME = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Kept:
    """How the message whose text is `text` must be stored."""

    text: str
    sent_at: datetime | None = None  # None: not checked
    estimated_from: str | None = None  # None: a real date (not estimated)
    sender: object = ANY  # an identity's external id, None for no sender, or ANY
    hashed_id: bool = False  # its id is a content hash (the export gave none)
    external_id: str | None = None
    count: int = 1  # messages saying `text` (identical ones are all kept)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def assert_kept(case: Kept) -> Message:
    found = list(Message.objects.select_related("sender").filter(text=case.text))
    assert len(found) == case.count
    for message in found:
        _assert_one(message, case)
    if case.hashed_id and case.count > 1:  # the same hash, an ordinal for each repeat
        ids = sorted(message.external_id for message in found)
        assert ids[1:] == [f"{ids[0]}-{n}" for n in range(2, case.count + 1)]
    return found[0]


def _assert_one(message: Message, case: Kept) -> None:
    if case.sent_at is not None:
        assert message.sent_at == case.sent_at
    if case.estimated_from is None:
        assert not message.date_estimated
        assert "date_estimated_from" not in message.provider_metadata
    else:
        assert message.date_estimated
        assert message.provider_metadata["date_estimated_from"] == case.estimated_from
        assert case.estimated_from in message.date_estimate_note
    if case.sender is not ANY:
        assert (message.sender.external_id if message.sender else None) == case.sender
    if case.hashed_id:
        assert message.external_id.startswith(HASH_PREFIX)
    if case.external_id is not None:
        assert message.external_id == case.external_id


def with_mtime(path: Path, copy: Path) -> Path:
    """`path` copied to `copy` with FILE_MTIME as its modification time."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(path.read_bytes())
    os.utime(copy, (FILE_MTIME.timestamp(), FILE_MTIME.timestamp()))
    return copy


def assert_idempotent(run_import: Run, path: Path, **options: object) -> ImportJob:
    """Import `path` twice: the second import adds and changes nothing, and every id (the
    hashed ones too) is the same. Between the two, the file's time changes: an estimate
    already stored is not replaced by another."""
    first = run_import(path, **options)
    assert first.status == "done", first.errors
    assert first.added > 0
    before = {m.external_id: (m.sent_at, m.date_estimated) for m in Message.objects.all()}
    later = FILE_MTIME.timestamp() + 86_400
    for file in [path, *path.rglob("*")] if path.is_dir() else [path]:
        if file.is_file():
            os.utime(file, (later, later))
    second = run_import(path, **options)
    assert second.status == "done", second.errors
    assert (second.added, second.updated) == (0, 0)
    assert second.unchanged == first.added
    after = {m.external_id: (m.sent_at, m.date_estimated) for m in Message.objects.all()}
    assert after == before
    return first
