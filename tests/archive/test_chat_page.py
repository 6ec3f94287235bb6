"""The chat page as a messenger reads: day separators, one sender's runs, own messages on
the right, the jump to a date, search in the chat, tasks on their messages, drafts that
were never sent kept out, and a bounded number of queries whatever the window holds."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from django.test import Client

from archive.gateway.models import SendOutcome
from archive.gateway.services.sends import send_reject, send_request
from archive.store.models import Account, Chat, Message
from archive.store.selectors import day_label
from archive.store.sink import batch_record
from archive.tags import services as tags
from tasks.services import project_create, task_create
from tests.factories import ACCOUNT, T0, batch, message

pytestmark = pytest.mark.django_db


def page(client: Client, chat: Chat, query: str = "", **headers: Any) -> str:
    response = client.get(f"/chats/{chat.pk}/{query}", **headers)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def runs(html: str) -> list[tuple[str, str]]:
    """(message text, "start"/"cont") for every message on the page, in order."""
    found = re.findall(r'data-run="(start|cont)".*?<div class="body">([^<]*)', html, re.S)
    return [(text.strip(), run) for run, text in found]


def days(html: str) -> list[str]:
    return re.findall(r'<div class="day" data-day="[^"]+"><span>([^<]+)</span>', html)


# --- days and runs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("day", "label"),
    [
        (date(2024, 3, 15), "Today"),
        (date(2024, 3, 14), "Yesterday"),
        (date(2024, 3, 11), "Monday"),
        (date(2024, 3, 9), "Saturday"),
        (date(2024, 3, 8), "8 March 2024"),
        (date(2017, 3, 12), "12 March 2017"),
    ],
)
def test_day_labels_read_like_a_messenger(day: date, label: str) -> None:
    assert day_label(day, today=date(2024, 3, 15)) == label


def test_a_separator_starts_each_day_and_one_senders_messages_run_together(
    owner_client: Client,
) -> None:
    batch_record(
        batch=batch(
            message("1", "morning one", minutes=0),
            message("2", "morning two", minutes=2),
            message("3", "morning three", minutes=6),
            message("4", "bob answers", minutes=7, sender="bob"),
            message("5", "alice much later", minutes=30),
            message("6", "next day", minutes=60 * 24),
            message("7", "own reply", minutes=60 * 24 + 1, sender="me", direction="out"),
        )
    )
    html = page(owner_client, Chat.objects.get())
    assert days(html) == ["1 March 2024", "2 March 2024"]
    assert runs(html) == [
        ("morning one", "start"),
        ("morning two", "cont"),  # within five minutes of the one before
        ("morning three", "cont"),
        ("bob answers", "start"),
        ("alice much later", "start"),  # more than five minutes after
        ("next day", "start"),  # a new day starts a new run
        ("own reply", "start"),
    ]
    # Every message names its sender (the stylesheet shows it once per run, chat.js moves
    # runs across the seams of loaded pages); the owner's own are on the right, unnamed.
    assert html.count('<header class="who') == 6
    assert re.search(r'class="msg out" id="msg_\w+"', html)
    assert 'class="avatar av-' in html and "You:</span>" in html


# --- jump to a date -----------------------------------------------------------------------


@pytest.fixture
def three_days(db: None) -> Chat:
    batch_record(
        batch=batch(
            *[message(str(i), f"first day {i}", minutes=i) for i in range(5)],
            *[message(str(10 + i), f"third day {i}", minutes=2 * 24 * 60 + i) for i in range(5)],
        )
    )
    return Chat.objects.get()


def focus_text(html: str) -> str:
    found = re.search(r'class="msg [^"]*focus".*?<div class="body">([^<]*)', html, re.S)
    assert found, "no message is focused"
    return found.group(1).strip()


def test_jump_to_a_day_opens_at_its_first_message(owner_client: Client, three_days: Chat) -> None:
    html = page(owner_client, three_days, "?date=2024-03-03")
    assert focus_text(html) == "third day 0"
    assert 'class="chat-note' not in html
    assert 'value="2024-03-03"' in html  # the picker keeps the day


def test_jump_to_a_day_without_messages_goes_to_the_next_one(
    owner_client: Client, three_days: Chat
) -> None:
    html = page(owner_client, three_days, "?date=2024-03-02")
    assert focus_text(html) == "third day 0"
    assert "No messages on 2 March 2024. Showing the next day with messages, 3 March 2024." in html


def test_jump_before_the_chat_goes_to_its_start(owner_client: Client, three_days: Chat) -> None:
    html = page(owner_client, three_days, "?date=1999-01-01")
    assert focus_text(html) == "first day 0"
    assert "The chat starts on 1 March 2024, after 1 January 1999. Showing its start." in html


@pytest.mark.parametrize("day", ["2030-05-01", "9999-12-31"])
def test_jump_after_the_chat_goes_to_its_end(
    owner_client: Client, three_days: Chat, day: str
) -> None:
    html = page(owner_client, three_days, f"?date={day}")
    assert "Showing the end of the chat." in html
    assert "the last message is from 3 March 2024" in html
    assert runs(html)[-1][0] == "third day 4"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("2017-13-45", "“2017-13-45” is not a date."),
        ("yesterday-ish", "“yesterday-ish” is not a date."),
        ("%00%01", "is not a date."),
        ("0000-01-01", "“0000-01-01” is not a date."),
        ("", "Pick a day to jump to."),
    ],
)
def test_a_bad_date_is_explained_never_a_500(
    owner_client: Client, three_days: Chat, raw: str, shown: str
) -> None:
    html = page(owner_client, three_days, f"?date={raw}")
    assert shown in html
    assert runs(html)[-1][0] == "third day 4"  # the newest messages, as without a date


def test_the_first_possible_day_is_before_the_chat(owner_client: Client, three_days: Chat) -> None:
    html = page(owner_client, three_days, "?date=0001-01-01")
    assert focus_text(html) == "first day 0"


# --- search in this chat ------------------------------------------------------------------


def test_search_in_this_chat_finds_only_its_messages(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "the ferry leaves at nine"),
            message("2", "the ferry is late", chat="chat-2"),
        )
    )
    chat = Chat.objects.get(external_id="chat-1")
    assert 'name="find"' in page(owner_client, chat)
    response = owner_client.get(f"/chats/{chat.pk}/", {"find": "ferry"})
    assert response.status_code == 302
    query = parse_qs(urlparse(response["Location"]).query)["q"][0]
    assert query == 'chat:"chat-1" source:testnet ferry'
    results = owner_client.get(response["Location"]).content.decode()
    assert "leaves at nine" in results and "is late" not in results
    # An empty search still lands on the search page, scoped to the chat.
    empty = owner_client.get(f"/chats/{chat.pk}/", {"find": ""})
    assert empty.status_code == 302 and "chat%3A" in empty["Location"]


# --- tasks on their messages --------------------------------------------------------------


def test_a_message_shows_the_tasks_made_from_it(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "book the ferry"), message("2", "no task here")))
    first = Message.objects.get(external_id="1")
    project_create(key="HOME", name="Home")
    task_create(project="HOME", title="Book the ferry", messages=[first.public_id])
    task_create(project="HOME", title="Pay for it", messages=[first.public_id])
    html = page(owner_client, Chat.objects.get())
    chips = re.findall(
        r'<a class="task-chip[^"]*" href="([^"]+)" title="([^"]+)">([^<]+)</a>', html
    )
    assert chips == [
        ("/tasks/HOME-1/", "Book the ferry (to do)", "task HOME-1"),
        ("/tasks/HOME-2/", "Pay for it (to do)", "task HOME-2"),
    ]


# --- the actions menu, replies ------------------------------------------------------------


def test_each_message_has_one_menu_that_works_without_javascript(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "the question"),
            message("2", "the answer", minutes=1, reply_to_external_id="1"),
        )
    )
    html = page(owner_client, Chat.objects.get())
    question = Message.objects.get(external_id="1")
    assert html.count('<details class="actions">') == 2
    # Its items are links: tag (the page at the message, its box open), a task, the link.
    assert f'href="?at={question.public_id}&amp;tag={question.public_id}#tags-' in html
    assert f'href="/tasks/new/?message={question.public_id}"' in html
    assert f'class="act-link" href="/m/{question.public_id}/"' in html
    # The quote links to the message it answers (and says which, for the page's script).
    assert (
        f'<a class="quote" href="/m/{question.public_id}/" data-target="{question.public_id}">'
    ) in html
    # No per-message tag box or task link in the flow: they are in the menu.
    assert html.count('placeholder="+ tag"') == 2  # the chat's, and chat.js's template


# --- drafts that were never sent ----------------------------------------------------------


@pytest.fixture
def asking(db: None) -> dict[str, Any]:
    batch_record(
        batch=batch(message("1", "quiet chat"), message("2", "busy chat", chat="chat-2", minutes=5))
    )
    account = Account.objects.get()
    account.send_permission = "ask"
    account.save()
    Chat.objects.update(send_allowed=True)
    return {"account": account, "quiet": Chat.objects.get(external_id="chat-1")}


def chat_order() -> list[str]:
    return [c.external_id for c in Chat.objects.order_by("-last_message_at", "-id")]


def test_a_draft_awaiting_approval_is_marked_and_moves_nothing(
    owner_client: Client, asking: dict[str, Any]
) -> None:
    before = Chat.objects.get(pk=asking["quiet"].pk).last_message_at
    attempt = send_request(
        agent=None, account_id=asking["account"].pk, chat_id=asking["quiet"].pk, text="draft text"
    )
    assert attempt.outcome == SendOutcome.AWAITING
    assert Chat.objects.get(pk=asking["quiet"].pk).last_message_at == before
    assert chat_order() == ["chat-2", "chat-1"]
    html = page(owner_client, asking["quiet"])
    assert "draft text" in html and 'data-draft="awaiting"' in html
    assert "waiting for your approval: not sent" in html


def test_a_refused_draft_is_not_in_the_chat_and_moves_nothing(
    owner_client: Client, asking: dict[str, Any]
) -> None:
    before = Chat.objects.get(pk=asking["quiet"].pk).last_message_at
    attempt = send_request(
        agent=None, account_id=asking["account"].pk, chat_id=asking["quiet"].pk, text="draft text"
    )
    send_reject(send_id=attempt.public_id)
    assert attempt.message is not None
    attempt.message.refresh_from_db()
    assert attempt.message.delivery_status == "refused"
    assert Chat.objects.get(pk=asking["quiet"].pk).last_message_at == before
    assert chat_order() == ["chat-2", "chat-1"]
    html = page(owner_client, asking["quiet"])
    assert "draft text" not in html and "quiet chat" in html
    chats = owner_client.get("/chats/").content.decode()
    assert "draft text" not in chats


def test_an_allowed_send_moves_its_chat_up(asking: dict[str, Any]) -> None:
    Account.objects.update(send_permission="allow")
    send_request(
        agent=None, account_id=asking["account"].pk, chat_id=asking["quiet"].pk, text="on its way"
    )
    assert chat_order() == ["chat-1", "chat-2"]


# --- pages and queries --------------------------------------------------------------------


def fill(n: int, **extra: Any) -> Chat:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"message number {i}",
                    minutes=i * 3,
                    sender="alice" if i % 3 else "bob",
                    reply_to_external_id=str(i - 1) if i % 4 == 0 and i else "",
                    **extra,
                )
                for i in range(n)
            ]
        )
    )
    return Chat.objects.get()


def test_the_chat_page_takes_the_same_queries_for_ten_or_fifty_messages(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    chat = fill(60)
    project_create(key="HOME", name="Home")
    for m in Message.objects.all()[:20]:
        tags.tag_add(target=tags.tag_target(kind="message", key=m.pk), name=f"t{m.pk % 3}")
        task_create(project="HOME", title=f"task {m.pk}", messages=[m.public_id])
    # session, owner, chat, messages, attachments, tags of the messages, their tasks, tag
    # names, the chat's tags, the activity chart (two), the chat's members, the notes about
    # the chat (counted: none link here, so nothing more)
    with django_assert_max_num_queries(13):
        html = page(owner_client, chat)
    assert html.count('<article class="msg') == 50
    older = re.search(r'hx-get="(\?before=[^"]+)"', html)
    assert older
    with django_assert_max_num_queries(8):
        fragment = page(owner_client, chat, older.group(1), HTTP_HX_REQUEST="true")
    assert fragment.count('<article class="msg') == 10 and "<html" not in fragment
    assert "Start of the chat" in fragment


def test_the_older_page_needs_no_intersect_trigger(owner_client: Client) -> None:
    """The link loads on click (and when chat.js sees the reader come near): never on
    "intersect", which fired again and again while it stayed in view."""
    html = page(owner_client, fill(60))
    assert "intersect" not in html
    assert re.search(r'<a class="more older" href="\?before=[^"]+"\s+hx-get=', html)
    assert "chat.js" in html and "chat.css" in html


def test_the_header_says_what_the_chat_is(owner_client: Client) -> None:
    chat = fill(6)
    html = page(owner_client, chat)
    head = html[
        html.index('<header class="chat-head">') : html.index(
            "</header>", html.index('<header class="chat-head">')
        )
    ]
    assert "<h1>Chat chat-1</h1>" in head
    assert "testnet" in head and "Group" in head and "6 messages" in head
    assert "2 people" in head and "Alice, Bob" in head
    assert 'id="tags-chat-' in head and 'name="date"' in head and 'name="find"' in head


def test_times_are_small_with_the_full_date_on_hover(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "hello", minutes=5)))
    html = page(owner_client, Chat.objects.get())
    sent = T0 + timedelta(minutes=5)
    assert (
        f'<time datetime="{sent.isoformat()}" title="Friday, 1 March 2024, 12:05:00">12:05</time>'
        in html
    )


def test_add_a_tag_without_javascript_opens_the_message_with_its_tag_box(
    owner_client: Client,
) -> None:
    chat = fill(60)
    early = Message.objects.get(external_id="3")
    html = page(owner_client, chat)
    # A message without tags carries no form of its own (one shared <template> for chat.js)
    assert html.count('aria-label="Add a tag"') == 2  # the chat's box and the template's
    link = f'href="?at={early.public_id}&amp;tag={early.public_id}#tags-message-{early.public_id}"'
    opened = page(owner_client, chat, f"?at={early.public_id}&tag={early.public_id}")
    assert link in opened
    form = re.search(
        rf'<div class="tags" id="tags-message-{early.public_id}">(.*?)</div>', opened, re.S
    )
    assert form and 'name="key" value="' + early.public_id + '"' in form.group(1)
    assert 'aria-label="Add a tag"' in form.group(1)


def test_a_reply_quotes_its_parent_as_plain_text(owner_client: Client) -> None:
    """The quote is the parent's text without its markup (Discord's `**`, here)."""
    discord = replace(ACCOUNT, provider="discord", external_id="guild-1")
    batch_record(
        batch=replace(
            batch(
                message("1", "ship the **JSON** ~~HTML~~ today"),
                message("2", "agreed", sender="bob", minutes=1, reply_to_external_id="1"),
            ),
            account=discord,
        )
    )
    chat = Chat.objects.get()
    html = page(owner_client, chat)
    quoted = re.findall(r'<span class="quoted">([^<]*)</span>', html)
    assert quoted == ["ship the JSON HTML today"], quoted
