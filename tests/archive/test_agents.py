"""The agent gateway's reading side: tokens (hashed, rotated, revoked), scopes on every
operation, rate limits, per-agent unread and mark_read, the changes feed, chats, messages
in context, attachment bytes, and one error shape everywhere."""

from __future__ import annotations

import io
import json
import re
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from archive.gateway.models import Agent
from archive.gateway.services import agents as agent_service
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_remove, tag_target
from tests.factories import T0, batch, message
from wirecat.api import api

pytestmark = pytest.mark.django_db


def fill(n: int, start: int = 0, chat: str = "chat-1") -> None:
    batch_record(
        batch=batch(
            *[message(f"{chat}-{i}", f"inbound {i}", chat=chat, minutes=i) for i in range(start, n)]
        )
    )


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def make(
    name: str = "bot", scopes: tuple[str, ...] = tuple(agent_service.SCOPES), **kw: Any
) -> tuple[Agent, str]:
    issued = agent_service.agent_create(name=name, scopes=scopes, **kw)
    return issued.agent, issued.token


def unread_ids(client: Client, token: str, **params: Any) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        body = client.get("/api/messages/unread", query, **bearer(token)).json()
        ids += [m["id"] for m in body["messages"]]
        cursor = body["next_cursor"]
        if not cursor:
            return ids


def post(client: Client, url: str, body: Any, token: str | None = None) -> Any:
    headers = bearer(token) if token else {}
    return client.post(url, json.dumps(body), content_type="application/json", **headers)


# --- tokens ---------------------------------------------------------------------------------


def test_tokens_are_stored_only_as_hashes_and_rotate_and_revoke(db: None) -> None:
    agent, token = make()
    assert token.startswith("wct_") and len(token) > 40
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM archive_agent")
        row = " ".join(str(value) for value in cursor.fetchone())
    secret = token.rsplit("_", 1)[1]
    assert secret not in row and token not in row
    assert agent_service.agent_authenticate(token) == agent
    assert agent_service.agent_authenticate(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert agent_service.agent_authenticate("wct_nokey_nosecret") is None
    assert agent_service.agent_authenticate("Basic abc") is None
    rotated = agent_service.agent_rotate(public_id=agent.public_id)
    assert agent_service.agent_authenticate(token) is None
    assert agent_service.agent_authenticate(rotated.token) == agent
    agent_service.agent_revoke(public_id=agent.public_id)
    assert agent_service.agent_authenticate(rotated.token) is None


def test_agent_input_is_checked(db: None) -> None:
    make("twin")
    with pytest.raises(Exception, match="already exists"):
        make("twin")
    with pytest.raises(Exception, match="scopes: unknown root"):
        make("other", scopes=("root",))
    with pytest.raises(Exception, match="name: 1 to 100 characters"):
        make("  ")


# --- scopes, authentication, errors -------------------------------------------------------


def _sample(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    if "$ref" in schema:
        return _sample(components[schema["$ref"].rsplit("/", 1)[1]], components)
    if "anyOf" in schema:
        return _sample(schema["anyOf"][0], components)
    kind = schema.get("type")
    if kind == "object":
        return {
            key: _sample(value, components)
            for key, value in schema.get("properties", {}).items()
            if key in schema.get("required", [])
        }
    return {"string": "x", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


def operations(client: Client) -> list[tuple[str, str, str, Any]]:
    spec = json.loads(json.dumps(api.get_openapi_schema(), default=str))
    components = spec.get("components", {}).get("schemas", {})
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            url = re.sub(r"\{[^}]+\}", "1", path)
            required = [
                f"{p['name']}={_sample(p['schema'], components)}"
                for p in op.get("parameters", [])
                if p["in"] == "query" and p.get("required")
            ]
            if required:
                url += "?" + "&".join(required)
            body = None
            if "requestBody" in op:
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                body = _sample(schema, components)
            found.append((method, url, op.get("x-scope", ""), body))
    return found


def call(client: Client, method: str, url: str, body: Any, **headers: str) -> Any:
    if method == "get":
        return client.get(url, **headers)
    if method == "delete":
        return client.delete(url, **headers)
    return client.generic(  # post, put, patch: the operation's own method
        method.upper(), url, json.dumps(body or {}), content_type="application/json", **headers
    )


def test_every_operation_declares_a_scope_and_refuses_agents_without_it(
    client: Client, db: None
) -> None:
    ops = operations(client)
    assert len(ops) >= 23  # the walk covers them all; this guards against an empty spec
    for method, url, scope, body in ops:
        assert scope in agent_service.SCOPES, f"{method} {url} declares no scope"
        others = tuple(s for s in agent_service.SCOPES if s != scope)
        _, token = make(f"lacks {scope} {method} {url}"[:100], scopes=others)
        response = call(client, method, url, body, **bearer(token))
        assert response.status_code == 403, (method, url, response.content[:300])
        assert response.json() == {
            "error": "Forbidden",
            "detail": response.json()["detail"],
        }
        assert scope in response.json()["detail"]


def test_every_operation_needs_authentication_and_answers_one_error_shape(
    client: Client, db: None
) -> None:
    for method, url, _, body in operations(client):
        response = call(client, method, url, body)
        assert response.status_code == 401, (method, url)
        assert set(response.json()) == {"error", "detail"}
    bad = call(client, "get", "/api/messages/unread", None, **bearer("wct_x_y"))
    assert bad.status_code == 401


def test_rate_limit_answers_429_with_retry_after(client: Client, db: None) -> None:
    # The limit counts within a clock minute: requests that straddle one start counting
    # again, so a run that crossed a minute's end is made again, with a fresh agent.
    for attempt in range(2):
        started = int(time.time() // 60)
        agent, token = make(name=f"bot{attempt}")
        Agent.objects.filter(pk=agent.pk).update(rate_per_minute=3)
        answers = [client.get("/api/chats", **bearer(token)) for _ in range(4)]
        if int(time.time() // 60) == started:
            break
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    limited = answers[-1]
    assert 1 <= int(limited["Retry-After"]) <= 61
    assert (
        limited.json()["error"] == "RateLimited"
        and "3 requests a minute" in limited.json()["detail"]
    )
    assert Agent.objects.get(pk=agent.pk).last_used_at is not None


def test_validation_errors_share_the_shape(client: Client, db: None) -> None:
    _, token = make()
    response = client.get("/api/chats", {"limit": "many"}, **bearer(token))
    assert response.status_code == 422
    assert response.json()["error"] == "Invalid" and "limit" in response.json()["detail"]


# --- unread and mark_read -----------------------------------------------------------------


def test_a_new_agent_counts_history_as_read_unless_given_since(client: Client, db: None) -> None:
    fill(5)
    _, token = make("fresh")
    assert unread_ids(client, token) == []
    fill(8, start=5)  # old history imported later: still history, still read
    assert unread_ids(client, token) == []
    now = timezone.now()
    batch_record(
        batch=batch(
            *[
                replace(message(f"new-{i}", f"new {i}"), sent_at=now + timedelta(seconds=i))
                for i in range(3)
            ]
        )
    )
    assert len(unread_ids(client, token)) == 3
    _, early = make("early", since=T0 - timedelta(days=1))
    assert len(unread_ids(client, early, limit=2)) == 11  # paged by 2, oldest first


def test_unread_is_per_agent_and_mark_read_has_three_forms(client: Client, db: None) -> None:
    fill(6)
    fill(3, chat="chat-2")
    _, one = make("one", since=T0 - timedelta(days=1))
    _, two = make("two", since=T0 - timedelta(days=1))
    everything = unread_ids(client, one)
    assert len(everything) == 9 and everything == unread_ids(client, two)
    marked = post(client, "/api/messages/mark_read", {"ids": everything[:2]}, one).json()
    assert marked["marked"] == 2 and marked["unread_first"] == everything[2]
    assert (
        post(client, "/api/messages/mark_read", {"ids": everything[:2]}, one).json()["marked"] == 0
    )
    assert unread_ids(client, one) == everything[2:]
    assert unread_ids(client, two) == everything  # the other agent is untouched
    post(client, "/api/messages/mark_read", {"up_to": everything[4]}, one)
    assert unread_ids(client, one) == everything[5:]
    chat2 = Chat.objects.get(external_id="chat-2")
    post(client, "/api/messages/mark_read", {"chat_id": chat2.pk}, one)
    left = unread_ids(client, one)
    assert left == [
        m for m in everything[5:] if Message.objects.get(public_id=m).chat_id != chat2.pk
    ]
    for bad, status in (
        ({}, 422),
        ({"ids": [everything[0]], "chat_id": chat2.pk}, 422),
        ({"ids": ["msg_nope"]}, 404),
        ({"up_to": "msg_nope"}, 404),
        ({"chat_id": 999}, 404),
        ({"ids": ["x"] * 1001}, 422),
    ):
        assert post(client, "/api/messages/mark_read", bad, one).status_code == status, bad
    owner = Client()
    assert owner.get("/api/messages/unread").status_code == 401


def test_marking_everything_moves_the_watermark_and_drops_the_rows(
    client: Client, db: None
) -> None:
    fill(20)
    agent, token = make(since=T0 - timedelta(days=1))
    ids = unread_ids(client, token)
    post(client, "/api/messages/mark_read", {"ids": ids[:10]}, token)
    agent.refresh_from_db()
    assert agent.read_through == Message.objects.get(public_id=ids[9]).pk
    assert agent.reads.count() == 0
    post(client, "/api/messages/mark_read", {"ids": ids[15:]}, token)
    assert agent.reads.count() == 5  # above the first unread: kept as rows
    assert unread_ids(client, token) == ids[10:15]


def test_tombstoned_and_outbound_messages_are_not_unread(client: Client, db: None) -> None:
    _, token = make(since=T0 - timedelta(days=1))
    batch_record(
        batch=batch(
            message("a", "hello", minutes=0),
            message("b", "mine", minutes=1, direction="out"),
            message("c", "gone", minutes=2),
            deletions=(DeletionRecord("chat-1", "c", T0 + timedelta(hours=1)),),
        )
    )
    assert [Message.objects.get(public_id=i).external_id for i in unread_ids(client, token)] == [
        "a"
    ]


def test_owner_session_is_told_unread_belongs_to_an_agent(owner_client: Client) -> None:
    response = owner_client.get("/api/messages/unread")
    assert response.status_code == 403 and "agent's token" in response.json()["detail"]


# --- changes feed -------------------------------------------------------------------------


def feed(
    client: Client, token: str, cursor: str | None = None
) -> tuple[list[tuple[str, Any]], str]:
    body = client.get("/api/changes", {"cursor": cursor} if cursor else {}, **bearer(token)).json()
    return [(c["kind"], c["message"] or c["tag"]) for c in body["changes"]], body["cursor"]


def test_changes_feed_is_ordered_and_resumes(client: Client, db: None) -> None:
    _, token = make()
    fill(2)
    first, second = (m.public_id for m in Message.objects.order_by("id"))
    seen, cursor = feed(client, token)
    assert seen == [("message.added", first), ("message.added", second)]
    assert feed(client, token, cursor) == ([], cursor)  # nothing new: the cursor stays
    batch_record(
        batch=batch(
            message("chat-1-0", "inbound 0, edited", minutes=0, edited_at=T0 + timedelta(hours=1))
        )
    )
    batch_record(
        batch=batch(deletions=(DeletionRecord("chat-1", "chat-1-1", T0 + timedelta(hours=2)),))
    )
    tag_add(target=tag_target(kind="message", key=first), name="later")
    tag_remove(target=tag_target(kind="message", key=first), name="later")
    tag_remove(target=tag_target(kind="message", key=first), name="later")  # no-op: no change
    seen, cursor2 = feed(client, token, cursor)
    assert seen == [
        ("message.edited", first),
        ("message.tombstoned", second),
        ("tag.added", first),
        ("tag.removed", first),
    ]
    assert feed(client, token, cursor2) == ([], cursor2)
    assert client.get("/api/changes", {"cursor": "bogus!"}, **bearer(token)).status_code == 422


# --- reading ------------------------------------------------------------------------------


def test_chats_chat_pages_and_a_message_in_context(client: Client, db: None) -> None:
    fill(30)
    _, token = make()
    chats = client.get("/api/chats", **bearer(token)).json()
    assert [c["message_count"] for c in chats] == [30]
    chat_id = chats[0]["id"]
    page = client.get(f"/api/chats/{chat_id}/messages", {"limit": 10}, **bearer(token)).json()
    assert [m["text"] for m in page["messages"]] == [f"inbound {i}" for i in range(20, 30)]
    older = client.get(
        f"/api/chats/{chat_id}/messages", {"limit": 10, "before": page["older"]}, **bearer(token)
    ).json()
    assert older["messages"][-1]["text"] == "inbound 19"
    middle = Message.objects.get(external_id="chat-1-15").public_id
    ctx = client.get(f"/api/messages/{middle}", {"context": 3}, **bearer(token)).json()
    assert ctx["message"]["text"] == "inbound 15"
    assert [m["text"] for m in ctx["before"]] == ["inbound 12", "inbound 13", "inbound 14"]
    assert [m["text"] for m in ctx["after"]] == ["inbound 16", "inbound 17", "inbound 18"]
    assert client.get("/api/messages/msg_nope", **bearer(token)).status_code == 404
    assert (
        client.get(f"/api/messages/{middle}", {"context": 99}, **bearer(token)).status_code == 422
    )
    assert client.get("/api/chats/999/messages", **bearer(token)).status_code == 404


def test_attachment_bytes_with_their_hash(client: Client, db: None) -> None:
    blob = blob_put(io.BytesIO(b"%PDF-1.4 bytes"))
    batch_record(
        batch=batch(
            message(
                "1",
                "file",
                attachments=(
                    AttachmentRecord(
                        external_id="f",
                        file_name="a.pdf",
                        mime_type="application/pdf",
                        size=blob.size,
                        sha256=blob.sha256,
                        blob_path=blob.path,
                    ),
                    AttachmentRecord(external_id="g", file_name="gone.pdf"),
                ),
            )
        )
    )
    _, token = make()
    msg = client.get(f"/api/messages/{Message.objects.get().public_id}", **bearer(token)).json()
    stored, missing = msg["message"]["attachments"]
    assert stored["stored"] and not missing["stored"]
    response = client.get(f"/api/attachments/{stored['id']}", **bearer(token))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"%PDF-1.4 bytes"
    assert response["X-Content-SHA256"] == blob.sha256
    assert client.get(f"/api/attachments/{missing['id']}", **bearer(token)).status_code == 404


# --- the Agents page ----------------------------------------------------------------------


def test_agents_page_shows_a_token_once(owner_client: Client) -> None:
    made = owner_client.post(
        "/agents/", {"name": "Scribe", "scopes": ["messages.read"]}, follow=True
    )
    assert made.redirect_chain == [("/agents/", 302)]  # a reload does not make a second one
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    token = re.search(r'value="(wct_[^"]+)"', made.content.decode()).group(1)  # type: ignore[union-attr]
    assert agent_service.agent_authenticate(token) is not None
    later = owner_client.get("/agents/").content.decode()
    assert token not in later and "Scribe" in later
    agent = Agent.objects.get()
    rotated = owner_client.post(
        f"/agents/{agent.public_id}/", {"action": "rotate"}, follow=True
    ).content.decode()
    assert "wct_" in rotated and agent_service.agent_authenticate(token) is None
    owner_client.post(f"/agents/{agent.public_id}/", {"action": "scopes", "scopes": ["tags.write"]})
    assert Agent.objects.get().scopes == ["tags.write"]
    owner_client.post(f"/agents/{agent.public_id}/", {"action": "revoke"})
    assert Agent.objects.get().revoked_at is not None
    twin = owner_client.post("/agents/", {"name": "Scribe"})
    assert twin.status_code == 422 and "already exists" in twin.content.decode()
    assert owner_client.post("/agents/agt_nope/", {"action": "revoke"}).status_code == 404


def test_admin_makes_an_agent_and_shows_its_token_once(owner_client: Client) -> None:
    response = owner_client.post(
        "/admin/archive/agent/add/", {"name": "From admin", "scope_names": ["messages.read"]}
    )
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    token = re.search(r'value="(wct_[^"]+)"', response.content.decode()).group(1)  # type: ignore[union-attr]
    agent = agent_service.agent_authenticate(token)
    assert agent is not None and agent.scopes == ["messages.read"]
    assert owner_client.get("/admin/archive/agent/").status_code == 200


def test_numbers_too_large_for_the_store_are_refused_not_a_500(client: Client, db: None) -> None:
    """Offsets and cursors that do not fit SQLite's integers answered 500 before."""
    import base64

    big = "9" * 23
    _, token = make()
    headers = bearer(token)
    for url in (
        f"/api/chats?offset={big}",
        f"/api/people?offset={big}",
        f"/api/tasks?offset={big}",
        "/api/messages/unread?cursor=" + base64.urlsafe_b64encode(f"u{big}".encode()).decode(),
        "/api/changes?cursor=" + base64.urlsafe_b64encode(f"c{big}".encode()).decode(),
        "/api/search/messages?q=x&sort=newest&cursor="
        + base64.urlsafe_b64encode(f"t{big}|2024-01-01 00:00:00".encode()).decode(),
    ):
        response = client.get(url, **headers)
        assert response.status_code == 422, (url, response.status_code)
        assert set(response.json()) >= {"error", "detail"}


def test_making_an_agent_redirects_and_the_form_is_empty_after(owner_client: Client) -> None:
    """POST/redirect/GET: a reload of the page after making an agent makes no second one
    and no longer shows the token; the form is empty again, so a second click cannot make
    a twin; the token is in a read-only field selected on focus, with a Copy button."""
    made = owner_client.post(
        "/agents/", {"name": "Scribe", "scopes": ["messages.read", "tags.write"]}
    )
    assert made.status_code == 302 and made["Location"] == "/agents/"
    page = owner_client.get("/agents/")
    html = page.content.decode()
    assert page["Cache-Control"] == "no-store"
    field = re.search(r'<input class="token" id="issued-token"[^>]*>', html)
    assert field is not None and "readonly" in field.group(0)
    assert "data-select-on-focus" in field.group(0) and 'value="wct_' in field.group(0)
    assert re.search(r'<button type="button" data-copy="issued-token" hidden>Copy</button>', html)
    assert 'src="/static/wirecat/ops.js"' in html
    assert 'id="agent-name" name="name" maxlength="100" required value=""' in html
    assert re.findall(r'name="scopes" value="([^"]+)" checked>', html.split("new-agent-h")[-1]) == [
        "messages.read"
    ]
    again = owner_client.get("/agents/").content.decode()  # the reload
    assert "wct_" not in again and Agent.objects.count() == 1
    # The session held the token sealed, and holds nothing once it was shown.
    assert "agent_issued" not in owner_client.session
    # A form with an error keeps what was typed and ticked.
    twin = owner_client.post("/agents/", {"name": "Scribe", "scopes": ["tags.write"]})
    html = twin.content.decode()
    assert twin.status_code == 422 and 'required value="Scribe"' in html
    assert re.findall(r'name="scopes" value="([^"]+)" checked>', html.split("new-agent-h")[-1]) == [
        "tags.write"
    ]


def test_a_token_handed_over_is_sealed_and_good_once(owner_client: Client) -> None:
    from archive.gateway.services.handover import handover_open, handover_seal

    sealed = handover_seal({"agent": "agt_x", "token": "wct_secret"})
    assert "wct_secret" not in sealed and handover_open(sealed) == {
        "agent": "agt_x",
        "token": "wct_secret",
    }
    assert handover_open(sealed[:-4] + "AAAA") is None and handover_open(None) is None
    owner_client.post("/agents/", {"name": "Scribe", "scopes": ["messages.read"]})
    stored = owner_client.session["agent_issued"]
    assert "wct_" not in stored  # the session row never holds the token in the clear
