"""Slack workspace exports (folder or zip), through the real import service. The fixture
workspace in tests/fixtures/slack/export is written in Slack's export format with the quirks
of the shared README; the zips are built from it here. The shared slackdump sample is
imported too."""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from archive.connectors.base import FormatError, ReadOptions
from archive.connectors.registry import reader_for
from archive.connectors.slack.export import READER
from archive.connectors.slack.translation import slack_text, ts_datetime
from archive.imports.models import ImportJob
from archive.store.models import Account, Attachment, Chat, Identity, Message
from tests.connectors.conftest import FIXTURES, sample
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db

Run = Callable[..., ImportJob]
EXPORT = FIXTURES / "slack" / "export"
PARENT = "1451635260.000100"
TOMBSTONE = "1451721960.001000"
ALL = 17  # 13 in general, 1 each in random, G001, D001 and the mpim


def zip_of(folder: Path, target: Path, top: str = "") -> Path:
    """`folder` zipped as Slack does (`top` wraps it in a folder, as some tools do)."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, top + path.relative_to(folder).as_posix())
    return target


def messages(account: str = "slack-export") -> dict[str, Message]:
    rows = Message.objects.filter(account__provider="slack", account__external_id=account)
    return {m.external_id: m for m in rows.select_related("sender", "reply_to", "chat")}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.fixture
def imported(run_import: Run) -> dict[str, Message]:
    job = run_import(EXPORT)
    assert job.status == "done", job.errors
    return messages()


def snapshot(account: str) -> list[tuple[Any, ...]]:
    """Everything an import decides about messages, chats and attachments of an account."""
    rows = []
    for m in sorted(messages(account).values(), key=lambda m: m.external_id):
        attachments = sorted(
            (a.external_id, a.file_name, a.mime_type, a.size, a.sha256, repr(a.provider_metadata))
            for a in m.attachments.all()
        )
        rows.append(
            (
                m.chat.external_id,
                m.chat.kind,
                m.chat.title,
                m.external_id,
                m.sender.external_id if m.sender else None,
                m.sent_at,
                m.text,
                m.kind,
                m.reply_to.external_id if m.reply_to else None,
                m.edited_at,
                m.deleted_at,
                repr(m.provider_metadata),
                attachments,
            )
        )
    return rows


def test_detects_folders_and_zips_by_content(tmp_path: Path) -> None:
    assert READER.detect(EXPORT)
    assert reader_for(EXPORT).format == "slack"
    plain = zip_of(EXPORT, tmp_path / "plain.zip")
    wrapped = zip_of(EXPORT, tmp_path / "wrapped.bin", top="Acme Slack export/")
    assert READER.detect(plain)
    assert READER.detect(wrapped)
    assert reader_for(wrapped).format == "slack"
    assert not READER.detect(EXPORT / "channels.json")  # a list alone is not an export
    assert not READER.detect(FIXTURES / "discord" / "guild_general.json")
    assert not READER.detect(FIXTURES)
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("_chat.txt", "1/2/24, 10:00 - Ann: hi")
    assert not READER.detect(other)
    (tmp_path / "garbage.zip").write_bytes(b"PK\x03\x04 not really a zip")
    assert not READER.detect(tmp_path / "garbage.zip")


def test_folder_import_chats_and_account(run_import: Run) -> None:
    job = run_import(EXPORT)
    assert job.status == "done", job.errors
    assert job.format == "slack"
    assert (job.added, job.position, job.total) == (ALL, ALL, ALL)
    account = Account.objects.get(provider="slack", external_id="slack-export")
    chats = {c.external_id: c for c in Chat.objects.filter(account=account)}
    # "empty" has no folder; "../outside" is refused.
    assert set(chats) == {"C001", "C002", "G001", "D001", "G002"}
    assert {key: (c.kind, c.title) for key, c in chats.items()} == {
        "C001": ("channel", "#general"),
        "C002": ("channel", "#random"),
        "G001": ("group", "#secret-plans"),  # its folder is named by id (slackdump)
        "D001": ("dm", "Ann Archer, Bobby"),
        "G002": ("group", "Ann Archer, Bobby, Carl Cole"),
    }
    general = chats["C001"].provider_metadata
    assert general["created"] == "2016-01-01T00:00:00+00:00"  # written as a string
    assert chats["C002"].provider_metadata["created"] == "2025-01-01T00:00:00+00:00"  # number
    assert general["topic"] == "Company-wide"
    assert general["members"] == ["U001", "U002", "U003"]
    assert chats["C001"].message_count == 13
    assert set(job.chats.values_list("external_id", flat=True)) == set(chats)


def test_account_name_from_options(run_import: Run) -> None:
    assert run_import(EXPORT, account="acme").status == "done"
    assert Account.objects.filter(provider="slack").get().external_id == "acme"


def test_users_become_identities(imported: dict[str, Message]) -> None:
    ann = Identity.objects.get(provider="slack", external_id="U001")
    assert (ann.display_name, ann.handle, ann.email) == ("Ann Archer", "ann", "ann@example.com")
    bob = Identity.objects.get(provider="slack", external_id="U002")
    assert (bob.display_name, bob.handle, bob.email) == ("Bobby", "bob", "")
    assert imported["1451635400.000400"].sender == bob
    bot = imported["1451635320.000200"]  # bot_message: no user, a bot_id and a username
    assert bot.sender.external_id == "B001"  # type: ignore[union-attr]
    assert bot.sender.display_name == "deploybot"  # type: ignore[union-attr]
    assert bot.provider_metadata["username"] == "deploybot"
    comment = imported["1451721780.000800"]  # old file_comment: the author is in the comment
    assert comment.sender.external_id == "U003"  # type: ignore[union-attr]
    assert {m.direction for m in imported.values()} == {"in"}


def test_times_from_ts(imported: dict[str, Message]) -> None:
    assert imported["1451635200.000002"].sent_at == at("2016-01-01T08:00:00.000002+00:00")
    assert imported[PARENT].sent_at == at("2016-01-01T08:01:00.000100+00:00")
    edited = imported["1451721840.000900"]
    assert edited.edited_at == at("2016-01-02T08:05:00+00:00")
    assert edited.provider_metadata["edited_by"] == "U001"
    assert imported[PARENT].edited_at is None


def test_markup_becomes_plain_text(imported: dict[str, Message]) -> None:
    message = imported[PARENT]
    assert message.text == (
        "Hello @Bobby! See the docs (https://example.com/docs?a=1&b=2) and #random"
        " & #random. 1 < 2 > 0 @here ann@example.com"
    )
    assert message.provider_metadata["raw_text"].startswith("Hello <@U002>! See <https://")
    assert imported["1451635200.000002"].text == "@Bobby has joined the channel"
    assert imported["1451635320.000200"].text == "Deployed build #1 (http://ci.example.com/1)"
    assert imported["1451635500.000000"].text == "random thought for @ghost"  # unknown user
    assert imported["1451980800.000000"].provider_metadata == {}  # nothing to convert


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<@U1>", "@Ann"),
        ("<@U1|ann>", "@Ann"),
        ("<@U9|old>", "@old"),
        ("<@U9>", "@U9"),
        ("<#C1>", "#general"),
        ("<#C9|elsewhere>", "#elsewhere"),
        ("<!channel> <!everyone> <!here|here>", "@channel @everyone here"),
        ("<!subteam^S1|@devs>", "@devs"),
        ("<!date^1392734382^{date_short}|Feb 18, 2014>", "Feb 18, 2014"),
        ("<https://a.example/x>", "https://a.example/x"),
        ("<https://a.example/x|a.example/x>", "a.example/x"),
        ("<https://a.example/?q=1&amp;r=2|Q &amp; A>", "Q & A (https://a.example/?q=1&r=2)"),
        ("<mailto:a@b.example>", "a@b.example"),
        ("&lt;b&gt;not bold&lt;/b&gt; &amp;amp;", "<b>not bold</b> &amp;"),
        ("no markup", "no markup"),
    ],
)
def test_slack_text(raw: str, expected: str) -> None:
    assert slack_text(raw, {"U1": "Ann"}, {"C1": "general"}) == expected


def test_ts_datetime() -> None:
    assert ts_datetime("1736478514.897649") == at("2025-01-10T03:08:34.897649+00:00")
    assert ts_datetime("1451606400") == at("2016-01-01T00:00:00+00:00")
    assert ts_datetime(1451606400) == at("2016-01-01T00:00:00+00:00")
    for bad in ("", "soon", None, "1.2.3"):
        with pytest.raises(ValueError):
            ts_datetime(bad)


def test_threads_span_day_files(imported: dict[str, Message]) -> None:
    parent = imported[PARENT]
    assert parent.reply_to is None
    assert parent.provider_metadata["thread"]["reply_count"] == 2
    first = imported["1451635400.000400"]  # same day
    second = imported["1451721600.000500"]  # next day's file
    assert first.reply_to == parent and first.reply_to_external_id == PARENT
    assert second.reply_to == parent
    assert set(parent.replies.values_list("external_id", flat=True)) == {
        "1451635400.000400",
        "1451721600.000500",
    }


def test_subtypes(imported: dict[str, Message]) -> None:
    kinds = {
        "1451635200.000002": ("channel_join", "service"),
        "1451635320.000200": ("bot_message", "text"),
        "1451635380.000300": ("bot_add", "service"),
        "1451721720.000700": ("file_share", "text"),
        "1451721780.000800": ("file_comment", "text"),
        TOMBSTONE: ("tombstone", "text"),
        "1451722000.001200": ("channel_leave", "service"),
    }
    for ts, (subtype, kind) in kinds.items():
        assert imported[ts].provider_metadata["subtype"] == subtype
        assert imported[ts].kind == kind, subtype
    assert sum(m.kind == "service" for m in imported.values()) == 3
    assert imported["1451635380.000300"].text == (
        "added an integration to this channel: deploybot (https://acme.slack.com/services/B001)"
    )
    assert imported["1451722000.001200"].text == "@Carl Cole has left the channel"
    assert imported["1451635320.000200"].provider_metadata["attachments"] == [
        {
            "fallback": "Build #1 passed",
            "title": "Build #1",
            "title_link": "http://ci.example.com/1",
        }
    ]


def test_tombstone_is_deleted_and_its_thread_kept(imported: dict[str, Message]) -> None:
    gone = imported[TOMBSTONE]
    assert gone.deleted_at == gone.sent_at  # the export does not say when; never later
    assert gone.provider_metadata["deleted_time_unknown"] is True
    assert gone.text == "This message was deleted."
    assert imported["1451721970.001100"].reply_to == gone
    assert Message.objects.visible().count() == ALL - 1


def test_reactions(imported: dict[str, Message]) -> None:
    assert imported[PARENT].provider_metadata["reactions"] == [
        {"name": "thumbsup", "count": 2, "users": ["U002", "U003"]},
        {"name": "tada", "count": 1, "users": ["U002"]},
    ]


def test_files_are_metadata_only(imported: dict[str, Message]) -> None:
    upload = imported["1451721660.000600"]  # files and no text at all
    assert upload.text == ""
    rows = {a.external_id: a for a in upload.attachments.all()}
    assert set(rows) == {"F001", "F003"}
    report = rows["F001"]
    assert (report.file_name, report.mime_type, report.size) == (
        "report.pdf",
        "application/pdf",
        12345,
    )
    assert report.path is None and report.sha256 == ""
    assert report.provider_metadata["url_private"].startswith("https://files.slack.com/")
    assert report.provider_metadata["title"] == "Q4 report"
    assert rows["F003"].provider_metadata == {"mode": "tombstone"}  # a deleted file
    old = imported["1451721720.000700"].attachments.get()  # singular `file`
    assert (old.external_id, old.file_name, old.size) == ("F002", "notes.txt", 42)
    assert Attachment.objects.exclude(path=None).count() == 0
    assert Attachment.objects.count() == 4


def test_zip_and_folder_give_the_same_result(run_import: Run, tmp_path: Path) -> None:
    assert run_import(EXPORT, account="folder").status == "done"
    plain = run_import(zip_of(EXPORT, tmp_path / "plain.zip"), account="zip")
    assert plain.status == "done", plain.errors
    wrapped = zip_of(EXPORT, tmp_path / "wrapped.zip", top="export/")
    assert run_import(wrapped, account="wrapped").status == "done"
    expected = snapshot("folder")
    assert len(expected) == ALL
    assert snapshot("zip") == expected
    assert snapshot("wrapped") == expected


def test_second_import_adds_nothing(run_import: Run, tmp_path: Path) -> None:
    run_import(EXPORT)
    again = run_import(EXPORT)
    assert again.status == "done", again.errors
    assert (again.added, again.updated, again.unchanged) == (0, 0, ALL)
    archive = zip_of(EXPORT, tmp_path / "export.zip")
    from_zip = run_import(archive)  # the same workspace, zipped: nothing new either
    assert (from_zip.added, from_zip.updated, from_zip.unchanged) == (0, 0, ALL)
    assert Message.objects.count() == ALL


def test_small_batches_give_the_same_result(run_import: Run) -> None:
    job = run_import(EXPORT, batch_size=2, account="small")
    assert job.status == "done", job.errors
    assert run_import(EXPORT, account="big").status == "done"
    assert snapshot("small") == snapshot("big")


def test_folders_outside_the_export_are_never_read(imported: dict[str, Message]) -> None:
    assert (FIXTURES / "slack" / "outside" / "2016-01-01.json").is_file()
    assert not Message.objects.filter(text__contains="SHOULD NOT").exists()
    assert not Chat.objects.filter(external_id="C003").exists()


def test_zip_slip_members_are_refused(run_import: Run, tmp_path: Path) -> None:
    archive = tmp_path / "slip.zip"
    channels = (
        '[{"id": "C1", "name": "ok"}, {"id": "C2", "name": ".."}, {"id": "C3", "name": "../x"}]'
    )
    day = '[{"type": "message", "user": "U1", "ts": "1.000001", "text": "%s"}]'
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("channels.json", channels)
        handle.writestr("ok/2020-01-01.json", day % "fine")
        handle.writestr("../2020-01-01.json", day % "SLIP")
        handle.writestr("../x/2020-01-01.json", day % "SLIP")
        handle.writestr("ok/../../2020-01-02.json", day % "SLIP")
    job = run_import(archive)
    assert job.status == "done", job.errors
    assert list(Message.objects.values_list("text", flat=True)) == ["fine"]
    assert not (tmp_path.parent / "2020-01-01.json").exists()


def broken_copy(tmp_path: Path) -> Path:
    target = tmp_path / "export"
    shutil.copytree(EXPORT, target)
    day = target / "general" / "2016-01-02.json"
    day.write_text(day.read_text()[:400], encoding="utf-8")
    return target


def test_broken_day_file_fails_naming_it_and_keeps_earlier_batches(
    run_import: Run, tmp_path: Path
) -> None:
    job = run_import(broken_copy(tmp_path), batch_size=2)
    assert job.status == "failed"
    assert len(job.errors) == 1
    error = job.errors[0]
    assert error.startswith("2016-01-02.json, in folder 'general', line ")
    assert "broken JSON" in error
    # The 5 messages of the first day are all kept (the fifth written before failing).
    assert job.position == 5
    assert Message.objects.count() == 5
    assert set(Message.objects.values_list("chat__external_id", flat=True)) == {"C001"}


def test_broken_day_file_names_its_folder_in_the_error_object(tmp_path: Path) -> None:
    stream = READER.open(broken_copy(tmp_path), ReadOptions())
    with pytest.raises(FormatError) as caught:
        list(stream.items)
    assert caught.value.path == "general/2016-01-02.json"
    assert caught.value.position.startswith("in folder 'general', line ")


def test_day_file_that_is_not_an_array(run_import: Run, tmp_path: Path) -> None:
    target = tmp_path / "export"
    shutil.copytree(EXPORT, target)
    (target / "random" / "2016-01-01.json").write_text('{"ts": "1"}')
    job = run_import(target)
    assert job.status == "failed"
    assert job.errors == ["2016-01-01.json, in folder 'random', top level: expected a JSON array"]


def test_broken_users_list_fails_before_any_message(run_import: Run, tmp_path: Path) -> None:
    target = tmp_path / "export"
    shutil.copytree(EXPORT, target)
    (target / "users.json").write_text('[{"id": "U001",')
    job = run_import(target)
    assert job.status == "failed"
    assert job.errors[0].startswith("users.json, line 1 column ")
    assert Message.objects.count() == 0


def test_corrupt_zip(run_import: Run, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    archive.write_bytes(b"PK\x03\x04" + b"\x00" * 200)
    with pytest.raises(Invalid, match="not an export WireCat can read"):
        run_import(archive)
    job = run_import(archive, format_name="slack")
    assert job.status == "failed"
    assert job.errors[0].startswith("export.zip, zip directory: not a readable zip")


def test_damaged_zip_member_fails_naming_it(run_import: Run, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as handle:
        for path in sorted(EXPORT.rglob("*.json")):
            handle.write(path, path.relative_to(EXPORT).as_posix())
    data = bytearray(archive.read_bytes())
    spot = data.index(b"a day later")  # inside general/2016-01-02.json, stored as is
    data[spot] = ord("A")  # still JSON, but the CRC no longer matches
    archive.write_bytes(bytes(data))
    assert READER.detect(archive)
    job = run_import(archive, batch_size=2)
    assert job.status == "failed"
    assert job.errors[0].startswith(
        "2016-01-02.json, member general/2016-01-02.json of export.zip: damaged zip member"
    )
    assert Message.objects.count() == 5


def test_shared_slackdump_sample(run_import: Run) -> None:
    job = run_import(sample("slack/slackdump_export"))
    assert job.status == "done", job.errors
    # Counted by hand: 2 messages on 2025-01-10 and 11 on 2025-01-11, in one channel.
    assert job.added == 13
    chat = Chat.objects.get(external_id="CO69735E8A")
    assert (chat.kind, chat.title) == ("channel", "#B75B4C7")
    assert chat.provider_metadata["created"] == "2019-04-17T09:36:18+00:00"
    found = messages()
    # Two threads, one of them under a tombstoned parent; replies cross into the next day.
    assert found["1736554746.482349"].reply_to == found["1736478630.905399"]
    assert found["1736554783.040199"].reply_to == found["1736478630.905399"]
    assert found["1736554819.539739"].reply_to == found["1736554801.872639"]
    assert found["1736554838.911679"].reply_to == found["1736554828.343759"]
    assert found["1736554828.343759"].deleted_at is not None
    assert found["1736554636.807919"].kind == "service"  # channel_join
    no_text = found["1736582524.607359"]  # files and no text
    assert no_text.text == ""
    assert no_text.attachments.get().mime_type == "image/jpeg"
    assert Attachment.objects.count() == 2
    assert found["1736478514.897649"].sent_at == at("2025-01-10T03:08:34.897649+00:00")
    assert Identity.objects.get(external_id="UOF82F39AE").display_name == "kPVTqHcBWssWFAU"
    again = run_import(sample("slack/slackdump_export"))
    assert (again.added, again.unchanged) == (0, 13)
