"""WhatsApp chat export (.txt / .zip), imported through the real import service."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.registry import reader_for
from archive.connectors.whatsapp.export import READER
from archive.imports.models import ImportJob, ImportStatus
from archive.store.models import Account, Attachment, Chat, Message
from tests.connectors.conftest import FIXTURES, sample

Run = Callable[..., ImportJob]
HERE = FIXTURES / "whatsapp"
ANDROID = HERE / "WhatsApp Chat with Hiking Club.txt"
IOS = HERE / "ios_familie_chat.txt"
PHOTO = b"\xff\xd8\xff\xe0\x00\x10JFIF fake photo bytes " + bytes(range(256))
LRM = "\u200e"


def at(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def author(message: Message) -> str | None:
    return message.sender.external_id if message.sender else None


def messages(chat: Chat | None = None) -> list[Message]:
    found = Message.objects.select_related("sender", "chat").order_by("sent_at", "id")
    return list(found.filter(chat=chat) if chat else found)


def write(folder: Path, name: str, lines: list[str], *, newline: str = "\n") -> Path:
    path = folder / name
    path.write_bytes(newline.join(lines).encode() + newline.encode())
    return path


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, (2022, 1, 3, 18, 0, 0)), data)
    return path


def done(job: ImportJob) -> ImportJob:
    assert job.status == ImportStatus.DONE, job.errors
    return job


# --- one line, every layout ---------------------------------------------------------------

LINES = [
    # Android, US, 12-hour
    ("12/31/21, 9:05 PM - Anna: hello", "Anna", at(2021, 12, 31, 21, 5), "hello"),
    ("12/31/2021, 9:05 am - Anna: four-digit year", "Anna", at(2021, 12, 31, 9, 5), None),
    ("12/31/21, 12:05\u00a0AM - Anna: midnight", "Anna", at(2021, 12, 31, 0, 5), "midnight"),
    ("12/31/21, 12:05\u202fPM - Anna: noon", "Anna", at(2021, 12, 31, 12, 5), "noon"),
    ("1/23/23, 3:22_AM - User 1: mangled space", "User 1", at(2023, 1, 23, 3, 22), None),
    # Android, day-first locales
    ("31.12.21, 21:05 - Anna: hallo", "Anna", at(2021, 12, 31, 21, 5), "hallo"),
    ("31.12.2021, 21:05 - Anna: hallo", "Anna", at(2021, 12, 31, 21, 5), "hallo"),
    ("31/12/2021, 9:05 a. m. - Anna: hola", "Anna", at(2021, 12, 31, 9, 5), "hola"),
    ("31/12/2021, 9:05 p. m. - Anna: hola", "Anna", at(2021, 12, 31, 21, 5), "hola"),
    ("31/12/2021, 9:05\u202fp.\u00a0m. - Anna: narrow", "Anna", at(2021, 12, 31, 21, 5), None),
    ("31/12/2021, 9:05 p.m. - Anna: dots", "Anna", at(2021, 12, 31, 21, 5), "dots"),
    ("31.12.21, 21:05 \u2013 Anna: en dash", "Anna", at(2021, 12, 31, 21, 5), "en dash"),
    # Android, ISO dates
    ("2021-12-31 21:05 - Anna: iso", "Anna", at(2021, 12, 31, 21, 5), "iso"),
    ("2021-12-31, 21:05:07 - Anna: iso secs", "Anna", at(2021, 12, 31, 21, 5, 7), None),
    # iOS, bracketed
    ("[12/31/21, 9:05:01 PM] Anna: ios", "Anna", at(2021, 12, 31, 21, 5, 1), "ios"),
    ("[31.12.21, 21:05:01] Anna: ios de", "Anna", at(2021, 12, 31, 21, 5, 1), "ios de"),
    ("[31-12-21 21:05:01] Anna: dashes", "Anna", at(2021, 12, 31, 21, 5, 1), "dashes"),
    ("[12/31/21 21:05] Anna: no comma", "Anna", at(2021, 12, 31, 21, 5), "no comma"),
    ("[2021-12-31, 21:05:01] Anna: iso", "Anna", at(2021, 12, 31, 21, 5, 1), "iso"),
    (f"{LRM}[31.12.21, 21:05:01] {LRM}Anna: {LRM}marks", "Anna", at(2021, 12, 31, 21, 5, 1), None),
    ("[31/12/2021, 9:05:01\u202fp.m.] Anna: x", "Anna", at(2021, 12, 31, 21, 5, 1), "x"),
    # bodies
    ("12/31/21, 9:05 PM - Anna:no space", "Anna", at(2021, 12, 31, 21, 5), "no space"),
    ("12/31/21, 9:05 PM - Anna:.", "Anna", at(2021, 12, 31, 21, 5), "."),
    ("12/31/21, 9:05 PM - Anna: at 10:30: ok", "Anna", at(2021, 12, 31, 21, 5), "at 10:30: ok"),
    ("12/31/21, 9:05 PM - \U0001f98a: emoji", "\U0001f98a", at(2021, 12, 31, 21, 5), "emoji"),
    (
        "12/31/21, 9:05 PM - \u202a+1 555 123 4567\u202c: call me",
        "+15551234567",
        at(2021, 12, 31, 21, 5),
        "call me",
    ),
    (
        f"12/31/21, 9:05 PM - +1 555{LRM} 123 4567: mark",
        "+15551234567",
        at(2021, 12, 31, 21, 5),
        None,
    ),
]


@pytest.mark.parametrize(("line", "author", "when", "text"), LINES, ids=[c[0] for c in LINES])
def test_one_line_of_every_layout(
    run_import: Run, tmp_path: Path, line: str, author: str, when: datetime, text: str | None
) -> None:
    path = write(tmp_path, "WhatsApp Chat with Case.txt", [line])
    done(run_import(path))
    [message] = messages()
    assert message.sender is not None
    assert (message.sender.external_id, message.sent_at, message.kind) == (author, when, "text")
    assert message.text == (text if text is not None else line.split(": ", 1)[-1].strip(LRM))
    assert LRM not in message.text and LRM not in message.sender.external_id
    assert message.provider_metadata["time_zone_unknown"] is True


def test_a_phone_number_author_fills_the_phone_field(run_import: Run, tmp_path: Path) -> None:
    path = write(tmp_path, "x.txt", ["12/31/21, 9:05 PM - \u202a+1 555 123 4567\u202c: hi"])
    done(run_import(path))
    [message] = messages()
    assert message.sender is not None
    assert message.sender.phone == "+15551234567"
    assert message.sender.display_name == "+1 555 123 4567"


SYSTEM_LINES = [
    # (line, text when not the line's body, the chat kind the line implies)
    ("12/31/21, 9:05 PM - Messages and calls are end-to-end encrypted.", None, "dm"),
    ("31.12.21, 21:05 - Anna hat Ben hinzugefügt", None, "dm"),  # English group words only
    ("12/31/21, 9:05 PM - Anna added \u202a+1 555 123 4567\u202c", "Anna added +1 555 123 4567",
     "group"),
    ('12/31/21, 9:05 PM - You changed the subject from "a: b" to "c"', None, "group"),
    ("12/31/21, 9:05 PM - Anna changed the group description", None, "group"),
    ("[31.12.21, 21:05:01] Club: \u200eAnna created group \u201cClub\u201d",
     "Anna created group \u201cClub\u201d", "group"),
    ("[31.12.21, 21:05:01] Club: \u200eMessages and calls are end-to-end encrypted.",
     "Messages and calls are end-to-end encrypted.", "dm"),
    ('[12/31/21 00:08] +12 345 578 created group "Groupname"', None, "group"),
    ("[12/31/21 09:10] You were added", None, "group"),
]  # fmt: skip


@pytest.mark.parametrize(("line", "text", "kind"), SYSTEM_LINES, ids=[c[0] for c in SYSTEM_LINES])
def test_system_lines_are_service_messages_without_a_sender(
    run_import: Run, tmp_path: Path, line: str, text: str | None, kind: str
) -> None:
    done(run_import(write(tmp_path, "WhatsApp Chat with Club.txt", [line])))
    [message] = messages()
    assert (message.kind, message.sender, message.direction) == ("service", None, "in")
    assert message.text == (text or line.split("] ", 1)[-1].split(" - ", 1)[-1])
    assert Chat.objects.get().kind == kind


# --- day/month order from the whole file ---------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "first", "order", "guessed"),
    [
        # the deciding date comes last: every earlier date is read with the file's order
        (["01.02.21, 10:00 - A: x", "05.03.21, 10:00 - A: y", "13.03.21, 10:00 - A: z"],
         at(2021, 2, 1, 10), "day_first", False),
        (["01/02/21, 10:00 - A: x", "05/03/21, 10:00 - A: y", "03/13/21, 10:00 - A: z"],
         at(2021, 1, 2, 10), "month_first", False),
        (["[01/02/21, 10:00:00 AM] A: x", "[12/31/21, 10:00:00 AM] A: y"],
         at(2021, 1, 2, 10), "month_first", False),
        # nothing decides: slashes with a 12-hour clock read as US, everything else day-first
        (["01/02/21, 10:00 AM - A: x"], at(2021, 1, 2, 10), "month_first", True),
        (["01/02/21, 10:00 - A: x"], at(2021, 2, 1, 10), "day_first", True),
        (["01.02.21, 10:00 - A: x"], at(2021, 2, 1, 10), "day_first", True),
        (["[01-02-21 10:00:00] A: x"], at(2021, 2, 1, 10), "day_first", True),
    ],
)  # fmt: skip
def test_day_month_order_is_inferred_from_the_whole_file(
    run_import: Run,
    tmp_path: Path,
    lines: list[str],
    first: datetime,
    order: str,
    guessed: bool,
) -> None:
    done(run_import(write(tmp_path, "WhatsApp Chat with Order.txt", lines)))
    assert messages()[0].sent_at == first
    chat = Chat.objects.get()
    assert chat.provider_metadata["date_order"] == order
    assert chat.provider_metadata.get("date_order_guessed", False) is guessed


def test_a_file_with_dates_both_ways_flags_the_conflict(run_import: Run, tmp_path: Path) -> None:
    lines = ["13/01/21, 10:00 - A: d", "01/13/21, 10:00 - A: m", "02/03/21, 10:00 - A: ?"]
    done(run_import(write(tmp_path, "x.txt", lines)))
    dates = [m.sent_at.date().isoformat() for m in messages()]
    assert dates == ["2021-01-13", "2021-01-13", "2021-03-02"]  # a tie reads day-first
    assert Chat.objects.get().provider_metadata["date_order_conflict"] is True


# --- a whole Android group export --------------------------------------------------------


def test_android_group_export(run_import: Run) -> None:
    job = done(run_import(ANDROID))
    assert (job.total, job.added) == (16, 16)
    chat = Chat.objects.get()
    assert (chat.external_id, chat.title, chat.kind) == (
        "title:Hiking Club",
        "Hiking Club",
        "group",
    )
    found = messages()
    assert found[0].text == "(arrived late, out of order)"  # 7:59 PM, last in the file
    service = [m for m in found if m.kind == "service"]
    assert [m.text for m in service] == [
        "Messages and calls are end-to-end encrypted. No one outside of this chat, not even "
        "WhatsApp, can read or listen to them. Tap to learn more.",
        'Anna created group "Hiking Club"',
        "Anna added Ben",
        "Anna added +1 555 123 4567",
        'Anna changed the subject from "Hiking Club" to "Hiking Club: 2022"',
        "Ben left",
    ]
    assert all(m.sender is None for m in service)
    by_text = {m.text: m for m in found}
    welcome = by_text["Welcome everyone!\nSaturday: meet at 7:30 at the trailhead.\nBring water."]
    assert welcome.sender is not None and welcome.sender.external_id == "Anna"
    assert welcome.sent_at == at(2021, 12, 30, 20, 2)
    assert author(by_text["."]) == "Ben"
    assert by_text["Sounds good: count me in"].sent_at == at(2021, 12, 30, 20, 3)
    carla = by_text["Hi, it's Carla"]
    assert carla.sender is not None and carla.sender.phone == "+15551234567"
    assert author(by_text["I'm in too"]) == "\U0001f43b"

    omitted = Attachment.objects.select_related("message").order_by("message__sent_at", "id")
    assert [(a.message.text, a.provider_metadata, a.path) for a in omitted] == [
        ("", {"omitted": True}, None),
        ("", {"omitted": True}, None),
    ]
    deleted = by_text["This message was deleted"]
    assert deleted.deleted_at == deleted.sent_at
    edited = by_text["See you at 7:30"]
    assert edited.provider_metadata == {"time_zone_unknown": True, "edited": True}
    assert job.skipped == {}


def test_crlf_line_ends_and_a_bom_read_the_same(run_import: Run, tmp_path: Path) -> None:
    text = ANDROID.read_text(encoding="utf-8")
    crlf = tmp_path / ANDROID.name
    crlf.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert done(run_import(crlf)).added == 16
    assert not any("\r" in m.text or "\ufeff" in m.text for m in messages())
    again = done(run_import(ANDROID))  # the same messages, ids and texts, with LF ends
    assert (again.added, again.updated, again.unchanged) == (0, 0, 16)


# --- zips, media and the iOS export --------------------------------------------------------


def test_ios_zip_with_media(run_import: Run, tmp_path: Path) -> None:
    chat_text = IOS.read_text(encoding="utf-8").replace("\n", "\r\n").encode()
    archive = make_zip(
        tmp_path / "WhatsApp Chat - Familie.zip",
        {"_chat.txt": chat_text, "00000012-PHOTO-2022-01-03-18-02-00.jpg": PHOTO},
    )
    assert READER.detect(archive)
    assert reader_for(archive).format == "whatsapp"
    job = done(run_import(archive))
    assert (job.total, job.added) == (10, 10)
    chat = Chat.objects.get()
    assert (chat.external_id, chat.title, chat.kind) == ("title:Familie", "Familie", "group")
    assert chat.provider_metadata["date_order"] == "day_first"

    found = messages()
    assert [m.text for m in found if m.kind == "service"] == [
        "Messages and calls are end-to-end encrypted. No one outside of this chat, not even "
        "WhatsApp, can read or listen to them.",
        "Mama created group \u201cFamilie\u201d",
        "Mama added Papa",
    ]
    assert all(m.sender is None for m in found if m.kind == "service")
    assert found[-1].sent_at == at(2022, 1, 13, 9) and found[-1].text == "Bis bald"
    assert found[3].sent_at == at(2022, 1, 3, 18, 1, 10)

    photo = Attachment.objects.get(file_name="00000012-PHOTO-2022-01-03-18-02-00.jpg")
    assert photo.sha256 == hashlib.sha256(PHOTO).hexdigest()
    assert photo.size == len(PHOTO) and photo.mime_type == "image/jpeg"
    assert photo.message.text == ""
    assert photo.path is not None
    assert (Path(settings.STATE_DIR) / photo.path).read_bytes() == PHOTO

    omitted = Attachment.objects.exclude(pk=photo.pk).get()
    assert omitted.provider_metadata == {"omitted": True, "media_type": "image"}
    assert omitted.path is None

    texts = {m.text: m for m in found}
    assert author(texts["Wann: morgen um 12:00?\nOder später?"]) == "Lena"
    assert texts["This message was deleted."].deleted_at is not None
    assert texts["Tschüss"].provider_metadata["edited"] is True


def test_android_zip_with_an_attached_file_and_caption(run_import: Run, tmp_path: Path) -> None:
    lines = [
        "31/12/2021, 21:05 - Bob: IMG-20211231-WA0001.jpg (file attached)",
        "The view from the top",
        "31/12/2021, 21:06 - Eve: nice",
    ]
    archive = make_zip(
        tmp_path / "chat-export.zip",
        {
            "WhatsApp Chat with Bob.txt": "\n".join(lines).encode(),
            "IMG-20211231-WA0001.jpg": PHOTO,
        },
    )
    done(run_import(archive))
    chat = Chat.objects.get()
    assert (chat.title, chat.kind) == ("Bob", "dm")
    first = messages()[0]
    assert first.text == "The view from the top"
    [photo] = first.attachments.all()
    assert photo.sha256 == hashlib.sha256(PHOTO).hexdigest()


def test_media_beside_a_plain_txt(run_import: Run, tmp_path: Path) -> None:
    (tmp_path / "IMG-20211231-WA0002.jpg").write_bytes(PHOTO)
    path = write(
        tmp_path,
        "WhatsApp Chat with Bob.txt",
        [
            "12/31/21, 9:05 PM - Bob: IMG-20211231-WA0002.jpg (file attached)",
            "12/31/21, 9:06 PM - Bob: IMG-20211231-WA0003.jpg (file attached)",
        ],
    )
    job = done(run_import(path))
    stored, missing = Attachment.objects.order_by("message__sent_at")
    assert stored.sha256 == hashlib.sha256(PHOTO).hexdigest()
    assert (missing.path, missing.provider_metadata) == (None, {"file_missing": True})
    assert job.skipped == {"attachment file missing from the export": 1}


def test_a_corrupt_media_member_is_recorded_as_missing(run_import: Run, tmp_path: Path) -> None:
    archive = tmp_path / "WhatsApp Chat - Broken.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as out:
        out.writestr("_chat.txt", "[31.12.21, 21:05:01] Eve: \u200e<attached: photo.jpg>\n")
        out.writestr("photo.jpg", PHOTO)
    data = bytearray(archive.read_bytes())
    at_photo = data.index(PHOTO)
    data[at_photo + 10] ^= 0xFF  # the CRC no longer matches
    archive.write_bytes(bytes(data))
    job = done(run_import(archive))
    photo = Attachment.objects.get()
    assert (photo.path, photo.provider_metadata) == (None, {"file_missing": True})
    assert job.skipped == {"attachment file missing from the export": 1}


def test_small_batches_import_the_same(run_import: Run) -> None:
    job = done(run_import(ANDROID, batch_size=3))
    assert (job.total, job.position, job.added) == (16, 16, 16)


def test_the_zip_and_its_unpacked_txt_are_the_same_chat(run_import: Run, tmp_path: Path) -> None:
    done(run_import(ANDROID))
    archive = make_zip(
        tmp_path / "WhatsApp Chat with Hiking Club (1).zip",
        {ANDROID.name: ANDROID.read_bytes()},
    )
    again = done(run_import(archive))
    assert (again.added, again.unchanged) == (0, 16)
    assert Chat.objects.count() == 1


def test_zip_slip_members_are_never_read(
    run_import: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat_text = "\n".join(
        [
            "[31.12.21, 21:05:01] Eve: \u200e<attached: ../evil.jpg>",
            "[31.12.21, 21:05:02] Eve: \u200e<attached: /etc/passwd>",
            "[31.12.21, 21:05:03] Eve: \u200e<attached: ..\\evil.jpg>",
            "[31.12.21, 21:05:04] Eve: \u200e<attached: good.jpg>",
        ]
    )
    evil_chat = "[31.12.21, 21:05:01] Mallory: pick me instead\n"
    archive = make_zip(
        tmp_path / "WhatsApp Chat - Slip.zip",
        {
            "../evil.jpg": b"outside",
            "/etc/passwd": b"root",
            "../_chat.txt": evil_chat.encode(),
            "_chat.txt": chat_text.encode(),
            "good.jpg": PHOTO,
        },
    )
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def spy(self: zipfile.ZipFile, name: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    job = done(run_import(archive))
    assert set(opened) == {"_chat.txt", "good.jpg"}
    refused = Attachment.objects.filter(provider_metadata__refused__isnull=False)
    assert refused.count() == 3 and all(a.path is None for a in refused)
    assert Attachment.objects.get(file_name="good.jpg").sha256 == hashlib.sha256(PHOTO).hexdigest()
    assert job.skipped == {"attachment path outside the export refused": 3}
    assert not Message.objects.filter(sender__external_id="Mallory").exists()


# --- re-imports ---------------------------------------------------------------------------


def test_importing_the_same_export_again_adds_nothing(run_import: Run) -> None:
    first = done(run_import(ANDROID))
    ids = sorted(Message.objects.values_list("external_id", flat=True))
    second = done(run_import(ANDROID))
    assert (first.added, second.added, second.updated, second.unchanged) == (16, 0, 0, 16)
    assert sorted(Message.objects.values_list("external_id", flat=True)) == ids
    assert len(set(ids)) == 16  # two Ben messages share 8:03 PM, the ordinal parts them


def test_a_later_overlapping_export_adds_only_new_messages(run_import: Run, tmp_path: Path) -> None:
    lines = [
        "12/30/21, 8:00 PM - Anna: one",
        "12/30/21, 8:01 PM - Anna: two",
        "12/30/21, 8:02 PM - Ben: three",
        "12/30/21, 8:03 PM - Anna: four",
        "12/30/21, 8:03 PM - Anna: five",  # same minute and author as "four"
        "12/30/21, 8:04 PM - Ben: six",
        "12/30/21, 8:05 PM - Anna: seven",
        "Still seven",
        "12/30/21, 8:05 PM - Anna: eight",
        "12/31/21, 9:00 AM - Ben: nine",
    ]
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    first = done(run_import(write(early, "WhatsApp Chat with Anna.txt", lines[:6])))
    second = done(run_import(write(late, "WhatsApp Chat with Anna.txt", lines[2:])))
    assert first.added == 6
    assert (second.added, second.unchanged, second.updated) == (3, 4, 0)
    assert [m.text for m in messages()] == [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven\nStill seven",
        "eight",
        "nine",
    ]


# --- the owner ----------------------------------------------------------------------------


def test_the_account_name_names_the_owner(run_import: Run) -> None:
    done(run_import(ANDROID, account="Anna"))
    account = Account.objects.get()
    assert (account.provider, account.external_id) == ("whatsapp", "Anna")
    assert account.owner_identity is not None and account.owner_identity.external_id == "Anna"
    directions = {(author(m), m.direction) for m in messages()}
    assert ("Anna", "out") in directions and ("Ben", "in") in directions
    assert (None, "in") in directions


def test_without_an_account_name_the_owner_is_unknown(run_import: Run) -> None:
    done(run_import(ANDROID))
    account = Account.objects.get()
    assert (account.external_id, account.owner_identity) == ("whatsapp-export", None)
    assert {m.direction for m in messages()} == {"in"}


def test_two_authors_make_a_dm(run_import: Run, tmp_path: Path) -> None:
    lines = ["12/31/21, 9:05 PM - Anna: hi", "12/31/21, 9:06 PM - Ben: hey"]
    done(run_import(write(tmp_path, "WhatsApp Chat with Ben.txt", lines)))
    assert Chat.objects.get().kind == "dm"


# --- bad input ----------------------------------------------------------------------------


def test_undecodable_bytes_fail_naming_the_file_and_line(run_import: Run, tmp_path: Path) -> None:
    path = tmp_path / "WhatsApp Chat with Bad.txt"
    path.write_bytes(
        b"12/31/21, 9:05 PM - Anna: ok\r\n"
        b"12/31/21, 9:06 PM - Anna: fine\r\n"
        b"12/31/21, 9:07 PM - Anna: bad \xff\xfe here\r\n"
    )
    job = run_import(path)
    assert job.status == ImportStatus.FAILED
    [error] = job.errors
    assert "WhatsApp Chat with Bad.txt" in error and "line 3" in error and "UTF-8" in error
    assert Message.objects.count() == 0


def test_an_impossible_date_fails_before_anything_is_written(
    run_import: Run, tmp_path: Path
) -> None:
    lines = ["28.02.21, 10:00 - A: fine", "30.02.21, 10:00 - A: no such day"]
    job = run_import(write(tmp_path, "WhatsApp Chat with Feb.txt", lines))
    assert job.status == ImportStatus.FAILED
    assert "WhatsApp Chat with Feb.txt, line 2: impossible date" in job.errors[0]
    assert Message.objects.count() == 0


def test_undecodable_bytes_in_a_zip_name_the_member(run_import: Run, tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "export.zip",
        {"_chat.txt": b"[31.12.21, 21:05:01] Eve: ok\n[31.12.21, 21:05:02] Eve: \xc3\x28\n"},
    )
    job = run_import(archive)
    assert job.status == ImportStatus.FAILED
    assert "export.zip" in job.errors[0] and "_chat.txt, line 2" in job.errors[0]


def test_a_zip_without_a_chat_text_is_refused(run_import: Run, tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "photos.zip", {"IMG-1.jpg": PHOTO, "notes.txt": b"just some notes\n"}
    )
    assert not READER.detect(archive)
    job = run_import(archive, format_name="whatsapp")
    assert job.status == ImportStatus.FAILED
    assert "photos.zip" in job.errors[0] and "no WhatsApp chat text" in job.errors[0]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.txt", b"Dear diary,\n12/31/21, 9:05 PM - Anna: quoted later\n"),
        ("empty.txt", b""),
        ("blank.txt", b"\n\r\n   \n"),
        ("export.json", b'{"messages": [{"date": "2021-12-31T21:05:00"}]}'),
        ("binary.bin", bytes(range(256)) * 4),
        ("almost.txt", b"99/99/21, 9:05 PM - Anna: not a date\n"),
        ("log.txt", b"[INFO] 2021-12-31 21:05 something happened\n"),
    ],
)
def test_detect_refuses_what_is_not_a_whatsapp_export(
    run_import: Run, tmp_path: Path, name: str, content: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert not READER.detect(path)
    with pytest.raises(FormatError, match=name):
        READER.open(path, ReadOptions())
    job = run_import(path, format_name="whatsapp")  # forced: fails, naming the file
    assert job.status == ImportStatus.FAILED and name in job.errors[0]


def test_detect_finds_the_export_in_a_txt_a_zip_and_a_folder(tmp_path: Path) -> None:
    assert READER.detect(ANDROID) and READER.detect(IOS)
    folder = tmp_path / "WhatsApp Chat - Familie"
    folder.mkdir()
    shutil.copy(IOS, folder / "_chat.txt")
    (folder / "readme.txt").write_text("not a chat\n")
    assert READER.detect(folder)
    nested = make_zip(tmp_path / "n.zip", {"WhatsApp Chat - X/_chat.txt": IOS.read_bytes()})
    assert READER.detect(nested)


def test_several_chats_in_one_folder_or_zip_are_refused(run_import: Run, tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    shutil.copy(ANDROID, folder / ANDROID.name)
    write(folder, "WhatsApp Chat with Ben.txt", ["12/31/21, 9:05 PM - Ben: hi"])
    archive = make_zip(
        tmp_path / "both.zip",
        {
            ANDROID.name: ANDROID.read_bytes(),
            "WhatsApp Chat with Ben.txt": b"1/2/21, 9:05 - B: x\n",
        },
    )
    for path in (folder, archive):
        assert not READER.detect(path)
        job = run_import(path, format_name="whatsapp")
        assert job.status == ImportStatus.FAILED
        assert "several chats" in job.errors[0] and "WhatsApp Chat with Ben.txt" in job.errors[0]


def test_an_unpacked_ios_folder_is_the_same_chat_as_its_zip(
    run_import: Run, tmp_path: Path
) -> None:
    folder = tmp_path / "WhatsApp Chat - Familie"
    folder.mkdir()
    shutil.copy(IOS, folder / "_chat.txt")
    (folder / "00000012-PHOTO-2022-01-03-18-02-00.jpg").write_bytes(PHOTO)
    done(run_import(folder))
    archive = make_zip(
        tmp_path / "WhatsApp Chat - Familie.zip",
        {
            "WhatsApp Chat - Familie/_chat.txt": IOS.read_bytes(),
            "WhatsApp Chat - Familie/00000012-PHOTO-2022-01-03-18-02-00.jpg": PHOTO,
        },
    )
    again = done(run_import(archive))
    assert (again.added, again.unchanged) == (0, 10)
    assert Attachment.objects.filter(sha256=hashlib.sha256(PHOTO).hexdigest()).count() == 1


def test_a_bare_ios_chat_txt_takes_its_title_from_the_encryption_notice(
    run_import: Run, tmp_path: Path
) -> None:
    folder = tmp_path / "up_01JX"  # an upload folder: its name says nothing
    folder.mkdir()
    shutil.copy(IOS, folder / "_chat.txt")
    done(run_import(folder / "_chat.txt"))
    assert Chat.objects.get().title == "Familie"


# --- the shared real-export samples -------------------------------------------------------


def test_sample_ios_brackets_mmddyy_24h(run_import: Run) -> None:
    job = done(run_import(sample("whatsapp/chatminer_ios_brackets_mmddyy_24h.txt")))
    # 9 timestamped lines (two continue on a second line): 7 messages, 2 system lines
    assert (job.total, job.added) == (9, 9)
    chat = Chat.objects.get()
    assert chat.kind == "group"  # five authors and a "created group" line
    assert chat.provider_metadata["date_order"] == "month_first"
    found = messages()
    assert [m.kind for m in found].count("service") == 2
    assert [m.text for m in found if m.kind == "service"] == [
        '+12 345 578 created group "Groupname"',
        "You were added",
    ]
    assert (found[0].sent_at, found[0].text) == (
        at(2019, 1, 1, 11, 25),
        "Lorem ipsum dolor sit amet.",
    )
    assert found[1].text == "."
    assert found[2].text == "Lorem ipsum dolor sit amet,\nconsectetur adipiscing elit. Duis libero."
    assert found[3].text == "Lorem ipsum : dolor sit amet."
    assert [author(m) for m in found if m.sender] == [
        "John Doe",
        "John Doe",
        "Jahn Doe",
        "John-John Doe",
        "John Doe \U0001f913",
        "\U0001f913",
        "John Doe",
    ]
    assert found[-1].sent_at == at(2021, 12, 30, 22, 1)


def test_sample_us_12h_media_omitted(run_import: Run) -> None:
    job = done(run_import(sample("whatsapp/langchain_us_12h_media_omitted.txt")))
    assert (job.total, job.added) == (12, 12)
    chat = Chat.objects.get()
    assert chat.kind == "dm"
    found = messages()
    assert {author(m) for m in found} == {"User 1", "User 2"}
    assert found[0].sent_at == at(2023, 1, 22, 18, 30)
    assert found[-1].sent_at == at(2023, 1, 23, 3, 22)  # "3:22_AM"
    assert found[-1].text == "And let me know if anything changes"
    [omitted] = Attachment.objects.all()
    assert omitted.provider_metadata == {"omitted": True}
    assert (omitted.message.text, author(omitted.message)) == ("", "User 2")
