"""The dashboard says how far the conversations are built."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


def _count(html: str, name: str) -> int:
    found = re.search(rf'data-count="{name}">([\d,]+)<', html)
    assert found, name
    return int(found.group(1).replace(",", ""))


def test_dashboard_counts_built_and_waiting_chats(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "how do I mount a disk?", chat="a"),
            message("2", "unrelated news", chat="b", minutes=1),
            message("3", "bob: thanks", chat="a", minutes=2),
        )
    )
    html = owner_client.get("/").content.decode()
    assert _count(html, "conversations-built") == 0
    assert _count(html, "conversations-waiting") == 2

    conversations_build(chat_id=Chat.objects.get(external_id="a").pk)
    html = owner_client.get("/").content.decode()
    assert _count(html, "conversations-built") == 1
    assert _count(html, "conversations-waiting") == 1
    assert _count(html, "conversations") >= 1


def test_dashboard_without_chats_says_so(owner_client: Client) -> None:
    html = owner_client.get("/").content.decode()
    assert "Each chat is split into its conversations" in html
