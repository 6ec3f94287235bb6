"""The Conversations pages through the Django client, on chats recorded by the sink and
built by the real builder: the list (newest active first, paged, participants, the state
of the build said plainly), a message opened in its conversation, one conversation's page
(its messages in order, a page at a time, "Write a note", its notes), hostile text escaped,
unknown ids a 404, odd query strings never a 500, the sign-in required, and a number of
queries that does not grow with the conversations on a page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from archive.conversations import page_reads
from archive.conversations.page_reads import LIST_PAGE, MESSAGES_PAGE
from archive.conversations.selectors import chat_conversations, conversation_of
from archive.conversations.services.batches import AnswerGiven, batch_answers_store, batch_next
from archive.conversations.services.builds import conversations_build
from archive.store.domain import Batch, IdentityRecord, MessageRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.factories import ACCOUNT, batch, message

pytestmark = pytest.mark.django_db(transaction=True)

DAY = 24 * 60  # minutes: a day's silence starts a new conversation
# Opening lines that share no words, so nothing but the messenger's replies ties them.
THINGS = ["keys", "boat", "tickets", "piano", "garden", "invoice", "camera", "recipe"]


def opening(n: int) -> str:
    return f"Topic {n}: who has the {THINGS[n % len(THINGS)]}?"


def threads(count: int, *, replies: int = 2, chat: str = "chat-1") -> Chat:
    """`count` conversations a day apart, each an opening line and `replies` replies to
    it (the messenger's replies: the first source in the choice order), built."""
    records: list[MessageRecord] = []
    for n in range(count):
        root = f"t{n}"
        records.append(message(root, opening(n), chat=chat, minutes=n * DAY))
        for r in range(replies):
            records.append(
                message(
                    f"t{n}r{r}",
                    f"reply {r} about topic {n}",
                    chat=chat,
                    sender="bob" if r % 2 == 0 else "alice",
                    minutes=n * DAY + r + 1,
                    reply_to_external_id=root,
                )
            )
    for at in range(0, len(records), 500):
        batch_record(batch=batch(*records[at : at + 500]))
    found = Chat.objects.get(external_id=chat)
    agent_starts_all(found)
    return found


def agent_starts_all(chat: Chat) -> None:
    """The owner's agent answers that every message it is asked about (those with no reply
    recorded: here, the opening lines) starts a conversation, through the agent's batches;
    then the chat is built. The pages are tested on splits the rules cannot change."""
    for _ in range(100):  # a bound: a batch that never runs out fails the test, never hangs it
        asked = batch_next(chat_id=chat.pk)
        if asked is None:
            break
        answers = [AnswerGiven(m.public_id, None, 1.0) for m in asked.messages if m.asked]
        batch_answers_store(batch_id=asked.id, model="test-splitter", answers=answers, agent="t")
    else:
        pytest.fail("the agent's batches never ran out")
    conversations_build(chat_id=chat.pk, pause_seconds=0)


def get(client: Client, url: str, status: int = 200, **headers: Any) -> str:
    response = client.get(url, **headers)
    assert response.status_code == status, (url, response.status_code, response.content[:400])
    return response.content.decode()


def summaries(html: str) -> list[str]:
    return re.findall(r'<span class="conv-title">([^<]*)</span>', html)


def test_the_list_shows_each_conversation_newest_first_with_who_when_and_how_many(
    owner_client: Client,
) -> None:
    chat = threads(3)
    html = get(owner_client, f"/chats/{chat.pk}/conversations/")
    assert summaries(html) == [opening(2), opening(1), opening(0)]
    assert "3 conversations, the most recently active first" in html
    # Participants by name (the most active first), the time span, the size.
    assert '<span class="conv-people">Alice, Bob</span>' in html or (
        '<span class="conv-people">Bob, Alice</span>' in html
    )
    assert "3 March 2024, 12:00\u201312:02" in html
    assert "3 messages" in html
    # Each fold opens to its messages (htmx) and links to its own page.
    views, _ = chat_conversations(chat_id=chat.pk)
    first = views[0].public_id
    assert f'hx-get="/conversations/{first}/"' in html
    assert f'href="/conversations/{first}/">Show only this conversation' in html
    # The chat page's tabs lead here and back.
    assert f'href="/chats/{chat.pk}/conversations/" aria-current="page">Conversations' in html
    chat_page = get(owner_client, f"/chats/{chat.pk}/")
    assert f'href="/chats/{chat.pk}/" aria-current="page">Messages' in chat_page


def test_a_chat_not_built_yet_says_so_and_whether_a_build_waits(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "first words"), message("2", "second", minutes=1)))
    chat = Chat.objects.get()
    html = get(owner_client, f"/chats/{chat.pk}/conversations/")
    assert "conversations are not built yet" in html
    assert "A build is waiting" in html
    assert 'class="conversations"' not in html
    conversations_build(chat_id=chat.pk, pause_seconds=0)
    html = get(owner_client, f"/chats/{chat.pk}/conversations/")
    assert "not built yet" not in html
    assert summaries(html) == ["first words"]
    # New messages since the build: the list stays, and says a build is waiting.
    batch_record(batch=batch(message("3", "later words", minutes=DAY)))
    html = get(owner_client, f"/chats/{chat.pk}/conversations/")
    assert "a new build is waiting" in html
    assert summaries(html) == ["first words"]


def test_show_its_conversation_opens_the_list_at_the_message_highlighted(
    owner_client: Client,
) -> None:
    chat = threads(LIST_PAGE + 5)
    # The oldest conversation is on the list's second page.
    reply = Message.objects.get(external_id="t0r1")
    chat_page = get(owner_client, f"/chats/{chat.pk}/?at={reply.public_id}")
    menu_link = f'href="/m/{reply.public_id}/conversation/">Show its conversation'
    assert menu_link in chat_page
    response = owner_client.get(f"/m/{reply.public_id}/conversation/")
    assert response.status_code == 302
    assert response["Location"] == (
        f"/chats/{chat.pk}/conversations/?at={reply.public_id}#{reply.public_id}"
    )
    html = get(owner_client, response["Location"])
    assert "page 2 of 2" in html
    conversation = conversation_of(message_id=reply.pk)
    assert conversation is not None
    fold = re.search(rf'<details class="conv current" id="{conversation.public_id}" open>', html)
    assert fold, "the message's conversation is open and marked"
    assert html.count('<details class="conv current"') == 1
    assert re.search(rf'<article class="msg [^"]*focus[^"]*" id="{reply.public_id}"', html)
    # Its messages are there, in order; the other folds hold only their link.
    texts = re.findall(r'<div class="body">(?:<p>)?([^<]*)', html)
    assert texts == [opening(0), "reply 0 about topic 0", "reply 1 about topic 0"]
    # Its menu's "Add a tag…" works here as on the chat page: the page opens with its box.
    tagging = get(
        owner_client,
        f"/chats/{chat.pk}/conversations/?at={reply.public_id}&tag={reply.public_id}",
    )
    box = re.search(
        rf'<div class="tags" id="tags-message-{reply.public_id}">\s*<form class="tag-add', tagging
    )
    assert box, "the message's tag box is open"


def test_a_fold_opens_with_htmx_or_with_its_link(owner_client: Client) -> None:
    chat = threads(2)
    views, _ = chat_conversations(chat_id=chat.pk)
    older = views[1]
    fragment = get(owner_client, f"/conversations/{older.public_id}/", HTTP_HX_REQUEST="true")
    assert "<html" not in fragment
    assert fragment.count("<article") == 3
    assert opening(0) in fragment
    # Without JavaScript the fold's link reloads the list with it open.
    html = get(owner_client, f"/chats/{chat.pk}/conversations/")
    link = f"?page=1&amp;open={older.public_id}#{older.public_id}"
    assert link in html
    opened = get(owner_client, f"/chats/{chat.pk}/conversations/?page=1&open={older.public_id}")
    assert f'id="{older.public_id}" open>' in opened
    assert opened.count("<article") == 3


def test_the_conversation_page_shows_its_messages_people_and_notes(owner_client: Client) -> None:
    chat = threads(2)
    views, _ = chat_conversations(chat_id=chat.pk)
    conv = views[0]
    html = get(owner_client, f"/conversations/{conv.public_id}/")
    assert f'<h2 id="conv-title">{opening(1)}</h2>' in html
    texts = re.findall(r'<div class="body">(?:<p>)?([^<]*)', html)
    assert texts == [opening(1), "reply 0 about topic 1", "reply 1 about topic 1"]
    assert "2 March 2024, 12:00\u201312:02" in html
    assert f'href="/notes/new/?link=conversation:{conv.public_id}"' in html
    assert f'data-ref="conversation:{conv.public_id}"' in html
    assert f'href="/chats/{chat.pk}/conversations/?open={conv.public_id}#{conv.public_id}"' in html


def test_a_note_linking_a_conversation_is_on_its_page(owner_client: Client) -> None:
    chat = threads(2)
    views, _ = chat_conversations(chat_id=chat.pk)
    linked, other = views
    note = note_create(
        title="Keys <b>plan</b>", body=f"Sorted in [[conversation:{linked.public_id}]]."
    )
    html = get(owner_client, f"/conversations/{linked.public_id}/")
    assert f'href="/notes/{note.public_id}/"' in html
    assert "Keys &lt;b&gt;plan&lt;/b&gt;" in html
    assert f'href="/notes/{note.public_id}/"' not in get(
        owner_client, f"/conversations/{other.public_id}/"
    )
    # Every fold of the list links a new note to its conversation.
    listing = get(owner_client, f"/chats/{chat.pk}/conversations/")
    assert f'href="/notes/new/?link=conversation:{other.public_id}">Write a note' in listing


@pytest.mark.parametrize("long_from", [page_reads.LONG_CONVERSATION, 10])
def test_a_long_conversation_is_read_a_page_at_a_time(
    owner_client: Client, monkeypatch: pytest.MonkeyPatch, long_from: int
) -> None:
    # Both ways of reading a conversation: from its links, along the chat's time index.
    monkeypatch.setattr(page_reads, "LONG_CONVERSATION", long_from)
    chat = threads(1, replies=MESSAGES_PAGE + 20)
    conv = chat_conversations(chat_id=chat.pk)[0][0]
    html = get(owner_client, f"/conversations/{conv.public_id}/")
    assert html.count("<article") == MESSAGES_PAGE
    later = re.search(r'href="(/conversations/cnv_\w+/\?after=[\w-]+)"', html)
    assert later, "a link to the messages after the page"
    rest = get(owner_client, later.group(1), HTTP_HX_REQUEST="true")
    assert rest.count("<article") == 21
    assert "Load later messages" not in rest
    # A message deep in it opens with it in view: a few before it, the rest after.
    deep = Message.objects.get(external_id="t0r60")
    around = get(owner_client, f"/conversations/{conv.public_id}/?at={deep.public_id}")
    assert re.search(rf'<article class="msg [^"]*focus[^"]*" id="{deep.public_id}"', around)
    assert "Load earlier messages" in around
    # Without JavaScript the page before a cursor is a whole page.
    earlier = re.search(r'href="(/conversations/cnv_\w+/\?before=[\w-]+)"', around)
    assert earlier
    page = get(owner_client, earlier.group(1).replace("&amp;", "&"))
    assert page.count("<article") == MESSAGES_PAGE
    texts = re.findall(r'<div class="body">(?:<p>)?([^<]*)', page)
    # The ten before it were shown with it; the fifty before those, without the first line.
    assert texts[0] == "reply 0 about topic 0" and texts[-1] == "reply 49 about topic 0"
    assert "Load earlier messages" in page and "Load later messages" in page


HOSTILE = '<img src=x onerror="alert(1)">'


def test_hostile_titles_and_names_are_escaped(owner_client: Client) -> None:
    batch_record(
        batch=Batch(
            account=ACCOUNT,
            chats=batch().chats,
            identities=(IdentityRecord(external_id="evil", display_name=f"Eve {HOSTILE}"),),
            messages=(
                message("1", f"{HOSTILE} <script>alert(2)</script>", sender="evil"),
                message("2", "<b>bold?</b>", sender="evil", minutes=1, reply_to_external_id="1"),
            ),
        )
    )
    chat = Chat.objects.get()
    conversations_build(chat_id=chat.pk, pause_seconds=0)
    conv = chat_conversations(chat_id=chat.pk)[0][0]
    for url in (f"/chats/{chat.pk}/conversations/", f"/conversations/{conv.public_id}/"):
        html = get(owner_client, url)
        assert "<img src=x" not in html and "<script>alert" not in html and "<b>bold" not in html
        assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
        assert "Eve &lt;img" in html


@pytest.mark.parametrize(
    "public_id",
    ["cnv_doesnotexist", "msg_01ABC", "cnv_", "cnv_" + "x" * 300, "%3Cscript%3E", "cnv_a-b"],
)
def test_an_unknown_conversation_is_a_404(owner_client: Client, public_id: str) -> None:
    threads(1)
    get(owner_client, f"/conversations/{public_id}/", status=404)


def test_a_message_that_does_not_exist_has_no_conversation_page(owner_client: Client) -> None:
    get(owner_client, "/m/msg_nothing/conversation/", status=404)
    get(owner_client, "/chats/999999/conversations/", status=404)


@pytest.mark.parametrize(
    "query",
    [
        "?page=abc",
        "?page=-3",
        "?page=0",
        "?page=99999999999999999999999999",
        "?page=1e9",
        "?at=%3Cscript%3E",
        "?at=msg_nothing&page=2",
        "?open=cnv_nothing",
        "?open=" + "%00" * 20,
        "?at=&open=&page=",
        "?tag=x&at=y",
    ],
)
def test_odd_list_queries_never_fail(owner_client: Client, query: str) -> None:
    chat = threads(2)
    html = get(owner_client, f"/chats/{chat.pk}/conversations/{query}")
    assert len(summaries(html)) == 2
    assert "<script>" not in html


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?before=garbage", 422),
        ("?after=%FF%FE", 422),
        ("?at=msg_nothing", 200),
        ("?at=" + "a" * 5000, 200),
        ("?before=&after=", 200),
    ],
)
def test_odd_conversation_queries_never_fail(owner_client: Client, query: str, status: int) -> None:
    chat = threads(1)
    conv = chat_conversations(chat_id=chat.pk)[0][0]
    get(owner_client, f"/conversations/{conv.public_id}/{query}", status=status)


def test_a_message_of_another_chat_opens_nothing(owner_client: Client) -> None:
    threads(1, chat="chat-2")
    chat = threads(2)
    stranger = Message.objects.get(chat__external_id="chat-2", external_id="t0")
    html = get(owner_client, f"/chats/{chat.pk}/conversations/?at={stranger.public_id}")
    assert 'class="conv current"' not in html
    assert "<article" not in html


def test_the_pages_need_the_owner_signed_in(owner_client: Client) -> None:
    chat = threads(1)
    conv = chat_conversations(chat_id=chat.pk)[0][0]
    reply = Message.objects.get(external_id="t0r0")
    stranger = Client()
    for url in (
        f"/chats/{chat.pk}/conversations/",
        f"/conversations/{conv.public_id}/",
        f"/m/{reply.public_id}/conversation/",
    ):
        response = stranger.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
        assert conv.title not in response.content.decode()


def queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as seen:
        get(client, url)
    return len(seen.captured_queries)


def test_the_number_of_queries_does_not_grow_with_the_conversations(
    owner_client: Client,
) -> None:
    few = threads(3, chat="few")
    many = threads(LIST_PAGE, chat="many", replies=4)
    assert queries(owner_client, f"/chats/{few.pk}/conversations/") == queries(
        owner_client, f"/chats/{many.pk}/conversations/"
    )
    # Opened at a message: the same whatever the size of the page.
    a = Message.objects.get(chat=few, external_id="t1r1")
    b = Message.objects.get(chat=many, external_id="t1r3")
    assert queries(owner_client, f"/chats/{few.pk}/conversations/?at={a.public_id}") == queries(
        owner_client, f"/chats/{many.pk}/conversations/?at={b.public_id}"
    )
