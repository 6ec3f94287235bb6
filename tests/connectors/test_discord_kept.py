"""DiscordChatExporter messages missing a timestamp, an author or an id are kept (issue
15), through the real import, and importing the file again adds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archive.store.models import Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.kept_support import (
    FILE_MTIME,
    FILE_TIME,
    NEXT,
    PREVIOUS,
    Kept,
    Run,
    assert_idempotent,
    assert_kept,
    utc,
    with_mtime,
)

pytestmark = pytest.mark.django_db

FIXTURE = FIXTURES / "discord" / "missing_fields.json"
ADA, BRAM = "100000000000000001", "100000000000000002"

CASES = [
    # No timestamp, first in the file: the message after it.
    Kept("no timestamp, first in the file", sent_at=utc("2024-03-01T10:00:00.123"),
         estimated_from=NEXT, sender=ADA, external_id="200000000000000701"),
    Kept("dated", sent_at=utc("2024-03-01T10:00:00.123"), sender=ADA,
         external_id="200000000000000702"),
    # An empty timestamp: the message before it; its unreadable edit time is left out.
    Kept("an empty timestamp", sent_at=utc("2024-03-01T10:02"), estimated_from=PREVIOUS,
         sender=BRAM, external_id="200000000000000706"),
    # No author: kept with no sender.
    Kept("an author the exporter could not resolve", sent_at=utc("2024-03-01T10:02"),
         sender=None, external_id="200000000000000705"),
    # No id: a content hash; the identical message after it, the same with an ordinal.
    Kept("no id here", sent_at=utc("2024-03-01T10:01"), sender=ADA, hashed_id=True, count=2),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.text for case in CASES])
def test_a_message_missing_a_field_is_kept(run_import: Run, tmp_path: Path, case: Kept) -> None:
    job = run_import(with_mtime(FIXTURE, tmp_path / "odd-fields.json"))
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 6, 2, {})
    assert assert_kept(case).edited_at is None


def test_a_file_without_any_timestamp_takes_its_own_time(run_import: Run, tmp_path: Path) -> None:
    document = json.loads(FIXTURE.read_text())
    for message in document["messages"]:
        message.pop("timestamp", None)
    export = tmp_path / "undated.json"
    export.write_text(json.dumps(document))
    job = run_import(with_mtime(export, tmp_path / "copy" / "undated.json"))
    assert (job.status, job.added, job.estimated) == ("done", 6, 6)
    assert set(Message.objects.values_list("sent_at", flat=True)) == {FILE_MTIME}
    assert {m.provider_metadata["date_estimated_from"] for m in Message.objects.all()} == {
        FILE_TIME
    }


def test_importing_again_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    assert_idempotent(run_import, with_mtime(FIXTURE, tmp_path / "odd-fields.json"))
