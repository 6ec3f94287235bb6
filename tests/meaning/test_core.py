"""The meaning index end to end on the real store and the real model: chunks cut from a
built chat, embedded, found by meaning; a rebuild finds its vectors again; a changed
source is stale; a removed message forgets its vectors; another model rebuilds."""

from __future__ import annotations

import pytest
from django.test import override_settings

from archive.conversations.services.builds import conversations_build
from archive.meaning.models import Chunk, ChunkKind, Vector, VectorModel
from archive.meaning.selectors import meaning_search, readiness
from archive.meaning.services.refresh import embeddings_refresh
from archive.store.models import Chat, Message
from archive.store.sink import batch_record, message_purge
from tests.factories import batch, message

pytestmark = pytest.mark.django_db(transaction=True)

LINES = [
    ("1", "alice", "I was running late to the meeting because the bus broke down"),
    ("2", "bob", "no worries, we started ten minutes after nine anyway"),
    ("3", "alice", "did I miss the budget discussion?"),
    ("4", "bob", "grub fails to install on my new ubuntu laptop"),
    ("5", "carol", "try reinstalling grub from a live usb"),
]


def _chat() -> Chat:
    batch_record(
        batch=batch(
            *[message(ext, text, sender=who, minutes=int(ext) * 600) for ext, who, text in LINES]
        )
    )
    chat = Chat.objects.get(external_id="chat-1")
    conversations_build(chat_id=chat.pk)
    return chat


def test_a_built_chat_is_cut_embedded_and_found_by_meaning() -> None:
    _chat()
    assert readiness().kinds["conversation"].sources_due == 1
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded >= 2 and not run.more
    ready = readiness()
    assert ready.ready and ready.embedded == ready.chunks > 0
    answer = meaning_search("delayed arrival at the gathering", kinds=["conversation"])
    best = answer.hits["conversation"][0]
    assert "running late" in best.text


def test_a_rebuild_finds_the_vectors_of_unchanged_chunks() -> None:
    chat = _chat()
    embeddings_refresh()
    vectors = set(Vector.objects.values_list("id", flat=True))
    conversations_build(chat_id=chat.pk, full=True, pause_seconds=0)  # new conversation rows
    run = embeddings_refresh()
    assert run.sources_cut == 1 and run.embedded == 0
    assert set(Vector.objects.values_list("id", flat=True)) == vectors


def test_an_edit_makes_its_chunk_stale_until_it_is_cut_again() -> None:
    chat = _chat()
    embeddings_refresh()
    batch_record(
        batch=batch(message("1", "the weather is lovely today", sender="alice", minutes=600))
    )
    answer = meaning_search("delayed arrival at the gathering", kinds=["conversation"])
    assert answer.stale >= 1
    assert all("running late" not in hit.text for hit in answer.hits["conversation"])
    conversations_build(chat_id=chat.pk, full=True, pause_seconds=0)
    run = embeddings_refresh()
    assert run.embedded >= 1


def test_a_purged_message_deletes_the_vectors_of_its_chunks() -> None:
    _chat()
    embeddings_refresh()
    target = Message.objects.get(external_id="1")
    chunk = Chunk.objects.get(kind=ChunkKind.CONVERSATION, first_id=target.pk)
    assert Vector.objects.filter(kind=chunk.kind, sha=chunk.sha).exists()
    message_purge(message_ids=[target.pk])
    assert not Vector.objects.filter(kind=chunk.kind, sha=chunk.sha).exists()


def test_another_model_setting_rebuilds_the_index() -> None:
    _chat()
    embeddings_refresh()
    first = VectorModel.objects.get()
    with override_settings(MEANING_MODEL="all-MiniLM-L6-v2-int8-128"):
        run = embeddings_refresh()
        assert run.retired == [first.name] and run.embedded >= 2
        assert list(VectorModel.objects.values_list("name", flat=True)) == [
            "all-MiniLM-L6-v2-int8-128"
        ]
        assert readiness().ready


def test_another_chunk_limit_cuts_every_source_again() -> None:
    _chat()
    embeddings_refresh()
    assert readiness().ready
    with override_settings(MEANING_CHUNK_CHARS=300):
        assert readiness().kinds["conversation"].sources_due == 1
        run = embeddings_refresh()
        assert run.sources_cut == 1 and readiness().ready
