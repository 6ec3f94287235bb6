"""The admin site lists each chat's conversation state and asks for rebuilds."""

from __future__ import annotations

import pytest
from django.test import Client

from archive.conversations.models import ConversationState, Need
from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


def test_state_list_and_rebuild_action(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "<b>hello</b>"), message("2", "there", minutes=1)))
    chat = Chat.objects.get()
    conversations_build(chat_id=chat.pk)
    assert ConversationState.objects.get(chat=chat).need == Need.NOTHING

    page = owner_client.get("/admin/archive/conversationstate/")
    assert page.status_code == 200
    assert "Chat chat-1" in page.content.decode()

    done = owner_client.post(
        "/admin/archive/conversationstate/",
        {"action": "rebuild", "_selected_action": [str(chat.pk)]},
        follow=True,
    )
    assert done.status_code == 200
    assert ConversationState.objects.get(chat=chat).need == Need.REBUILD
    assert owner_client.get("/admin/archive/conversationanswer/").status_code == 200
