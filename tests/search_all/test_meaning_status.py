"""The meaning index's readiness over the API (`GET /api/meaning/status`): counts per
kind before and after a refresh, behind an agent's token and scope."""

from __future__ import annotations

import pytest
from django.test import Client

from archive.conversations.services.builds import conversations_build
from archive.gateway.services.agents import agent_create
from archive.meaning.model import current_spec
from archive.meaning.services.refresh import embeddings_refresh
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db(transaction=True)


def _auth(*scopes: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {agent_create(name='meaning', scopes=list(scopes)).token}"}


def _built_chat() -> None:
    batch_record(
        batch=batch(
            message("1", "I was running late to the meeting, the bus broke down"),
            message("2", "no worries, we started late anyway", sender="bob", minutes=5),
        )
    )
    conversations_build(chat_id=Chat.objects.get(external_id="chat-1").pk)


def test_the_status_counts_what_waits_and_then_what_is_embedded() -> None:
    _built_chat()
    auth = _auth("messages.read")
    before = Client().get("/api/meaning/status", headers=auth)
    assert before.status_code == 200, before.content
    found = before.json()
    assert found["model"] == current_spec().name
    assert set(found["kinds"]) == {"conversation", "note", "transcript", "file"}
    conversation = found["kinds"]["conversation"]
    assert conversation["sources_due"] == 1 and not conversation["ready"]
    assert not found["ready"] and found["sources_due"] == 1

    embeddings_refresh()
    after = Client().get("/api/meaning/status", headers=auth).json()
    conversation = after["kinds"]["conversation"]
    assert conversation["sources_due"] == 0 and conversation["waiting"] == 0
    assert conversation["chunks"] == conversation["embedded"] > 0 and conversation["ready"]
    assert after["ready"] and after["percent"] == 100
    assert after["embedded"] == after["chunks"] == conversation["chunks"]


def test_the_status_needs_a_token_with_the_scope() -> None:
    assert Client().get("/api/meaning/status").status_code == 401
    refused = Client().get("/api/meaning/status", headers=_auth("notes.read"))
    assert refused.status_code == 403
    assert refused.json()["error"] == "Forbidden" and "messages.read" in refused.json()["detail"]


def test_the_owner_reads_the_status(owner_client: Client) -> None:
    found = owner_client.get("/api/meaning/status").json()
    assert found["chunks"] == 0 and found["percent"] == 100 and found["ready"]
