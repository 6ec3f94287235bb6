"""One rule, one place: the same input sent through the page and through the API meets the
same service or selector and comes out the same (issue 14, "pages and API have drifted").

Each test below is one rule that used to be written twice: unlinking an identity from a
person, the headers of an attachment download, the chat list, recording a search, and the
actor an audit row names."""

from __future__ import annotations

import io
import json
import logging
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory

from archive.gateway.services.agents import agent_create
from archive.people import services as people
from archive.people.models import IdentityLink
from archive.search.models import SavedSearch
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord, Batch, ChatRecord
from archive.store.models import Attachment, Chat, Identity
from archive.store.sink import batch_record
from archive.tags.models import Tagging
from archive.web.middleware import AfterResponse, after_response
from tests.factories import ACCOUNT, batch, message

pytestmark = pytest.mark.django_db


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def post_json(client: Client, url: str, body: dict[str, Any], **headers: str) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json", **headers)


@pytest.fixture
def agent_token(db: None) -> str:
    return agent_create(
        name="scribe", scopes=["messages.read", "attachments.read", "tags.write", "people.write"]
    ).token


# --- unlinking an identity: only from the person it is linked to ----------------------------


def test_page_and_api_refuse_to_unlink_another_persons_identity(
    owner_client: Client, agent_token: str
) -> None:
    batch_record(batch=batch(message("1", "hi", sender="alice"), message("2", "yo", sender="bob")))
    alice = Identity.objects.get(external_id="alice")
    bob = Identity.objects.get(external_id="bob")
    ann = people.person_create(name="Ann", identity_ids=[alice.pk])
    ben = people.person_create(name="Ben", identity_ids=[bob.pk])
    said = f"identity {bob.pk} is not linked to person {ann.pk}"

    page = owner_client.post(f"/people/{ann.pk}/edit/", {"action": "unlink", "identity": bob.pk})
    api = post_json(owner_client, f"/api/people/{ann.pk}/unlink", {"identity_id": bob.pk})
    agent = post_json(
        Client(), f"/api/people/{ann.pk}/unlink", {"identity_id": bob.pk}, **bearer(agent_token)
    )

    assert page.status_code == api.status_code == agent.status_code == 404
    assert said in page.content.decode()
    assert api.json()["detail"] == agent.json()["detail"] == said
    assert Identity.objects.get(pk=bob.pk).person_id == ben.pk  # still Ben's
    assert not IdentityLink.objects.filter(action="unlink").exists()

    # Its own identity, both ways: unlinked.
    page = owner_client.post(f"/people/{ann.pk}/edit/", {"action": "unlink", "identity": alice.pk})
    assert page.status_code == 302 and Identity.objects.get(pk=alice.pk).person_id is None
    api = post_json(owner_client, f"/api/people/{ben.pk}/unlink", {"identity_id": bob.pk})
    assert api.status_code == 200 and Identity.objects.get(pk=bob.pk).person_id is None


# --- attachment downloads: one response, the same headers ----------------------------------

SECURITY = (
    "Content-Type",
    "Content-Disposition",
    "X-Content-Type-Options",
    "Content-Security-Policy",
    "Cross-Origin-Resource-Policy",
    "X-Content-SHA256",
)


def test_page_and_api_send_an_attachment_with_the_same_security_headers(
    owner_client: Client, agent_token: str
) -> None:
    # HTML that claims to be a picture: the kind of file the headers are for.
    blob = blob_put(io.BytesIO(b"<html><script>alert(1)</script></html>"))
    batch_record(
        batch=batch(
            message(
                "1",
                "look",
                attachments=(
                    AttachmentRecord(
                        external_id="h",
                        file_name="cat.png",
                        mime_type="image/png",
                        size=blob.size,
                        sha256=blob.sha256,
                        blob_path=blob.path,
                    ),
                    AttachmentRecord(external_id="m", file_name="left-out.pdf"),
                ),
            )
        )
    )
    stored = Attachment.objects.get(external_id="h").public_id
    missing = Attachment.objects.get(external_id="m").public_id

    page = owner_client.get(f"/attachments/{stored}/")
    api = Client().get(f"/api/attachments/{stored}", **bearer(agent_token))

    assert page.status_code == api.status_code == 200
    assert {h: page[h] for h in SECURITY} == {h: api[h] for h in SECURITY}
    assert page["Content-Type"] == "application/octet-stream"
    assert page["Content-Disposition"].startswith('attachment; filename="cat.png"')
    assert page["X-Content-Type-Options"] == "nosniff"
    assert page["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert page["Cross-Origin-Resource-Policy"] == "same-origin"
    assert page["X-Content-SHA256"] == blob.sha256
    assert b"".join(page.streaming_content) == b"".join(api.streaming_content)  # type: ignore[attr-defined]

    # The same refusal for bytes the export left out.
    page = owner_client.get(f"/attachments/{missing}/")
    api = Client().get(f"/api/attachments/{missing}", **bearer(agent_token))
    assert page.status_code == api.status_code == 404
    assert "did not include this file" in page.content.decode()
    assert "did not include this file" in api.json()["detail"]


# --- the chat list: one selector -----------------------------------------------------------


def test_page_and_api_list_the_same_chats_in_the_same_order(
    owner_client: Client, agent_token: str
) -> None:
    batch_record(
        batch=batch(
            message("1", "old", chat="a", minutes=0),
            message("2", "newest", chat="b", minutes=30),
            message("3", "tie", chat="c", minutes=20),
            message("4", "tie", chat="d", minutes=20),  # same moment as c: newer id first
        )
    )
    empty = ChatRecord(external_id="e", kind="group", title="No messages yet")
    batch_record(batch=Batch(account=ACCOUNT, chats=(empty,), identities=(), messages=()))
    assert Chat.objects.count() == 5

    html = owner_client.get("/chats/").content.decode()
    on_page = [int(pk) for pk in re.findall(r'href="/chats/(\d+)/"', html)]
    from_api = [c["id"] for c in Client().get("/api/chats", **bearer(agent_token)).json()]

    assert on_page == from_api
    titles = dict(Chat.objects.values_list("pk", "external_id"))
    assert [titles[pk] for pk in from_api] == ["b", "d", "c", "a", "e"]  # no messages: last


# --- recording a search: one rule, after the answer ----------------------------------------


@pytest.fixture
def trains(db: None) -> None:
    batch_record(batch=batch(*[message(str(i), f"train {i}", minutes=i) for i in range(25)]))


def runs() -> dict[tuple[str, str], int]:
    return {(r.query, r.sort): r.run_count for r in SavedSearch.objects.filter(name="")}


def test_page_and_api_record_the_same_search_once_per_run(
    owner_client: Client, agent_token: str, trains: None
) -> None:
    page = owner_client.get("/search/", {"q": "train"})
    assert page.status_code == 200 and runs() == {("train", "relevance"): 1}
    api = Client().get("/api/search/messages", {"q": "train"}, **bearer(agent_token))
    assert api.status_code == 200 and runs() == {("train", "relevance"): 2}  # one row
    call_command("search", "train", stdout=io.StringIO())
    assert runs() == {("train", "relevance"): 3}

    # Further pages are the same run read on; typing into the box is no run yet; a query
    # that does not parse or is empty is nothing to record.
    cursor = re.search(r"cursor=([\w-]+)", page.content.decode())
    assert cursor is not None
    owner_client.get("/search/", {"q": "train", "cursor": cursor.group(1)})
    api_cursor = api.json()["next_cursor"]
    Client().get(
        "/api/search/messages", {"q": "train", "cursor": api_cursor}, **bearer(agent_token)
    )
    call_command("search", "train", "--cursor", api_cursor, stdout=io.StringIO())
    owner_client.get("/search/", {"q": "train ferry"}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="q")
    owner_client.get("/search/", {"q": "   "})
    Client().get("/api/search/messages", {"q": ""}, **bearer(agent_token))
    owner_client.get("/search/", {"q": '"unclosed'})
    assert runs() == {("train", "relevance"): 3}

    # The same query in another sort is another run, from either side.
    owner_client.get("/search/", {"q": "train", "sort": "newest"})
    Client().get("/api/search/messages", {"q": "train", "sort": "newest"}, **bearer(agent_token))
    assert runs() == {("train", "relevance"): 3, ("train", "newest"): 2}


def test_a_search_answers_when_recording_it_fails(
    owner_client: Client,
    agent_token: str,
    trains: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def locked(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr(SavedSearch.objects, "get_or_create", locked)
    with caplog.at_level(logging.WARNING, logger="archive.search.services.searches"):
        page = owner_client.get("/search/", {"q": "train"})
        api = Client().get("/api/search/messages", {"q": "train"}, **bearer(agent_token))
        out = io.StringIO()
        call_command("search", "train", stdout=out)

    assert page.status_code == 200 and len(page.context["page"].hits) == 20
    assert api.status_code == 200 and len(api.json()["hits"]) == 20
    assert "train 24" in out.getvalue()
    assert not SavedSearch.objects.exists()
    assert caplog.text.count("not recorded: database is locked") == 3


def test_work_after_the_response_waits_until_the_answer_is_sent() -> None:
    done: list[str] = []

    def view(request: HttpRequest) -> HttpResponse:
        after_response(request, lambda: done.append("recorded"))
        after_response(request, lambda: 1 / 0)  # logged; neither the answer nor the rest fail
        after_response(request, lambda: done.append("and the next"))
        return HttpResponse("the answer")

    response = AfterResponse(view)(RequestFactory().get("/search/?q=train"))
    assert response.content == b"the answer" and done == []  # built, not yet sent
    response.close()  # the server has written the last byte
    assert done == ["recorded", "and the next"]


# --- the audit actor: the agent's writes name the agent ------------------------------------


def test_an_agents_writes_name_the_agent_and_the_pages_name_the_owner(
    owner_client: Client, agent_token: str
) -> None:
    batch_record(batch=batch(message("1", "hi", sender="alice"), message("2", "yo", sender="bob")))
    chat = Chat.objects.get()
    alice = Identity.objects.get(external_id="alice")
    bob = Identity.objects.get(external_id="bob")
    agent = Client()

    post_json(
        agent,
        "/api/tags/add",
        {"kind": "chat", "key": str(chat.pk), "name": "by-agent"},
        **bearer(agent_token),
    )
    owner_client.post("/tags/add/", {"kind": "chat", "key": chat.pk, "name": "by-owner"})
    assert dict(Tagging.objects.values_list("tag__name", "actor")) == {
        "by-agent": "agent:scribe",
        "by-owner": "owner",
    }

    made = post_json(
        agent, "/api/people", {"name": "Ann", "identity_ids": [alice.pk]}, **bearer(agent_token)
    ).json()
    post_json(
        agent, f"/api/people/{made['id']}/unlink", {"identity_id": alice.pk}, **bearer(agent_token)
    )
    owner_client.post(f"/people/{made['id']}/edit/", {"action": "link", "identity": bob.pk})
    owner_client.post(f"/people/{made['id']}/edit/", {"action": "unlink", "identity": bob.pk})
    audit = [
        (row.identity.external_id, row.action, row.actor)
        for row in IdentityLink.objects.exclude(actor="system").order_by("at", "id")
    ]  # "system": the owner's own identity, linked to the owner as it arrived
    assert audit == [
        ("alice", "link", "agent:scribe"),
        ("alice", "unlink", "agent:scribe"),
        ("bob", "link", "owner"),
        ("bob", "unlink", "owner"),
    ]

    # The owner's session on the API is the owner.
    post_json(owner_client, f"/api/people/{made['id']}/link", {"identity_id": alice.pk})
    assert IdentityLink.objects.order_by("-at", "-id").first().actor == "owner"  # type: ignore[union-attr]
