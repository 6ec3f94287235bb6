"""Telegram Desktop messages missing a date, a sender or an id are kept (issue 15), through
the real import, and importing the file again adds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archive.store.models import Chat, Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.kept_support import (
    FILE_MTIME,
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

FIXTURE = FIXTURES / "telegram" / "missing_fields.json"

CASES = [
    # No date at all, first in its chat: the message after it.
    Kept("undated, first in the chat", sent_at=utc("2024-03-01T10:00"), estimated_from=NEXT,
         sender="user101", external_id="10"),
    Kept("dated", sent_at=utc("2024-03-01T10:00"), sender="user101", external_id="11"),
    # No id: a content hash; the identical message after it, the same with an ordinal.
    Kept("no id here", sent_at=utc("2024-03-01T10:01"), sender="user101", hashed_id=True,
         count=2),
    # A date Telegram never wrote (`date` and `date_unixtime` unreadable): the message
    # before it; its unreadable `edited` is left out.
    Kept("a date Telegram never wrote", sent_at=utc("2024-03-01T10:02"),
         estimated_from=PREVIOUS, sender="user202", external_id="15"),
    # No sender (`from` null, no `from_id`), and a service message without an actor.
    Kept("from an account that is gone", sent_at=utc("2024-03-01T10:02"), sender=None,
         external_id="14"),
    Kept("Someone pinned a message", sent_at=utc("2024-03-01T10:04"), sender=None,
         external_id="16"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.text for case in CASES])
def test_a_message_missing_a_field_is_kept(run_import: Run, tmp_path: Path, case: Kept) -> None:
    job = run_import(with_mtime(FIXTURE, tmp_path / "result.json"))
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 7, 2, {})
    message = assert_kept(case)
    assert message.edited_at is None


def test_importing_again_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    assert_idempotent(run_import, with_mtime(FIXTURE, tmp_path / "result.json"))


@pytest.mark.parametrize(
    ("case", "chat", "expected"),
    [
        ("no date anywhere in the file", {"id": 1}, FILE_MTIME),
        ("no id", {"id": 1, "date_unixtime": "1709287200"}, utc("2024-03-01T10:00")),
        ("no sender", {"id": 1, "date": "2024-03-01T10:00:00"}, utc("2024-03-01T10:00")),
    ],
)
def test_a_lone_message_missing_a_field_is_kept(
    run_import: Run, tmp_path: Path, case: str, chat: dict[str, object], expected: object
) -> None:
    message = {"type": "message", "text": case, **chat}
    if case == "no id":
        del message["id"]
    export = tmp_path / "result.json"
    export.write_text(json.dumps({"type": "personal_chat", "id": 9, "messages": [message]}))
    job = run_import(with_mtime(export, tmp_path / "copy" / "result.json"))
    assert (job.status, job.added) == ("done", 1), job.errors
    stored = Message.objects.get(text=case)
    assert stored.sent_at == expected
    assert stored.date_estimated == (case == "no date anywhere in the file")
    assert stored.sender is None


def test_a_chat_without_an_id_keeps_its_messages(run_import: Run, tmp_path: Path) -> None:
    """An id from what the chat says (its type and name), the same in every import."""
    chat = {"name": "Nameless", "type": "personal_chat", "messages": [
        {"id": 1, "type": "message", "date_unixtime": "1709287200", "text": "still here"}
    ]}  # fmt: skip
    export = tmp_path / "result.json"
    export.write_text(json.dumps(chat))
    assert_idempotent(run_import, export)
    stored = Chat.objects.get()
    assert stored.external_id.startswith("hash-") and stored.title == "Nameless"
    assert Message.objects.get().text == "still here"
