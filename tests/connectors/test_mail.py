"""The mail reader (mbox, Maildir, .eml) through the real import: detection, reader, sink.

The fixtures in tests/fixtures/mail are described in its README; each quirk of the shared
samples' README (mbox / eml) has one, asserted here.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import shutil
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from archive.connectors.base import ReadOptions
from archive.connectors.mail.export import READER, SKIP_NOT_MAIL, SKIP_TRUNCATED
from archive.imports.models import ImportJob
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import FIXTURES, sample

pytestmark = pytest.mark.django_db

MAIL = FIXTURES / "mail"
Run = Callable[..., ImportJob]

INVITE_ICS = (
    b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//WireCat fixtures//EN\r\nMETHOD:REQUEST\r\n"
    b"BEGIN:VEVENT\r\nUID:review-2024-03-01@example.com\r\nDTSTART:20240301T140000Z\r\n"
    b"DTEND:20240301T150000Z\r\nSUMMARY:Review\r\nORGANIZER:mailto:carol@example.com\r\n"
    b"END:VEVENT\r\nEND:VCALENDAR\r\n"
)
HELLO_WORLD_ZH = "你好\uff0c世界"  # with a full-width comma


def message(external_id: str) -> Message:
    return Message.objects.select_related("chat", "sender", "reply_to").get(external_id=external_id)


def done(job: ImportJob) -> ImportJob:
    assert job.status == "done", job.errors
    assert job.format == "mail"
    return job


# -- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "separators.mbox",
        "charsets.mbox",
        "threads.mbox",
        "invite.eml",
        "truncated.mbox",
        "truncated.eml",
        "corrupt.mbox",
        "maildir",
        "eml-folder",
    ],
)
def test_detects_every_mail_input_by_content(name: str) -> None:
    assert READER.detect(MAIL / name)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("result.json", b'{"name": "Family", "messages": []}'),
        ("cal.ics", b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nEND:VCALENDAR\r\n"),
        ("chat.txt", b"12/01/2020, 10:00 - Alice: From now on: hi\n"),
        ("hostname", b"wirecat-host\n"),
        ("empty.mbox", b""),
        ("talk.vtt", b"WEBVTT\n\n00:00.000 --> 00:01.000\nFrom: nobody\n"),
        ("prose.txt", b"From the start it was clear.\nSubject: none\n"),
        ("yaml.yml", b"subject: hello\nto: world\n"),
    ],
)
def test_does_not_claim_other_files(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert not READER.detect(path)


def test_does_not_claim_other_folders(tmp_path: Path) -> None:
    (tmp_path / "channels.json").write_text("[]")
    (tmp_path / "half-maildir" / "cur").mkdir(parents=True)
    assert not READER.detect(tmp_path)
    assert not READER.detect(tmp_path / "half-maildir")
    (tmp_path / "empty").mkdir()
    assert not READER.detect(tmp_path / "empty")


# -- mbox separators -----------------------------------------------------------------------------


def test_separators_bom_and_unescaped_from_lines(run_import: Run) -> None:
    job = done(run_import(MAIL / "separators.mbox"))
    assert (job.added, job.total, job.skipped) == (4, 4, {})
    first = message("sep-1@example.org")
    # The BOM before "From - " did not hide the first separator, and none of the body's
    # "From " lines (after a blank line, with a date, but followed by prose) split it.
    assert first.text.startswith('First message, after a BOM and a "From - " separator.')
    for line in (
        "From the desk of the treasurer: invoices are due Jan 5 2024 at 10:00.",
        "From me@example.org Mon Jan  1 00:00:00 2024",
        "From someone@example.org Tue Jan  2 00:00:00 2024",
        "From here on the writer escaped the line.",  # mboxrd ">From " loses one ">"
    ):
        assert line in first.text.splitlines()
    assert message("sep-2@example.org").text == "Second message, after a classic separator."
    takeout = message("sep-3@example.net")
    assert takeout.sent_at == datetime(2024, 1, 3, 11, tzinfo=UTC)
    assert json.loads(takeout.raw_json)["headers"]["x-gmail-labels"] == "Inbox,Important"
    bare = message("sep-4@example.org")  # after "From 1787654321098765999@xxx" with no date
    assert bare.text == "Fourth message, sent by the owner, after a bare Takeout separator."
    assert bare.direction == "out"
    assert bare.reply_to == takeout


def test_crlf_mbox_and_the_blank_line_before_a_separator(run_import: Run) -> None:
    job = done(run_import(MAIL / "charsets.mbox"))
    assert job.added == 7
    # The separator's blank line is not part of the message before it.
    assert not message("gb2312@example.cn").text.endswith("\n")


# -- charsets and bodies -------------------------------------------------------------------------


def test_charsets_of_headers_and_bodies(run_import: Run) -> None:
    done(run_import(MAIL / "charsets.mbox"))

    chinese = message("gb2312@example.cn")  # 8-bit GB2312 body and raw 8-bit subject
    assert chinese.text == "这是一封用GB2312编码的邮件。\n第二行。"
    assert chinese.provider_metadata["subject"] == HELLO_WORLD_ZH
    assert chinese.chat.title == HELLO_WORLD_ZH
    assert chinese.sender is not None
    assert chinese.sender.display_name == "张伟"  # a GB2312 encoded word

    japanese = message("iso2022jp@example.jp")
    assert japanese.text == "明日の会議は十時からです。\nよろしくお願いします。"
    assert japanese.chat.title == "会議の件"
    assert japanese.sender is not None
    assert japanese.sender.display_name == "田中太郎"
    assert japanese.sent_at == datetime(2024, 2, 3, 1, tzinfo=UTC)

    german = message("latin1@example.de")
    assert german.text == "Schöne Grüße aus Köln!\nBis bald."
    assert german.chat.title == "Grüße aus Köln"
    # The encoded comma stays inside the display name; it does not split the address list.
    assert german.sender is not None
    assert german.sender.display_name == "Müller, Jürgen"
    assert german.sender.external_id == "juergen@example.de"
    assert german.provider_metadata["to"] == [
        {"name": "François Dupont", "email": "fd@example.fr"},
        {"name": "", "email": "owner@example.org"},
    ]
    assert german.provider_metadata["cc"] == [{"name": "Doe, Jane", "email": "jane@example.com"}]
    assert Identity.objects.get(external_id="jane@example.com").display_name == "Doe, Jane"

    raw_utf8 = message("raw-utf8@example.org")
    assert raw_utf8.chat.title == "Raw UTF-8 header: café ☕"
    assert raw_utf8.sender is not None
    assert raw_utf8.sender.display_name == "Zoë Çelik"
    assert raw_utf8.text == "Ça marche très bien."

    assert message("unknown-charset@example.org").text == "Qapla' café naïve"

    html = message("html-only@example.org").text
    assert html.startswith("Hello world “quoted”\n\nLine two & more")
    assert "first" in html and "second" in html
    for hidden in ("never run", "ignored title", "color", "<", "&amp;"):
        assert hidden not in html

    split = message("split-word@example.org")  # "✓" split across two encoded words
    assert split.chat.title == "Ünïcödé ✓ split"


# -- threads -------------------------------------------------------------------------------------


def test_threads_become_chats_and_replies_link(run_import: Run) -> None:
    job = done(run_import(MAIL / "threads.mbox", batch_size=2))
    assert job.added == 13
    thread = Chat.objects.get(external_id="a@threads.test")
    assert (thread.kind, thread.title) == ("thread", "Plans")
    assert sorted(thread.messages.values_list("external_id", flat=True)) == [
        "a@threads.test",
        "b@threads.test",
        "c@threads.test",
        "d@threads.test",
    ]
    a, b, c, d = (message(f"{x}@threads.test") for x in "abcd")
    assert a.reply_to is None
    assert b.reply_to == a
    assert b.direction == "out"
    # C came first in the file, replies to B and is dated before both A and B.
    assert c.sent_at < a.sent_at < b.sent_at
    assert c.reply_to == b
    # D's References (A, B) disagree with its In-Reply-To (C): the parent is C, the root A.
    assert d.reply_to == c
    assert d.provider_metadata["references"] == ["a@threads.test", "b@threads.test"]


def test_loops_self_replies_and_missing_parents(run_import: Run) -> None:
    done(run_import(MAIL / "threads.mbox"))
    e, f = message("e@threads.test"), message("f@threads.test")
    # E→F→E: each names the other as its parent and as its thread root; nothing loops.
    assert (e.chat.external_id, e.reply_to_external_id) == ("f@threads.test", "f@threads.test")
    assert (f.chat.external_id, f.reply_to_external_id) == ("e@threads.test", "e@threads.test")
    assert e.reply_to is None and f.reply_to is None
    itself = message("s@threads.test")
    assert (itself.reply_to_external_id, itself.reply_to) == ("", None)
    assert itself.chat.external_id == "s@threads.test"
    assert itself.chat.title == "Myself"
    orphan = message("m@threads.test")
    assert orphan.chat.external_id == "gone-root@threads.test"
    assert (orphan.reply_to_external_id, orphan.reply_to) == ("gone@threads.test", None)


def test_missing_parent_links_when_it_arrives_later(run_import: Run, tmp_path: Path) -> None:
    later = tmp_path / "later.mbox"
    later.write_text(
        "From mallory@example.com Sun Feb  4 09:00:00 2024\n"
        "From: Mallory <mallory@example.com>\n"
        "To: owner@example.org\n"
        "Date: Fri, 02 Feb 2024 09:00:00 +0000\n"
        "Subject: Re: Lost thread\n"
        "Message-ID: <gone@threads.test>\n"
        "References: <gone-root@threads.test>\n"
        "\n"
        "The parent, in another export.\n"
    )
    done(run_import(MAIL / "threads.mbox"))
    done(run_import(later, account="owner@example.org"))
    assert message("m@threads.test").reply_to == message("gone@threads.test")


def test_missing_and_folded_message_ids_are_stable(run_import: Run) -> None:
    first = done(run_import(MAIL / "threads.mbox"))
    synthetic = Message.objects.get(provider_metadata__subject="No id at all")
    assert synthetic.external_id.startswith("synthetic-")
    assert len(synthetic.external_id) == len("synthetic-") + 64
    assert synthetic.provider_metadata["synthetic_id"] is True
    folded = message("folded-id@threads.test")  # "Message-ID:" then the id on the next line
    assert message("h@threads.test").reply_to == folded
    ids = set(Message.objects.values_list("external_id", flat=True))

    again = done(run_import(MAIL / "threads.mbox"))
    assert (again.added, again.updated, again.unchanged) == (0, 0, first.added)
    assert set(Message.objects.values_list("external_id", flat=True)) == ids

    # The same message without an id, delivered to a Maildir: the same synthetic id.
    maildir = done(run_import(MAIL / "maildir"))
    assert maildir.unchanged == 1 and maildir.added == 3
    assert Message.objects.filter(external_id=synthetic.external_id).count() == 1


# -- attachments ---------------------------------------------------------------------------------


def test_base64_calendar_and_other_attachments(run_import: Run) -> None:
    job = done(run_import(MAIL / "invite.eml"))
    assert (job.added, job.total) == (1, 1)
    invite = message("invite-1@example.com")
    assert invite.text == "You are invited to the review.\nAgenda attached."
    parts = {a.external_id: a for a in Attachment.objects.filter(message=invite)}
    assert sorted(parts) == ["part-2", "part-3", "part-4", "part-5"]

    calendar = parts["part-2"]  # the base64 text/calendar alternative
    assert calendar.mime_type == "text/calendar"
    assert calendar.sha256 == hashlib.sha256(INVITE_ICS).hexdigest()
    assert calendar.size == len(INVITE_ICS)
    assert calendar.file_name == "part-2.ics"
    assert calendar.path is not None
    assert (Path(settings.STATE_DIR) / calendar.path).read_bytes() == INVITE_ICS

    image = parts["part-3"]
    assert (image.mime_type, image.provider_metadata["content_id"]) == (
        "image/png",
        "logo@example.com",
    )

    hostile = parts["part-4"]  # filename="../../etc/passwd": a name to show, never a path
    assert hostile.file_name == "passwd"
    assert hostile.provider_metadata["file_name_given"] == "../../etc/passwd"
    assert hostile.sha256 == hashlib.sha256(bytes(range(256)) * 4).hexdigest()
    assert hostile.path is not None and hostile.path.startswith("blobs/")

    notes = parts["part-5"]  # RFC 2231 file name; a text/plain attachment is not the body
    assert notes.file_name == "résumé — final.txt"
    assert notes.mime_type == "text/plain"


def test_large_attachments_are_read_again_from_the_file(run_import: Run, tmp_path: Path) -> None:
    payload = os.urandom(700_000)
    encoded = base64.encodebytes(payload).decode()
    mbox = tmp_path / "big.mbox"
    mbox.write_text(
        "From bob@example.net Mon Mar  4 10:00:00 2024\n"
        "From: Bob <bob@example.net>\n"
        "To: owner@example.org\n"
        "Date: Mon, 04 Mar 2024 10:00:00 +0000\n"
        "Subject: Big\n"
        "Message-ID: <big@example.net>\n"
        "MIME-Version: 1.0\n"
        'Content-Type: multipart/mixed; boundary="x"\n'
        "\n--x\nContent-Type: text/plain\n\nSee the file.\n"
        "--x\nContent-Type: application/octet-stream\n"
        'Content-Disposition: attachment; filename="big.bin"\n'
        "Content-Transfer-Encoding: base64\n\n" + encoded + "--x--\n\n"
        "From bob@example.net Mon Mar  4 11:00:00 2024\n"
        "From: Bob <bob@example.net>\n"
        "To: owner@example.org\n"
        "Date: Mon, 04 Mar 2024 11:00:00 +0000\n"
        "Subject: Small\n"
        "Message-ID: <small@example.net>\n"
        "\nAfter the big one.\n"
    )
    stream = READER.open(mbox, ReadOptions())
    big = next(stream.items).message.attachments[0]
    assert big.size == len(payload)
    assert not isinstance(big.content, functools.partial)  # no bytes kept in the record
    assert big.content is not None
    with big.content() as reopened:
        assert reopened.read() == payload

    job = done(run_import(mbox))
    assert job.added == 2
    stored = Attachment.objects.get(message__external_id="big@example.net")
    assert stored.sha256 == hashlib.sha256(payload).hexdigest()
    assert stored.file_name == "big.bin"


# -- Maildir and folders -------------------------------------------------------------------------


def test_maildir_with_a_maildir_plus_plus_folder(run_import: Run) -> None:
    job = done(run_import(MAIL / "maildir"))
    assert (job.added, job.total) == (4, 4)  # tmp/ (a delivery in progress) is left alone
    assert not Identity.objects.filter(external_id="half@example.net").exists()
    root = message("md-1@example.org")
    unread = message("md-2@example.net")  # in new/
    sent = message("md-3@example.org")  # in .Sent/cur/
    assert unread.reply_to == root and sent.reply_to == root
    assert sent.direction == "out" and unread.direction == "in"
    assert root.chat.messages.count() == 3


def test_folder_of_eml_files(run_import: Run) -> None:
    job = done(run_import(MAIL / "eml-folder"))
    assert (job.added, job.total) == (2, 2)
    first = message("folder-1@example.org")  # CRLF and a BOM
    assert first.text == "Saved with CRLF and a BOM."
    assert first.sender is not None and first.sender.external_id == "alice@example.org"
    reply = message("folder-2@example.org")
    assert reply.reply_to == first and reply.direction == "out"


# -- owner, account, idempotence -----------------------------------------------------------------


def test_owner_from_delivered_to_and_direction(run_import: Run) -> None:
    done(run_import(MAIL / "separators.mbox"))
    account = Account.objects.get(provider="mail")
    assert account.external_id == "owner@example.org"
    assert account.owner_identity is not None
    assert account.owner_identity.external_id == "owner@example.org"
    assert account.owner_identity.display_name == "Owner Person"
    directions = dict(Message.objects.values_list("external_id", "direction"))
    assert directions == {
        "sep-1@example.org": "in",
        "sep-2@example.org": "in",
        "sep-3@example.net": "in",
        "sep-4@example.org": "out",
    }
    alice = Identity.objects.get(provider="mail", external_id="alice@example.org")
    assert (alice.display_name, alice.email) == ("Alice Example", "alice@example.org")


def test_account_named_by_the_owner(run_import: Run) -> None:
    done(run_import(MAIL / "separators.mbox", account="Work mail"))
    account = Account.objects.get(provider="mail")
    assert account.external_id == "Work mail"
    assert account.owner_identity is not None
    assert account.owner_identity.external_id == "owner@example.org"  # still detected
    assert message("sep-4@example.org").direction == "out"


def test_account_given_as_an_address_is_the_owner(run_import: Run) -> None:
    done(run_import(MAIL / "separators.mbox", account="bob@example.net"))
    assert Account.objects.get(provider="mail").external_id == "bob@example.net"
    assert message("sep-3@example.net").direction == "out"
    assert message("sep-4@example.org").direction == "in"


def test_no_owner_to_tell_gives_the_generic_account(run_import: Run, tmp_path: Path) -> None:
    mbox = tmp_path / "list.mbox"
    mbox.write_text(
        "".join(
            f"From p{i}@example.org Mon Mar  4 1{i}:00:00 2024\n"
            f"From: P{i} <p{i}@example.org>\nTo: q{i}@example.org\n"
            f"Date: Mon, 04 Mar 2024 1{i}:00:00 +0000\nSubject: Post {i}\n"
            f"Message-ID: <post-{i}@example.org>\n\nBody {i}\n\n"
            for i in range(3)
        )
    )
    done(run_import(mbox))
    account = Account.objects.get(provider="mail")
    assert (account.external_id, account.owner_identity) == ("mail-export", None)
    assert set(Message.objects.values_list("direction", flat=True)) == {"in"}


@pytest.mark.parametrize(
    ("name", "count"),
    [
        ("separators.mbox", 4),
        ("charsets.mbox", 7),
        ("threads.mbox", 13),
        ("invite.eml", 1),
        ("maildir", 4),
        ("eml-folder", 2),
    ],
)
def test_a_second_import_adds_nothing(run_import: Run, name: str, count: int) -> None:
    first = done(run_import(MAIL / name))
    assert first.added == count
    attachments = Attachment.objects.count()
    second = done(run_import(MAIL / name))
    assert (second.added, second.updated, second.unchanged) == (0, 0, count)
    assert Attachment.objects.count() == attachments
    assert Message.objects.count() == count


# -- bad input -----------------------------------------------------------------------------------


def test_truncated_mbox_keeps_the_complete_messages(run_import: Run) -> None:
    # Decision: a cut-short last message is skipped (counted), the job ends "done".
    job = done(run_import(MAIL / "truncated.mbox"))
    assert job.added == 2
    assert job.skipped == {SKIP_TRUNCATED: 1}
    assert set(Message.objects.values_list("external_id", flat=True)) == {
        "whole-1@example.org",
        "whole-2@example.org",
    }


def test_truncated_eml_fails_naming_the_file_and_the_byte(run_import: Run) -> None:
    # Decision: a single message cut short has nothing complete to keep: the job fails.
    size = (MAIL / "truncated.eml").stat().st_size
    job = run_import(MAIL / "truncated.eml")
    assert job.status == "failed"
    assert job.errors[0].startswith(f"truncated.eml, byte {size}: the message is cut short")
    assert Message.objects.count() == 0


def test_truncated_anywhere_never_crashes(run_import: Run, tmp_path: Path) -> None:
    whole = (MAIL / "invite.eml").read_bytes()
    for cut in range(0, len(whole), 97):
        path = tmp_path / f"cut-{cut}.eml"
        path.write_bytes(whole[:cut])
        job = run_import(path, format_name="mail")
        assert job.status in ("done", "failed"), job.errors
        if job.status == "failed":
            assert job.errors[-1].startswith(f"cut-{cut}.eml, byte "), job.errors
    threads = (MAIL / "threads.mbox").read_bytes()
    for cut in range(1, len(threads), 211):
        path = tmp_path / f"cut-{cut}.mbox"
        path.write_bytes(threads[:cut])
        job = run_import(path, format_name="mail")
        assert job.status in ("done", "failed"), job.errors


def test_corrupt_block_is_skipped_and_the_rest_imported(run_import: Run) -> None:
    job = done(run_import(MAIL / "corrupt.mbox"))
    assert job.added == 2
    assert job.skipped == {SKIP_NOT_MAIL: 1}


def test_forced_on_a_file_that_is_not_mail(run_import: Run, tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text('{"messages": []}')
    job = run_import(path, format_name="mail")
    assert job.status == "failed"
    assert job.errors == [
        "result.json, byte 0: neither an mbox nor a mail message (no header block)"
    ]


def test_mbox_is_streamed(tmp_path: Path) -> None:
    body = ("All work and no play makes Jack a dull boy. " * 2 + "\n") * 2_000  # ~180 kB
    mbox = tmp_path / "large.mbox"
    with mbox.open("w") as out:
        for i in range(80):
            out.write(
                f"From a@example.org Mon Mar  4 10:00:00 2024\nFrom: a@example.org\n"
                f"To: b@example.org\nDate: Mon, 04 Mar 2024 10:{i % 60:02d}:00 +0000\n"
                f"Subject: {i}\nMessage-ID: <large-{i}@example.org>\n\n{body}\n"
            )
    size = mbox.stat().st_size
    assert size > 14_000_000
    tracemalloc.start()
    try:
        stream = READER.open(mbox, ReadOptions())
        count = sum(1 for _ in stream.items)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 80
    assert peak < size / 4, f"peak {peak} bytes for a {size}-byte mbox"


# -- the shared real samples ---------------------------------------------------------------------


def test_shared_gmail_takeout_mbox(run_import: Run) -> None:
    job = done(run_import(sample("email/mimekit_gmail_takeout_style.mbox")))
    # Counted by hand: four "From 1844…@xxx" separators, each starting one message.
    assert job.added == 4
    assert Chat.objects.filter(kind="thread").count() == 4
    assert sorted(Chat.objects.values_list("title", flat=True)) == [
        "Message 1",
        "Message 2",
        "Message 3",
        "Message 4",
    ]
    for n in range(1, 5):
        found = Message.objects.get(provider_metadata__subject=f"Message {n}")
        assert found.text == f"Body of message {n}."
        assert found.direction == "in"
    # No Delivered-To: the owner is the address taking part in every message, preferring
    # the recipient.
    assert Account.objects.get(provider="mail").external_id == "recipient@example.com"
    zipped = Attachment.objects.get()
    assert (zipped.file_name, zipped.mime_type) == (
        "Attachment.zip",
        "application/x-zip-compressed",
    )
    assert zipped.size == 3750
    assert zipped.message.provider_metadata["subject"] == "Message 2"


def test_shared_reply_forward_eml(run_import: Run) -> None:
    job = done(run_import(sample("email/spamscope_reply_fwd_with_attachments.eml")))
    assert job.added == 1
    found = message("ed264cf8.1d2e138.18e5b8f.29@voidstudicom.it")
    assert found.text.startswith("Ciao sere mi puoi dire se il mio cliente deve fare questa")
    assert "Centr●Studi Commercialisti Srl" in found.text  # quoted-printable UTF-8
    # In-Reply-To only: the parent is the thread root, not in this export.
    assert found.chat.external_id == "EEDDF5F5-2786-4B3F-B15A-124A9A29A8D3@agade.info"
    assert found.reply_to_external_id == "EEDDF5F5-2786-4B3F-B15A-124A9A29A8D3@agade.info"
    assert found.chat.title == "Ordine"  # "I: Ordine", Italian forward prefix dropped
    assert found.sender is not None
    assert found.sender.display_name == "Mariachiara Geronazzo"
    assert Account.objects.get(provider="mail").external_id == "serena.nicolini@fake.it"
    assert found.direction == "in"
    names = sorted(Attachment.objects.filter(message=found).values_list("file_name", flat=True))
    # Counted by hand: three JPEGs, four .htm parts and one PDF, all Content-Disposition
    # attachment; the multipart/alternative text/plain + text/html is the body.
    assert names == [
        "20170609091403417.pdf",
        "att04803.htm",
        "att09558.htm",
        "att18831.htm",
        "att24916.htm",
        "image001.jpg",
        "image002.jpg",
        "image003.jpg",
    ]
    pdf = Attachment.objects.get(file_name="20170609091403417.pdf")
    assert pdf.path is not None
    assert (Path(settings.STATE_DIR) / pdf.path).read_bytes().startswith(b"%PDF")


def test_both_shared_samples_as_one_folder(run_import: Run, tmp_path: Path) -> None:
    folder = tmp_path / "mail"
    folder.mkdir()
    for name in ("mimekit_gmail_takeout_style.mbox", "spamscope_reply_fwd_with_attachments.eml"):
        shutil.copy(sample(f"email/{name}"), folder / name)
    job = done(run_import(folder))
    assert job.added == 5
