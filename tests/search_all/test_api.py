"""Search all over the API (`GET /api/search/all`): behind an agent's token and its scopes,
strict about its parameters (422 in the API's shape), every kind searched by words and by
meaning, the kinds that cannot answer said in `skipped`, and the OpenAPI schema kept
exactly (schemathesis, every check, against a live server). Real store, real model."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from django.test import Client

from archive.conversations.services.builds import conversations_build
from archive.files.services import attachment_text_set
from archive.gateway.services.agents import SCOPES, agent_create, agent_limit
from archive.meaning.services.refresh import embeddings_refresh
from archive.store.domain import AccountRecord, AttachmentRecord, IdentityRecord
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.contract import formats
from tests.contract import test_openapi_contract as contract
from tests.factories import batch, message
from tests.meetings import search_factories as meetings

pytestmark = pytest.mark.django_db(transaction=True)

MAIL = AccountRecord(
    provider="mail",
    external_id="me@example.org",
    name="Mail",
    owner=IdentityRecord(external_id="me@example.org", display_name="Owner Person"),
)


def archive_of_everything() -> None:
    """One of each kind, each saying "plumber" once: two messages in two chats (and a
    third about something else), a mail, a note, a meeting's transcript, a file's text;
    the chats' conversations built."""
    invoice = AttachmentRecord(external_id="f", file_name="invoice.pdf")
    batch_record(
        batch=batch(
            message("1", "the plumber comes on Friday morning", sender="alice"),
            message("2", "I was running late to the meeting, the bus broke", minutes=5),
            message("3", "call the plumber again", chat="chat-2", sender="bob", minutes=9),
            message("4", "the bill", minutes=12, attachments=(invoice,)),
        )
    )
    mail = batch(message("m1", "Your plumber invoice is attached", chat="inbox", minutes=20))
    batch_record(batch=dataclasses.replace(mail, account=MAIL))
    attachment_text_set(
        public_id=Attachment.objects.get(file_name="invoice.pdf").public_id,
        text="Invoice: the plumber fixed the kitchen sink",
        agent="reader",
        model="vision-1",
    )
    note_create(title="Plumbing", body="Joe the plumber knows the old boiler.")
    planning = meetings.meeting("Planning")
    meetings.transcript(planning, [("Alice", "the plumber comes on Friday"), ("Bob", "fine")])
    for chat in Chat.objects.all():
        conversations_build(chat_id=chat.pk)


def _auth(*scopes: str, name: str = "finder") -> dict[str, str]:
    return {"Authorization": f"Bearer {agent_create(name=name, scopes=list(scopes)).token}"}


EVERY_READ = ("messages.read", "notes.read", "meetings.read")


def _get(auth: dict[str, str], **params: Any) -> Any:
    return Client().get("/api/search/all", params, headers=auth)


def test_a_words_search_finds_every_kind_and_counts_them() -> None:
    archive_of_everything()
    answer = _get(_auth(*EVERY_READ), q="plumber", mode="words")
    assert answer.status_code == 200, answer.content
    found = answer.json()
    assert found["mode"] == "words" and found["query"] == "plumber"
    kinds = {item["kind"] for item in found["items"]}
    assert kinds == {"message", "mail", "note", "meeting", "conversation", "file"}
    assert found["counts"] == {
        "message": 3,  # the two that say it, and the one whose file does
        "mail": 1,
        "note": 1,
        "meeting": 1,
        "conversation": 3,
        "file": 1,
    }
    assert not any(found["capped"].values()) and found["skipped"] == {}
    for item in found["items"]:
        assert item["why"] == ["words"] and item["score"] > 0
        assert any(part["hit"] for part in item["snippet"]), item
    by_ref = {item["ref"]: item for item in found["items"]}
    first = Message.objects.get(external_id="1").public_id
    assert by_ref[f"message:{first}"]["url"] == f"/m/{first}/"
    note = next(item for item in found["items"] if item["kind"] == "note")
    assert note["title"] == "Plumbing" and note["url"].startswith("/notes/note_")
    meeting = next(item for item in found["items"] if item["kind"] == "meeting")
    assert meeting["url"].startswith("/meetings/mtg_") and meeting["at_ms"] is not None
    file = next(item for item in found["items"] if item["kind"] == "file")
    assert file["title"] == "invoice.pdf" and file["url"].endswith("/text/")

    only = _get(_auth(*EVERY_READ, name="other"), q="plumber", mode="words", kinds="note,mail")
    assert {item["kind"] for item in only.json()["items"]} == {"note", "mail"}
    assert only.json()["kinds"] == ["mail", "note"]


def test_kinds_that_cannot_answer_are_skipped_with_the_reason() -> None:
    batch_record(batch=batch(message("1", "the plumber comes on Friday")))
    found = _get(_auth(*EVERY_READ), q="plumber", mode="hybrid").json()
    assert [item["kind"] for item in found["items"]] == ["message"]
    assert found["skipped"]["note"] == "no notes stored"
    assert found["skipped"]["mail"] == "no mail stored"
    assert "no conversations built" in found["skipped"]["conversation"]
    assert "nothing is embedded" in found["skipped"]["message:meaning"]
    # An operator notes do not have: they are skipped, messages still answer.
    note_create(title="Plumbing", body="the plumber")
    narrowed = _get(_auth(*EVERY_READ, name="b"), q="plumber from:alice", mode="words").json()
    assert narrowed["counts"]["message"] == 1 and "note" in narrowed["skipped"]


def test_an_agent_finds_only_the_kinds_its_scopes_allow() -> None:
    archive_of_everything()
    auth = _auth("messages.read")
    found = _get(auth, q="plumber", mode="words").json()
    assert "notes.read" in found["skipped"]["note"]
    assert "meetings.read" in found["skipped"]["meeting"]
    assert {item["kind"] for item in found["items"]} == {"message", "mail", "conversation", "file"}
    refused = _get(auth, q="plumber", kinds="message,note")
    assert refused.status_code == 403 and "notes.read" in refused.json()["detail"]


def test_an_agent_limited_to_a_chat_finds_only_its_things() -> None:
    archive_of_everything()
    issued = agent_create(name="limited", scopes=list(EVERY_READ))
    agent_limit(
        public_id=issued.agent.public_id, chat_ids=[Chat.objects.get(external_id="chat-2").pk]
    )
    found = _get({"Authorization": f"Bearer {issued.token}"}, q="plumber", mode="words").json()
    chat_two = Message.objects.get(external_id="3")
    chatty = [item for item in found["items"] if item["kind"] in ("message", "mail", "file")]
    assert [item["ref"] for item in chatty] == [f"message:{chat_two.public_id}"]
    assert set(found["counts"]) == {"note", "meeting"}
    other = Message.objects.get(external_id="1").public_id
    assert (
        _get({"Authorization": f"Bearer {issued.token}"}, like=f"message:{other}").status_code
        == 404
    )


def test_a_meaning_search_finds_by_meaning_and_says_so() -> None:
    archive_of_everything()
    embeddings_refresh()
    auth = _auth(*EVERY_READ)
    found = _get(auth, q="delayed arrival at the gathering", mode="meaning", kinds="message")
    assert found.status_code == 200, found.content
    # A message is found by its conversation's chunk: the chunk that says it comes before
    # the other chat's (if that is near enough to be found at all).
    refs = [item["ref"] for item in found.json()["items"]]
    late, elsewhere = (Message.objects.get(external_id=ext).public_id for ext in ("2", "3"))
    assert f"message:{late}" in refs
    assert f"message:{elsewhere}" not in refs[: refs.index(f"message:{late}")]
    assert all(item["why"] == ["meaning"] for item in found.json()["items"])
    hybrid = _get(auth, q="plumber", kinds="note").json()
    assert hybrid["items"][0]["why"] == ["words", "meaning"]
    like = _get(auth, like=f"message:{Message.objects.get(external_id='1').public_id}")
    assert like.status_code == 200 and like.json()["mode"] == "meaning"
    assert like.json()["like"].startswith("message:msg_")


def test_search_all_needs_a_token_with_the_scope() -> None:
    assert Client().get("/api/search/all?q=plumber").status_code == 401
    refused = _get(_auth("notes.read"), q="plumber")
    assert refused.status_code == 403 and refused.json()["error"] == "Forbidden"


@pytest.mark.parametrize(
    "params",
    [
        {"q": "x", "mode": "fuzzy"},
        {"q": "x", "kinds": "messages"},
        {"q": "x", "kinds": "message,"},
        {"q": "x", "kinds": ""},
        {"q": "x", "limit": "0"},
        {"q": "x", "limit": "51"},
        {"q": "x", "limit": "many"},
        {"q": "x" * 3000},
        {"q": "x", "cursor": "not-ours"},
        {"q": "x", "like": "chat:12"},
        {"q": '"an unclosed phrase'},
    ],
)
def test_bad_parameters_answer_422_saying_which(params: dict[str, str]) -> None:
    batch_record(batch=batch(message("1", "x marks the spot")))
    answer = _get(_auth(*EVERY_READ), **params)
    assert answer.status_code == 422, answer.content
    assert answer.json()["error"] in ("Invalid", "QuerySyntaxError") and answer.json()["detail"]


# The checks of the stateful phase follow the schema's links, which these read-only
# operations give none of: the whole API's contract test runs those.
STATEFUL_CHECKS = {"use_after_free", "ensure_resource_availability"}


@pytest.mark.slow
def test_search_all_and_the_meaning_status_keep_their_contract(live_server: Any) -> None:
    archive_of_everything()
    embeddings_refresh()
    token = agent_create(name="contract", scopes=list(SCOPES)).token
    formats.register()
    failures, ran, took = contract.run(
        live_server.url,
        {"AgentToken": {"bearer": token}},
        max_examples=25,
        headers={},
        schema_headers={"Authorization": f"Bearer {token}"},
        paths="^/api/(search/all|meaning/status)$",
    )
    assert not failures, f"{len(failures)} failures in {took:.0f}s:\n" + "\n".join(failures)
    idle = sorted(name for name, times in ran.items() if not times)
    assert set(idle) <= STATEFUL_CHECKS, f"these checks never ran: {idle}"
