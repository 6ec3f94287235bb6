from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

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
    batch_record(batch=batch(message("5", "bob: yes", sender="alice", minutes=32)))
    run = conversations_build(chat_id=chat.pk)
    assert run.mode == "grown" and run.messages == 1
    out = StringIO()
    call_command("conversations", "links", "--chat", str(chat.pk), stdout=out)
    assert out.getvalue().splitlines()[-1] == "5\t2"
