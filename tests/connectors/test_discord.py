"""DiscordChatExporter JSON exports, through the real import service (detection, reader,
batches, sink). Fixtures in tests/fixtures/discord are written in the exporter's format and
carry every quirk of tests' shared README; the shared real sample is imported too."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.discord.export import READER, parse_timestamp
from archive.connectors.registry import reader_for
from archive.imports.models import ImportJob
from archive.imports.services import import_job_resume, import_run
from archive.store.blobs import blob_root
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import FIXTURES, sample

pytestmark = pytest.mark.django_db

Run = Callable[..., ImportJob]
DISCORD = FIXTURES / "discord"
GENERAL = DISCORD / "guild_general.json"
GENERAL_ID = "900000000000000100"
ADA, BRAM, HELPER, CLEO = (f"10000000000000000{n}" for n in range(1, 5))


def mid(number: int) -> str:
    return f"2000000000000000{number:02d}"


def messages(chat: str) -> dict[str, Message]:
    rows = Message.objects.filter(account__provider="discord", chat__external_id=chat)
    return {m.external_id: m for m in rows.select_related("sender", "reply_to")}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.fixture
def general(run_import: Run) -> dict[str, Message]:
    job = run_import(GENERAL)
    assert job.status == "done", job.errors
    return messages(GENERAL_ID)


def test_detects_discord_exports_by_content(tmp_path: Path) -> None:
    for name in ("guild_general.json", "dm_ada.json", "group_dm.json", "thread_help.json"):
        assert READER.detect(DISCORD / name), name
        assert reader_for(DISCORD / name).format == "discord"
    renamed = tmp_path / "export.txt"  # the name does not matter, the content does
    shutil.copy(GENERAL, renamed)
    assert READER.detect(renamed)
    assert not READER.detect(DISCORD)  # a folder
    assert not READER.detect(FIXTURES / "slack" / "export" / "users.json")
    other = tmp_path / "result.json"
    other.write_text(json.dumps({"name": "Saved", "type": "personal_chat", "messages": []}))
    assert not READER.detect(other)
    (tmp_path / "broken.json").write_text("{ not json")
    assert not READER.detect(tmp_path / "broken.json")


def test_detects_not_a_telegram_export() -> None:
    assert not READER.detect(sample("telegram/tg2md_private_channel_result.json"))


def test_guild_channel_chat_account_and_counts(run_import: Run) -> None:
    job = run_import(GENERAL)
    assert job.status == "done", job.errors
    assert job.format == "discord"
    # messageCount says 20; the file holds 15 items, one of them a repeated id.
    assert job.total == 20
    assert job.position == 15
    assert (job.added, job.updated) == (14, 0)
    assert job.skipped == {
        "attachment file missing from the export": 1,
        "attachment path outside the export refused": 1,
    }
    account = Account.objects.get(provider="discord", external_id="discord-export")
    chat = Chat.objects.get(account=account, external_id=GENERAL_ID)
    assert chat.kind == "channel"
    assert chat.title == "Test Guild / Text Channels / general"
    assert chat.provider_metadata["guild_id"] == "900000000000000001"
    assert chat.provider_metadata["topic"] == "General chatter"
    assert chat.message_count == 14
    assert list(job.chats.all()) == [chat]


def test_account_name_from_options(run_import: Run) -> None:
    job = run_import(DISCORD / "dm_ada.json", account="my-discord")
    assert job.status == "done", job.errors
    assert Message.objects.get(external_id=mid(31)).account.external_id == "my-discord"
    assert not Account.objects.filter(external_id="discord-export").exists()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2024-03-01T09:00:00+00:00", "2024-03-01T09:00:00+00:00"),
        ("2024-03-01T09:00:05.1+00:00", "2024-03-01T09:00:05.100000+00:00"),
        ("2024-03-01T10:00:07.12+01:00", "2024-03-01T09:00:07.120000+00:00"),
        ("2024-03-01T04:00:10.123-05:00", "2024-03-01T09:00:10.123000+00:00"),
        ("2024-03-01T09:05:00.1234+00:00", "2024-03-01T09:05:00.123400+00:00"),
        ("2024-03-01T09:01:00.12345+00:00", "2024-03-01T09:01:00.123450+00:00"),
        ("2024-03-01T09:02:00.123456+00:00", "2024-03-01T09:02:00.123456+00:00"),
        ("2024-03-01T09:03:00.1234567+00:00", "2024-03-01T09:03:00.123456+00:00"),
        ("2021-05-04T18:23:00.9999999+02:00", "2021-05-04T16:23:00.999999+00:00"),
        ("2022-01-01T00:00:01.5Z", "2022-01-01T00:00:01.500000+00:00"),
        ("2024-03-01T05:30:00+0530", "2024-03-01T00:00:00+00:00"),
        ("2024-03-01T09:00:00", "2024-03-01T09:00:00+00:00"),
    ],
)
def test_parse_timestamp(raw: str, expected: str) -> None:
    parsed = parse_timestamp(raw)
    assert parsed.tzinfo is UTC
    assert parsed == datetime.fromisoformat(expected)


@pytest.mark.parametrize("raw", ["", "yesterday", "2024-13-01T00:00:00Z", None, 1700000000])
def test_parse_timestamp_refuses_garbage(raw: object) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(raw)


def test_times_with_every_fraction_length_and_offset(general: dict[str, Message]) -> None:
    assert general[mid(1)].sent_at == at("2024-03-01T09:00:00+00:00")
    assert general[mid(2)].sent_at == at("2024-03-01T09:00:05.100000+00:00")
    assert general[mid(3)].sent_at == at("2024-03-01T09:00:07.120000+00:00")  # +01:00
    assert general[mid(4)].sent_at == at("2024-03-01T09:00:10.123000+00:00")  # -05:00
    assert general[mid(5)].sent_at == at("2024-03-01T09:01:00.123450+00:00")
    assert general[mid(6)].sent_at == at("2024-03-01T09:02:00.123456+00:00")
    assert general[mid(7)].sent_at == at("2024-03-01T09:03:00.123456+00:00")  # 7 digits
    assert general[mid(4)].edited_at == at("2024-03-01T09:05:00.123400+00:00")
    assert general[mid(1)].edited_at is None
    assert all(m.sent_at.utcoffset().total_seconds() == 0 for m in general.values())  # type: ignore[union-attr]


def test_seven_digit_fractions_with_offset_in_a_dm(run_import: Run) -> None:
    assert run_import(DISCORD / "dm_ada.json").status == "done"
    dm = messages("900000000000000300")
    assert dm[mid(31)].sent_at == at("2021-05-04T16:22:33.123000+00:00")
    assert dm[mid(32)].sent_at == at("2021-05-04T16:23:00.999999+00:00")


def test_senders_are_identities(general: dict[str, Message]) -> None:
    ada = Identity.objects.get(provider="discord", external_id=ADA)
    assert (ada.display_name, ada.handle) == ("Ada L.", "ada")  # nickname, name
    bram = Identity.objects.get(provider="discord", external_id=BRAM)
    assert (bram.display_name, bram.handle) == ("bram", "bram")  # no nickname in the export
    assert general[mid(1)].sender == ada
    assert general[mid(2)].sender == bram
    assert general[mid(11)].sender.external_id == HELPER  # type: ignore[union-attr]
    assert general[mid(11)].provider_metadata["author"]["is_bot"] is True
    assert general[mid(1)].provider_metadata["author"] == {
        "name": "ada",
        "nickname": "Ada L.",
        "discriminator": "0000",
        "is_bot": False,
    }
    assert "nickname" not in general[mid(2)].provider_metadata["author"]
    # No reliable sign of the owner in the file: everything is inbound.
    assert {m.direction for m in general.values()} == {"in"}


def test_text_and_replies(general: dict[str, Message]) -> None:
    assert general[mid(1)].text == "Hello **everyone**"
    assert general[mid(1)].kind == "text"
    reply = general[mid(2)]
    assert reply.kind == "text"
    assert reply.reply_to_external_id == mid(1)
    assert reply.reply_to == general[mid(1)]
    # A Reply whose reference.messageId is null links to nothing.
    orphan = general[mid(3)]
    assert orphan.kind == "text"
    assert orphan.reply_to_external_id == ""
    assert orphan.reply_to is None
    assert orphan.provider_metadata["reference"]["messageId"] is None


def test_service_messages(general: dict[str, Message]) -> None:
    expected = {
        5: ("GuildMemberJoin", "Joined the server."),
        6: ("ThreadCreated", "Started a thread."),
        7: ("ChannelNameChange", "Changed the channel name."),  # empty content: our text
        8: ("ChannelIconChange", "Changed the channel icon."),
        9: ("Call", "Started a call that lasted 15 minutes."),
        10: ("ChannelPinnedMessage", "Pinned a message."),
    }
    for number, (kind, text) in expected.items():
        message = general[mid(number)]
        assert message.kind == "service", kind
        assert message.provider_metadata["type"] == kind
        assert message.text == text
    assert general[mid(5)].sender.display_name == "Cleo"  # type: ignore[union-attr]
    assert general[mid(6)].provider_metadata["thread_id"] == "900000000000000200"
    call = general[mid(9)].provider_metadata
    assert call["call_ended_at"] == "2024-03-01T09:25:30.500000+00:00"
    assert call["call_seconds"] == 930
    pin = general[mid(10)]
    assert pin.reply_to is None  # a pin notice is not a reply…
    assert pin.provider_metadata["reference"]["messageId"] == mid(1)  # …but names the message


def test_reactions_mentions_embeds_stickers(general: dict[str, Message]) -> None:
    assert general[mid(1)].provider_metadata["reactions"] == [
        {"emoji": "👋", "emoji_id": None, "count": 2, "users": [BRAM, HELPER]}
    ]
    # emoji.id "" (a Unicode emoji) and a snowflake (a custom one).
    assert general[mid(4)].provider_metadata["reactions"] == [
        {"emoji": "🎉", "emoji_id": None, "count": 1},
        {"emoji": "partyblob", "emoji_id": "300000000000000001", "count": 3, "animated": True},
    ]
    assert general[mid(2)].provider_metadata["mentions"] == [
        {"id": ADA, "name": "ada", "nickname": "Ada L."}
    ]
    assert general[mid(11)].provider_metadata["embeds"][0]["url"] == "https://ci.example.com/42"
    sticker_only = general[mid(12)]
    assert sticker_only.text == ""
    assert sticker_only.provider_metadata["stickers"][0]["name"] == "wave_cat"
    assert "reactions" not in general[mid(14)].provider_metadata


def test_a_repeated_message_id_keeps_the_later_copy(general: dict[str, Message]) -> None:
    assert Message.objects.filter(external_id=mid(2)).count() == 1
    assert general[mid(2)].provider_metadata["reactions"][0]["emoji"] == "❤️"


def test_attachments(general: dict[str, Message]) -> None:
    rows = {a.external_id: a for a in Attachment.objects.filter(message=general[mid(13)])}
    assert set(rows) == {f"50000000000000000{n}" for n in range(1, 5)}

    local = rows["500000000000000001"]  # --media: a relative path with backslashes
    data = (DISCORD / "guild_general.json_Files" / "photo-A1B2C.png").read_bytes()
    assert local.file_name == "photo.png"
    assert local.mime_type == "image/png"
    assert local.sha256 == hashlib.sha256(data).hexdigest()
    assert local.size == len(data)  # what was stored, not what the export claimed
    assert local.path is not None
    stored = blob_root().parent / local.path
    assert stored.read_bytes() == data

    remote = rows["500000000000000002"]  # a URL: metadata only, never fetched
    assert remote.path is None and remote.sha256 == ""
    assert remote.size == 20480
    assert remote.provider_metadata["url"].startswith("https://cdn.discordapp.com/")

    missing = rows["500000000000000003"]
    assert missing.path is None and missing.provider_metadata["file_missing"] is True

    escaping = rows["500000000000000004"]  # ..\slack\export\users.json exists, yet outside
    assert escaping.path is None and escaping.sha256 == ""
    assert escaping.provider_metadata["path_refused"] is True
    assert Attachment.objects.exclude(path=None).count() == 1


def test_dm_group_dm_and_thread_chats(run_import: Run) -> None:
    for name in ("dm_ada.json", "group_dm.json", "thread_help.json"):
        job = run_import(DISCORD / name)
        assert job.status == "done", job.errors
        assert job.added == 2
    dm = Chat.objects.get(external_id="900000000000000300")
    assert (dm.kind, dm.title) == ("dm", "ada")
    assert dm.provider_metadata["guild_id"] == "0"
    group = Chat.objects.get(external_id="900000000000000400")
    assert (group.kind, group.title) == ("group", "ada, bram, cleo")
    thread = Chat.objects.get(external_id="900000000000000200")
    assert thread.kind == "thread"
    assert thread.title == "Test Guild / general / help with exports"
    assert thread.provider_metadata["parent_id"] == GENERAL_ID
    assert thread.provider_metadata["parent_name"] == "general"

    added = Message.objects.get(external_id=mid(41))
    assert (added.kind, added.text) == ("service", "Added Cleo to the group.")
    in_thread = messages("900000000000000200")
    assert in_thread[mid(22)].reply_to == in_thread[mid(21)]
    in_dm = messages("900000000000000300")
    assert in_dm[mid(32)].reply_to == in_dm[mid(31)]


def test_second_import_adds_nothing(run_import: Run) -> None:
    first = run_import(GENERAL)
    second = run_import(GENERAL)
    assert second.pk != first.pk
    assert second.status == "done", second.errors
    assert (second.added, second.updated, second.unchanged) == (0, 0, 14)
    assert Message.objects.count() == 14
    assert Attachment.objects.count() == 4


def test_small_batches_give_the_same_result(run_import: Run) -> None:
    job = run_import(GENERAL, batch_size=2)
    assert job.status == "done", job.errors
    assert Message.objects.count() == 14
    assert messages(GENERAL_ID)[mid(2)].reply_to is not None


def truncated_copy(tmp_path: Path, cut_inside: int) -> Path:
    """The general export cut off in the middle of message `cut_inside`."""
    text = GENERAL.read_text(encoding="utf-8")
    cut = text.index(f'"id": "{mid(cut_inside)}"') + 12
    target = tmp_path / "guild_general.json"
    target.write_text(text[:cut], encoding="utf-8")
    return target


def test_truncated_file_fails_naming_the_place_and_keeps_earlier_batches(
    run_import: Run, tmp_path: Path
) -> None:
    job = run_import(truncated_copy(tmp_path, 8), batch_size=2)
    assert job.status == "failed"
    assert len(job.errors) == 1
    error = job.errors[0]
    assert error.startswith("guild_general.json, message #8, bytes ")
    assert "broken JSON" in error
    # Every message read before the fault is kept: 1-6 in batches, 7 written before failing.
    assert job.position == 7
    assert sorted(Message.objects.values_list("external_id", flat=True)) == [
        mid(n) for n in range(1, 8)
    ]


def test_failed_import_resumes_once_the_file_is_whole(run_import: Run, tmp_path: Path) -> None:
    broken = truncated_copy(tmp_path, 8)
    job = run_import(broken, batch_size=2)
    assert job.status == "failed"
    shutil.copy(GENERAL, broken)
    import_job_resume(public_id=job.public_id)
    job = import_run(job_id=job.pk, batch_size=2)
    assert job.status == "done", job.errors
    assert job.position == 15
    assert Message.objects.count() == 14


def write_export(path: Path, messages: list[object], **top: object) -> Path:
    document = {
        "guild": {"id": "1", "name": "G"},
        "channel": {"id": "2", "type": "GuildTextChat", "name": "c"},
        "messages": messages,
        **top,
    }
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def plain(number: int, timestamp: str = "2024-01-01T00:00:00+00:00") -> dict[str, object]:
    return {
        "id": str(number),
        "type": "Default",
        "timestamp": timestamp,
        "content": f"m{number}",
        "author": {"id": "7", "name": "x"},
    }


def test_a_bad_timestamp_is_kept_with_its_neighbours_time(run_import: Run, tmp_path: Path) -> None:
    path = write_export(
        tmp_path / "bad.json",
        [plain(1), plain(2, "2024-01-02T00:00:00Z"), plain(3, "last tuesday"), plain(4)],
    )
    job = run_import(path, batch_size=2)
    assert (job.status, job.added, job.estimated, job.skipped) == ("done", 4, 1, {})
    third = Message.objects.get(external_id="3")
    assert third.date_estimated and third.sent_at == at("2024-01-02T00:00:00+00:00")
    assert not Message.objects.get(external_id="2").date_estimated


def test_a_message_that_is_not_an_object_fails(tmp_path: Path) -> None:
    path = write_export(tmp_path / "odd.json", [plain(1), "hello"])
    stream = READER.open(path, ReadOptions())
    next(stream.items)
    with pytest.raises(FormatError) as caught:
        next(stream.items)
    assert str(caught.value) == "odd.json, message #2: a message must be a JSON object"


def test_without_messages_it_is_not_an_export(tmp_path: Path) -> None:
    path = tmp_path / "header.json"
    path.write_text(json.dumps({"guild": {"id": "1"}, "channel": {"id": "2"}}))
    assert not READER.detect(path)
    with pytest.raises(FormatError, match='no "messages" array'):
        READER.open(path, ReadOptions())


def test_channel_written_after_the_messages_is_still_found(run_import: Run, tmp_path: Path) -> None:
    path = tmp_path / "reordered.json"
    document: dict[str, object] = {"messages": [plain(1)], "guild": {"id": "1", "name": "G"}}
    document["channel"] = {"id": "2", "type": "GuildTextChat", "name": "late"}
    document["messageCount"] = 1
    path.write_text(json.dumps(document))
    job = run_import(path, format_name="discord")
    assert job.status == "done", job.errors
    assert Chat.objects.get(external_id="2").title == "G / late"
    assert job.total == 1


def test_byte_order_mark_and_missing_message_count(run_import: Run, tmp_path: Path) -> None:
    path = write_export(tmp_path / "bom.json", [plain(1), plain(2)])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert READER.detect(path)
    job = run_import(path)
    assert job.status == "done", job.errors
    assert (job.added, job.total) == (2, 2)


def test_shared_real_sample(run_import: Run) -> None:
    path = sample("discord/dcef_guild_general_with_media.json")
    job = run_import(path)
    assert job.status == "done", job.errors
    # Counted by hand: 35 messages, 31 Default, 3 GuildMemberJoin, 1 ThreadCreated.
    assert (job.total, job.added) == (35, 35)
    chat = Chat.objects.get(external_id="1012224565567721552")
    assert chat.title == "Example guild / Text Channels / general"
    found = messages("1012224565567721552")
    assert sum(m.kind == "service" for m in found.values()) == 4
    assert found["1060926346089476176"].reply_to == found["1060926317920538735"]
    assert found["1060926395313827840"].reply_to == found["1060926346089476176"]
    assert found["1060926487911485582"].edited_at == at("2023-01-06T14:23:25.845+00:00")
    assert found["1060928127137747087"].sent_at == at("2023-01-06T16:02:35.860+00:00")
    assert found["1060926346089476176"].provider_metadata["reactions"][0]["emoji_id"] is None
    # The sample ships without its _Files folder: 7 attachment rows, no bytes.
    assert Attachment.objects.filter(message__chat=chat).count() == 7
    assert Attachment.objects.exclude(path=None).count() == 0
    assert job.skipped == {"attachment file missing from the export": 7}
    assert Identity.objects.filter(provider="discord").count() == 4


def test_detection_reads_a_bounded_head(run_import: Run, tmp_path: Path) -> None:
    """A big JSON object that is no export is not parsed whole just to say no; a file with
    a huge value before guild/channel is then only read when the format is named."""
    path = tmp_path / "huge.json"
    document = {"contacts": {"list": [{"n": n} for n in range(20_000)]}}
    path.write_text(json.dumps({**document, "guild": {"id": "1"}, "channel": {"id": "2"}}))
    assert not READER.detect(path)
    head = {**document, "guild": {"id": "1"}, "channel": {"id": "2", "name": "c"}}
    path.write_text(json.dumps({**head, "messages": [plain(1)]}))
    assert not READER.detect(path)
    job = run_import(path, format_name="discord")
    assert job.status == "done", job.errors
    assert job.added == 1
