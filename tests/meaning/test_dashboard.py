"""The dashboard's Meaning search card: the model, chunks embedded of all, per kind the
chunks, the embedded and the sources waiting, and whether a worker will embed them — read
in one query however much is stored."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from archive.conversations.services.builds import conversations_build
from archive.meaning.services.refresh import embeddings_refresh
from archive.owner.services import heartbeat_record
from archive.store.models import Chat
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


def _count(html: str, name: str) -> int:
    found = re.search(rf'data-count="{name}">([\d,]+)<', html)
    assert found, name
    return int(found.group(1).replace(",", ""))


def _row(html: str, kind: str) -> list[int]:
    found = re.search(rf'<tr data-kind="{kind}">(.*?)</tr>', html, re.S)
    assert found, kind
    return [int(n.replace(",", "")) for n in re.findall(r">([\d,]+)</td>", found.group(1))]


def _meaning_queries(client: Client) -> tuple[int, int]:
    """(all the page's queries, those reading the meaning index)."""
    with CaptureQueriesContext(connection) as seen:
        assert client.get("/").status_code == 200
    sql = [q["sql"] for q in seen.captured_queries]
    return len(sql), sum(1 for q in sql if "archive_chunk" in q or "archive_vector" in q)


def test_the_card_counts_chunks_per_kind_and_what_waits(owner_client: Client) -> None:
    html = owner_client.get("/").content.decode()
    assert "Nothing to embed yet" in html and 'id="meaning-kinds"' not in html
    assert "all-MiniLM-L6-v2-int8" in html
    empty_total, empty_meaning = _meaning_queries(owner_client)

    batch_record(
        batch=batch(
            message("1", "the printer on the third floor jams again"),
            message("2", "I'll call the technician tomorrow", sender="bob", minutes=1),
        )
    )
    conversations_build(chat_id=Chat.objects.get().pk)
    note_create(title="Printer", body="Ask facilities about a new printer.")
    html = owner_client.get("/").content.decode()
    assert _count(html, "meaning-chunks") == 0 and _count(html, "meaning-due") == 2
    assert _row(html, "conversation") == [0, 0, 1] and _row(html, "note") == [0, 0, 1]
    assert "No worker is running" in html

    embeddings_refresh(most_chunks=0)  # cut, nothing embedded yet
    html = owner_client.get("/").content.decode()
    chunks = _count(html, "meaning-chunks")
    assert chunks >= 2 and _count(html, "meaning-embedded") == 0
    assert 'aria-valuenow="0"' in html and 'data-width="0"' in html
    assert _row(html, "note") == [1, 0, 0] and _row(html, "transcript") == [0, 0, 0]

    embeddings_refresh()
    html = owner_client.get("/").content.decode()
    assert _count(html, "meaning-embedded") == chunks == _count(html, "meaning-chunks")
    assert 'data-width="100"' in html and "Up to date" in html
    assert _row(html, "note") == [1, 1, 0]
    # However much is stored, the card reads the index in one query.
    total, meaning = _meaning_queries(owner_client)
    assert meaning == empty_meaning == 1 and total == empty_total


def test_a_running_worker_is_said_to_embed_what_waits(owner_client: Client) -> None:
    note_create(title="Groceries", body="milk, eggs")
    heartbeat_record()
    html = owner_client.get("/").content.decode()
    assert "The worker is embedding what waits" in html


def test_an_unknown_model_setting_is_said_not_a_failure(
    owner_client: Client, settings: Any
) -> None:
    settings.MEANING_MODEL = "<b>no-such-model</b>"
    page = owner_client.get("/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "not a model WireCat knows" in html and "<b>no-such-model</b>" not in html
