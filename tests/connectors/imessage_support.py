"""Shared by the Apple Messages tests: the databases they import (a modern chat.db with its
Attachments folder, an early sms.db) and small lookups."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from archive.imports.models import ImportJob
from archive.store.models import Message
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
