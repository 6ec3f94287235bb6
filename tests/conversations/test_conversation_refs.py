"""`conversation:cnv_…` as a reference: notes link it (`[[cnv_…]]`), it is described by
its title, its backlinks find the notes, a full rebuild keeps the links, a task links it
through an explicit link; and the API's message context around a conversation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.template import Context, Template

from archive.conversations.selectors import ConversationView, conversations_of
from archive.conversations.services.builds import conversations_build
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from notes.references import Ref, ref_guess, ref_parse
from notes.selectors import backlinks, note_links
from notes.services.links import link_add
from notes.services.notes import note_create
from tasks.services import project_create, task_create
from tests.factories import batch, message
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)

CNV = "cnv_01HZZZZZZZZZZZZZZZZZZZZZZZ"


@pytest.fixture
def thread() -> dict[str, Message]:
    """One chat: a question and its answers (the messenger's replies tie them), built."""
    batch_record(
        batch=batch(
            message("1", "who has the <b>projector</b> key?", minutes=0),
            message("2", "I do, at the desk", sender="bob", minutes=1, reply_to_external_id="1"),
            message("3", "thanks, picking it up", minutes=2, reply_to_external_id="2"),
        )
    )
    conversations_build(chat_id=Chat.objects.get().pk)
    return {m.external_id: m for m in Message.objects.all()}


def conversation_of_first(found: dict[str, Message]) -> ConversationView:
    return conversations_of([found["1"].pk])[found["1"].pk]


def test_references_read_a_conversation_by_form() -> None:
    assert ref_parse(f"conversation:{CNV}") == Ref("conversation", CNV)
    assert ref_guess(CNV) == Ref("conversation", CNV)
    assert ref_guess(f"conversation:{CNV}") == Ref("conversation", CNV)
    for bad in ("conversation:12", "conversation:msg_01HZZZZZZZZZZZZZZZZZZZZZZZ", "cnv_short"):
        assert ref_guess(bad) is None or ref_guess(bad) == Ref("url", bad)
    with pytest.raises(Invalid, match="is not a conversation key"):
        ref_parse("conversation:cnv_nope")


def test_a_note_links_a_conversation_and_its_backlinks_find_the_note(
    thread: dict[str, Message],
) -> None:
    found = conversation_of_first(thread)
    note = note_create(
        title="Projector",
        body=f"Who has the key: [[{found.public_id}]]. Also [[conversation:{CNV}]].",
    )
    (link, target), (waiting, missing) = note_links(note)
    assert link.target_kind == "conversation" and link.target_id == thread["1"].pk
    assert target.exists and target.ref == f"conversation:{found.public_id}"
    assert target.label == found.title and "3 messages" in target.detail
    assert waiting.target_id is None and not missing.exists  # no message has that id
    rows = backlinks(f"conversation:{found.public_id}")
    assert [row.note_title for row in rows] == ["Projector"]
    rendered = Template(
        '{% load notes_links %}{% backlinks "conversation" ref name=title %}'
    ).render(Context({"ref": found.public_id, "title": found.title}))
    assert "Projector" in rendered and note.public_id in rendered


def test_a_full_rebuild_keeps_the_link(thread: dict[str, Message]) -> None:
    before = conversation_of_first(thread)
    note = note_create(title="Keys", body=f"See [[conversation:{before.public_id}]]")
    conversations_build(chat_id=thread["1"].chat_id, full=True)
    after = conversation_of_first(thread)
    assert after.id != before.id  # a new build, new rows
    ((_, target),) = note_links(note)
    assert target.exists and target.ref == f"conversation:{after.public_id}"
    assert target.label == after.title
    assert [row.note_id for row in backlinks(f"conversation:{after.public_id}")] == [note.public_id]


def test_a_note_linking_a_chat_not_built_yet_says_so() -> None:
    batch_record(batch=batch(message("1", "unbuilt")))
    root = Message.objects.get()
    cnv = root.public_id.replace("msg_", "cnv_")
    note = note_create(title="Early", body=f"[[{cnv}]]")
    ((link, target),) = note_links(note)
    assert link.target_id == root.pk and target.exists
    assert "not built yet" in target.detail
    conversations_build(chat_id=root.chat_id)
    ((_, target),) = note_links(note)
    assert target.ref == f"conversation:{cnv}" and "not built" not in target.detail


def test_a_task_links_a_conversation_through_an_explicit_link(thread: dict[str, Message]) -> None:
    found = conversation_of_first(thread)
    project = project_create(key="HOME", name="Home")
    task = task_create(project=project.key, title="Return the projector key")
    link = link_add(source=f"task:{task.key}", target=f"conversation:{found.public_id}")
    assert link.source_kind == "task" and link.target_id == thread["1"].pk
    with pytest.raises(Invalid, match="linked to, not from"):
        link_add(source=f"conversation:{found.public_id}", target=f"task:{task.key}")


def test_the_task_page_shows_what_the_task_links(
    owner_client: Any, thread: dict[str, Message]
) -> None:
    found = conversation_of_first(thread)
    project = project_create(key="HOME", name="Home")
    task = task_create(project=project.key, title="Return the projector key")
    page = owner_client.get(f"/tasks/{task.key}/").content.decode()
    assert 'id="links-from-h"' not in page  # nothing linked: no empty section
    link_add(source=f"task:{task.key}", target=f"conversation:{found.public_id}")
    page = owner_client.get(f"/tasks/{task.key}/").content.decode()
    assert 'id="links-from-h"' in page
    assert f"/conversations/{found.public_id}/" in page
    assert "who has the &lt;b&gt;projector&lt;/b&gt; key?" in page  # its title, escaped


def test_the_notes_api_links_and_lists_backlinks_of_a_conversation(
    owner_client: Any, thread: dict[str, Message]
) -> None:
    found = conversation_of_first(thread)
    made = owner_client.post(
        "/api/notes",
        json.dumps({"title": "From the API", "body": f"[[{found.public_id}|the key thread]]"}),
        content_type="application/json",
    )
    assert made.status_code == 201, made.content
    (link,) = made.json()["links"]
    assert link["target"]["kind"] == "conversation"
    assert link["target"]["ref"] == f"conversation:{found.public_id}"
    listed = owner_client.get("/api/backlinks", {"ref": f"conversation:{found.public_id}"})
    assert listed.status_code == 200
    assert [b["title"] for b in listed.json()["backlinks"]] == ["From the API"]
    missing = owner_client.get("/api/backlinks", {"ref": f"conversation:{CNV}"})
    assert missing.status_code == 404


def test_message_context_around_its_conversation(
    owner_client: Any, thread: dict[str, Message]
) -> None:
    batch_record(batch=batch(message("4", "unrelated, days later", sender="bob", minutes=5000)))
    found = conversation_of_first(thread)
    body = owner_client.get(
        f"/api/messages/{thread['2'].public_id}", {"around": "conversation"}
    ).json()
    assert body["around"] == "conversation"
    assert [m["id"] for m in body["before"]] == [thread["1"].public_id]
    assert body["message"]["id"] == thread["2"].public_id
    assert [m["id"] for m in body["after"]] == [thread["3"].public_id]
    assert body["conversation"] == {
        "id": found.public_id,
        "title": found.title,
        "message_count": 3,
        "complete": True,
    }
    by_time = owner_client.get(f"/api/messages/{thread['2'].public_id}").json()
    assert by_time["around"] == "time" and by_time["conversation"] is None
    # Message 4 came after the build: no conversation yet, a 409 saying what to do.
    latest = Message.objects.get(external_id="4").public_id
    refused = owner_client.get(f"/api/messages/{latest}", {"around": "conversation"})
    assert refused.status_code == 409
    assert "not built" in refused.json()["detail"]
    bad = owner_client.get(f"/api/messages/{latest}", {"around": "thread"})
    assert bad.status_code == 422


def test_write_a_note_about_a_conversation_from_its_page(
    owner_client: Any, thread: dict[str, Message]
) -> None:
    found = conversation_of_first(thread)
    ref = f"conversation:{found.public_id}"
    editor = owner_client.get("/notes/new/", {"link": ref})
    assert editor.status_code == 200
    assert found.title.replace("<", "&lt;").replace(">", "&gt;") in editor.content.decode()
    made = owner_client.post("/notes/new/", {"title": "About the key", "body": "", "link": ref})
    assert made.status_code == 302
    assert [row.note_title for row in backlinks(ref)] == ["About the key"]
