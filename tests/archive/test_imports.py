"""Imports from the owner's side: the Import page, the job, the command, the dashboard."""

from __future__ import annotations

import gc
import json
import os
import zipfile
from dataclasses import replace
from io import BytesIO, StringIO
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client

from archive.connectors.base import ImportItem
from archive.imports.jobs import import_run as import_run_job
from archive.imports.models import ImportJob
from archive.imports.running import IMPORT_CACHE_KIB, IMPORT_CHECKPOINT_PAGES, IMPORT_GC_THRESHOLD
from archive.imports.services import import_job_create, import_job_resume, import_run
from archive.store.blobs import blob_open
from archive.store.domain import AccountRecord, AttachmentRecord, Batch, ChatRecord, IdentityRecord
from archive.store.models import Message
from archive.store.staging import batch_staged, message_staged
from tests.factories import message

pytestmark = pytest.mark.django_db


def telegram_export(count: int = 5) -> bytes:
    messages = [
        {
            "id": i,
            "type": "message",
            "date": "2021-05-01T10:00:00",
            "date_unixtime": str(1_619_863_200 + i),
            "from": "Alice",
            "from_id": "user1",
            "text": f"message {i}",
        }
        for i in range(1, count + 1)
    ]
    return json.dumps(
        {"name": "Family", "type": "private_group", "id": 42, "messages": messages}
    ).encode()


def test_upload_creates_a_job_and_queues_it(
    owner_client: Client, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    upload = SimpleUploadedFile("../../evil name?.json", telegram_export(), "application/json")
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_client.post(
            "/imports/", {"file": upload, "path": "", "format": "", "account": ""}
        )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert response["Location"] == f"/imports/{job.public_id}/"
    assert len(callbacks) == 1  # the Celery job is queued after the commit
    source = Path(job.source)
    assert source.parent.parent == Path(settings.UPLOAD_DIR)  # never a name from the browser
    assert job.source_name == "evil name_.json"
    assert job.format == "telegram"

    import_run_job.run(job.pk)  # what the worker runs
    page = owner_client.get(f"/imports/{job.public_id}/").content.decode()
    assert "Done" in page and "Family" in page and 'hx-trigger="every 1s"' not in page
    assert Message.objects.count() == 5


def test_server_path_import_and_progress_fragment(
    owner_client: Client, tmp_path: Path, settings: Any
) -> None:
    settings.IMPORT_ROOTS = [tmp_path]  # server paths only under the import roots
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export())
    response = owner_client.post("/imports/", {"path": str(export), "format": "", "account": ""})
    job = ImportJob.objects.get()
    assert response.status_code == 302
    fragment = owner_client.get(f"/imports/{job.public_id}/", headers={"HX-Request": "true"})
    html = fragment.content.decode()
    assert "<html" not in html and 'hx-trigger="every 1s"' in html  # still queued: it polls
    assert "Cancel" in html


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"path": "", "format": ""}, "Choose a file to upload or name a path"),
        ({"path": "/no/such/export.json", "format": ""}, "no such file or folder"),
        ({"path": "/etc/hostname", "format": ""}, "not an export WireCat can read. Accepted:"),
        ({"path": "/etc/hostname", "format": "nonsense"}, "Select a valid choice"),
    ],
)
def test_bad_import_requests_are_explained(
    owner_client: Client, data: dict[str, str], message: str, settings: Any
) -> None:
    settings.IMPORT_ROOTS = [Path("/")]  # what the readers say about paths anywhere
    response = owner_client.post("/imports/", {**data, "account": ""})
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ImportJob.objects.exists()


def test_unknown_upload_names_the_accepted_formats(owner_client: Client) -> None:
    upload = SimpleUploadedFile("notes.txt", b"just some words\nnothing more\n")
    response = owner_client.post(
        "/imports/", {"file": upload, "path": "", "format": "", "account": ""}
    )
    html = response.content.decode()
    assert response.status_code == 422
    for name in ("telegram", "discord", "whatsapp", "imessage", "mail", "slack"):
        assert name in html


def test_cancel_and_resume(
    owner_client: Client, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export())
    job = import_job_create(source=export)
    owner_client.post(f"/imports/{job.public_id}/cancel/")
    job.refresh_from_db()
    assert job.status == "cancelled"
    with django_capture_on_commit_callbacks() as callbacks:
        owner_client.post(f"/imports/{job.public_id}/resume/")
    job.refresh_from_db()
    assert job.status == "queued" and len(callbacks) == 1
    import_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.added) == ("done", 5)
    again = owner_client.post(f"/imports/{job.public_id}/cancel/", follow=True)
    assert "has already ended" in again.content.decode()


def test_failed_import_keeps_committed_batches_and_resumes(tmp_path: Path) -> None:
    export = tmp_path / "result.json"
    whole = telegram_export(10)
    export.write_bytes(whole[: len(whole) * 2 // 3])  # truncated mid-file
    job = import_run(job_id=import_job_create(source=export).pk, batch_size=2)
    assert job.status == "failed"
    assert "result.json" in job.errors[0]
    kept = Message.objects.count()
    assert kept == job.position and kept >= 2
    export.write_bytes(whole)  # the owner fixes the file and runs it again
    job = import_run(job_id=import_job_create(source=export).pk, batch_size=2)
    assert (job.status, Message.objects.count()) == ("done", 10)


def test_import_command_prints_a_summary(tmp_path: Path) -> None:
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export(7))
    out, err = StringIO(), StringIO()
    call_command("import", str(export), stdout=out, stderr=err)
    assert "added 7" in out.getvalue() and "Done" in out.getvalue()
    out = StringIO()
    call_command("import", str(export), stdout=out, stderr=StringIO())
    assert "added 0" in out.getvalue() and "unchanged 7" in out.getvalue()
    with pytest.raises(CommandError, match="not an export WireCat can read"):
        call_command("import", "/etc/hostname", stdout=StringIO(), stderr=StringIO())


def test_dashboard_lists_recent_imports(owner_client: Client, tmp_path: Path) -> None:
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export())
    import_run(job_id=import_job_create(source=export).pk)
    html = owner_client.get("/").content.decode()
    assert "Recent imports" in html and "result.json" in html


def test_skip_counts_of_a_resumed_import_match_an_uninterrupted_one(tmp_path: Path) -> None:
    """Missing attachment files are counted once per message, however often the import
    is stopped and resumed."""
    (tmp_path / "IMG-0001.jpg").write_bytes(b"\xff\xd8 a photo")
    lines = [f"12/31/21, 9:0{i} PM - Bob: IMG-000{i}.jpg (file attached)" for i in range(1, 7)]
    export = tmp_path / "WhatsApp Chat with Bob.txt"
    export.write_text("\n".join(lines) + "\n")

    whole = import_run(job_id=import_job_create(source=export).pk, batch_size=2)
    assert whole.status == "done"
    assert whole.skipped == {"attachment file missing from the export": 5}

    job = import_job_create(source=export, resume=False)

    def stop_after_first_batch(current: ImportJob) -> None:
        if current.position == 2:
            ImportJob.objects.filter(pk=current.pk).update(cancel_requested=True)

    stopped = import_run(job_id=job.pk, batch_size=2, progress=stop_after_first_batch)
    assert (stopped.status, stopped.position) == ("cancelled", 2)
    import_job_resume(public_id=job.public_id)
    resumed = import_run(job_id=job.pk, batch_size=2)
    assert (resumed.status, resumed.position) == ("done", 6)
    assert resumed.skipped == whole.skipped


def bulk_settings() -> tuple[int, int, tuple[int, int, int], int]:
    """(wal_autocheckpoint, cache_size, the collector's thresholds, frozen objects)."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        checkpoint = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA cache_size")
        cache = int(cursor.fetchone()[0])
    return checkpoint, cache, gc.get_threshold(), gc.get_freeze_count()


@pytest.mark.parametrize("whole", [True, False], ids=["done", "failed"])
def test_an_import_writes_in_bulk_mode_and_puts_every_setting_back(
    tmp_path: Path, whole: bool
) -> None:
    export = tmp_path / "result.json"
    data = telegram_export(6)
    export.write_bytes(data if whole else data[: len(data) // 2])
    before = bulk_settings()
    seen: list[tuple[int, int, tuple[int, int, int], int]] = []
    job = import_run(
        job_id=import_job_create(source=export).pk,
        batch_size=2,
        progress=lambda job: seen.append(bulk_settings()),
    )
    assert job.status == ("done" if whole else "failed")
    checkpoint, cache, thresholds, frozen = seen[-1]
    assert checkpoint == IMPORT_CHECKPOINT_PAGES
    assert cache == -IMPORT_CACHE_KIB
    assert thresholds[0] == before[2][0] * IMPORT_GC_THRESHOLD
    assert frozen > 0  # what existed before the import is out of the collector's way
    assert bulk_settings() == before


def test_an_import_never_loads_the_live_connectors_libraries(tmp_path: Path) -> None:
    """Telethon costs an import's process 41 MB; only live sync needs it."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    export = tmp_path / "result.json"
    export.write_bytes(telegram_export(3))
    script = (
        "import sys; from django.core.management import call_command;"
        "call_command('migrate', verbosity=0);"
        f"call_command('import', {str(export)!r});"
        "print('TELETHON', 'telethon' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, str(root / "manage.py"), "shell", "-c", script],
        cwd=root,
        env={**os.environ, "WIRECAT_STATE_DIR": str(tmp_path / "state")},
        capture_output=True,
        check=True,
    )
    assert "TELETHON False" in done.stdout.decode(), done.stdout.decode()[-2000:]


def _unreadable() -> BinaryIO:
    raise zipfile.BadZipFile("Bad CRC-32 for file 'photo.jpg'")


def test_one_staging_policy_an_unreadable_attachment_is_kept_marked_and_counted() -> None:
    """What imports and live sync share: bytes that cannot be read never fail the message."""
    photo = AttachmentRecord(file_name="photo.jpg", content=lambda: BytesIO(b"a photo"))
    broken = AttachmentRecord(file_name="broken.jpg", metadata={"n": 1}, content=_unreadable)
    record = replace(message("1"), attachments=(photo, broken))
    staged, unreadable = message_staged(record)
    assert unreadable == 1
    kept, missing = staged.attachments
    assert kept.content is None and kept.blob_path is not None and kept.size == 7
    with blob_open(kept.blob_path) as stream:
        assert stream.read() == b"a photo"
    assert (missing.content, missing.blob_path) == (None, None)
    assert missing.metadata == {"n": 1, "file_missing": True}
    account = AccountRecord(provider="telegram", external_id="a")
    batch, counted = batch_staged(Batch(account=account, messages=(record, message("2"))))
    assert counted == 1 and batch.messages[1] == message("2")
    assert message_staged(message("3")) == (message("3"), 0)


def test_a_batch_of_items_names_each_chat_and_person_once_in_their_last_words() -> None:
    account = AccountRecord(provider="telegram", external_id="a")
    ann, ann_renamed = IdentityRecord("u1", "Ann"), IdentityRecord("u1", "Ann B.")
    items = [
        ImportItem(ChatRecord("c1", title="Old"), message("1", chat="c1"), (ann,)),
        ImportItem(ChatRecord("c2"), message("2", chat="c2")),
        ImportItem(ChatRecord("c1", title="New"), message("3", chat="c1"), (ann_renamed,)),
    ]
    batch = Batch.from_items(account, items, cursor={"at": 3}, cursor_stream="imap")
    assert [c.title for c in batch.chats] == ["New", ""]
    assert batch.identities == (ann_renamed,)
    assert [m.external_id for m in batch.messages] == ["1", "2", "3"]
    assert (batch.account, batch.cursor, batch.cursor_stream) == (account, {"at": 3}, "imap")
