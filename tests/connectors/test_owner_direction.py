"""The owner's own messages are outbound in one-to-one chats exported without naming the
owner: a Telegram chat exported on its own (its id is the other party's), a WhatsApp chat
named after the other party. Groups stay as they were: there, nothing tells who exported."""

from __future__ import annotations

import json
from pathlib import Path

from archive.store.models import Message
from tests.connectors.conftest import FIXTURES
from tests.connectors.whatsapp_support import Run, done, write


def directions() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for sender, direction in Message.objects.filter(kind="text").values_list(
        "sender__external_id", "direction"
    ):
        found.setdefault(sender, set()).add(direction)
    return found


def telegram_chat(folder: Path, kind: str) -> Path:
    path = folder / "result.json"
    messages = [
        {"id": 1, "type": "message", "date": "2021-05-01T10:00:00", "from": "Ada",
         "from_id": "user42", "text": "hi"},
        {"id": 2, "type": "message", "date": "2021-05-01T10:01:00", "from": "Me",
         "from_id": "user7", "text": "hello"},
        {"id": 3, "type": "service", "date": "2021-05-01T10:02:00", "actor": "Me",
         "actor_id": "user7", "action": "phone_call", "duration_seconds": 5, "text": ""},
    ]  # fmt: skip
    path.write_text(json.dumps({"name": "Ada", "type": kind, "id": 42, "messages": messages}))
    return path


def test_a_telegram_one_to_one_chat_exported_alone_knows_the_owner(
    run_import: Run, tmp_path: Path
) -> None:
    done(run_import(telegram_chat(tmp_path, "personal_chat")))
    assert directions() == {"user42": {"in"}, "user7": {"out"}}
    call = Message.objects.get(kind="service")
    assert call.direction == "out"  # the owner's call, like in a whole-account export


def test_a_telegram_bot_chat_too(run_import: Run, tmp_path: Path) -> None:
    done(run_import(telegram_chat(tmp_path, "bot_chat")))
    assert directions() == {"user42": {"in"}, "user7": {"out"}}


def test_a_telegram_group_exported_alone_names_no_owner(run_import: Run, tmp_path: Path) -> None:
    done(run_import(telegram_chat(tmp_path, "private_group")))
    assert directions() == {"user42": {"in"}, "user7": {"in"}}


def test_the_2020_fixture_shows_the_owner_on_the_right(run_import: Run) -> None:
    done(run_import(FIXTURES / "telegram" / "personal_2020"))
    assert directions() == {"user4242": {"in"}, "user1001": {"out"}}


LINES = [
    "12/31/21, 9:05 PM - Anna: hi Ben",
    "12/31/21, 9:06 PM - Ben: hey Anna",
    "12/31/21, 9:07 PM - Anna: happy new year",
]


def test_a_whatsapp_chat_named_after_one_author_was_exported_by_the_other(
    run_import: Run, tmp_path: Path
) -> None:
    done(run_import(write(tmp_path, "WhatsApp Chat with Ben.txt", LINES)))
    assert directions() == {"Anna": {"out"}, "Ben": {"in"}}


def test_a_whatsapp_chat_named_after_neither_author_names_no_owner(
    run_import: Run, tmp_path: Path
) -> None:
    done(run_import(write(tmp_path, "WhatsApp Chat with Carl.txt", LINES)))
    assert directions() == {"Anna": {"in"}, "Ben": {"in"}}


def test_the_account_name_still_names_the_owner(run_import: Run, tmp_path: Path) -> None:
    done(run_import(write(tmp_path, "WhatsApp Chat with Anna.txt", LINES), account="Anna"))
    assert directions() == {"Anna": {"out"}, "Ben": {"in"}}
