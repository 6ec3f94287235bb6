"""The nightly job: a backup into <state>/backups/, only the newest WIRECAT_BACKUP_KEEP
kept; a failure recorded with its sentence and shown on the dashboard, in red, until a
backup succeeds again."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.backups.jobs import backup_nightly
from archive.backups.models import BackupRun
from tests.backups.support import store_fill
from wirecat.celery import app

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_beat_table_runs_it_nightly() -> None:
    entry = app.conf.beat_schedule["backup-nightly"]
    assert entry["task"] == "archive.jobs.backup_nightly"
    assert "archive.jobs.backup_nightly" in app.tasks


def test_nightly_keeps_the_newest(settings: Any) -> None:
    store_fill()
    settings.BACKUP_KEEP = 2
    folder = Path(settings.STATE_DIR) / "backups"
    (folder).mkdir()
    (folder / "holiday-photos.tar.gz").write_bytes(b"not ours")  # never deleted
    for _ in range(4):
        assert "bytes" in backup_nightly()
    runs = list(BackupRun.objects.order_by("id"))
    assert len(runs) == 4 and all(r.ok and r.trigger == "nightly" for r in runs)
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == sorted(
        [Path(runs[2].path).name, Path(runs[3].path).name, "holiday-photos.tar.gz"]
    )
    assert not any(name.startswith(".") for name in kept), "a temporary file was left"


def _card(html: str) -> str:
    found = re.search(
        r'<section class="card" aria-labelledby="backups-h">.*?</section>', html, re.S
    )
    assert found is not None, "the dashboard has no Backups card"
    return found[0]


def test_a_failed_backup_is_recorded_and_shown_on_the_dashboard(
    settings: Any, owner_client: Client
) -> None:
    store_fill()
    card = _card(owner_client.get("/").content.decode())
    assert "No backup yet" in card and 'id="backup-failure"' not in card

    assert "bytes" in backup_nightly()
    good = BackupRun.objects.get()
    card = _card(owner_client.get("/").content.decode())
    assert "Last good backup" in card and good.path in card and 'id="backup-failure"' not in card
    assert f'data-size="{good.size}"' in card and 'id="backup-stale"' not in card
    finished = good.finished_at
    assert finished is not None
    BackupRun.objects.filter(pk=good.pk).update(finished_at=finished - timedelta(days=3))
    card = _card(owner_client.get("/").content.decode())
    assert 'id="backup-stale"' in card and 'class="worker backup-line late"' in card
    BackupRun.objects.filter(pk=good.pk).update(finished_at=finished)

    folder = Path(settings.STATE_DIR) / "backups"
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    folder.write_text("a file where the backups folder should be")  # not writable as a folder
    answer = backup_nightly()
    failed = BackupRun.objects.filter(ok=False).get()
    assert answer == f"failed: {failed.error}"
    assert failed.finished_at is not None and failed.path == "" and failed.size == 0
    assert failed.error == f"cannot write the backup into {folder}: it is a file, not a folder"
    assert folder.read_text().startswith("a file")

    html = owner_client.get("/").content.decode()
    card = _card(html)
    failure = re.search(
        r'<p class="error backup-failure" id="backup-failure"[^>]*>(.*?)</p>', card, re.S
    )
    assert failure is not None and "failed: cannot write the backup into" in failure[1]
    assert str(folder) in failure[1]
    assert good.path in card, "the last good backup still shows"
    assert 'class="worker backup-line late"' in card

    folder.unlink()  # fixed: the next good backup clears the failure from the card
    assert "bytes" in backup_nightly()
    card = _card(owner_client.get("/").content.decode())
    assert 'id="backup-failure"' not in card


def test_the_failure_sentence_is_escaped(owner_client: Client) -> None:
    BackupRun.objects.create(
        started_at=timezone.now(), finished_at=timezone.now(), error="<script>alert(1)</script>"
    )
    card = _card(owner_client.get("/").content.decode())
    assert "<script>alert" not in card and "&lt;script&gt;alert(1)&lt;/script&gt;" in card
