"""A message's content past its text's markup: stickers, embeds and polls, media, e-mail
cards with their quoted history folded, revisions as a word diff, a reply's one-line
preview, and the cost of drawing a page of messages (markup: test_message_rendering.py)."""

from __future__ import annotations

import dataclasses
import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from archive.imports.services import import_job_create, import_run
from archive.store import rendering
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from archive.web.formatting import message_html
from tests.factories import ACCOUNT, T0, batch, message

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def md(text: str, **metadata: Any) -> str:
    return str(message_html(text, markup="markdown", metadata=metadata))


def tg(entities: list[Any], text: str | None = None) -> str:
    """Telegram text drawn from its entities, as the connector stores them (fragments
    as {"type", "text"}; plain strings become {"type": "plain"})."""
    stored = [{"type": "plain", "text": e} if isinstance(e, str) else e for e in entities]
    if text is None:
        text = "".join(e.get("text", "") for e in stored)
    return str(message_html(text, markup="entities", metadata={"entities": stored}))


def assert_safe(html: str) -> None:
    """Nothing in `html` runs or leaves the allow-list: every tag is an allowed one, and
    its attributes are neither handlers nor links to anything but the web and mail."""
    allowed = {"p", "br", "strong", "em", "u", "s", "del", "code", "pre", "blockquote"}
    allowed |= {"a", "span", "ul", "ol", "li", "h1", "h2", "h3"}
    for tag in re.findall(r"<(/?)([a-zA-Z][^\s/>]*)([^>]*)>", html):
        assert tag[1].lower() in allowed, tag
        attributes = tag[2]
        assert not re.search(r"\son[a-z]+\s*=", attributes, re.IGNORECASE), tag
        assert "style=" not in attributes.lower(), tag
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("http://", "https://", "mailto:")), href


# --- stickers, embeds, polls --------------------------------------------------------------


def test_stickers_from_each_shape() -> None:
    assert rendering.stickers({"media_type": "sticker", "sticker_emoji": "👍"}) == [
        rendering.Sticker("👍", "")
    ]
    assert rendering.stickers({"stickers": [{"id": "1", "name": "wave_cat"}]}) == [
        rendering.Sticker("", "wave_cat")
    ]
    assert rendering.stickers({"sticker_items": [{"name": "hi"}], "sticker": {"emoji": "🐱"}}) == [
        rendering.Sticker("🐱", ""),
        rendering.Sticker("", "hi"),
    ]
    assert rendering.stickers({"stickers": "nonsense", "sticker_emoji": {"x": 1}}) == []


def test_embeds_are_checked_and_empty_ones_left_out() -> None:
    found = rendering.embeds(
        {
            "embeds": [
                {
                    "title": "T" * 1000,
                    "url": "javascript:alert(1)",
                    "description": "d",
                    "provider": {"name": "GitHub"},
                    "fields": [{"name": "k", "value": "v"}, "junk"],
                },
                {"title": "", "description": "", "url": ""},
                "junk",
                {"url": "https://tenor.example/view/1"},
            ]
        }
    )
    assert len(found) == 2
    assert found[0].url == "" and len(found[0].title) <= rendering.SHORT
    assert found[0].provider == "GitHub" and found[0].fields == [rendering.EmbedField("k", "v")]
    assert found[1].url == "https://tenor.example/view/1" and found[1].host == "tenor.example"
    slack = rendering.embeds(
        {"attachments": [{"title": "Ticket", "title_link": "https://t.example/1", "text": "body"}]}
    )
    assert slack == [rendering.Embed("Ticket", "body", "https://t.example/1", "", "", [], "")]


def test_poll_place_and_contact() -> None:
    poll = rendering.poll(
        {
            "poll": {
                "question": "Lunch?",
                "closed": True,
                "answers": [{"text": "Pizza", "voters": 2, "chosen": True}],
            }
        }
    )
    assert poll == rendering.Poll("Lunch?", [rendering.PollAnswer("Pizza", 2, True)], True)
    place = rendering.place(
        {"location_information": {"latitude": 52.5, "longitude": 13.4}, "place_name": "Cafe"}
    )
    assert place is not None and place.name == "Cafe" and place.map_url.startswith("https://")
    assert rendering.place({"location_information": {"latitude": 500, "longitude": 0}}) is None
    assert rendering.contact(
        {"contact_information": {"first_name": "Ann", "phone_number": "+1 555"}}
    ) == ("Ann, +1 555")


@pytest.mark.parametrize(
    ("mime", "metadata", "kind"),
    [
        ("image/jpeg", {}, "image"),
        ("image/svg+xml", {}, "file"),
        ("audio/ogg", {"media_type": "voice_message"}, "audio"),
        ("audio/mpeg", {}, "audio"),
        ("video/mp4", {}, "video"),
        ("video/quicktime", {}, "file"),
        ("image/webp", {"media_type": "sticker"}, "sticker"),
        ("", {"media_type": "video"}, "video"),
        ("application/pdf", {}, "file"),
    ],
)
def test_media_kind(mime: str, metadata: dict[str, Any], kind: str) -> None:
    assert rendering.media_kind(mime, metadata) == kind


def test_file_badges_and_notes() -> None:
    assert rendering.file_badge("report.final.PDF", "") == "PDF"
    assert rendering.file_badge("noext", "audio/ogg") == "AUDIO"
    assert rendering.file_badge("weird.<script>", "") == "FILE"
    assert rendering.media_note({"omitted": True}) == "not included in the export"
    assert rendering.media_note({"file_missing": True}) == "missing from the export"
    assert rendering.media_note({"path_refused": True}).startswith("refused")
    assert rendering.duration({"duration_seconds": 65}) == "1:05"
    assert rendering.duration({"duration_seconds": 3725}) == "1:02:05"


def test_sticker_or_embed_only_messages_are_never_empty(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "", metadata={"media_type": "sticker", "sticker_emoji": "🐱"}),
            message(
                "2",
                "",
                minutes=1,
                metadata={"embeds": [{"title": "A page", "url": "https://p.example/"}]},
            ),
            message("3", "", minutes=2),
            message(
                "4",
                "",
                minutes=3,
                attachments=(
                    AttachmentRecord(
                        file_name="", metadata={"omitted": True, "media_type": "video"}
                    ),
                ),
            ),
        )
    )
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert '<span class="sticker-face">🐱</span>' in html
    assert "A page" in html and 'href="https://p.example/"' in html
    assert "No text or media was kept for this message." in html
    assert "Video" in html and "Not stored: not included in the export" in html


def test_stored_media_inline_players_and_chips(owner_client: Client) -> None:
    def file(name: str, mime: str, data: bytes) -> AttachmentRecord:
        blob = blob_put(io.BytesIO(data))
        return AttachmentRecord(
            external_id=name,
            file_name=name,
            mime_type=mime,
            size=blob.size,
            sha256=blob.sha256,
            blob_path=blob.path,
        )

    batch_record(
        batch=batch(
            message(
                "1",
                "media",
                attachments=(
                    file("voice.ogg", "audio/ogg", b"OggS fake"),
                    file("clip.mp4", "video/mp4", b"fake video"),
                    file("notes.pdf", "application/pdf", b"%PDF-1.4"),
                    file("photo.png", "image/png", b"\x89PNG fake"),
                    AttachmentRecord(
                        external_id="gone",
                        file_name="gone.zip",
                        mime_type="application/zip",
                        size=2048,
                    ),
                ),
            )
        )
    )
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    atts = {a.file_name: a.public_id for a in Message.objects.get().attachments.all()}
    assert (
        f'<audio controls preload="metadata" src="/attachments/{atts["voice.ogg"]}/"></audio>'
        in html
    )
    assert (
        f'<video controls preload="metadata" src="/attachments/{atts["clip.mp4"]}/"></video>'
        in html
    )
    assert f'src="/attachments/{atts["photo.png"]}/thumbnail/"' in html
    assert re.search(r'<span class="file-badge" aria-hidden="true">PDF</span>', html)
    assert re.search(
        r'class="file-chip missing"[^>]*>\s*<span class="file-badge" aria-hidden="true">ZIP<', html
    )
    assert "gone.zip" in html and "Not stored" in html


# --- e-mail ------------------------------------------------------------------------------

GMAIL = """Sounds good, see you then.

Ann

On Mon, 1 Jan 2024 at 10:00, Bob Example <bob@example.com> wrote:
> Lunch on Friday?
>
> Bob
"""

GMAIL_FOLDED = """Yes.

On Mon, 1 Jan 2024 at 10:00, Bob Example <
bob@example.com> wrote:
> Lunch?
"""

OUTLOOK = """Fine by me.

-----Original Message-----
From: Bob Example
Sent: Monday, January 1, 2024 10:00 AM
To: Ann
Subject: Lunch

Lunch on Friday?
"""

OUTLOOK_BLOCK = """Fine by me.

________________________________
From: Bob Example <bob@example.com>
Sent: Monday, January 1, 2024 10:00
To: Ann <ann@example.com>
Subject: Lunch

Lunch on Friday?
"""

GERMAN = """Passt.

Am 01.01.2024 um 10:00 schrieb Bob Example <bob@example.com>:
> Mittagessen?
"""

TRAILING = """Agreed.

> Lunch on Friday?
> Bob
"""

INTERLEAVED = """> Lunch on Friday?
Yes!
> Where?
The usual place.
"""


@pytest.mark.parametrize(
    ("text", "new", "quoted_start"),
    [
        (GMAIL, "Sounds good, see you then.\n\nAnn", "On Mon, 1 Jan 2024"),
        (GMAIL_FOLDED, "Yes.", "On Mon, 1 Jan 2024"),
        (OUTLOOK, "Fine by me.", "-----Original Message-----"),
        (OUTLOOK_BLOCK, "Fine by me.", "________________________________"),
        (GERMAN, "Passt.", "Am 01.01.2024"),
        (TRAILING, "Agreed.", "> Lunch on Friday?"),
    ],
)
def test_mail_quoted_history_is_split_off(text: str, new: str, quoted_start: str) -> None:
    split = rendering.mail_split(text)
    assert split.new == new
    assert split.quoted.startswith(quoted_start)
    assert "Lunch" in split.quoted or "Mittagessen" in split.quoted


@pytest.mark.parametrize(
    "text",
    [
        INTERLEAVED,  # answers between quotes: nothing to fold away
        "> only a quote\n> nothing new\n",  # all quote: shown whole
        "On the way home I wrote: a poem\nand more text",  # no attribution line of its own
        "From: me, with love\nno header block here",
        "",
    ],
)
def test_mail_without_a_history_to_fold_stays_whole(text: str) -> None:
    split = rendering.mail_split(text)
    assert split == rendering.MailText(text)


def test_mail_header_from_metadata() -> None:
    header = rendering.mail_header(
        {
            "subject": "Lunch",
            "from": {"name": "Ann", "email": "ann@example.com"},
            "to": [{"name": "", "email": "bob@example.com"}],
            "cc": None,
        }
    )
    assert header is not None
    assert str(header.sender) == "Ann <ann@example.com>"
    assert [str(p) for p in header.to] == ["bob@example.com"] and header.cc == []
    assert rendering.mail_header({"subject": "x"}) is None
    assert rendering.mail_header({"entities": []}) is None


def test_mail_card_with_quoted_text_folded(owner_client: Client) -> None:
    metadata = {
        "subject": "Lunch <b>plans</b>",
        "from": {"name": "Ann", "email": "ann@example.com"},
        "to": [{"name": "Bob", "email": "bob@example.com"}],
        "cc": [{"name": "", "email": "carol@example.com"}],
    }
    batch_record(batch=batch(message("1", GMAIL, metadata=metadata)))
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert "<dt>From</dt><dd>Ann &lt;ann@example.com&gt;</dd>" in html
    assert "<dt>To</dt><dd>Bob &lt;bob@example.com&gt;</dd>" in html
    assert "<dt>Cc</dt><dd>carol@example.com</dd>" in html
    assert "Lunch &lt;b&gt;plans&lt;/b&gt;" in html
    assert "<dt>Date</dt>" in html
    new_at = html.index("Sounds good, see you then.")
    folded_at = html.index("<summary>Show quoted text</summary>")
    assert new_at < folded_at < html.index("&gt; Lunch on Friday?")


def test_mail_fixture_gets_a_mail_card(owner_client: Client) -> None:
    job = import_job_create(source=FIXTURES / "mail" / "threads.mbox")
    import_run(job_id=job.pk)
    message_row = Message.objects.exclude(provider_metadata__subject="").first()
    assert message_row is not None
    html = owner_client.get(f"/chats/{message_row.chat_id}/").content.decode()
    assert 'class="mail-head"' in html and "<dt>Subject</dt>" in html


# --- revisions -----------------------------------------------------------------------------


def test_word_diff_marks_what_changed() -> None:
    parts = rendering.word_diff("the quick brown fox", "the slow brown cat!")
    assert parts == [
        rendering.DiffPart("same", "the "),
        rendering.DiffPart("del", "quick"),
        rendering.DiffPart("ins", "slow"),
        rendering.DiffPart("same", " brown "),
        rendering.DiffPart("del", "fox"),
        rendering.DiffPart("ins", "cat!"),
    ]
    assert rendering.word_diff("same", "same") == [rendering.DiffPart("same", "same")]
    assert rendering.word_diff("", "new") == [rendering.DiffPart("ins", "new")]


@given(st.text(max_size=60), st.text(max_size=60))
def test_word_diff_rebuilds_both_versions(before: str, after: str) -> None:
    parts = rendering.word_diff(before, after)
    assert "".join(p.text for p in parts if p.op != "ins") == before
    assert "".join(p.text for p in parts if p.op != "del") == after


def test_word_diff_of_huge_versions_is_bounded() -> None:
    before = "word " * 10_000
    after = "other " * 10_000
    parts = rendering.word_diff(before, after)
    assert parts == [rendering.DiffPart("del", before), rendering.DiffPart("ins", after)]


def test_revision_steps_newest_first_with_times() -> None:
    t1, t2 = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, tzinfo=UTC)
    revisions = [
        SimpleNamespace(text="one", edited_at=t1, recorded_at=t1),
        SimpleNamespace(text="one two", edited_at=None, recorded_at=t2),
    ]
    steps = rendering.revision_steps(revisions=revisions, current="one two three", edited_at=t2)
    assert [(s.before, s.after, s.is_current) for s in steps] == [
        ("one two", "one two three", True),
        ("one", "one two", False),
    ]
    assert steps[0].edited_at == t2 and steps[1].edited_at == t1
    assert steps[0].parts[-1] == rendering.DiffPart("ins", " three")


def test_revisions_page_shows_each_edit_as_a_diff(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "meet at five <b>", minutes=0)))
    batch_record(
        batch=batch(message("1", "meet at six <b>", minutes=0, edited_at=T0 + timedelta(hours=1)))
    )
    batch_record(
        batch=batch(
            message("1", "meet at six tomorrow <b>", minutes=0, edited_at=T0 + timedelta(hours=2))
        )
    )
    msg = Message.objects.get()
    fragment = owner_client.get(
        f"/m/{msg.public_id}/revisions/", HTTP_HX_REQUEST="true"
    ).content.decode()
    found = re.search(r"<ins>\s?tomorrow\s?</ins>", fragment)
    assert found is not None
    newest = found.start()
    older = fragment.index("<del>five</del><ins>six</ins>")
    assert newest < older
    assert "&lt;b&gt;" in fragment and "<b>" not in fragment
    assert "Edited <time" in fragment
    full = owner_client.get(f"/m/{msg.public_id}/revisions/").content.decode()
    assert "<html" in full and "wirecat/chat.css" in full


# --- a one-line preview (a reply's quote) -----------------------------------------------


def test_previews_are_plain_text_without_markup_or_history(db: None) -> None:
    discord = dataclasses.replace(ACCOUNT, provider="discord")
    batch_record(
        batch=dataclasses.replace(
            batch(
                message("1", "**Bold** and ||hidden|| <script>x</script>"),
                message("2", GMAIL, minutes=1, metadata={"subject": "s", "from": {"name": "Ann"}}),
                message(
                    "3", "", minutes=2, metadata={"media_type": "sticker", "sticker_emoji": "🐱"}
                ),
                message(
                    "4",
                    "",
                    minutes=3,
                    attachments=(
                        AttachmentRecord(file_name="plan.pdf", mime_type="application/pdf"),
                    ),
                ),
                message("5", "x" * 500, minutes=4),
            ),
            account=discord,
        )
    )
    rows = list(Message.objects.prefetch_related("attachments").order_by("sent_at"))
    chat = Chat.objects.select_related("account").get()
    template = Template(
        "{% load wirecat_messages %}{% for m in rows %}{% message_preview m 60 %}|{% endfor %}"
    )
    html = template.render(Context({"rows": rows, "chat": chat}))
    first, mail, sticker, attachment, long, _ = html.split("|")
    assert first == "Bold and hidden &lt;script&gt;x&lt;/script&gt;"
    assert mail == "Sounds good, see you then. Ann"
    assert sticker == "Sticker 🐱"
    assert attachment == "plan.pdf"
    assert len(long) == 60 and long.endswith("…")
    # Without the chat's row at hand, one query finds the markup; attachments not read
    # with the parent are not looked up (no query per reply).
    parents = list(Message.objects.order_by("sent_at"))
    with CaptureQueriesContext(connection) as queries:
        html = template.render(Context({"rows": parents}))
    assert len(queries) == 1
    assert html.split("|")[3] == "Media"


# --- cost ------------------------------------------------------------------------------------


def test_content_of_50_messages_costs_one_query_for_the_markup(
    db: None, django_assert_num_queries: Any
) -> None:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"**m{i}** https://x.example/{i}",
                    minutes=i,
                    metadata={"embeds": [{"title": f"e{i}"}]},
                    attachments=(AttachmentRecord(file_name=f"{i}.txt", size=i),),
                )
                for i in range(50)
            ]
        )
    )
    rows = list(Message.objects.prefetch_related("attachments").order_by("sent_at"))
    template = Template(
        "{% load wirecat_messages %}{% for m in rows %}{% message_content m %}{% endfor %}"
    )
    # No `chat` in the context and no chat on the rows: one query finds the provider.
    with django_assert_num_queries(1):
        html = template.render(Context({"rows": rows}))
    assert html.count('class="mc"') == 50
    chat = Chat.objects.select_related("account").get()
    with django_assert_num_queries(0):
        template.render(Context({"rows": rows, "chat": chat}))
