"""The restore drill: a thread keeps importing batches while the backup runs. The backup
waits mid-copy until the writer has committed another batch, so a write certainly lands
while the snapshot is being taken; the restored store passes its checks and holds a
consistent prefix of what was written (whole batches, every message whole and indexed),
without the batch committed mid-copy."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import connections

from archive.backups.services import backup as backup_service
from archive.backups.services.backup import backup_make
from archive.backups.services.parts import store_faults, store_open
from archive.backups.services.restore import backup_restore
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db(transaction=True)

PER_BATCH = 40
WAIT = 60  # seconds: a safety net if the writer died, never a synchronisation


def _text(n: int, i: int) -> str:
    return f"drillword batch{n} item{i} " + "lorem ipsum dolor " * (i % 7)


class Writer(threading.Thread):
    """Imports batch after batch through the sink until told to stop."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.committed = 0
        self.changed = threading.Condition()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                n = self.committed
                messages = [
                    message(
                        f"b{n}-{i}", _text(n, i), chat=f"chat-{n % 3}", minutes=n * PER_BATCH + i
                    )
                    for i in range(PER_BATCH)
                ]
                batch_record(batch=batch(*messages))
                with self.changed:
                    self.committed += 1
                    self.changed.notify_all()
        except BaseException as exc:
            self.error = exc
            with self.changed:
                self.changed.notify_all()
        finally:
            connections.close_all()

    def wait_for(self, count: int) -> int:
        with self.changed:
            assert self.changed.wait_for(
                lambda: self.committed >= count or self.error is not None, timeout=WAIT
            ), "the writer stopped committing"
        assert self.error is None, self.error
        return self.committed


def test_a_backup_under_concurrent_imports_restores_a_consistent_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backup_service, "PAGES_PER_STEP", 8)  # many steps, even for a small store
    writer = Writer()
    writer.start()
    before = writer.wait_for(3)
    mid_copy: dict[str, int] = {}

    def progress(phase: str, done: int, total: int) -> None:
        # The first step of the copy is done and the snapshot's read transaction is open.
        # The writer has committed `c` batches, perhaps c + 1 (one committed and not yet
        # counted): wait until batch c + 1 (0-based), begun after this point, is committed.
        if phase == "snapshot" and not mid_copy and done < total:
            mid_copy["started"] = writer.committed
            mid_copy["after"] = writer.wait_for(mid_copy["started"] + 2)

    try:
        made = backup_make(tmp_path / "out", progress=progress)
        writer.wait_for(mid_copy["after"] + 1)  # it still writes after the backup
    finally:
        writer.stop.set()
        writer.join(WAIT)
    assert writer.error is None
    assert mid_copy, "the snapshot was taken in one step: nothing happened mid-copy"

    state = tmp_path / "restored"
    restored = backup_restore(made.path, state)
    db = store_open(state / "wirecat.db")
    try:
        assert store_faults(db) == []
        rows = db.execute(
            "SELECT id, external_id, text FROM archive_message WHERE external_id LIKE 'b%'"
        ).fetchall()
        batches: dict[int, dict[int, str]] = {}
        for _, external_id, text in rows:
            n, i = (int(part) for part in external_id[1:].split("-"))
            batches.setdefault(n, {})[i] = text
        # A prefix of whole batches: 0..k-1, each with all its messages, each message whole.
        k = len(batches)
        assert sorted(batches) == list(range(k))
        for n, items in batches.items():
            assert items == {i: _text(n, i) for i in range(PER_BATCH)}, f"batch {n} is not whole"
        # What was committed before the backup began is in; what came mid-copy is not.
        assert before <= k <= mid_copy["started"] + 1 < mid_copy["after"]
        assert restored.counts["messages"] == k * PER_BATCH
        # The words index holds exactly these messages.
        indexed = {
            row[0]
            for row in db.execute(
                "SELECT rowid FROM message_fts WHERE message_fts MATCH 'drillword'"
            )
        }
        assert indexed == {row[0] for row in rows}
        trigram = db.execute(
            "SELECT count(*) FROM message_trigram WHERE message_trigram MATCH 'drillwor'"
        ).fetchone()[0]
        assert trigram == len(rows)
    finally:
        db.close()
