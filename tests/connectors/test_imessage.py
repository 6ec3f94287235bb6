"""Apple Messages chat.db / sms.db imports, through the real import service."""

from __future__ import annotations

import gc
import hashlib
import shutil
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typedstream
from hypothesis import given, settings
from hypothesis import strategies as st
from typedstream.types.foundation import NSString

from archive.connectors.base import ReadOptions
from archive.connectors.imessage.export import READER, apple_time, attributed_text
from archive.connectors.registry import reader_for
from archive.imports.models import ImportJob
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import sample
from tests.fixtures.imessage.chatdb import (
    OLD_SCHEMA,
    ChatDb,
    apple_ns,
    apple_seconds,
)
from tests.fixtures.imessage.typedstream_writer import attributed_body

RunImport = Callable[..., ImportJob]

T0 = datetime(2023, 5, 1, 10, 0, tzinfo=UTC)
PHOTO = b"\xff\xd8\xff\xe0 not really a jpeg, but bytes all the same " * 40
PHONE = "+15551234567"
EMAIL = "anna@example.com"
DM_GUID = f"iMessage;-;{PHONE}"
GROUP_GUID = "iMessage;+;chat123456789"


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def build_modern(folder: Path) -> Path:
    """A macOS-style export folder: chat.db and Attachments/, one quirk per message."""
    db = ChatDb(folder / "chat.db")
    phone = db.handle(PHONE)
    db.handle(PHONE, service="SMS")  # the same number once more, for SMS
    email = db.handle(EMAIL)
    dm = db.chat(DM_GUID, identifier=PHONE, handles=[phone])
    group = db.chat(
        GROUP_GUID,
        style=43,
        identifier="chat123456789",
        display_name="Climbing crew",
        handles=[phone, email],
    )
    other = db.chat("iMessage;-;empty@example.com", identifier="empty@example.com")

    hello = db.message("M-HELLO", chat=dm, at=at(0), text="Hi there", handle_id=phone)
    db.insert("chat_message_join", chat_id=other, message_id=hello)  # in two chats
    db.message(
        "M-BODY",
        chat=dm,
        at=at(1),
        body="On my way 🚲",
        is_from_me=1,
        handle_id=phone,
        destination_caller_id="me@icloud.com",
    )
    # Tapbacks: I love M-HELLO; the phone laughs at M-BODY, then takes it back.
    db.message(
        "T-LOVE",
        chat=dm,
        at=at(2),
        body="Loved “Hi there”",
        is_from_me=1,
        associated_message_guid="p:0/M-HELLO",
        associated_message_type=2000,
    )
    db.message(
        "T-LAUGH",
        chat=dm,
        at=at(3),
        text="Laughed at “On my way”",
        handle_id=phone,
        associated_message_guid="p:0/M-BODY",
        associated_message_type=2003,
    )
    db.message(
        "T-UNLAUGH",
        chat=dm,
        at=at(4),
        text="Removed a laugh",
        handle_id=phone,
        associated_message_guid="p:0/M-BODY",
        associated_message_type=3003,
    )
    db.message(
        "T-ORPHAN",
        chat=dm,
        at=at(4),
        text="Liked a message",
        handle_id=phone,
        associated_message_guid="bp:GONE-GUID",
        associated_message_type=2001,
    )
    # Group: a question, a threaded reply, a like on the question, a rename.
    db.message("G-ASK", chat=group, at=at(10), text="Who is in on Saturday?", handle_id=email)
    db.message(
        "G-REPLY",
        chat=group,
        at=at(11),
        body="Me!",
        handle_id=phone,
        thread_originator_guid="G-ASK",
        thread_originator_part="0:0:22",
    )
    db.message(
        "T-LIKE",
        chat=group,
        at=at(12),
        text="Liked “Who is in on Saturday?”",
        handle_id=phone,
        associated_message_guid="p:0/G-ASK",
        associated_message_type=2001,
    )
    db.message(
        "T-FIRE",
        chat=group,
        at=at(12),
        text="Reacted 🔥 to “Me!”",
        handle_id=email,
        associated_message_guid="p:0/G-REPLY",
        associated_message_type=2006,
        associated_message_emoji="🔥",
    )
    db.message(
        "G-RENAME",
        chat=group,
        at=at(13),
        item_type=2,
        group_title="Crag rats",
        handle_id=email,
    )
    # Edited and unsent.
    db.message(
        "M-EDITED",
        chat=dm,
        at=at(20),
        body="See you at 7 (edited)",
        is_from_me=1,
        date_edited=apple_ns(at(21)),
    )
    db.message(
        "M-UNSENT",
        chat=dm,
        at=at(22),
        text=None,
        body=None,
        is_from_me=1,
        date_retracted=apple_ns(at(23)),
    )
    # Attachments: one present, one missing from the folder, one pointing out of it.
    photo = db.message(
        "M-PHOTO", chat=dm, at=at(30), text="\ufffc", handle_id=phone, cache_has_attachments=1
    )
    db.attachment(
        photo,
        "A-PHOTO",
        "~/Library/Messages/Attachments/ab/12/A-PHOTO/IMG_0001.jpeg",
        mime_type="image/jpeg",
        transfer_name="IMG_0001.jpeg",
        total_bytes=len(PHOTO),
        uti="public.jpeg",
    )
    db.attachment(
        photo,
        "A-MISSING",
        "~/Library/Messages/Attachments/cd/34/A-MISSING/IMG_0002.HEIC",
        mime_type="image/heic",
        transfer_name="IMG_0002.HEIC",
        total_bytes=123456,
    )
    db.attachment(
        photo,
        "A-IOS",
        "/var/mobile/Library/SMS/Attachments/ef/56/A-IOS/Audio Message.caf",
        mime_type="audio/x-caf",
        transfer_name="Audio Message.caf",
        total_bytes=5,
    )
    sneaky = db.message("M-SNEAKY", chat=dm, at=at(31), text="look", handle_id=phone)
    db.attachment(
        sneaky,
        "A-SNEAKY",
        "~/Library/Messages/Attachments/../../secret.txt",
        mime_type="text/plain",
        transfer_name="secret.txt",
    )
    # A join row to an attachment row that is gone.
    db.insert("message_attachment_join", message_id=sneaky, attachment_id=4242)
    # A corrupt attributedBody; a message in no chat; join rows to messages that are gone.
    db.message(
        "M-CORRUPT",
        chat=dm,
        at=at(40),
        body=attributed_body("truncated blob")[:30],
        handle_id=phone,
    )
    db.message("M-NOCHAT", chat=None, at=at(41), text="lost", handle_id=phone)
    db.insert("chat_message_join", chat_id=dm, message_id=9999)
    db.insert("message_attachment_join", message_id=9998, attachment_id=1)
    db.close()

    (folder / "Attachments/ab/12/A-PHOTO").mkdir(parents=True)
    (folder / "Attachments/ab/12/A-PHOTO/IMG_0001.jpeg").write_bytes(PHOTO)
    (folder / "Attachments/ef/56/A-IOS").mkdir(parents=True)
    (folder / "Attachments/ef/56/A-IOS/Audio Message.caf").write_bytes(b"caf!!")
    (folder / "secret.txt").write_text("never imported")
    return folder


def build_old(folder: Path) -> Path:
    """An early chat.db / iOS sms.db: seconds, no attributedBody, no attachment tables."""
    db = ChatDb(folder / "sms.db", OLD_SCHEMA)
    bob = db.handle("+447700900123", service="SMS")
    carol = db.handle("carol@example.org")
    dm = db.chat("SMS;-;+447700900123", identifier="+447700900123", handles=[bob])
    group = db.chat("iMessage;+;chat42", style=43, identifier="chat42", handles=[bob, carol])
    db.message(
        "O-1",
        chat=dm,
        at=datetime(2013, 2, 3, 4, 5, 6, tzinfo=UTC),
        seconds=True,
        text="Old school SMS",
        handle_id=bob,
        service="SMS",
    )
    db.message(
        "O-2",
        chat=dm,
        at=datetime(2013, 2, 3, 4, 6, tzinfo=UTC),
        seconds=True,
        text="Reply from me",
        is_from_me=1,
        service="SMS",
    )
    db.message(
        "O-3",
        chat=group,
        at=datetime(2013, 2, 4, tzinfo=UTC),
        seconds=True,
        text="Group hello",
        handle_id=carol,
    )
    # Text that is not valid UTF-8 (seen in old SMS rows).
    db.db.execute(
        "INSERT INTO message (guid, text, handle_id, date) "
        "VALUES ('O-4', CAST(X'4869209620' AS TEXT), ?, ?)",
        (bob, apple_seconds(datetime(2013, 2, 5, tzinfo=UTC))),
    )
    db.insert("chat_message_join", chat_id=dm, message_id=4)
    db.close()
    return folder / "sms.db"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(folder.rglob("*"))
    }


def messages() -> dict[str, Message]:
    return {m.external_id: m for m in Message.objects.select_related("sender", "chat")}


@pytest.fixture
def modern(tmp_path: Path) -> Path:
    return build_modern(tmp_path / "export")


# -- detection -----------------------------------------------------------------------------


def test_detects_the_database_file_and_its_folder(modern: Path, tmp_path: Path) -> None:
    assert READER.detect(modern)
    assert READER.detect(modern / "chat.db")
    assert reader_for(modern).format == "imessage"
    other = tmp_path / "other.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE message (id INTEGER)")
    connection.close()
    text = tmp_path / "notes.txt"
    text.write_text("SQLite format 3 is not enough")
    assert not READER.detect(other)
    assert not READER.detect(text)
    assert not READER.detect(tmp_path / "Attachments-less-empty-dir")


def test_detects_a_database_whatever_its_name(modern: Path, tmp_path: Path) -> None:
    # iOS backups store sms.db under a hash, with no extension.
    hashed = tmp_path / "backup" / "3d" / "3d0d7e5fb2ce288813306e4d4636395e047a3d28"
    hashed.parent.mkdir(parents=True)
    shutil.copyfile(modern / "chat.db", hashed)
    assert READER.detect(hashed)
    assert READER.detect(hashed.parent)


# -- the modern database -------------------------------------------------------------------


def test_modern_database(run_import: RunImport, modern: Path) -> None:
    job = run_import(modern, batch_size=3)
    assert job.status == "done", job.errors
    assert job.format == "imessage"
    found = messages()
    assert set(found) == {
        "M-HELLO",
        "M-BODY",
        "G-ASK",
        "G-REPLY",
        "G-RENAME",
        "M-EDITED",
        "M-UNSENT",
        "M-PHOTO",
        "M-SNEAKY",
        "M-CORRUPT",
    }
    assert job.added == 10
    assert job.total == 17 - 6  # message rows less the tapbacks

    account = Account.objects.get()
    assert (account.provider, account.external_id) == ("imessage", "imessage-export")
    assert account.owner_identity is not None
    assert account.owner_identity.external_id == "me"

    # Senders: a phone number and an e-mail address; mine go out as the owner.
    hello, body = found["M-HELLO"], found["M-BODY"]
    assert hello.sender is not None and hello.sender.phone == PHONE
    assert hello.direction == "in"
    assert found["G-ASK"].sender is not None and found["G-ASK"].sender.email == EMAIL
    assert body.direction == "out" and body.sender == account.owner_identity
    assert body.provider_metadata["own_address"] == "me@icloud.com"
    assert Identity.objects.filter(external_id=PHONE).count() == 1  # iMessage and SMS handle

    # Times: nanoseconds since 2001 → aware UTC.
    assert hello.sent_at == at(0)
    assert found["G-REPLY"].sent_at == at(11)

    # attributedBody decoded when text is NULL.
    assert body.text == "On my way 🚲"
    assert found["G-REPLY"].text == "Me!"

    # Chats.
    dm, group = Chat.objects.get(external_id=DM_GUID), Chat.objects.get(external_id=GROUP_GUID)
    assert (dm.kind, dm.title) == ("dm", PHONE)
    assert (group.kind, group.title) == ("group", "Climbing crew")
    assert group.provider_metadata["participants"] == [PHONE, EMAIL]
    assert hello.chat == dm and found["G-ASK"].chat == group
    assert hello.provider_metadata["also_in_chats"] == ["iMessage;-;empty@example.com"]

    # Tapbacks are reactions on their target, never messages.
    assert not Message.objects.filter(external_id__startswith="T-").exists()
    assert hello.provider_metadata["reactions"] == [
        {"type": "love", "by": "me", "at": at(2).isoformat()}
    ]
    assert "reactions" not in body.provider_metadata  # laughed, then removed
    assert found["G-ASK"].provider_metadata["reactions"] == [
        {"type": "like", "by": PHONE, "at": at(12).isoformat()}
    ]

    assert found["G-REPLY"].provider_metadata["reactions"] == [
        {"type": "emoji", "by": EMAIL, "at": at(12).isoformat(), "emoji": "🔥"}
    ]

    # Replies, edits, unsends, service messages.
    assert found["G-REPLY"].reply_to == found["G-ASK"]
    assert found["M-EDITED"].edited_at == at(21)
    unsent = found["M-UNSENT"]
    assert unsent.deleted_at == at(23) and unsent.text == ""
    assert unsent.provider_metadata["no_text"] is True
    assert "no_text" not in found["M-PHOTO"].provider_metadata
    rename = found["G-RENAME"]
    assert rename.kind == "service" and rename.text == "named the conversation “Crag rats”"

    # The ROWID travels as the live-sync cursor.
    assert hello.provider_metadata["rowid"] == 1

    # A corrupt attributedBody: imported with empty text, counted.
    corrupt = found["M-CORRUPT"]
    assert corrupt.text == "" and corrupt.provider_metadata["text_unreadable"] is True

    assert job.skipped == {
        "tapback (kept as reaction)": 3,
        "tapback removed or replaced later": 2,
        "tapback on a message not in the export": 1,
        "attributedBody unreadable (text left empty)": 1,
        "message without a chat": 1,
        "chat link to a message that no longer exists": 1,
        "attachment link to a message that no longer exists": 1,
        "attachment link to an attachment row that no longer exists": 1,
        "attachment file not in the export (kept as metadata)": 1,
        "attachment path outside the Attachments folder (refused)": 1,
    }


def test_attachments(run_import: RunImport, modern: Path) -> None:
    job = run_import(modern)
    assert job.status == "done", job.errors
    photo_message = Message.objects.get(external_id="M-PHOTO")
    assert photo_message.text == ""  # the U+FFFC placeholder is not text
    by_id = {a.external_id: a for a in Attachment.objects.all()}
    assert set(by_id) == {"A-PHOTO", "A-MISSING", "A-SNEAKY", "A-IOS"}
    ios = by_id["A-IOS"]  # an iOS path maps onto the Attachments folder too
    assert ios.sha256 == hashlib.sha256(b"caf!!").hexdigest() and ios.message == photo_message

    photo = by_id["A-PHOTO"]
    assert photo.sha256 == hashlib.sha256(PHOTO).hexdigest()
    assert (photo.file_name, photo.mime_type, photo.size) == (
        "IMG_0001.jpeg",
        "image/jpeg",
        len(PHOTO),
    )
    assert photo.path and photo.message == photo_message
    assert photo.provider_metadata["uti"] == "public.jpeg"

    missing = by_id["A-MISSING"]
    assert missing.sha256 == "" and missing.path is None
    assert missing.provider_metadata["not_included"] is True
    assert (missing.file_name, missing.mime_type, missing.size) == (
        "IMG_0002.HEIC",
        "image/heic",
        123456,
    )

    sneaky = by_id["A-SNEAKY"]
    assert sneaky.path is None and sneaky.sha256 == ""
    assert sneaky.provider_metadata["refused_path"] is True
    secret = hashlib.sha256(b"never imported").hexdigest()
    assert not Attachment.objects.filter(sha256=secret).exists()


def test_the_database_folder_is_left_untouched(run_import: RunImport, modern: Path) -> None:
    database = modern / "chat.db"
    assert database.read_bytes()[18:20] == b"\x02\x02"  # really a WAL-mode database
    before = snapshot(modern)
    job = run_import(modern)
    assert job.status == "done", job.errors
    assert snapshot(modern) == before
    assert not list(modern.glob("chat.db-*"))

    # The control: an ordinary read-only open does write beside the database.
    control = modern.parent / "control"
    control.mkdir()
    shutil.copyfile(database, control / "chat.db")
    connection = sqlite3.connect(f"file:{control / 'chat.db'}?mode=ro", uri=True)
    connection.execute("SELECT COUNT(*) FROM message").fetchone()
    connection.close()
    assert {p.name for p in control.iterdir()} > {"chat.db"}


def test_messages_still_in_the_wal_are_read(
    run_import: RunImport, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live database keeps its latest messages in chat.db-wal; they are read from a copy."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    live = tmp_path / "live"
    db = ChatDb(live / "chat.db")
    chat = db.chat(DM_GUID, identifier=PHONE)
    db.message("W-OLD", chat=chat, at=at(0), text="checkpointed")
    db.close()
    writer = sqlite3.connect(live / "chat.db")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute(
        "INSERT INTO message (guid, text, date) VALUES ('W-NEW', 'only in the WAL', ?)",
        (apple_ns(at(5)),),
    )
    writer.execute("INSERT INTO chat_message_join (chat_id, message_id) VALUES (1, 2)")
    writer.commit()
    export = tmp_path / "export"
    export.mkdir()
    for name in ("chat.db", "chat.db-wal"):
        shutil.copyfile(live / name, export / name)
    writer.close()
    before = snapshot(export)

    job = run_import(export / "chat.db")
    assert job.status == "done", job.errors
    assert Message.objects.get(external_id="W-NEW").text == "only in the WAL"
    assert Message.objects.count() == 2
    assert snapshot(export) == before
    assert not list((tmp_path / "tmp").iterdir())  # the private copy is gone

    # A stream dropped before it is read removes its copy too.
    stream = READER.open(export, ReadOptions())
    assert len(list((tmp_path / "tmp").iterdir())) == 1
    del stream
    gc.collect()
    assert not list((tmp_path / "tmp").iterdir())


def test_second_import_adds_nothing(run_import: RunImport, modern: Path) -> None:
    first = run_import(modern, batch_size=4)
    assert (first.status, first.added) == ("done", 10)
    second = run_import(modern, batch_size=4)
    assert second.status == "done", second.errors
    assert (second.added, second.updated, second.unchanged) == (0, 0, 10)
    assert Attachment.objects.count() == 4


def test_account_name_option(run_import: RunImport, modern: Path) -> None:
    job = run_import(modern, account="my-macbook")
    assert job.status == "done", job.errors
    assert Account.objects.get().external_id == "my-macbook"


# -- older databases -----------------------------------------------------------------------


def test_old_database_in_seconds_without_newer_tables(
    run_import: RunImport, tmp_path: Path
) -> None:
    database = build_old(tmp_path / "old")
    assert READER.detect(database)
    job = run_import(database)
    assert job.status == "done", job.errors
    found = messages()
    assert set(found) == {"O-1", "O-2", "O-3", "O-4"}
    assert found["O-4"].text == "Hi \ufffd "
    assert found["O-1"].sent_at == datetime(2013, 2, 3, 4, 5, 6, tzinfo=UTC)
    assert found["O-1"].sender is not None and found["O-1"].sender.phone == "+447700900123"
    assert found["O-1"].provider_metadata["service"] == "SMS"
    assert found["O-2"].direction == "out" and found["O-2"].text == "Reply from me"
    assert found["O-3"].sender is not None and found["O-3"].sender.email == "carol@example.org"
    assert found["O-3"].chat.kind == "group"
    assert all(m.edited_at is None and m.deleted_at is None for m in found.values())
    assert not Attachment.objects.exists()
    assert job.skipped == {}


def test_database_without_chat_join_table(run_import: RunImport, tmp_path: Path) -> None:
    """The oldest shapes have no chat_message_join: one conversation per handle."""
    schema = OLD_SCHEMA.replace(
        "CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER,\n"
        "    PRIMARY KEY (chat_id, message_id));",
        "",
    )
    assert "chat_message_join" not in schema
    db = ChatDb(tmp_path / "sms.db", schema, wal=False)
    dave = db.handle("+15550001111", service="SMS")
    db.insert(
        "message", guid="X-1", text="no join table", handle_id=dave, date=apple_seconds(at(0))
    )
    db.insert("message", guid="X-2", text="nobody", handle_id=0, date=apple_seconds(at(1)))
    db.close()
    job = run_import(tmp_path / "sms.db")
    assert job.status == "done", job.errors
    message = Message.objects.get()
    assert message.chat.external_id == "handle:+15550001111"
    assert message.sent_at == at(0)
    assert job.skipped == {"message without a chat": 1}


def test_real_ventura_schema(run_import: RunImport, tmp_path: Path) -> None:
    """The schema of a real macOS Ventura chat.db, triggers and all, with rows added here."""
    script = sample("imessage/macos_chatdb_full_schema_ventura.sql").read_text()
    database = tmp_path / "ventura" / "chat.db"
    database.parent.mkdir()
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA journal_mode = WAL")
    statement, created_triggers = "", 0
    for line in script.splitlines(keepends=True):
        statement += line
        if not sqlite3.complete_statement(statement):
            continue
        # SQLite keeps sqlite_sequence / sqlite_stat1 for itself: they cannot be created.
        if not statement.lstrip().upper().startswith(("CREATE TABLE SQLITE_",)):
            connection.execute(statement)
            created_triggers += statement.lstrip().upper().startswith("CREATE TRIGGER")
        statement = ""
    assert created_triggers > 10  # the triggers that call Messages.app functions are there
    body = attributed_body("Ventura says hi")
    connection.executescript(
        f"""
        INSERT INTO handle (ROWID, id, service) VALUES (1, '{PHONE}', 'iMessage');
        INSERT INTO chat (ROWID, guid, style, chat_identifier, service_name)
            VALUES (1, '{DM_GUID}', 45, '{PHONE}', 'iMessage');
        INSERT INTO chat_handle_join VALUES (1, 1);
        INSERT INTO message (ROWID, guid, text, attributedBody, handle_id, date, is_from_me)
            VALUES (1, 'V-1', NULL, X'{body.hex()}', 1, {apple_ns(at(0))}, 0);
        INSERT INTO message (ROWID, guid, text, handle_id, date, is_from_me,
                             thread_originator_guid, date_edited)
            VALUES (2, 'V-2', 'threaded', 0, {apple_ns(at(1))}, 1, 'V-1', {apple_ns(at(2))});
        INSERT INTO message (ROWID, guid, text, handle_id, date, associated_message_guid,
                             associated_message_type)
            VALUES (3, 'V-3', 'Emphasized “threaded”', 1, {apple_ns(at(3))}, 'p:0/V-2', 2004);
        INSERT INTO chat_message_join VALUES (1, 1, 0), (1, 2, 0), (1, 3, 0);
        INSERT INTO attachment (ROWID, guid, filename, mime_type, transfer_name, total_bytes,
                                original_guid)
            VALUES (1, 'V-A', '~/Library/Messages/Attachments/0a/10/V-A/voice.caf',
                    'audio/x-caf', 'voice.caf', 5, 'V-A');
        INSERT INTO message_attachment_join VALUES (2, 1);
        """
    )
    connection.commit()
    connection.close()
    (database.parent / "Attachments/0a/10/V-A").mkdir(parents=True)
    (database.parent / "Attachments/0a/10/V-A/voice.caf").write_bytes(b"12345")
    before = snapshot(database.parent)

    job = run_import(database.parent)
    assert job.status == "done", job.errors
    found = messages()
    assert set(found) == {"V-1", "V-2"}
    assert found["V-1"].text == "Ventura says hi" and found["V-1"].sender.phone == PHONE
    assert found["V-2"].reply_to == found["V-1"] and found["V-2"].edited_at == at(2)
    assert found["V-2"].provider_metadata["reactions"] == [
        {"type": "emphasize", "by": PHONE, "at": at(3).isoformat()}
    ]
    voice = Attachment.objects.get()
    assert voice.sha256 == hashlib.sha256(b"12345").hexdigest()
    assert snapshot(database.parent) == before


# -- bad input -----------------------------------------------------------------------------


def test_not_a_database_fails_naming_the_file(run_import: RunImport, tmp_path: Path) -> None:
    bogus = tmp_path / "chat.db"
    bogus.write_bytes(b"SQLite format 3\x00" + b"\xab" * 8192)
    job = run_import(bogus, format_name="imessage")
    assert job.status == "failed"
    assert "chat.db" in job.errors[0]
    assert "not an SQLite database" in job.errors[0] or "malformed" in job.errors[0]


def test_missing_tables_fail_naming_the_file(run_import: RunImport, tmp_path: Path) -> None:
    database = tmp_path / "notes.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE message (id INTEGER)")
    connection.close()
    job = run_import(database, format_name="imessage")
    assert job.status == "failed"
    assert job.errors == ["notes.db, schema: no handle, chat table: not an Apple Messages database"]


def table_leaf_pages(database: Path, table: str) -> list[int]:
    """The leaf pages of `table`, in key order, read from its b-tree (root interior page)."""
    connection = sqlite3.connect(database)
    ((root,),) = connection.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
    connection.close()
    data = database.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    page = data[(root - 1) * page_size : root * page_size]
    assert page[0] == 0x05, "expected an interior table page as the root"
    cells = int.from_bytes(page[3:5], "big")
    pointers = [int.from_bytes(page[12 + 2 * i : 14 + 2 * i], "big") for i in range(cells)]
    children = [int.from_bytes(page[p : p + 4], "big") for p in pointers]
    return [*children, int.from_bytes(page[8:12], "big")]


def test_corrupt_pages_fail_naming_the_file_and_position(
    run_import: RunImport, tmp_path: Path
) -> None:
    database = tmp_path / "chat.db"
    db = ChatDb(database, OLD_SCHEMA)
    chat = db.chat(DM_GUID, identifier=PHONE)
    for number in range(1, 301):
        db.message(f"C-{number}", chat=None, at=at(number), seconds=True, text="x" * 200)
    for number in range(1, 301):
        db.insert("chat_message_join", chat_id=chat, message_id=number)
    db.close()
    leaves = table_leaf_pages(database, "message")
    assert len(leaves) > 5
    # Break the message table's second-last leaf page: its page-type byte becomes invalid.
    # (Garbled cells are not reliably caught: SQLite may read them as rows of garbage.)
    data = bytearray(database.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    start = (leaves[-2] - 1) * page_size
    assert data[start] == 0x0D  # a table b-tree leaf page
    data[start] = 0x00
    database.write_bytes(bytes(data))
    assert READER.detect(database)  # the schema is still readable

    job = run_import(database, batch_size=50)
    assert job.status == "failed"
    assert len(job.errors) == 1
    error = job.errors[0]
    assert error.startswith("chat.db, message after ROWID ")
    assert "malformed" in error
    assert 200 <= job.added < 300  # the batches before the damage are kept


# -- the pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, None),
        (None, None),
        (704_628_000, datetime(2023, 5, 1, 10, 0, tzinfo=UTC)),
        (704_628_000_123_456_789, datetime(2023, 5, 1, 10, 0, 0, 123_456, tzinfo=UTC)),
        (704_628_000.5, datetime(2023, 5, 1, 10, 0, 0, 500_000, tzinfo=UTC)),
        (10**30, None),
        ("2023", None),
    ],
)
def test_apple_time(value: Any, expected: datetime | None) -> None:
    assert apple_time(value) == expected


def decoded_by_typedstream(blob: bytes) -> str:
    root = typedstream.unarchive_from_data(blob)
    first = root.contents[0].value
    assert isinstance(first, NSString)
    return first.value


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), mutable=st.booleans())
def test_attributed_text_agrees_with_the_typedstream_parser(text: str, mutable: bool) -> None:
    blob = attributed_body(text, mutable=mutable)
    assert decoded_by_typedstream(blob) == text
    assert attributed_text(blob) == text


def test_attributed_text_round_trips_and_survives_garbage() -> None:
    for text in ("", "a", "Zoë 👩‍👩‍👧 ∑", "x" * 127, "x" * 128, "x" * 200, "x" * 70_000):
        for mutable in (False, True):
            assert attributed_text(attributed_body(text, mutable=mutable)) == text
    # Another system version: not the shape read directly, so the general parser reads it.
    other = attributed_body("via typedstream").replace(b"\x81\xe8\x03", b"\x81\xe9\x03", 1)
    assert attributed_text(other) == "via typedstream"
    blob = attributed_body("hello world")
    # Cut inside the attribute runs, after the string: the string is still read.
    assert attributed_text(blob[:-5]) == "hello world"
    # Cut inside the string, or a string whose bytes are not UTF-8: unreadable.
    cut = blob.index(b"hello world") + 5
    assert attributed_text(blob[:cut]) is None
    assert attributed_text(blob.replace(b"hello world", b"hello\xffworld")) is None
    assert attributed_text(other[: other.index(b"via") + 2]) is None
    assert attributed_text(b"") is None
    assert attributed_text(b"\x04\x0bstreamtyped\x81\xe8\x03\x84\x01@\xff\xff") is None
    assert attributed_text(bytes(range(256))) is None
