"""The search page as one box with tabs (All, Messages, Mail, Notes, Meetings, Conversations,
Files): each tab's count, the fused list with why each thing matched and a link to its
page, the mode switch, "more like this", and bad input as a sentence, never a 500. On the
real store, indexes and model."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from archive.conversations.services.builds import conversations_build
from archive.files.models import AttachmentText
from archive.meaning.services.refresh import embeddings_refresh
from archive.store.domain import AccountRecord, AttachmentRecord, IdentityRecord
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record
from meetings.models import Meeting, Segment
from notes.models import Note
from notes.services.notes import note_create
from tests.factories import batch, message
from tests.meetings.search_factories import meeting, transcript

pytestmark = pytest.mark.django_db(transaction=True)

MAIL = AccountRecord(
    provider="mail",
    external_id="owner@example.org",
    name="Mail",
    owner=IdentityRecord(external_id="owner@example.org", display_name="Owner Person"),
)


@dataclasses.dataclass(frozen=True)
class World:
    late: Message  # "running late … the bus broke down"
    note: Note
    meeting: Meeting
    line: Segment  # the transcript's line about the budget
    attachment: Attachment


def world(*, embedded: bool = True) -> World:
    """A chat (built into conversations), a mail, a note, a meeting with a transcript and a
    file's text, all about a budget; embedded with the real model unless asked not to."""
    batch_record(
        batch=batch(
            message("1", "I was running late to the meeting, the bus broke down", minutes=0),
            message("2", "no worries, the budget review starts at ten", sender="bob", minutes=3),
            message("3", "bring the <b>budget</b> sheets please", minutes=5),
            message(
                "4",
                "see attached",
                minutes=7,
                attachments=(AttachmentRecord(external_id="f1", file_name="budget-2026.pdf"),),
            ),
        )
    )
    mail = batch(message("m1", "Re: budget approval for new laptops", chat="inbox", sender="bob"))
    batch_record(batch=dataclasses.replace(mail, account=MAIL))
    conversations_build(chat_id=Chat.objects.get(external_id="chat-1").pk)
    note = note_create(title="Budget plan", body="The budget for the garden: seeds and tools.")
    made = meeting("Quarterly review", description="the numbers of the quarter")
    spoken = transcript(
        made, [("Ann", "good morning"), ("Bob", "the budget is tight this quarter", 65_000)]
    )
    attachment = Attachment.objects.get(message__external_id="4")
    AttachmentText.objects.create(
        attachment=attachment,
        text="Budget 2026: rent, travel and the new laptops.",
        state="done",
        made_at=datetime.now(UTC),
    )
    if embedded:
        while embeddings_refresh().more:
            pass
    return World(
        late=Message.objects.get(external_id="1"),
        note=note,
        meeting=made,
        line=spoken.segments.get(seq=1),
        attachment=attachment,
    )


def _get(client: Client, url: str, **extra: Any) -> str:
    response = client.get(url, **extra)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _tabs(html: str) -> dict[str, tuple[str, str | None, bool]]:
    """Each tab's label: (its address, its count, whether it is the current one)."""
    nav = re.search(r'<nav class="search-tabs".*?</nav>', html, re.S)
    assert nav is not None
    found = {}
    tab = r'<a href="([^"]*)"( aria-current="page")?>(\w+)'
    counted = r'(?: <span class="tab-count">([^<]+)</span>)?</a>'
    for href, current, label, count in re.findall(tab + counted, nav.group(0)):
        found[label] = (href.replace("&amp;", "&"), count or None, bool(current))
    return found


def _rows(html: str) -> list[str]:
    return re.findall(r'<li class="hit all-hit kind-[a-z]+">(.*?)</li>', html, re.S)


def test_every_tab_is_there_with_its_count_and_keeps_the_query_and_mode(
    owner_client: Client,
) -> None:
    world(embedded=False)
    html = _get(owner_client, "/search/?q=budget&tab=all&mode=words")
    tabs = _tabs(html)
    assert list(tabs) == ["All", "Messages", "Mail", "Notes", "Meetings", "Conversations", "Files"]
    assert tabs["All"][2] and not any(current for _, _, current in list(tabs.values())[1:])
    counts = {label: count for label, (_, count, _) in tabs.items()}
    assert counts == {
        "All": "8",
        "Messages": "3",  # the file's message too: words find messages by their files
        "Mail": "1",
        "Notes": "1",
        "Meetings": "1",
        "Conversations": "1",
        "Files": "1",
    }
    assert tabs["Notes"][0] == "?q=budget&tab=note&mode=words"
    assert tabs["Files"][0] == "?q=budget&tab=file&mode=words"
    # Messages is the messages' own search, as its address always was (the mode kept).
    assert tabs["Messages"][0] == "?q=budget&sort=relevance&mode=words"
    # The mode switch beside the box, the current mode chosen; the form stays on the tab.
    assert '<input type="radio" name="mode" value="words" checked>' in html
    assert '<input type="hidden" name="tab" value="all">' in html
    assert len(_rows(html)) == 8


def test_the_other_tabs_are_counted_after_the_page_is_shown(owner_client: Client) -> None:
    world(embedded=False)
    for address, own in (
        ("/search/?q=budget&tab=note&mode=words", "1"),
        ("/search/?q=budget&mode=words", "4"),  # Messages: its own search's count, mail too
    ):
        html = _get(owner_client, address)
        later = re.search(r'<nav class="search-tabs"[^>]* hx-get="([^"]+)" hx-trigger="load"', html)
        assert later is not None
        counts = _get(
            owner_client, "/search/" + later.group(1).replace("&amp;", "&"), HTTP_HX_REQUEST="true"
        )
        assert counts.lstrip().startswith('<nav class="search-tabs"') and "hx-get" not in counts
        tabs = _tabs(counts)
        assert tabs["Files"][1] == "1" and tabs["Mail"][1] == "1" and tabs["All"][1] == "8"
        assert [label for label, (_, _, current) in tabs.items() if current] == [
            "Notes" if "tab=note" in address else "Messages"
        ]
        current = next(count for _, count, now in tabs.values() if now)
        assert current == own
    # What a page wrote as its own count is all `own` may be.
    forged = _get(
        owner_client,
        "/search/?q=budget&mode=words&counts=1&own=%3Cb%3E",
        HTTP_HX_REQUEST="true",
    )
    assert "<b>" not in forged and "&lt;b&gt;" not in forged


def test_a_tab_of_one_kind_shows_only_that_kind_each_linked_to_its_page(
    owner_client: Client,
) -> None:
    made = world(embedded=False)
    notes = _rows(_get(owner_client, "/search/?q=budget&tab=note&mode=words"))
    assert len(notes) == 1
    assert f'href="/notes/{made.note.public_id}/"' in notes[0]
    assert '<span class="badge kind-badge">Note</span>' in notes[0]
    assert re.search(r"<mark>budget</mark>", notes[0], re.I)
    files = _rows(_get(owner_client, "/search/?q=budget&tab=file&mode=words"))
    assert len(files) == 1
    assert f'href="/attachments/{made.attachment.public_id}/text/"' in files[0]
    conversations = _rows(_get(owner_client, "/search/?q=budget&tab=conversation&mode=words"))
    assert len(conversations) == 1 and 'href="/conversations/cnv_' in conversations[0]
    mail = _rows(_get(owner_client, "/search/?q=budget&tab=mail&mode=words"))
    assert len(mail) == 1 and "laptops" in mail[0] and 'href="/m/msg_' in mail[0]
    # On All: a message opens in its chat (its permalink), the meeting at the line said.
    everything = "".join(_rows(_get(owner_client, "/search/?q=budget&tab=all&mode=words")))
    line = made.line.pk
    assert f'href="/meetings/{made.meeting.public_id}/?line={line}#seg-{line}"' in everything
    assert ">at 01:05<" in everything
    assert '<span class="badge why why-words"' in everything
    # Snippets are text: the message's markup is shown, not obeyed.
    assert "&lt;b&gt;" in everything and "<b>" not in everything
    # The Messages tab is the messages' full search still: facets, sort, grouping.
    messages = _get(owner_client, "/search/?q=budget")
    assert 'aria-label="Narrow the search"' in messages and 'id="sort"' in messages
    assert "Group by conversation" in messages and 'class="hit-link"' in messages
    # Counted by that search: mail too, as it always was.
    assert re.search(r'aria-current="page">Messages <span class="tab-count">4</span>', messages)


def test_meaning_and_both_say_why_each_thing_matched(owner_client: Client) -> None:
    made = world()
    html = _get(owner_client, "/search/?q=delayed%20arrival%20at%20the%20gathering&tab=all")
    assert '<input type="radio" name="mode" value="hybrid" checked>' in html
    rows = _rows(html)
    assert rows and "running late" in rows[0] and "why-meaning" in rows[0]
    assert "still being built" not in html  # the index is ready
    page = _get(owner_client, "/search/?q=budget&tab=all&mode=hybrid")
    both = _rows(page)
    assert any(re.search(r'class="badge why why-both"[^>]*>both</span>', row) for row in both)
    assert any(f"/notes/{made.note.public_id}/" in row for row in both)


def test_an_index_not_ready_says_so_with_its_progress(owner_client: Client) -> None:
    world(embedded=False)
    html = _get(owner_client, "/search/?q=budget&tab=all&mode=hybrid")
    notice = re.search(r'<p class="meaning-notice" role="status">(.*?)</p>', html, re.S)
    assert notice is not None
    # Nothing cut yet: the sources waiting (a chat's conversation, a note, a transcript,
    # a file's text), not a sum of nothing.
    assert "4 sources still to be read" in notice.group(1) and "0 of 0" not in notice.group(1)
    # The meaning side of each kind is skipped with its reason, in one quiet line.
    skipped = re.search(r'<ul class="skipped-notes".*?</ul>', html, re.S)
    assert skipped is not None and "by meaning" in skipped.group(0)
    assert len(_rows(html)) == 8  # words still answer


def test_more_like_a_message_shows_its_heading_and_leaves_it_out(owner_client: Client) -> None:
    made = world()
    html = _get(owner_client, f"/search/?like=message:{made.late.public_id}")
    assert re.search(
        r'<h2 class="like-head">More like <q>Alice: I was running late to the meeting', html
    )
    assert _tabs(html)["All"][2]
    # By meaning alone: no mode to switch; typing in the box starts a search of its own.
    assert 'name="mode"' not in html and 'name="like"' not in html
    rows = _rows(html)
    assert rows and all(f"/m/{made.late.public_id}/" not in row for row in rows)
    # Its tabs keep the reference.
    assert f"like=message%3A{made.late.public_id}" in _tabs(html)["Notes"][0].replace(":", "%3A")
    note = _get(owner_client, f"/search/?like={made.note.ref}")
    assert '<h2 class="like-head">More like <q>Budget plan</q> <span' in note


def test_the_more_like_this_links_of_a_message_note_and_meeting(owner_client: Client) -> None:
    made = world(embedded=False)
    chat = _get(owner_client, f"/chats/{made.late.chat_id}/")
    assert f'<a class="act-like" href="/search/?like=message:{made.late.public_id}">' in chat
    note = _get(owner_client, f"/notes/{made.note.public_id}/")
    assert f'href="/search/?like=note%3A{made.note.public_id}"' in note
    page = _get(owner_client, f"/meetings/{made.meeting.public_id}/")
    assert f'href="/search/?like=meeting:{made.meeting.public_id}"' in page


@pytest.mark.parametrize(
    ("address", "sentence"),
    [
        ("/search/?q=budget&tab=everything", "tab: one of all, message, mail"),
        ("/search/?q=budget&tab=all&mode=psychic", "mode: one of words, meaning, hybrid"),
        ("/search/?q=budget&tab=note&mode=", None),  # empty: the default
        ("/search/?like=nonsense", "like"),
        ("/search/?like=message:msg_nothing", "message"),
        ("/search/?q=budget&tab=all&cursor=%%%", "cursor"),
        ("/search/?q=(budget&tab=all", "never closed"),
        ("/search/?q=budget&tab=%3Cscript%3E", "tab: one of"),
    ],
)
def test_bad_input_is_a_sentence_on_the_page_never_a_500(
    owner_client: Client, address: str, sentence: str | None
) -> None:
    html = _get(owner_client, address)
    if sentence is None:
        assert 'role="alert"' not in html
        return
    alert = re.search(r'<p class="error" role="alert">(.*?)</p>', html, re.S)
    assert alert is not None and sentence in alert.group(1)
    assert "<script>" not in html.split("</head>", 1)[1].replace("<script src=", "")


def test_htmx_swaps_the_results_with_tabs_and_rows(owner_client: Client) -> None:
    world(embedded=False)
    html = _get(owner_client, "/search/?q=budget&tab=all&mode=words", HTTP_HX_REQUEST="true")
    assert html.lstrip().startswith('<section id="results"')
    assert _tabs(html)["All"][1] == "8" and len(_rows(html)) == 8
