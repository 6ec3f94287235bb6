"""What `wirecat export` writes: every message once across keyset pages, each with its own
revisions and attachments, and an attachment whose bytes the store lost as metadata."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from archive.connectors.base import file_opener
from archive.exports import rows
from archive.store.domain import AttachmentRecord
from archive.store.models import Attachment
from archive.store.sink import batch_record
from archive.store.staging import message_staged
from tests.factories import T0, batch, message


@pytest.mark.django_db
def test_messages_are_read_in_pages_each_with_its_own_revisions() -> None:
    batch_record(batch=batch(*(message(f"m{i}", f"text {i}", minutes=i) for i in range(7))))
    edits = [
        message(f"m{i}", f"text {i} edited", minutes=i, edited_at=T0 + timedelta(days=1))
        for i in (2, 5)
    ]
    batch_record(batch=batch(*edits))
    found = list(rows.messages(page=2))
    assert [row["external_id"] for row in found] == [f"m{i}" for i in range(7)]
    assert len({row["id"] for row in found}) == 7
    revised = {row["external_id"]: row["revisions"] for row in found if row["revisions"]}
    assert revised == {
        "m2": [{"text": "text 2", "edited_at": "2024-03-02T12:00:00Z"}],
        "m5": [{"text": "text 5", "edited_at": "2024-03-02T12:00:00Z"}],
    }
    assert found[2]["text"] == "text 2 edited" and found[2]["edited_at"] == "2024-03-02T12:00:00Z"


@pytest.mark.django_db
def test_an_attachment_whose_bytes_are_gone_is_exported_as_metadata(
    tmp_path: Path, settings: object
) -> None:
    kept, lost = tmp_path / "kept.txt", tmp_path / "lost.txt"
    kept.write_bytes(b"kept bytes")
    lost.write_bytes(b"lost bytes")
    record = message(
        "m1",
        "two files",
        attachments=(
            AttachmentRecord(external_id="a", file_name="kept.txt", content=file_opener(kept)),
            AttachmentRecord(external_id="b", file_name="lost.txt", content=file_opener(lost)),
        ),
    )
    staged, _ = message_staged(record)
    batch_record(batch=batch(staged))
    gone = Attachment.objects.get(file_name="lost.txt")
    (Path(settings.STATE_DIR) / (gone.path or "")).unlink()  # type: ignore[attr-defined]
    dest = tmp_path / "export"
    call_command("export", str(dest))
    line = json.loads((dest / "messages.jsonl").read_text().splitlines()[0])
    files = {a["file_name"]: a["file"] for a in line["attachments"]}
    sha = Attachment.objects.get(file_name="kept.txt").sha256
    assert files == {"kept.txt": f"attachments/{sha}", "lost.txt": None}
    assert sorted(p.name for p in (dest / "attachments").iterdir()) == [sha]
    manifest = json.loads((dest / "manifest.json").read_text())
    assert (manifest["attachments"], manifest["attachments_missing"]) == (1, 1)
