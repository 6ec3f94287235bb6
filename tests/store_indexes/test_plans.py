"""Every index kept on the tables an import writes per message, and the query that needs
it: the real selector, service or sink call runs on a small store recorded through the
sink, fresh and as the nightly optimize leaves it (plans.STATES), its statements are
caught as issued and explained, and the plan must read that index (and, where the index
is there for an order, give the rows in it: no sort)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from archive.people.selectors import person_page
from archive.people.services import person_create
from archive.search import windows
from archive.search.selectors import message_search
from archive.stats.selectors import stats_scope, volume
from archive.store.models import Attachment, Chat, Identity, Message
from archive.store.selectors import (
    chat_date_jump,
    chat_messages,
    message_get,
    recent_messages,
)
from archive.store.services.attachments import attachment_get
from archive.store.sink import batch_record, message_purge
from tests.factories import T0, batch
from tests.store_indexes.plans import (
    STATES,
    index_named,
    late_parent,
    proves,
    said,
    statements,
    store_in,
)

pytestmark = pytest.mark.django_db

CHAT_TIME = "message_chat_time_idx"
SENT_AT = "message_sent_at_idx"
SENDER_TIME = "message_sender_time_idx"
REPLY_TO = "archive_message_reply_to_id_028c86b0"
REPLY_WAITING = "message_reply_waiting_idx"
MESSAGE_PUBLIC_ID = "archive_message(public_id)"
MESSAGE_KEY = "archive_message(account_id, chat_id, external_id)"
ATTACHMENT_PUBLIC_ID = "archive_attachment(public_id)"
ATTACHMENT_KEY = "archive_attachment(message_id, external_id)"


@pytest.fixture(autouse=True, params=STATES)
def _store(db: None, request: pytest.FixtureRequest) -> None:
    store_in(request.param)


def _chat(external_id: str = "chat-1") -> Chat:
    return Chat.objects.get(external_id=external_id)


@proves(CHAT_TIME)
def test_the_chat_page_reads_a_chat_in_time_order_from_the_chat_time_index() -> None:
    """store.selectors.chat_messages (the chat page and the messages API): the newest
    window, the page before a cursor and a jump to a day, each a range of the
    (chat, sent_at, id) index in its order."""
    chat = _chat()
    with statements() as caught:
        newest = chat_messages(chat=chat, limit=20)
        older = chat_messages(chat=chat, before=newest.older, limit=20)
        jump = chat_date_jump(chat=chat, day=(T0 + timedelta(days=2)).date())
    assert len(newest.messages) == len(older.messages) == 20
    assert jump.message is not None
    windows_read = caught.containing('FROM "archive_message"', '"archive_message"."sent_at" DESC')
    assert len(windows_read) >= 2
    for statement in windows_read:
        assert statement.uses(CHAT_TIME), statement.plan
        assert "(chat_id=?" in statement.step(CHAT_TIME)
        assert not statement.sorts, statement.plan
    jumped = caught.containing('"archive_message"."sent_at" >= %s')
    assert jumped
    assert "(chat_id=? AND sent_at>?)" in jumped[0].step(CHAT_TIME)


@proves(SENT_AT)
def test_statistics_of_the_whole_store_read_the_range_from_the_time_index() -> None:
    """stats.selectors.volume over every chat (the Statistics page's default scope): the
    range's messages found through the sent_at index, not a scan of the table."""
    scope = stats_scope(since=T0.date(), until=(T0 + timedelta(days=10)).date())
    with statements() as caught:
        counted = volume(scope, "week")
    assert counted.total == Message.objects.filter(kind="text").count()
    slots = caught.containing("FROM archive_message AS m", "GROUP BY slot")
    assert len(slots) == 1
    assert "(sent_at>? AND sent_at<?)" in slots[0].step(SENT_AT)


@proves(SENT_AT)
def test_a_search_by_date_alone_reads_the_time_index() -> None:
    """search.selectors.message_search with only `after:`/`before:`: the messages of the
    range newest first, from the sent_at index in its order."""
    with statements() as caught:
        page = message_search(query="after:2024-03-02 before:2024-03-04", sort="newest")
    assert page.hits
    assert all(
        T0 + timedelta(days=1) <= hit.message.sent_at < T0 + timedelta(days=3) for hit in page.hits
    )
    ranged = [s for s in caught.using(SENT_AT) if "(sent_at>? AND sent_at<?)" in s.step(SENT_AT)]
    assert len(ranged) == 1
    assert not ranged[0].sorts, ranged[0].plan


@proves(SENT_AT)
def test_a_common_word_newest_first_walks_the_time_index(monkeypatch: Any) -> None:
    """search.windows.timed_page: a word in many messages, newest first, is found a chunk
    of the newest messages at a time, the chunk read down the sent_at index. (Here
    "many" is lowered to fit the small store; the statement is the one a large store
    gets.)"""
    monkeypatch.setattr(windows, "SMALL", 1)
    with statements() as caught:
        page = message_search(query="green", sort="newest", limit=5)
    newest = list(Message.objects.order_by("-sent_at", "-id").values_list("pk", flat=True)[:5])
    assert [hit.message.pk for hit in page.hits] == newest
    walked = caught.containing("WITH chunk AS MATERIALIZED")
    assert walked
    for statement in walked:
        assert "SCAN m USING COVERING INDEX message_sent_at_idx" in statement.plan


@proves(SENT_AT)
def test_the_dashboards_newest_messages_come_from_the_time_index() -> None:
    """store.selectors.recent_messages: the newest messages read down the sent_at index
    (with statistics, one statement joining the chats read every chat's messages and
    sorted them all)."""
    with statements() as caught:
        recent = recent_messages(limit=5)
    newest = list(Message.objects.order_by("-sent_at", "-id").values_list("pk", flat=True)[:5])
    assert [m.pk for m in recent] == newest
    walked = caught.using(SENT_AT)
    assert walked
    for statement in walked:
        assert statement.step(SENT_AT).startswith("SCAN U0 USING INDEX message_sent_at_idx")
    assert not caught.using(CHAT_TIME)


@proves(SENDER_TIME)
def test_the_person_page_reads_a_persons_messages_from_the_sender_index() -> None:
    """people.selectors.person_page: each identity's count and last message, their chats
    and their latest messages, all by sender_id through the (sender, sent_at) index."""
    alice = Identity.objects.get(external_id="alice")
    person = person_create(name="Alice", identity_ids=[alice.pk])
    with statements() as caught:
        page = person_page(person_id=person.pk)
    assert [row.messages for row in page.identities] == [
        Message.objects.filter(sender=alice).count()
    ]
    assert page.latest and all(m.sender_id == alice.pk for m in page.latest)
    by_sender = caught.containing("sender_id", "IN (%s)")
    assert len(by_sender) >= 3
    for statement in by_sender:
        assert "(sender_id=?" in statement.step(SENDER_TIME), statement.plan


@proves(REPLY_TO)
def test_a_purge_finds_the_replies_to_unlink_by_the_reply_index() -> None:
    """store.sink.message_purge: erasing a message sets its replies' reply_to to NULL
    (Django's SET_NULL), found through the reply_to_id index, not a scan per message."""
    reply = Message.objects.get(external_id="chat-1-7")
    parent = reply.reply_to
    assert parent is not None
    with statements() as caught:
        message_purge(message_ids=[parent.pk])
    reply.refresh_from_db()
    assert reply.reply_to_id is None
    unlinked = caught.containing('"reply_to_id" IN')
    assert unlinked
    for statement in unlinked:
        assert "(reply_to_id=?)" in statement.step(REPLY_TO), statement.plan


@proves(REPLY_WAITING)
def test_a_late_parent_finds_its_waiting_replies_by_the_partial_index() -> None:
    """store.sink.replies.orphans_adopt: a new message looks for replies that wait for it
    in the partial index of waiting replies, never the chat's whole time range."""
    with statements() as caught:
        batch_record(batch=batch(late_parent()))
    orphan = Message.objects.select_related("reply_to").get(external_id="chat-1-orphan")
    assert orphan.reply_to is not None
    assert orphan.reply_to.external_id == "chat-1-late"
    waiting = caught.containing("reply_to_id IS NULL")
    assert len(waiting) == 2
    for statement in waiting:
        assert statement.uses(REPLY_WAITING), statement.plan


@proves(REPLY_WAITING)
def test_an_edited_message_finds_the_replies_waiting_for_it_by_the_partial_index() -> None:
    """store.sink.replies.replies_link: a message brought up to date looks for replies
    that wait for it in the partial index of waiting replies, and its own row by id."""
    with statements() as caught:
        batch_record(batch=batch(said("chat-1", 6, text="now with a changed text")))
    reply = Message.objects.select_related("reply_to").get(external_id="chat-1-7")
    assert reply.reply_to is not None
    assert reply.reply_to.external_id == "chat-1-6"
    waiting = caught.containing('"reply_to_external_id" IN')
    assert len(waiting) == 1
    assert "(chat_id=? AND reply_to_external_id=?)" in waiting[0].step(REPLY_WAITING)


@proves(MESSAGE_KEY, ATTACHMENT_KEY)
def test_re_recording_finds_stored_messages_and_files_by_their_keys() -> None:
    """store.sink (updates): a batch of messages already stored is matched by (account,
    chat, provider id) and their files by (message, provider id): one index probe each,
    and nothing is added twice."""
    messages, files = Message.objects.count(), Attachment.objects.count()
    with statements() as caught:
        batch_record(batch=batch(said("chat-1", 5, text="now with a changed text")))
    assert (Message.objects.count(), Attachment.objects.count()) == (messages, files)
    assert Message.objects.get(external_id="chat-1-5").revisions.count() == 1
    key = index_named(MESSAGE_KEY)
    stored = caught.using(key)
    assert stored
    assert "(account_id=? AND chat_id=? AND external_id=?)" in stored[0].step(key)
    assert caught.using(index_named(ATTACHMENT_KEY))


@proves(ATTACHMENT_KEY)
def test_the_chat_page_reads_its_messages_files_by_the_attachment_key() -> None:
    """store.selectors.chat_messages: the window's files, fetched by message_id through
    the unique (message_id, external_id) index (it starts with message_id)."""
    with statements() as caught:
        window = chat_messages(chat=_chat(), limit=20)
    assert any(m.attachments.all() for m in window.messages)
    key = index_named(ATTACHMENT_KEY)
    files = caught.containing('FROM "archive_attachment"')
    assert files
    for statement in files:
        assert "(message_id=?)" in statement.step(key), statement.plan


@proves(MESSAGE_PUBLIC_ID)
def test_a_message_is_found_by_its_public_id() -> None:
    """store.selectors.message_get (permalinks, the API's message paths, references)."""
    wanted = Message.objects.get(external_id="chat-2-3")
    with statements() as caught:
        found = message_get(public_id=wanted.public_id)
    assert found.pk == wanted.pk
    key = index_named(MESSAGE_PUBLIC_ID)
    assert [s.step(key) for s in caught.using(key)] == [
        f"SEARCH archive_message USING INDEX {key} (public_id=?)"
    ]


@proves(ATTACHMENT_PUBLIC_ID)
def test_an_attachment_is_found_by_its_public_id() -> None:
    """store.services.attachments.attachment_get (downloads, thumbnails, the files API)."""
    wanted = Attachment.objects.order_by("pk").first()
    assert wanted is not None
    with statements() as caught:
        found = attachment_get(public_id=wanted.public_id)
    assert found.pk == wanted.pk
    key = index_named(ATTACHMENT_PUBLIC_ID)
    assert [s.step(key) for s in caught.using(key)] == [
        f"SEARCH archive_attachment USING INDEX {key} (public_id=?)"
    ]
