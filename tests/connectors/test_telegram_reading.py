"""Telegram Desktop JSON exports, imported through the real import service: detection, a
single-chat export with media, a group export, a whole-account export, the shared samples."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from archive.connectors.registry import reader_for
from archive.connectors.telegram.export import READER
from archive.imports.models import ImportJob
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import sample
from tests.connectors.telegram_support import TG, Run, msg, sha256


def _utc(year: int, month: int, day: int, hour: int, minute: int, second: int) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


# --- detection ------------------------------------------------------------------------


def test_detects_telegram_exports_by_content(tmp_path: Path) -> None:
    assert READER.detect(TG / "personal_2020")  # the export folder
    assert READER.detect(TG / "personal_2020" / "result.json")
    assert READER.detect(TG / "group_2023.json")
    assert READER.detect(TG / "account")
    assert READER.detect(TG / "truncated.json")  # its head is fine; reading fails later

    renamed = tmp_path / "whatever.dat"
    shutil.copy(TG / "group_2023.json", renamed)
    assert READER.detect(renamed)  # not by name

    assert not READER.detect(TG / "discord_like.json")  # "messages", but no chat type
    assert not READER.detect(TG / "not_json.txt")
    assert not READER.detect(tmp_path)  # a folder without result.json
    disguised = tmp_path / "disguised"
    disguised.mkdir()
    shutil.copy(TG / "discord_like.json", disguised / "result.json")
    assert not READER.detect(disguised)
    assert not READER.detect(disguised / "result.json")


def test_the_registry_finds_the_telegram_reader() -> None:
    assert READER.format == "telegram"
    assert reader_for(TG / "group_2023.json").format == "telegram"
    assert reader_for(TG / "account").format == "telegram"


# --- a 2020 single-chat export, as a folder with media ----------------------------------


@pytest.fixture
def personal(run_import: Run) -> ImportJob:
    return run_import(TG / "personal_2020")


def test_personal_2020_export_imports_every_message(personal: ImportJob) -> None:
    assert personal.status == "done", personal.errors
    assert personal.format == "telegram"
    assert personal.added == 16
    assert personal.total == 16
    account = Account.objects.get(provider="telegram")
    assert (account.external_id, account.name) == ("telegram-export", "Telegram export")
    assert account.owner_identity is None
    chat = Chat.objects.get()
    assert (chat.external_id, chat.kind, chat.title) == ("4242", "dm", "Bob Builder")
    assert chat.message_count == 16
    ids = sorted(int(i) for i in Message.objects.values_list("external_id", flat=True))
    assert ids == [1, 2, 3, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 16, 17, 18]  # gaps kept
    # A one-to-one chat's id is the other party's: the rest (user1001) is the owner.
    outgoing = Message.objects.filter(direction="out")
    assert set(outgoing.values_list("sender__external_id", flat=True)) == {"user1001"}
    assert not Message.objects.filter(direction="in", sender__external_id="user1001").exists()


def test_bare_numeric_from_id_becomes_a_user_identity(personal: ImportJob) -> None:
    bob = Identity.objects.get(provider="telegram", external_id="user4242")
    assert bob.display_name == "Bob Builder"
    assert msg("4242", "2").sender == bob
    assert msg("4242", "1").sender == bob  # service: actor_id
    assert msg("4242", "3").sender.external_id == "user1001"  # type: ignore[union-attr]
    assert not Identity.objects.filter(external_id__in=["4242", "1001"]).exists()


def test_naive_dates_are_read_as_utc_and_flagged(personal: ImportJob) -> None:
    hi = msg("4242", "2")
    assert hi.sent_at == _utc(2020, 3, 1, 10, 0, 0)
    assert hi.provider_metadata["time_zone_unknown"] is True
    edited = msg("4242", "3")
    assert edited.edited_at == _utc(2020, 3, 1, 10, 2, 0)


def test_entity_lists_are_flattened_and_kept(personal: ImportJob) -> None:
    assert msg("4242", "3").text == "Yes, here. Run make all first."
    rich = msg("4242", "5")
    assert rich.text == (
        "slanted under struck\nprint('hi')\nsee the docs, example.org, "
        "bob@example.org or ask @wendy"
    )
    entities = rich.provider_metadata["entities"]
    types = [e["type"] for e in entities if e["type"] != "plain"]
    assert types == [
        "italic",
        "underline",
        "strikethrough",
        "pre",
        "text_link",
        "link",
        "email",
        "mention",
    ]
    by_type = {e["type"]: e for e in entities}
    assert by_type["pre"]["language"] == "python"
    assert by_type["text_link"]["href"] == "https://docs.example.org/start"
    assert "".join(e["text"] for e in entities) == rich.text
    assert "entities" not in msg("4242", "2").provider_metadata  # plain string: none
    assert json.loads(rich.raw_json)["text"][0] == {"type": "italic", "text": "slanted"}


def test_replies_link_to_their_parent(personal: ImportJob) -> None:
    reply = msg("4242", "3")
    assert reply.reply_to_external_id == "2"
    assert reply.reply_to == msg("4242", "2")
    orphan = msg("4242", "18")  # its parent (id 11) is not in the export
    assert orphan.reply_to_external_id == "11"
    assert orphan.reply_to is None


def test_service_messages_read_as_sentences(personal: ImportJob) -> None:
    joined = msg("4242", "1")
    assert (joined.kind, joined.text) == ("service", "Bob Builder joined Telegram")
    assert joined.provider_metadata["action"] == "joined_telegram"
    call = msg("4242", "12")
    assert (call.kind, call.text) == ("service", "Call (12 s)")
    assert call.provider_metadata["action_details"] == {
        "duration_seconds": 12,
        "discard_reason": "hangup",
    }
    assert msg("4242", "13").text == "Call (missed)"
    pin = msg("4242", "14")
    assert pin.text == "Bob Builder pinned a message"
    assert pin.provider_metadata["action_details"]["message_id"] == 7
    assert msg("4242", "2").kind == "text"


def test_message_extras_travel_in_metadata(personal: ImportJob) -> None:
    assert msg("4242", "8").provider_metadata["forwarded_from"] == "Daily Hammer News"
    gif = msg("4242", "9").provider_metadata
    assert gif["via_bot"] == "@gif"
    assert gif["media_type"] == "animation"
    assert gif["duration_seconds"] == 3
    assert msg("4242", "10").provider_metadata["sticker_emoji"] == "👍"
    assert msg("4242", "15").provider_metadata["poll"]["question"] == "Lunch?"
    contact = msg("4242", "16").provider_metadata["contact_information"]
    assert contact["phone_number"] == "+44 7700 900555"
    location = msg("4242", "17").provider_metadata["location_information"]
    assert location == {"latitude": 51.501364, "longitude": -0.14189}
    raw = json.loads(msg("4242", "8").raw_json)
    assert raw["forwarded_from"] == "Daily Hammer News"
    assert raw["from_id"] == 1001


def test_included_media_is_stored_and_missing_media_kept_as_metadata(
    personal: ImportJob,
) -> None:
    folder = TG / "personal_2020"
    photo = Attachment.objects.get(message=msg("4242", "6"))
    source = folder / "photos" / "photo_1@01-03-2020_10-05-00.jpg"
    assert photo.external_id == "photo"
    assert photo.mime_type == "image/jpeg"
    assert photo.sha256 == sha256(source)
    assert photo.size == source.stat().st_size
    assert photo.path is not None
    assert (Path(settings.STATE_DIR) / photo.path).read_bytes() == source.read_bytes()
    assert photo.provider_metadata["width"] == 640

    notes = Attachment.objects.get(message=msg("4242", "7"))
    assert (notes.external_id, notes.file_name, notes.mime_type) == (
        "file",
        "notes.txt",
        "text/plain",
    )
    assert notes.sha256 == sha256(folder / "files" / "notes.txt")
    assert notes.path is not None

    # "(File not included. …)": one metadata-only row; the thumbnail is not an attachment.
    (gif,) = Attachment.objects.filter(message=msg("4242", "9"))
    assert gif.path is None
    assert gif.sha256 == ""
    assert gif.mime_type == "video/mp4"
    assert gif.provider_metadata["not_included"] is True
    assert gif.provider_metadata["export_note"].startswith("(File not included.")

    # A path the export names but that is not on disk: a metadata-only row too.
    vcard = Attachment.objects.get(message=msg("4242", "16"))
    assert vcard.external_id == "contact_vcard"
    assert vcard.path is None
    assert vcard.provider_metadata["not_included"] is True
    assert vcard.provider_metadata["missing"] is True


def test_reimporting_the_same_export_adds_nothing(personal: ImportJob, run_import: Run) -> None:
    attachments = Attachment.objects.count()
    again = run_import(TG / "personal_2020")
    assert again.pk != personal.pk
    assert again.status == "done", again.errors
    assert (again.added, again.updated, again.unchanged) == (0, 0, 16)
    assert Message.objects.count() == 16
    assert Attachment.objects.count() == attachments


def test_account_name_option_names_the_account(run_import: Run) -> None:
    job = run_import(TG / "personal_2020" / "result.json", account="bob-phone")
    assert job.status == "done", job.errors
    account = Account.objects.get(provider="telegram")
    assert (account.external_id, account.name) == ("bob-phone", "bob-phone")
    # Pointing at result.json instead of its folder still finds the media beside it.
    assert Attachment.objects.filter(path__isnull=False).count() == 2


# --- a 2023 group export: unix times, text_entities, prefixed ids ------------------------


@pytest.fixture
def group(run_import: Run) -> ImportJob:
    return run_import(TG / "group_2023.json")


def test_unix_time_wins_over_local_date(group: ImportJob) -> None:
    assert group.status == "done", group.errors
    assert group.added == 15
    morning = msg("1700000001", "2")
    assert morning.sent_at == _utc(2023, 5, 1, 10, 1, 0)  # "date" says 12:01 local
    assert "time_zone_unknown" not in morning.provider_metadata
    only_unix = msg("1700000001", "13")
    assert only_unix.sent_at == _utc(2023, 5, 2, 8, 30, 0)
    edited = msg("1700000001", "12")
    assert edited.edited_at == _utc(2023, 5, 2, 8, 0, 0)
    # `edited` without `edited_unixtime`: local time, shifted by the offset that `date`
    # and `date_unixtime` of the same message reveal (UTC+2 here).
    assert msg("1700000001", "10").edited_at == _utc(2023, 5, 1, 10, 30, 0)


def test_text_entities_are_preferred_and_a_disagreeing_text_is_kept(group: ImportJob) -> None:
    plans = msg("1700000001", "4")
    assert plans.text == "Plans are at plans.example.org"
    meta = plans.provider_metadata
    link = [e for e in meta["entities"] if e["type"] != "plain"]
    assert link == [
        {"type": "text_link", "text": "plans.example.org", "href": "https://plans.example.org/v2"}
    ]
    assert meta["text_raw"][1] == {"type": "link", "text": "plans.example.org"}
    mention = msg("1700000001", "3")
    assert mention.text == "Morning @bob!"
    assert [e["type"] for e in mention.provider_metadata["entities"]] == [
        "plain",
        "mention",
        "plain",
    ]
    assert "text_raw" not in mention.provider_metadata  # the two forms agree


def test_group_chat_kind_senders_and_replies(group: ImportJob) -> None:
    chat = Chat.objects.get()
    assert (chat.kind, chat.title) == ("group", "Builders Club")
    assert chat.provider_metadata["telegram_type"] == "private_supergroup"
    assert msg("1700000001", "3").reply_to == msg("1700000001", "2")
    anonymous = msg("1700000001", "9")
    assert anonymous.sender.external_id == "channel1700000001"  # type: ignore[union-attr]
    assert anonymous.provider_metadata["author"] == "Chief Builder"
    # A reply to a message of another chat is not linked to this chat's message 3.
    cross = msg("1700000001", "14")
    assert cross.reply_to is None
    assert cross.reply_to_external_id == ""
    assert cross.provider_metadata["reply_to_peer_id"] == "channel1600000002"
    assert cross.provider_metadata["reply_to_message_id"] == 3


def test_group_service_messages_and_extras(group: ImportJob) -> None:
    created = msg("1700000001", "1")
    assert created.kind == "service"
    assert created.text == (
        "Bob Builder created the group “Builders Club” with Bob Builder, Wendy Works and Me Myself"
    )
    assert created.provider_metadata["action_details"]["members"] == [
        "Bob Builder",
        "Wendy Works",
        "Me Myself",
    ]
    assert msg("1700000001", "11").text == "Wendy Works added Scoop and Dizzy"
    assert msg("1700000001", "15").text == "Bob Builder pinned a message"
    assert msg("1700000001", "16").text == "Bob Builder started a voice chat (2 min 5 s)"
    assert msg("1700000001", "12").provider_metadata["forwarded_from"] == "City Council"
    reactions = msg("1700000001", "10").provider_metadata["reactions"]
    assert reactions[0]["emoji"] == "🔥"
    assert reactions[0]["count"] == 2


def test_album_photos_share_a_timestamp_and_are_not_included(group: ImportJob) -> None:
    album = Message.objects.filter(external_id__in=["5", "6", "7"]).order_by("external_id")
    assert {m.sent_at for m in album} == {_utc(2023, 5, 1, 10, 7, 0)}
    photos = Attachment.objects.filter(message__in=album).order_by("message__external_id")
    assert [p.size for p in photos] == [81234, 79110, 80455]
    assert all(p.path is None and p.provider_metadata["not_included"] for p in photos)


def test_bare_and_prefixed_from_ids_are_one_identity(run_import: Run) -> None:
    first = run_import(TG / "personal_2020", account="me")
    second = run_import(TG / "group_2023.json", account="me")
    assert (first.status, second.status) == ("done", "done")
    bob = Identity.objects.get(provider="telegram", external_id="user4242")
    assert msg("4242", "2").sender == bob  # "from_id": 4242
    assert msg("1700000001", "2").sender == bob  # "from_id": "user4242"
    assert Identity.objects.filter(display_name="Bob Builder").count() == 1


# --- a whole-account export --------------------------------------------------------------


@pytest.fixture
def account_job(run_import: Run) -> ImportJob:
    return run_import(TG / "account", batch_size=3)


def test_whole_account_export_reads_every_chat(account_job: ImportJob) -> None:
    assert account_job.status == "done", account_job.errors
    assert account_job.added == 8
    account = Account.objects.get(provider="telegram")
    assert (account.external_id, account.name) == ("1001", "Me Myself")
    owner = account.owner_identity
    assert owner is not None
    assert (owner.external_id, owner.phone, owner.handle) == (
        "user1001",
        "+44 7700 900123",
        "@memyself",
    )
    chats = {c.external_id: c for c in Chat.objects.filter(account=account)}
    assert {k: (c.kind, c.title, c.message_count) for k, c in chats.items()} == {
        "4242": ("dm", "Bob Builder", 4),
        "1001": ("dm", "Saved Messages", 1),
        "1600000002": ("channel", "Tech News", 2),
        "3003": ("group", "Old Group", 1),  # its name/type/id come after its messages
    }
    assert chats["3003"].provider_metadata == {"telegram_type": "private_supergroup", "left": True}
    assert "left" not in chats["4242"].provider_metadata
    assert set(account_job.chats.values_list("external_id", flat=True)) == set(chats)


def test_owner_messages_are_outgoing(account_job: ImportJob) -> None:
    assert msg("4242", "100").direction == "out"
    assert msg("4242", "101").direction == "in"
    assert msg("1001", "1").direction == "out"  # saved messages
    call = msg("4242", "104")
    assert (call.kind, call.direction, call.text) == ("service", "out", "Call (42 s)")
    assert msg("4242", "101").reply_to == msg("4242", "100")
    assert msg("1600000002", "1").text == "Tech News created the channel “Tech News”"
    assert msg("1600000002", "3").provider_metadata["entities"][1]["type"] == "hashtag"


def test_contacts_give_identities_their_phone(account_job: ImportJob) -> None:
    bob = Identity.objects.get(provider="telegram", external_id="user4242")
    assert (bob.display_name, bob.phone) == ("Bob Builder", "+44 7700 900424")


def test_whole_account_media_paths_are_relative_to_result_json(account_job: ImportJob) -> None:
    photo = Attachment.objects.get(message=msg("4242", "102"))
    source = TG / "account" / "chats" / "chat_001" / "photos" / "photo_1@02-05-2023_09-00-00.jpg"
    assert photo.path is not None
    assert photo.sha256 == sha256(source)


def test_whole_account_reimport_adds_nothing(account_job: ImportJob, run_import: Run) -> None:
    again = run_import(TG / "account" / "result.json", batch_size=3)
    assert again.status == "done", again.errors
    assert (again.added, again.unchanged) == (0, 8)


# --- the shared real samples ---------------------------------------------------------------


def test_real_private_channel_sample(run_import: Run) -> None:
    job = run_import(sample("telegram/tg2md_private_channel_result.json"))
    assert job.status == "done", job.errors
    # Counted by hand: ids 1-5, 7-11, 13-15, 21-26 (19 messages, one of them a service).
    assert job.added == 19
    chat = Chat.objects.get()
    assert (chat.external_id, chat.kind, chat.title) == ("1292077344", "channel", "test")
    assert Message.objects.filter(kind="service").count() == 1
    assert msg("1292077344", "1").text == "test created the channel “test”"
    assert msg("1292077344", "21").text == "тестирование utf-8."
    assert msg("1292077344", "11").text == "multiline\nbold\n\ntext"
    assert Identity.objects.filter(external_id="channel1292077344").count() == 1
    # 9 media fields (photos 3, 4, 23-25; files 7, 8, 22, 26), none shipped with the sample.
    assert Attachment.objects.count() == 9
    assert not Attachment.objects.filter(path__isnull=False).exists()
    album = Message.objects.filter(external_id__in=["23", "24", "25"])
    assert len({m.sent_at for m in album}) == 1


def test_real_multichat_account_sample(run_import: Run) -> None:
    job = run_import(sample("telegram/chatanalytics_full_account_multichat.json"))
    assert job.status == "done", job.errors
    # Counted by hand: "Chat One" has 2 messages, "Chat Two" 4 (one a phone call).
    assert job.added == 6
    account = Account.objects.get(provider="telegram")
    assert (account.external_id, account.name) == ("100000001", "Test User")
    counts = dict(Chat.objects.values_list("external_id", "message_count"))
    assert counts == {"700000001": 2, "700000002": 4}
    call = msg("700000002", "2003")
    assert (call.kind, call.text) == ("service", "Call (2 min)")
    assert msg("700000001", "1001").sent_at == _utc(2023, 1, 1, 12, 0, 0)
    not_included = Attachment.objects.get(message=msg("700000002", "2004"))
    assert not_included.path is None
