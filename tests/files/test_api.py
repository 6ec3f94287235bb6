"""The text of files over the API: the files waiting for an agent, a file's text, and the
agent's text written back (scope attachments.text), which no later reading replaces."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from archive.files.models import AttachmentText
from archive.files.services import TEXT_MAX, attachment_text_extract, attachment_texts_extract
from archive.gateway.services.agents import agent_create, agent_limit
from archive.store.domain import DeletionRecord
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.factories import T0, batch
from tests.files.test_services import NOTES, png, stems, store_file, words

pytestmark = pytest.mark.django_db


def agent(*scopes: str, name: str = "reader") -> dict[str, str]:
    token = agent_create(name=name, scopes=list(scopes)).token
    return {"Authorization": f"Bearer {token}"}


def put(auth: dict[str, str], att_id: str, body: dict[str, Any]) -> Any:
    return Client().put(
        f"/api/attachments/{att_id}/text",
        data=json.dumps(body),
        content_type="application/json",
        headers=auth,
    )


def test_an_agent_reads_a_scan_and_writes_its_text_back() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png", minutes=1)
    store_file(NOTES, "notes.txt", "text/plain")
    attachment_texts_extract(limit=10, budget_seconds=60)
    auth = agent("messages.read", "attachments.read", "attachments.text")
    listed = Client().get("/api/attachments?needs_text=true", headers=auth).json()
    assert [a["id"] for a in listed["attachments"]] == [photo.public_id]
    item = listed["attachments"][0]
    assert item["mime_type"] == "image/png" and item["size"] == photo.size
    assert item["state"] == "needs_text" and item["message"] == photo.message.public_id
    assert item["chat_title"] == "Chat chat-1" and listed["next_cursor"] is None
    # The bytes, with their SHA-256, from the existing download.
    got = Client().get(f"/api/attachments/{photo.public_id}", headers=auth)
    assert got.status_code == 200 and got["X-Content-SHA256"] == photo.sha256

    answer = put(auth, photo.public_id, {"text": "Ship the roadmap by May", "model": "v-1"})
    assert answer.status_code == 200, answer.content
    text = answer.json()
    assert text["origin"] == "agent" and text["extractor"] == "agent:reader"
    assert text["model"] == "v-1" and text["state"] == "done"
    assert words("roadmap") == [photo.pk]

    # Done when: an extraction after it leaves the agent's text alone.
    for ocr in (False, True):
        attachment_text_extract(attachment_id=photo.pk, ocr=ocr)
    shown = Client().get(f"/api/attachments/{photo.public_id}/text", headers=auth)
    assert shown.status_code == 200
    assert shown.json()["text"] == "Ship the roadmap by May"
    assert shown.json()["origin"] == "agent" and shown.json()["made_at"]
    listed = Client().get("/api/attachments?needs_text=true", headers=auth).json()
    assert listed["attachments"] == []


def test_a_voice_notes_transcript_is_written_with_its_source_and_stemmed(
    committed: Any,
) -> None:
    voice = store_file(b"OggS voice", "voice.ogg", "audio/ogg")
    auth = agent("attachments.text")
    with committed():
        answer = put(
            auth,
            voice.public_id,
            {"text": "calling me back", "model": "whisper-large-v3", "source": "whisper"},
        )
    assert answer.status_code == 200 and answer.json()["extractor"] == "speech:whisper"
    assert stems("call") == [voice.pk]  # stemmed once the write committed


def test_writing_text_needs_the_scope_and_an_agent(owner_client: Client) -> None:
    photo = store_file(png(), "whiteboard.png", "image/png")
    refused = put(agent("messages.read"), photo.public_id, {"text": "x", "model": "m"})
    assert refused.status_code == 403 and "attachments.text" in refused.json()["detail"]
    by_owner = owner_client.put(
        f"/api/attachments/{photo.public_id}/text",
        data=json.dumps({"text": "x", "model": "m"}),
        content_type="application/json",
    )
    assert by_owner.status_code == 403  # a text from an agent: its token names it
    listing = Client().get("/api/attachments", headers=agent("attachments.text", name="w"))
    assert listing.status_code == 403 and "messages.read" in listing.json()["detail"]


def test_unknown_too_big_and_malformed_texts_are_refused() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png")
    auth = agent("messages.read", "attachments.text")
    unknown = put(auth, "att_01NOSUCHFILE", {"text": "x", "model": "m"})
    assert unknown.status_code == 404 and "att_01NOSUCHFILE" in unknown.json()["detail"]
    big = put(auth, photo.public_id, {"text": "a" * (TEXT_MAX + 1), "model": "m"})
    assert big.status_code == 413 and "5,000,000" in big.json()["detail"]
    assert put(auth, photo.public_id, {"text": "x", "model": " "}).status_code == 422
    assert put(auth, photo.public_id, {"text": "x"}).status_code == 422
    assert put(auth, photo.public_id, {"text": 5, "model": "m"}).status_code == 422
    bad_source = put(auth, photo.public_id, {"text": "x", "model": "m", "source": "a b"})
    assert bad_source.status_code == 422
    none_yet = Client().get(f"/api/attachments/{photo.public_id}/text", headers=auth)
    assert none_yet.status_code == 404 and "no text yet" in none_yet.json()["detail"]
    cursor = Client().get("/api/attachments?cursor=nope", headers=auth)
    assert cursor.status_code == 422


def test_a_tombstoned_messages_file_is_gone_for_agents() -> None:
    photo = store_file(png(), "whiteboard.png", "image/png")
    auth = agent("messages.read", "attachments.text")
    assert put(auth, photo.public_id, {"text": "the plan", "model": "m"}).status_code == 200
    batch_record(
        batch=batch(
            deletions=(
                DeletionRecord(
                    chat_external_id="chat-1", external_id="whiteboard.png", deleted_at=T0
                ),
            )
        )
    )
    assert Client().get(f"/api/attachments/{photo.public_id}/text", headers=auth).status_code == 404
    assert put(auth, photo.public_id, {"text": "again", "model": "m"}).status_code == 404
    assert words("plan") == []


def test_an_agent_limited_to_a_chat_reads_and_writes_only_its_files() -> None:
    mine = store_file(png(), "mine.png", "image/png", chat="chat-1")
    theirs = store_file(png() + b"\x01", "theirs.png", "image/png", chat="chat-2", minutes=1)
    issued = agent_create(name="limited", scopes=["messages.read", "attachments.text"])
    agent_limit(
        public_id=issued.agent.public_id, chat_ids=[Chat.objects.get(external_id="chat-1").pk]
    )
    auth = {"Authorization": f"Bearer {issued.token}"}
    listed = Client().get("/api/attachments", headers=auth).json()["attachments"]
    assert [a["id"] for a in listed] == [mine.public_id]
    assert put(auth, theirs.public_id, {"text": "x", "model": "m"}).status_code == 404
    assert put(auth, mine.public_id, {"text": "x", "model": "m"}).status_code == 200
    assert list(AttachmentText.objects.values_list("pk", flat=True)) == [mine.pk]


def test_every_file_is_listed_page_by_page() -> None:
    made = [store_file(png() + bytes([n]), f"p{n}.png", "image/png", minutes=n) for n in range(3)]
    auth = agent("messages.read")
    first = Client().get("/api/attachments?needs_text=false&limit=2", headers=auth).json()
    assert [a["id"] for a in first["attachments"]] == [made[2].public_id, made[1].public_id]
    rest = (
        Client()
        .get(
            f"/api/attachments?needs_text=false&limit=2&cursor={first['next_cursor']}", headers=auth
        )
        .json()
    )
    assert [a["id"] for a in rest["attachments"]] == [made[0].public_id]
    assert rest["next_cursor"] is None
