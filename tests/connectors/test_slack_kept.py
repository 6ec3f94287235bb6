"""Slack messages missing a `ts` (their time and id), a user or an edit time are kept
(issue 15), through the real import, and importing the export again adds nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from archive.connectors.estimates import FROM_DAY_FILE
from tests.connectors.conftest import FIXTURES
from tests.connectors.kept_support import (
    NEXT,
    PREVIOUS,
    Kept,
    Run,
    assert_idempotent,
    assert_kept,
    utc,
)

pytestmark = pytest.mark.django_db

FIXTURE = FIXTURES / "slack" / "missing_fields"

CASES = [
    # No ts, first of its day file: the message after it; its id a content hash.
    Kept("no ts, first of the day", sent_at=utc("2024-03-05T10:00:00.000100"),
         estimated_from=NEXT, sender="U101", hashed_id=True),
    Kept("dated", sent_at=utc("2024-03-05T10:00:00.000100"), sender="U101",
         external_id="1709632800.000100"),
    # Neither a user nor a bot: kept with no sender.
    Kept("nobody signed this", sent_at=utc("2024-03-05T10:01:00.000200"), sender=None,
         external_id="1709632860.000200"),
    # A ts Slack never wrote: the message before it (the ts stays its id); the
    # unreadable edit time is left out.
    Kept("a ts Slack never wrote", sent_at=utc("2024-03-05T10:01:00.000200"),
         estimated_from=PREVIOUS, sender="U101", external_id="not-a-ts"),
    # Alone in a day file without any ts: the day file's date; identical twice, both kept.
    Kept("no ts, alone in its day", sent_at=utc("2024-03-06T00:00"),
         estimated_from=FROM_DAY_FILE, sender="U101", hashed_id=True, count=2),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.text for case in CASES])
def test_a_message_missing_a_field_is_kept(run_import: Run, case: Kept) -> None:
    job = run_import(FIXTURE, format_name="slack")
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 6, 4, {})
    assert assert_kept(case).edited_at is None


def test_importing_again_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    export = tmp_path / "export"
    shutil.copytree(FIXTURE, export)
    assert_idempotent(run_import, export, format_name="slack")
