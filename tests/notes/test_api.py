"""The notes API: notes written, listed, read, edited from a revision (409 with both texts
when it is stale), deleted; revisions; links made and removed (a body's refused), kept
unresolved when they name nothing; backlinks of any typed reference; the link kinds; the
notes search; tags on notes; the scopes; an agent as author; the changes feed and a
webhook delivery for notes; bad input in the API's one error shape."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.gateway.models import DeliveryState, GatewaySettings, WebhookDelivery
from archive.gateway.services import webhooks
from archive.gateway.services.agents import SCOPES, agent_create, agent_limit
from archive.people.services import person_create
from archive.store.models import Chat, Identity, Message
from archive.store.sink import batch_record
from notes.models import Link
from notes.services.notes import BODY_MAX, note_create
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

NOBODY = "note_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"  # well formed, never made
NO_MESSAGE = "msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"


def call(method: str, url: str, token: str | None, body: Any = None) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    if method == "get":
        return Client().get(url, **headers)
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return Client().generic(method.upper(), url, raw, content_type="application/json", **headers)


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.content[:500]
    return response.json() if response.content else None


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    answer = response.json()
    assert {"error", "detail"} <= set(answer), answer
    return dict(answer)


@pytest.fixture
def writer(db: None) -> str:
    scopes = ["notes.read", "notes.write", "messages.read", "tags.write"]
    return agent_create(name="scribe", scopes=scopes).token


@pytest.fixture
def reader(db: None) -> str:
    return agent_create(name="reader", scopes=["notes.read"]).token


@pytest.fixture
def alice(db: None) -> int:
    """A person (Alice Walker) with a message she sent."""
    batch_record(batch=batch(message("1", "the plumber comes on Friday", sender="alice")))
    identity = Identity.objects.get(external_id="alice")
    return person_create(name="Alice Walker", identity_ids=[identity.pk]).pk


def write(token: str, title: str, body: str = "", **fields: Any) -> dict[str, Any]:
    return dict(
        ok(call("post", "/api/notes", token, {"title": title, "body": body, **fields}), 201)
    )


def test_the_scopes_are_known_and_described() -> None:
    assert SCOPES["notes.read"] and SCOPES["notes.write"]


def test_a_note_is_written_with_its_links_and_the_agent_as_author(writer: str, alice: int) -> None:
    first = Message.objects.get().public_id
    note = write(
        writer,
        "Plumber",
        "[[Alice Walker]] knows one. Ask [[Bob Nobody]] too.\n\nSee [[HOME-99]].",
        folder="Home/Repairs",
        aliases=["The plumber", ""],
        links=[
            {"target": f"message:{first}", "kind": "source", "context": "where she said it"},
            {"target": f"message:{NO_MESSAGE}"},
            {"target": "url:https://example.org/plumbers", "kind": "about"},
        ],
    )
    assert note["id"].startswith("note_") and note["reference"] == f"note:{note['id']}"
    assert (note["author"], note["revision"], note["folder"]) == ("agent:scribe", 1, "Home/Repairs")
    assert note["aliases"] == ["The plumber"]
    assert note["size"] == len(note["body"])
    shown = [
        (x["origin"], x["kind"], x["target"]["ref"], x["target"]["exists"]) for x in note["links"]
    ]
    assert shown == [
        ("body", "mentions", f"person:{alice}", True),
        ("body", "mentions", None, False),  # a name that names no one yet: kept
        ("body", "mentions", "task:HOME-99", False),  # no such task: kept as written
        ("explicit", "source", f"message:{first}", True),
        ("explicit", "mentions", f"message:{NO_MESSAGE}", False),
        ("explicit", "about", "url:https://example.org/plumbers", True),
    ]
    waiting = note["links"][1]
    assert waiting["target"]["label"] == "Bob Nobody" and waiting["target"]["kind"] == ""
    assert waiting["context"] == "Ask Bob Nobody too."
    assert note["links"][0]["target"]["url"] == f"/people/{alice}/"
    assert note["links"][3]["context"] == "where she said it"
    assert {x["actor"] for x in note["links"]} == {"agent:scribe"}
    assert all(x["source"] == note["reference"] for x in note["links"])
    # The waiting name resolves when someone of that name appears.
    person_create(name="Bob Nobody")
    again = ok(call("get", f"/api/notes/{note['id']}", writer))
    assert again["links"][1]["target"]["exists"] is True


def test_the_owners_session_writes_as_the_owner(owner_client: Client) -> None:
    answer = owner_client.post(
        "/api/notes", json.dumps({"title": "Mine"}), content_type="application/json"
    )
    note = ok(answer, 201)
    assert note["author"] == "owner"
    assert ok(owner_client.get(f"/api/notes/{note['id']}/revisions"))["revisions"][0]["author"] == (
        "owner"
    )


def test_notes_are_listed_newest_first_and_paged_by_cursor(writer: str) -> None:
    start = timezone.now() - timedelta(days=1)
    made = [
        note_create(title=f"Note {i}", body="x" * i, created_at=start + timedelta(minutes=i))
        for i in range(5)
    ]
    page = ok(call("get", "/api/notes?limit=2", writer))
    assert [n["title"] for n in page["notes"]] == ["Note 4", "Note 3"]
    assert "body" not in page["notes"][0] and page["notes"][0]["size"] == 4
    seen = [n["id"] for n in page["notes"]]
    while page["next_cursor"]:
        page = ok(call("get", f"/api/notes?limit=2&cursor={page['next_cursor']}", writer))
        seen += [n["id"] for n in page["notes"]]
    assert seen == [n.public_id for n in reversed(made)]
    refused = error(call("get", "/api/notes?cursor=bm90LWEtY3Vyc29y", writer), 422)
    assert "cursor" in refused["detail"]


def test_notes_are_listed_by_folder_and_by_tag(writer: str) -> None:
    top = write(writer, "At the top")
    work = write(writer, "Work plan", folder="Work")
    client = write(writer, "Client call", folder="Work/Clients")
    in_work = ok(call("get", "/api/notes?folder=work", writer))["notes"]
    assert [n["id"] for n in in_work] == [work["id"]]
    deep = ok(call("get", "/api/notes?folder=Work&subfolders=true", writer))["notes"]
    assert {n["id"] for n in deep} == {work["id"], client["id"]}
    assert len(ok(call("get", "/api/notes", writer))["notes"]) == 3
    assert "Nowhere" in error(call("get", "/api/notes?folder=Nowhere", writer), 404)["detail"]
    error(call("get", "/api/notes?folder=.hidden", writer), 422)
    tagged = call(
        "post", "/api/tags/add", writer, {"kind": "note", "key": top["id"], "name": "Later"}
    )
    assert ok(tagged)["name"] == "Later"
    by_tag = ok(call("get", "/api/notes?tag=later", writer))["notes"]
    assert [(n["id"], n["tags"]) for n in by_tag] == [(top["id"], ["Later"])]
    error(call("get", "/api/notes?tag=unknown", writer), 404)


def test_tags_on_notes_through_the_tags_api(writer: str) -> None:
    note = write(writer, "Tagged")
    body = {"kind": "note", "key": note["id"], "name": "project-x"}
    ok(call("post", "/api/tags/add", writer, body))
    on = ok(call("get", f"/api/tags/of?kind=note&key={note['id']}", writer))
    assert [t["name"] for t in on] == ["project-x"]
    counts = ok(call("get", "/api/tags", writer))
    assert [(c["name"], c["notes"], c["messages"]) for c in counts] == [("project-x", 1, 0)]
    # A note's id names no chat, and a well-formed id of no note is 404.
    error(call("get", f"/api/tags/of?kind=chat&key={note['id']}", writer), 404)
    error(call("get", f"/api/tags/of?kind=note&key={NOBODY}", writer), 404)
    assert ok(call("post", "/api/tags/remove", writer, body))["removed"] == 1
    assert ok(call("get", "/api/notes", writer))["notes"][0]["tags"] == []


def test_an_edit_names_its_revision_and_a_stale_one_gets_both_texts(writer: str) -> None:
    note = write(writer, "Plan", "first words")
    url = f"/api/notes/{note['id']}"
    edited = ok(call("patch", url, writer, {"revision": 1, "body": "second words"}))
    assert (edited["revision"], edited["body"], edited["title"]) == (2, "second words", "Plan")
    same = ok(call("patch", url, writer, {"revision": 2, "body": "second words"}))
    assert same["revision"] == 2  # nothing changed: no new revision
    stale = call("patch", url, writer, {"revision": 1, "title": "Plan B", "body": "my words"})
    conflict = error(stale, 409)
    assert conflict["error"] == "Conflict" and "revision 2" in conflict["detail"]
    assert (conflict["revision"], conflict["current_revision"]) == (1, 2)
    assert (conflict["current_title"], conflict["current_body"]) == ("Plan", "second words")
    assert (conflict["title"], conflict["body"]) == ("Plan B", "my words")
    assert ok(call("get", url, writer))["body"] == "second words"  # nothing saved
    moved = ok(call("patch", url, writer, {"revision": 2, "folder": "Archive"}))
    assert (moved["folder"], moved["revision"]) == ("Archive", 3)
    top = ok(call("patch", url, writer, {"revision": 3, "folder": ""}))
    assert top["folder"] == ""
    missing = error(call("patch", url, writer, {"body": "no revision"}), 422)
    assert "body.revision" in missing["detail"]
    error(call("patch", f"/api/notes/{NOBODY}", writer, {"revision": 1}), 404)


def test_revisions_newest_first_and_paged(writer: str) -> None:
    note = write(writer, "Draft", "one")
    url = f"/api/notes/{note['id']}"
    for revision, text in enumerate(["two", "three", "four"], start=1):
        ok(call("patch", url, writer, {"revision": revision, "body": text}))
    page = ok(call("get", f"{url}/revisions?limit=3", writer))
    assert [(r["number"], r["body"]) for r in page["revisions"]] == [
        (4, "four"),
        (3, "three"),
        (2, "two"),
    ]
    assert page["revisions"][0]["author"] == "agent:scribe" and page["next_before"] == 2
    rest = ok(call("get", f"{url}/revisions?limit=3&before=2", writer))
    assert [r["number"] for r in rest["revisions"]] == [1] and rest["next_before"] is None
    error(call("get", f"/api/notes/{NOBODY}/revisions", writer), 404)


def test_delete_is_204_and_the_note_is_gone(writer: str) -> None:
    note = write(writer, "Short-lived")
    answer = call("delete", f"/api/notes/{note['id']}", writer)
    assert answer.status_code == 204 and answer.content == b""
    error(call("get", f"/api/notes/{note['id']}", writer), 404)
    error(call("delete", f"/api/notes/{note['id']}", writer), 404)


def test_links_made_and_removed_and_body_links_refused(writer: str, alice: int) -> None:
    note = write(writer, "Call", "Ask [[Alice Walker]].")
    body_link = note["links"][0]["id"]
    made = ok(
        call(
            "post",
            "/api/links",
            writer,
            {"source": note["reference"], "target": f"person:{alice}", "kind": "about"},
        ),
        201,
    )
    assert made["id"].startswith("lnk_") and made["source"] == note["reference"]
    assert (made["target"]["ref"], made["target"]["label"], made["kind"]) == (
        f"person:{alice}",
        "Alice Walker",
        "about",
    )
    # A target the archive does not hold is kept, unresolved.
    waiting = ok(
        call("post", "/api/links", writer, {"source": note["reference"], "target": "task:home-7"}),
        201,
    )
    assert (waiting["target"]["ref"], waiting["target"]["exists"]) == ("task:HOME-7", False)
    # From something other than a note.
    first = Message.objects.get().public_id
    from_message = call(
        "post", "/api/links", writer, {"source": f"message:{first}", "target": note["reference"]}
    )
    assert ok(from_message, 201)["source"] == f"message:{first}"
    refused = error(call("delete", f"/api/links/{body_link}", writer), 409)
    assert note["id"] in refused["detail"] and "edit the note" in refused["detail"]
    assert call("delete", f"/api/links/{made['id']}", writer).status_code == 204
    error(call("delete", f"/api/links/{made['id']}", writer), 404)
    assert not Link.objects.filter(public_id=made["id"]).exists()


def test_links_bad_input(writer: str) -> None:
    note = write(writer, "Source")
    source = note["reference"]
    for field, body in (
        ("target", {"source": source, "target": "person:abc"}),
        ("target", {"source": source, "target": "12"}),
        ("source", {"source": "url:https://example.org", "target": "person:1"}),
        ("kind", {"source": source, "target": "person:1", "kind": "no spaces"}),
    ):
        detail = error(call("post", "/api/links", writer, body), 422)["detail"]
        assert detail.startswith(f"body.{field}:"), detail
    gone = {"source": f"note:{NOBODY}", "target": "person:1"}
    assert "does not exist" in error(call("post", "/api/links", writer, gone), 404)["detail"]
    unknown = {"source": source, "target": "person:1", "kind": "blocks"}
    assert "mentions" in error(call("post", "/api/links", writer, unknown), 404)["detail"]
    bad_note = {"title": "x", "links": [{"target": "person:1", "kind": "blocks"}]}
    error(call("post", "/api/notes", writer, bad_note), 404)
    listed = ok(call("get", "/api/notes", writer))["notes"]
    assert [n["id"] for n in listed] == [note["id"]]  # nothing written


def test_link_kinds_the_owner_can_extend(writer: str) -> None:
    kinds = ok(call("get", "/api/link-kinds", writer))
    assert [k["name"] for k in kinds if k["builtin"]] == [
        "mentions",
        "about",
        "decision",
        "follow-up",
        "source",
    ]
    added = ok(call("post", "/api/link-kinds", writer, {"name": "Blocks", "description": "x"}), 201)
    assert (added["name"], added["builtin"]) == ("blocks", False)
    assert [k["name"] for k in ok(call("get", "/api/link-kinds", writer))][-1] == "blocks"
    again = ok(call("post", "/api/link-kinds", writer, {"name": "About"}), 201)
    assert (again["name"], again["builtin"]) == ("about", True)
    note = write(writer, "Blocker")
    link = call(
        "post",
        "/api/links",
        writer,
        {"source": note["reference"], "target": "url:https://a.example", "kind": "blocks"},
    )
    assert ok(link, 201)["kind"] == "blocks"
    error(call("post", "/api/link-kinds", writer, {"name": "two words"}), 422)


def test_backlinks_of_any_typed_reference(writer: str, alice: int) -> None:
    about = write(writer, "About Alice", "[[Alice Walker]] fixed the sink. She is kind.")
    other = write(
        writer,
        "Links",
        f"See [[{about['title']}]] and https://x",
        links=[{"target": "url:https://example.org/a", "context": "the page"}],
    )
    found = ok(call("get", f"/api/backlinks?ref=person:{alice}", writer))
    assert found["ref"] == f"person:{alice}"
    assert [(b["note"], b["context"], b["origin"]) for b in found["backlinks"]] == [
        (about["id"], "Alice Walker fixed the sink.", "body")
    ]
    of_note = ok(call("get", f"/api/backlinks?ref={about['reference']}", writer))["backlinks"]
    assert [b["note"] for b in of_note] == [other["id"]]
    assert [
        b["note"] for b in ok(call("get", f"/api/notes/{about['id']}", writer))["backlinks"]
    ] == [other["id"]]
    url = ok(call("get", "/api/backlinks?ref=url:https://example.org/a", writer))["backlinks"]
    assert [(b["note"], b["context"]) for b in url] == [(other["id"], "the page")]
    assert (
        "person:999" in error(call("get", "/api/backlinks?ref=person:999", writer), 404)["detail"]
    )
    malformed = error(call("get", "/api/backlinks?ref=someone", writer), 422)["detail"]
    assert malformed.startswith("query.ref:"), malformed


def test_the_body_size_limit_is_413_with_a_sentence(writer: str) -> None:
    big = "a" * (BODY_MAX + 1)
    refused = error(call("post", "/api/notes", writer, {"title": "Big", "body": big}), 413)
    assert refused["error"] == "TooLarge" and "1,000,000 characters" in refused["detail"]
    note = write(writer, "Small")
    patch = {"revision": 1, "body": big}
    error(call("patch", f"/api/notes/{note['id']}", writer, patch), 413)
    assert write(writer, "Just fits", "b" * BODY_MAX)["size"] == BODY_MAX


def test_bad_input_names_the_field(writer: str) -> None:
    for body, field in (
        ({"body": "no title"}, "body.title"),
        ({"title": "   "}, "body.title"),
        ({"title": "x" * 301}, "body.title"),
        ({"title": "x", "folder": "a/../b"}, "body.folder"),
        ({"title": "x", "folder": "a:b"}, "body.folder"),
        ({"title": "x", "aliases": ["a"] * 51}, "body.aliases"),
        ({"title": "x", "links": [{"target": "chat:0"}]}, "body.links.0.target"),
    ):
        detail = error(call("post", "/api/notes", writer, body), 422)["detail"]
        assert detail.startswith(field), (body, detail)
    error(call("get", "/api/notes/msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7", writer), 422)
    error(call("post", "/api/notes", writer, "null"), 422)
    # Half of a surrogate pair is JSON, never text: refused, not a server error.
    for raw, field in (
        ('{"title": "\\ud800"}', "body.title"),
        ('{"title": "x", "body": "a\\udfffb"}', "body.body"),
        ('{"title": "x", "aliases": ["\\ud800"]}', "body.aliases.0"),
        ('{"title": "x", "links": [{"target": "person:1", "context": "\\ud800"}]}', "body.links"),
    ):
        detail = error(call("post", "/api/notes", writer, raw), 422)["detail"]
        assert detail.startswith(field) and "Unicode" in detail, detail


def test_scopes_are_required(writer: str, reader: str) -> None:
    note = write(writer, "Private")
    none = agent_create(name="messages-only", scopes=["messages.read"]).token
    for url in (
        "/api/notes",
        f"/api/notes/{note['id']}",
        f"/api/notes/{note['id']}/revisions",
        "/api/backlinks?ref=person:1",
        "/api/link-kinds",
        "/api/search/notes?q=private",
    ):
        assert "notes.read" in error(call("get", url, none), 403)["detail"], url
    assert ok(call("get", f"/api/notes/{note['id']}", reader))["title"] == "Private"
    for method, url, body in (
        ("post", "/api/notes", {"title": "x"}),
        ("patch", f"/api/notes/{note['id']}", {"revision": 1}),
        ("delete", f"/api/notes/{note['id']}", None),
        ("post", "/api/links", {"source": note["reference"], "target": "person:1"}),
        ("delete", "/api/links/lnk_01JD8ZV3Q0V6Y1T9B2C4D5E6F7", None),
        ("post", "/api/link-kinds", {"name": "blocks"}),
    ):
        assert "notes.write" in error(call(method, url, reader, body), 403)["detail"], url
    error(call("get", "/api/notes", None), 401)


def test_the_notes_search(writer: str) -> None:
    write(writer, "Plumbing", "The plumber fixed the kitchen sink.", folder="Home")
    write(writer, "Groceries", "Milk and bread.")
    page = ok(call("get", "/api/search/notes?q=plumber", writer))
    assert [h["title"] for h in page["hits"]] == ["Plumbing"]
    hit = page["hits"][0]
    assert hit["folder"] == "Home" and hit["reference"] == f"note:{hit['note']}"
    assert any(part["hit"] and part["text"].lower() == "plumber" for part in hit["snippet"])
    assert page["parsed"] is not None and page["next_cursor"] is None
    refused = error(call("get", "/api/search/notes?q=from:alice", writer), 422)
    assert "from" in refused["detail"] and "messages" in refused["detail"]
    syntax = error(call("get", '/api/search/notes?q="open', writer), 422)
    assert "position" in syntax


def test_the_openapi_schema_says_the_scopes_and_the_conflict(writer: str) -> None:
    schema = ok(call("get", "/api/openapi.json", writer))
    ops = {
        (method, path): op
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if "note" in path or ("link" in path and "people" not in path)
    }
    assert ops[("get", "/api/notes")]["x-scope"] == "notes.read"
    assert ops[("post", "/api/notes")]["x-scope"] == "notes.write"
    assert "201" in ops[("post", "/api/notes")]["responses"]
    assert "413" in ops[("post", "/api/notes")]["responses"]
    assert "204" in ops[("delete", "/api/notes/{id}")]["responses"]
    conflict = ops[("patch", "/api/notes/{id}")]["responses"]["409"]
    ref = conflict["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"]
    assert {"error", "detail", "current_revision", "current_title", "current_body"} <= set(fields)
    assert {"title", "body", "revision"} <= set(fields)


# --- the changes feed and webhooks ----------------------------------------------------------


def test_the_feed_names_notes_and_needs_notes_read(writer: str) -> None:
    start = ok(call("get", "/api/changes", writer))["cursor"]
    note = write(writer, "Feed me")
    ok(call("patch", f"/api/notes/{note['id']}", writer, {"revision": 1, "body": "more"}))
    ok(call("post", "/api/tags/add", writer, {"kind": "note", "key": note["id"], "name": "fed"}))
    assert call("delete", f"/api/notes/{note['id']}", writer).status_code == 204
    rows = ok(call("get", f"/api/changes?cursor={start}", writer))["changes"]
    assert [(r["kind"], r["note"], r["target_kind"]) for r in rows] == [
        ("note.created", note["id"], "note"),
        ("note.updated", note["id"], "note"),
        ("tag.added", None, "note"),  # the note is deleted since: its id is not known
        ("note.deleted", note["id"], "note"),  # kept in its row
    ]
    assert rows[0]["tag"] is None and rows[2]["tag"] == "fed"
    # An agent that may not read notes does not see their rows.
    blind = agent_create(name="blind", scopes=["messages.read"]).token
    assert ok(call("get", f"/api/changes?cursor={start}", blind))["changes"] == []
    # Notes are in no chat: an agent limited to a chat that may read notes sees them.
    batch_record(batch=batch(message("1", "hello")))
    limited = agent_create(name="limited", scopes=["messages.read", "notes.read"])
    agent_limit(public_id=limited.agent.public_id, chat_ids=[Chat.objects.get().pk])
    seen = ok(call("get", f"/api/changes?cursor={start}", limited.token))["changes"]
    assert [r["kind"] for r in seen] == [
        "note.created",
        "note.updated",
        "tag.added",
        "note.deleted",
        "message.added",
    ]


def test_a_tag_on_a_live_note_names_it_in_the_feed(writer: str) -> None:
    note = write(writer, "Tagged later")
    start = ok(call("get", "/api/changes", writer))["cursor"]
    ok(call("post", "/api/tags/add", writer, {"kind": "note", "key": note["id"], "name": "x"}))
    rows = ok(call("get", f"/api/changes?cursor={start}", writer))["changes"]
    assert [(r["kind"], r["note"], r["tag"]) for r in rows] == [("tag.added", note["id"], "x")]


class Receiver:
    """An HTTP server on 127.0.0.1 that keeps what it is sent."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append(json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver(db: None) -> Iterator[Receiver]:
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    found = Receiver()
    yield found
    found.server.shutdown()


def test_webhooks_tell_of_notes_with_their_id_title_revision_and_author(
    writer: str, receiver: Receiver
) -> None:
    webhooks.endpoint_create(
        url=receiver.url, events=["note.created", "note.updated", "note.deleted"]
    )
    note = write(writer, "Hooked", folder="Inbox")
    assert webhooks.deliver_due(now=timezone.now()) == 1
    ok(call("patch", f"/api/notes/{note['id']}", writer, {"revision": 1, "title": "Hooked!"}))
    assert webhooks.deliver_due(now=timezone.now()) == 1
    assert call("delete", f"/api/notes/{note['id']}", writer).status_code == 204
    assert webhooks.deliver_due(now=timezone.now()) == 1
    assert WebhookDelivery.objects.filter(state=DeliveryState.DELIVERED).count() == 3
    created, updated, deleted = receiver.received
    assert created["event"] == "note.created"
    assert created["data"]["note"] == {
        "id": note["id"],
        "title": "Hooked",
        "revision": 1,
        "author": "agent:scribe",
        "folder": "Inbox",
        "updated_at": created["data"]["note"]["updated_at"],
        "deleted": False,
    }
    assert updated["event"] == "note.updated"
    assert (updated["data"]["note"]["title"], updated["data"]["note"]["revision"]) == ("Hooked!", 2)
    assert deleted["event"] == "note.deleted"
    assert deleted["data"]["note"] == {"id": note["id"], "deleted": True}
