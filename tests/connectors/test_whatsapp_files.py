"""WhatsApp exports as files: zips with media, folders, media beside a `.txt`, the chat text
found (or refused) among other files, and what is not an export at all."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.registry import reader_for
from archive.connectors.whatsapp.export import READER
from archive.imports.models import ImportStatus
from archive.store.models import Attachment, Chat, Message
from tests.connectors.whatsapp_support import (
    ANDROID,
    IOS,
    PHOTO,
    Run,
    at,
    author,
    done,
    make_zip,
    messages,
    write,
)

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


# --- bad input and detection: zips and folders ---------------------------------------------


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
