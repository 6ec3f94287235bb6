"""Apple Messages chat.db / sms.db imports, through the real import service: detection, a
modern database with its attachments, re-imports, older and real schemas."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from archive.connectors.imessage.export import READER
from archive.connectors.registry import reader_for
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import sample
from tests.connectors.imessage_support import (
    DM_GUID,
    EMAIL,
    GROUP_GUID,
    PHONE,
    PHOTO,
    RunImport,
    at,
    build_old,
    messages,
    snapshot,
)
from tests.fixtures.imessage.chatdb import (
    OLD_SCHEMA,
    ChatDb,
    apple_ns,
    apple_seconds,
)
from tests.fixtures.imessage.typedstream_writer import attributed_body

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
        "M-NOCHAT",
    }
    assert job.added == 11
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
    # A message no chat links: kept, in the one-to-one chat of its handle.
    assert found["M-NOCHAT"].chat == dm and found["M-NOCHAT"].text == "lost"

    assert job.skipped == {
        "tapback (kept as reaction)": 3,
        "tapback removed or replaced later": 2,
        "tapback on a message not in the export": 1,
        "attributedBody unreadable (text left empty)": 1,
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


def test_second_import_adds_nothing(run_import: RunImport, modern: Path) -> None:
    first = run_import(modern, batch_size=4)
    assert (first.status, first.added) == ("done", 11)
    second = run_import(modern, batch_size=4)
    assert second.status == "done", second.errors
    assert (second.added, second.updated, second.unchanged) == (0, 0, 11)
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
    message = Message.objects.get(external_id="X-1")
    assert message.chat.external_id == "handle:+15550001111"
    assert message.sent_at == at(0)
    # Neither a chat nor a handle: kept, in the chat of such messages, with no sender.
    nobody = Message.objects.get(external_id="X-2")
    assert (nobody.chat.external_id, nobody.sender) == ("unlinked", None)
    assert job.skipped == {}


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
