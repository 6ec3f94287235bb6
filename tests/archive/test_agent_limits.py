"""Agents limited to accounts and chats, through the API as the agent calls it: an agent
limited to chat A reads, marks read, searches, downloads and sees in the changes feed only
A (B answers 404 as if it were not there; tags on B's messages and B itself too, and a
person's chats leave B out), and a send to B is refused 403 by the guard. The
changes feed shows an agent only its own sends' status. The owner sets limits on the Agents
page and in the admin."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from archive.gateway.models import Agent, SendAttempt
from archive.gateway.services import agents as agent_service
from archive.people.services import person_create
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Account, Chat, Identity, Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_target
from tests.factories import ACCOUNT, T0, batch, message

pytestmark = pytest.mark.django_db


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def post(client: Client, url: str, body: Any, token: str, **headers: str) -> Any:
    return client.post(
        url, json.dumps(body), content_type="application/json", **bearer(token), **headers
    )


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    """Chats A and B of one account (with an attachment in each), chat C of another."""
    blob = blob_put(io.BytesIO(b"bytes of a file"))

    def attached(key: str) -> tuple[AttachmentRecord, ...]:
        return (
            AttachmentRecord(
                external_id=f"f-{key}",
                file_name=f"{key}.txt",
                size=blob.size,
                sha256=blob.sha256,
                blob_path=blob.path,
            ),
        )

    batch_record(
        batch=batch(
            message("a1", "apple pie in A", chat="A", minutes=1, attachments=attached("a")),
            message("b1", "apple cake in B", chat="B", minutes=2, attachments=attached("b")),
            message("a2", "second in A", chat="A", minutes=3),
            message("b2", "second in B", chat="B", minutes=4),
        )
    )
    other = replace(ACCOUNT, external_id="acct-2", name="Other account")
    batch_record(batch=replace(batch(message("c1", "apple tart in C", chat="C")), account=other))
    Account.objects.update(send_permission="allow", send_to_any_chat=True)
    chats = {c.external_id: c for c in Chat.objects.all()}
    limited = agent_service.agent_create(
        name="limited", scopes=list(agent_service.SCOPES), since=T0 - timedelta(days=1)
    )
    agent_service.agent_limit(public_id=limited.agent.public_id, chat_ids=[chats["A"].pk])
    free = agent_service.agent_create(
        name="free", scopes=list(agent_service.SCOPES), since=T0 - timedelta(days=1)
    )
    return {
        "chats": chats,
        "msg": dict(Message.objects.values_list("external_id", "public_id")),
        "token": limited.token,
        "agent": limited.agent,
        "free": free.token,
        "free_agent": free.agent,
    }


def unread(client: Client, token: str) -> list[str]:
    body = client.get("/api/messages/unread", **bearer(token)).json()
    return [m["id"] for m in body["messages"]]


def feed(client: Client, token: str | None = None, cursor: str | None = None) -> Any:
    headers = bearer(token) if token else {}
    return client.get("/api/changes", {"cursor": cursor} if cursor else {}, **headers).json()


def test_a_limited_agent_reads_only_its_chats(client: Client, world: dict[str, Any]) -> None:
    a, b, token, msg = world["chats"]["A"], world["chats"]["B"], world["token"], world["msg"]
    listed = client.get("/api/chats", **bearer(token)).json()
    assert [c["id"] for c in listed] == [a.pk]
    assert len(client.get("/api/chats", **bearer(world["free"])).json()) == 3
    page = client.get(f"/api/chats/{a.pk}/messages", **bearer(token)).json()
    assert {m["id"] for m in page["messages"]} == {msg["a1"], msg["a2"]}
    refused = client.get(f"/api/chats/{b.pk}/messages", **bearer(token))
    assert refused.status_code == 404 and refused.json()["error"] == "NotFound"
    assert client.get(f"/api/messages/{msg['b1']}", **bearer(token)).status_code == 404
    context = client.get(f"/api/messages/{msg['a1']}?context=5", **bearer(token)).json()
    assert [m["id"] for m in context["after"]] == [msg["a2"]]  # B's messages are not context
    files = {
        key: client.get(f"/api/messages/{msg[key]}", **bearer(world["free"])).json()["message"][
            "attachments"
        ][0]["id"]
        for key in ("a1", "b1")
    }
    assert client.get(f"/api/attachments/{files['a1']}", **bearer(token)).status_code == 200
    assert client.get(f"/api/attachments/{files['b1']}", **bearer(token)).status_code == 404
    assert client.get(f"/api/attachments/{files['b1']}", **bearer(world["free"])).status_code == 200


def test_unread_and_mark_read_stay_within_the_limits(client: Client, world: dict[str, Any]) -> None:
    token, msg, b = world["token"], world["msg"], world["chats"]["B"]
    assert unread(client, token) == [msg["a1"], msg["a2"]]
    assert unread(client, world["free"]) == [msg[k] for k in ("a1", "b1", "a2", "b2", "c1")]
    assert post(client, "/api/messages/mark_read", {"ids": [msg["b1"]]}, token).status_code == 404
    assert post(client, "/api/messages/mark_read", {"up_to": msg["b2"]}, token).status_code == 404
    assert post(client, "/api/messages/mark_read", {"chat_id": b.pk}, token).status_code == 404
    marked = post(client, "/api/messages/mark_read", {"ids": [msg["a1"]]}, token).json()
    assert marked == {"marked": 1, "unread_first": msg["a2"]}
    assert unread(client, token) == [msg["a2"]]
    assert len(unread(client, world["free"])) == 5  # one agent's reads are its own
    # Widened: the agent sees all of both accounts again.
    agent_service.agent_limit(public_id=world["agent"].public_id)
    assert msg["c1"] in unread(client, token)


def test_an_account_limit_covers_that_accounts_chats(client: Client, world: dict[str, Any]) -> None:
    other = Account.objects.get(external_id="acct-2")
    agent_service.agent_limit(public_id=world["agent"].public_id, account_ids=[other.pk])
    token, msg = world["token"], world["msg"]
    assert [c["id"] for c in client.get("/api/chats", **bearer(token)).json()] == [
        world["chats"]["C"].pk
    ]
    assert unread(client, token) == [msg["c1"]]
    # Accounts and chats together: the union of both.
    agent_service.agent_limit(
        public_id=world["agent"].public_id,
        account_ids=[other.pk],
        chat_ids=[world["chats"]["B"].pk],
    )
    assert unread(client, token) == [msg["b1"], msg["b2"], msg["c1"]]


def test_search_through_the_api_finds_only_hits_within_the_limits(
    client: Client, world: dict[str, Any]
) -> None:
    msg = world["msg"]

    def hits(token: str, **params: Any) -> Any:
        answer = client.get("/api/search/messages", {"q": "apple", **params}, **bearer(token))
        assert answer.status_code == 200
        return answer.json()

    assert {h["id"] for h in hits(world["free"])["hits"]} == {msg["a1"], msg["b1"], msg["c1"]}
    for sort in ("relevance", "newest", "oldest"):
        assert [h["id"] for h in hits(world["token"], sort=sort)["hits"]] == [msg["a1"]]
    limited = hits(world["token"], facets="true")
    assert limited["facets"] is None  # counts over chats it may not see are not given
    # Paged one hit at a time, the pages of the whole archive hold nothing of B or C.
    seen, cursor = [], None
    while True:
        page = hits(
            world["token"], sort="newest", limit=1, **({"cursor": cursor} if cursor else {})
        )
        seen += [h["id"] for h in page["hits"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [msg["a1"]]


def test_the_feed_shows_a_limited_agent_only_its_chats(
    client: Client, world: dict[str, Any]
) -> None:
    a, b, msg = world["chats"]["A"], world["chats"]["B"], world["msg"]
    first = feed(client, world["token"])
    assert [c["message"] for c in first["changes"]] == [msg["a1"], msg["a2"]]
    tag_add(target=tag_target(kind="message", key=msg["b1"]), name="b-msg")
    tag_add(target=tag_target(kind="message", key=msg["a2"]), name="a-msg")
    tag_add(target=tag_target(kind="chat", key=b.pk), name="b-chat")
    tag_add(target=tag_target(kind="chat", key=a.pk), name="a-chat")
    later = feed(client, world["token"], first["cursor"])
    assert [(c["kind"], c["tag"]) for c in later["changes"]] == [
        ("tag.added", "a-msg"),
        ("tag.added", "a-chat"),
    ]
    assert feed(client, world["token"], later["cursor"]) == {
        "changes": [],
        "cursor": later["cursor"],
    }
    everything = feed(client, world["free"], first["cursor"])
    assert len(everything["changes"]) == 4  # an agent without limits sees every chat's rows


def test_a_send_outside_the_limits_is_refused_and_feeds_show_only_own_sends(
    client: Client, world: dict[str, Any], owner_client: Client
) -> None:
    a, b = world["chats"]["A"], world["chats"]["B"]
    account = Account.objects.get(external_id="acct-1")

    def send(token: str, chat: Chat, key: str) -> Any:
        body = {"account_id": account.pk, "chat_id": chat.pk, "text": "hi"}
        return post(client, "/api/messages/send", body, token, HTTP_IDEMPOTENCY_KEY=key)

    start = feed(client, world["token"])["cursor"]
    free_start = feed(client, world["free"])["cursor"]
    refused = send(world["token"], b, "k1")
    assert refused.status_code == 403
    assert (
        refused.json()["rule"] == "agent-limits"
        and "outside the limits" in refused.json()["detail"]
    )
    assert SendAttempt.objects.get().outcome == "refused"  # journaled like any refusal
    mine = send(world["token"], a, "k2")
    assert mine.status_code == 202
    theirs = send(world["free"], b, "k3")
    assert theirs.status_code == 202
    own = [c["kind"] for c in feed(client, world["token"], start)["changes"]]
    assert own == ["message.added", "send.status"]  # its send; nothing of the other's
    free_rows = feed(client, world["free"], free_start)["changes"]
    sends = [c for c in free_rows if c["kind"] == "send.status"]
    attempt = SendAttempt.objects.get(public_id=theirs.json()["send_id"])
    assert [s["target_id"] for s in sends] == [attempt.pk]  # only its own send's status
    assert [c["kind"] for c in free_rows] == ["message.added", "message.added", "send.status"]
    owner_rows = feed(owner_client)["changes"]
    assert len([c for c in owner_rows if c["kind"] == "send.status"]) == 2  # the owner: all


def test_the_owner_sets_limits_on_the_agents_page_and_in_the_admin(
    owner_client: Client, world: dict[str, Any]
) -> None:
    agent, a, c = world["free_agent"], world["chats"]["A"], world["chats"]["C"]
    other = Account.objects.get(external_id="acct-2")
    saved = owner_client.post(
        f"/agents/{agent.public_id}/",
        {"action": "limits", "accounts": [str(other.pk)], "chats": [str(a.pk)]},
    )
    assert saved.status_code == 302
    agent = Agent.objects.get(pk=agent.pk)
    assert list(agent.limit_accounts.all()) == [other]
    assert list(agent.limit_chats.all()) == [a]
    page = owner_client.get("/agents/").content.decode()
    assert "Limits: Other account, Chat A" in page and "Save limits" in page
    owner_client.post(
        f"/agents/{agent.public_id}/", {"action": "limits", "chats": ["99999"]}
    )  # unknown: refused, nothing changed
    assert list(agent.limit_chats.all()) == [a]
    owner_client.post(f"/agents/{agent.public_id}/", {"action": "limits"})  # none: every chat
    assert not agent.limit_accounts.exists() and not agent.limit_chats.exists()
    response = owner_client.post(
        "/admin/archive/agent/add/",
        {"name": "From admin", "scope_names": ["messages.read"], "limit_chats": [str(c.pk)]},
    )
    assert response.status_code == 200
    made = Agent.objects.get(name="From admin")
    assert list(made.limit_chats.all()) == [c]
    change = owner_client.post(
        f"/admin/archive/agent/{made.pk}/change/",
        {
            "name": "From admin",
            "scopes": '["messages.read"]',
            "since": "2024-01-01 00:00:00",
            "since_0": "2024-01-01",
            "since_1": "00:00:00",
            "rate_per_minute": "600",
            "sends_per_hour": "30",
            "limit_accounts": [str(other.pk)],
        },
    )
    assert change.status_code == 302, change.content.decode()[:2000]
    assert list(made.limit_accounts.all()) == [other] and not made.limit_chats.exists()


def test_tags_and_people_stay_within_the_limits(client: Client, world: dict[str, Any]) -> None:
    a, b, token, msg = world["chats"]["A"], world["chats"]["B"], world["token"], world["msg"]
    for kind, key in (("message", msg["b1"]), ("chat", str(b.pk))):
        body = {"kind": kind, "key": key, "name": "secret"}
        assert post(client, "/api/tags/add", body, token).status_code == 404
        assert post(client, "/api/tags/remove", body, token).status_code == 404
        seen = client.get("/api/tags/of", {"kind": kind, "key": key}, **bearer(token))
        assert seen.status_code == 404, seen.content
        assert post(client, "/api/tags/add", body, world["free"]).status_code == 200
    for kind, key in (("message", msg["a1"]), ("chat", str(a.pk))):
        body = {"kind": kind, "key": key, "name": "mine"}
        assert post(client, "/api/tags/add", body, token).status_code == 200
    person = person_create(
        name="Alice", identity_ids=list(Identity.objects.values_list("pk", flat=True))
    )
    shown = client.get(f"/api/people/{person.pk}", **bearer(token)).json()
    assert [c["chat_id"] for c in shown["chats"]] == [a.pk]
    everything = client.get(f"/api/people/{person.pk}", **bearer(world["free"])).json()
    assert {c["chat_id"] for c in everything["chats"]} == {c.pk for c in world["chats"].values()}
