from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from archive.conversations.models import ConversationState, Need
from archive.conversations.selectors import chat_conversations, chat_links
from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db(transaction=True)


def test_build_and_links() -> None:
    batch_record(
        batch=batch(
            message("1", "anyone know how to mount a usb disk?", minutes=0),
            message("2", "Alice: try sudo mount /dev/sdb1 /mnt", sender="bob", minutes=1),
            message("3", "what's the weather like", sender="me", minutes=30),
            message("4", "thanks bob that worked", minutes=31, reply_to_external_id="2"),
        )
    )
    chat = Chat.objects.get()
    assert ConversationState.objects.get(chat=chat).need == Need.GROWN
    run = conversations_build(chat_id=chat.pk)
    assert run.mode == "full" and run.messages == 4
    links = list(chat_links(chat.pk))
    assert links[0] == ("1", "1")
    assert links[1] == ("2", "1")
    assert links[3] == ("4", "2")
    views, total = chat_conversations(chat_id=chat.pk)
    assert total == 2
    assert {v.title for v in views} == {
        "anyone know how to mount a usb disk?",
        "what's the weather like",
    }
    batch_record(batch=batch(message("5", "bob: yes", sender="alice", minutes=32)))
    run = conversations_build(chat_id=chat.pk)
    assert run.mode == "grown" and run.messages == 1
    out = StringIO()
    call_command("conversations", "links", "--chat", str(chat.pk), stdout=out)
    # bob's answer or alice's own thanks to it: either way the thread with bob
    assert out.getvalue().splitlines()[-1] in ("5\t2", "5\t4")


@pytest.mark.parametrize("chat", ["99999999999999999999", "no such chat"])
def test_a_chat_named_by_nothing_is_a_clear_error(chat: str) -> None:
    """An id past SQLite's integers included: a sentence, not a traceback."""
    with pytest.raises(CommandError, match="no chat has this id or title"):
        call_command("conversations", "build", "--chat", chat)


def test_a_draft_that_goes_out_asks_for_a_rebuild() -> None:
    from archive.store.sink.outbound import delivery_set, outbound_record

    batch_record(batch=batch(message("1", "hello")))
    chat = Chat.objects.get()
    draft = outbound_record(
        chat=chat, text="a draft", send_id="s-1", reply_to=None, status="awaiting"
    )
    conversations_build(chat_id=chat.pk)
    assert ConversationState.objects.get(chat=chat).need == Need.NOTHING
    assert [m for m, _ in chat_links(chat.pk)] == ["1"]  # a draft is not in the chat

    delivery_set(message_id=draft.pk, status="sent")
    assert ConversationState.objects.get(chat=chat).need == Need.REBUILD
    conversations_build(chat_id=chat.pk)
    assert [m for m, _ in chat_links(chat.pk)] == ["1", "s-1"]


def test_links_read_while_their_build_is_dropped_say_so() -> None:
    from archive.conversations import selectors
    from wirecat.errors import Conflict

    for first in range(1, 5_101, 1_700):
        batch_record(
            batch=batch(
                *(message(str(n), f"line {n}", minutes=n) for n in range(first, first + 1_700))
            )
        )
    chat = Chat.objects.get()
    conversations_build(chat_id=chat.pk)
    reading = selectors.chat_links(chat.pk)
    assert next(reading) == ("1", "1")  # the first page of 5,000 is read
    conversations_build(chat_id=chat.pk, full=True, pause_seconds=0)  # old build dropped
    with pytest.raises(Conflict, match="rebuilt while they were being read"):
        list(reading)
