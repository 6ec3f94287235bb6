"""WhatsApp chat texts, imported through the real import service: every line layout, system
lines, the day/month order, whole exports, re-imports, the owner, bad text, the samples."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from archive.imports.models import ImportStatus
from archive.store.models import Account, Attachment, Chat, Message
from tests.connectors.conftest import sample
from tests.connectors.whatsapp_support import (
    ANDROID,
    LRM,
    Run,
    at,
    author,
    done,
    messages,
    write,
)

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


def test_an_impossible_date_is_kept_with_its_neighbours_time(
    run_import: Run, tmp_path: Path
) -> None:
    lines = ["28.02.21, 10:00 - A: fine", "30.02.21, 10:05 - A: no such day"]
    job = run_import(write(tmp_path, "WhatsApp Chat with Feb.txt", lines))
    assert (job.status, job.added, job.estimated) == (ImportStatus.DONE, 2, 1)
    odd = Message.objects.get(text="no such day")
    assert odd.date_estimated and odd.sent_at == datetime(2021, 2, 28, 10, 0, tzinfo=UTC)
    assert odd.provider_metadata["impossible_date"] == "30.2.21 10:05:00"
    assert odd.external_id.startswith("30.2.21T100500-")


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
