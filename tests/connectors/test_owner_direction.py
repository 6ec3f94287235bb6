"""The owner's own messages are outbound in one-to-one chats exported without naming the
owner: a Telegram chat exported on its own (its id is the other party's), a WhatsApp chat or
a Discord DM named after the other party. Groups stay as they were: there, nothing tells who
exported."""

from __future__ import annotations

import json
from pathlib import Path

from archive.store.models import Account, Message
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


# DiscordChatExporter: a DM channel is named after the other side. In dm_ada.json "ada"
# (nickname "Ada L.") and "bram" write; the channel is "ada", so bram exported it.
ADA = "100000000000000001"
BRAM = "100000000000000002"
CLEO = "100000000000000004"


def discord_export(
    folder: Path, fixture: str, channel_name: str, *, third_author: bool = False
) -> Path:
    """A real-format DiscordChatExporter file from the fixtures, its channel renamed; with
    `third_author`, a last message from cleo added (copied from the first, re-authored)."""
    data = json.loads((FIXTURES / "discord" / fixture).read_text())
    data["channel"]["name"] = channel_name
    if third_author:
        extra = json.loads(json.dumps(data["messages"][0]))
        extra["id"] = "200000000000000039"
        extra["author"].update(id=CLEO, name="cleo", nickname="Cleo")
        data["messages"].append(extra)
        data["messageCount"] = len(data["messages"])
    path = folder / f"Direct Messages - {channel_name.strip() or 'unnamed'}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def discord_owner() -> str | None:
    owner = Account.objects.get(provider="discord").owner_identity
    return owner.external_id if owner else None


def test_a_discord_dm_named_after_one_author_was_exported_by_the_other(run_import: Run) -> None:
    done(run_import(FIXTURES / "discord" / "dm_ada.json"))
    assert directions() == {ADA: {"in"}, BRAM: {"out"}}
    assert discord_owner() == BRAM


def test_a_discord_dm_matches_a_nickname_whatever_its_case_and_spaces(
    run_import: Run, tmp_path: Path
) -> None:
    done(run_import(discord_export(tmp_path, "dm_ada.json", "  ADA l. ")))
    assert directions() == {ADA: {"in"}, BRAM: {"out"}}


def test_a_discord_dm_named_after_neither_author_names_no_owner(
    run_import: Run, tmp_path: Path
) -> None:
    done(run_import(discord_export(tmp_path, "dm_ada.json", "carl")))
    assert directions() == {ADA: {"in"}, BRAM: {"in"}}
    assert discord_owner() is None


def test_a_discord_dm_with_a_third_author_names_no_owner(run_import: Run, tmp_path: Path) -> None:
    done(run_import(discord_export(tmp_path, "dm_ada.json", "ada", third_author=True)))
    assert directions() == {ADA: {"in"}, BRAM: {"in"}, CLEO: {"in"}}
    assert discord_owner() is None


def test_a_discord_group_dm_names_no_owner_even_after_one_author(
    run_import: Run, tmp_path: Path
) -> None:
    # Two authors and a name that is one of them: still a group, where nothing tells.
    done(run_import(discord_export(tmp_path, "group_dm.json", "cleo")))
    assert dict(Message.objects.values_list("sender__external_id", "direction")) == {
        ADA: "in",  # adding cleo: a service message
        CLEO: "in",
    }
    assert discord_owner() is None


def test_the_account_naming_a_dm_author_wins_over_the_channel_name(run_import: Run) -> None:
    done(run_import(FIXTURES / "discord" / "dm_ada.json", account="Ada L."))
    assert directions() == {ADA: {"out"}, BRAM: {"in"}}
    assert Account.objects.get(provider="discord", external_id="Ada L.").owner_identity
    assert discord_owner() == ADA


def test_an_account_name_naming_no_author_leaves_the_dm_to_its_name(run_import: Run) -> None:
    done(run_import(FIXTURES / "discord" / "dm_ada.json", account="my-discord"))
    assert directions() == {ADA: {"in"}, BRAM: {"out"}}
