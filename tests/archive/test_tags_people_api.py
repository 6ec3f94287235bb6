"""The JSON API for tags and people: the same services as the pages, the same errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from archive.store.models import Chat, Identity, Message
from archive.store.sink import batch_record
from archive.tags.models import Tagging
from tests.factories import batch, message

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(db: None) -> list[Message]:
    batch_record(
        batch=batch(
            message("1", "train one", sender="alice", minutes=0),
            message("2", "train two", sender="bob", minutes=1),
        )
    )
    Identity.objects.filter(external_id="bob").update(email="bob@example.com")
    return list(Message.objects.order_by("id"))


def post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_tag_api_round_trip(owner_client: Client, stored: list[Message]) -> None:
    first = stored[0].public_id
    added = post(owner_client, "/api/tags/add", {"kind": "message", "key": first, "name": "Rail"})
    assert added.status_code == 200 and added.json()["name"] == "Rail"
    again = post(owner_client, "/api/tags/add", {"kind": "message", "key": first, "name": "rail"})
    assert again.status_code == 200 and Tagging.objects.count() == 1
    chat = Chat.objects.get()
    post(owner_client, "/api/tags/add", {"kind": "chat", "key": str(chat.pk), "name": "work"})
    listed = owner_client.get("/api/tags").json()
    assert [(t["name"], t["chats"], t["people"], t["messages"]) for t in listed] == [
        ("Rail", 0, 0, 1),
        ("work", 1, 0, 0),
    ]
    assert listed[0]["colour"] == added.json()["colour"]
    hits = owner_client.get("/api/search/messages", {"q": "tag:work"}).json()["hits"]
    assert {hit["id"] for hit in hits} == {m.public_id for m in stored}
    assert hits[0]["tagged"] == ["work (chat)"]
    on = owner_client.get("/api/tags/of", {"kind": "message", "key": first}).json()
    assert [tag["name"] for tag in on] == ["Rail"]
    taken = post(owner_client, "/api/tags/rename", {"name": "work", "new_name": "RAIL"})
    assert taken.status_code == 409 and "merge" in taken.json()["detail"]
    merged = post(owner_client, "/api/tags/merge", {"name": "work", "into": "rail"})
    assert merged.json()["name"] == "Rail"
    removed = post(
        owner_client, "/api/tags/remove", {"kind": "message", "key": first, "name": "rail"}
    )
    assert removed.json() == {"removed": 1}
    assert post(owner_client, "/api/tags/delete", {"name": "rail"}).json() == {"removed": 1}


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"kind": "account", "key": "1", "name": "x"}, 422, "target kind: one of"),
        ({"kind": "message", "key": "msg_nope", "name": "x"}, 404, "does not exist"),
        ({"kind": "chat", "key": "1; DROP TABLE", "name": "x"}, 422, "chat: not an id"),
        ({"kind": "chat", "key": "999", "name": "x"}, 404, "chat 999 does not exist"),
    ],
)
def test_tag_api_errors_name_what_and_where(
    owner_client: Client, stored: list[Message], body: dict[str, str], status: int, detail: str
) -> None:
    response = post(owner_client, "/api/tags/add", body)
    assert response.status_code == status and detail in response.json()["detail"]


def test_people_api_round_trip(owner_client: Client, stored: list[Message]) -> None:
    alice = Identity.objects.get(external_id="alice")
    bob = Identity.objects.get(external_id="bob")
    made = post(owner_client, "/api/people", {"name": "Alice", "identity_ids": [alice.pk]})
    assert made.status_code == 200
    person = made.json()
    assert person["messages"] == 1 and person["identities"][0]["identity"]["id"] == alice.pk
    assert person["chats"][0]["messages"] == 1
    linked = post(owner_client, f"/api/people/{person['id']}/link", {"identity_id": bob.pk})
    assert linked.json()["messages"] == 2
    listed = owner_client.get("/api/people", {"q": "bob@example"}).json()
    assert [p["id"] for p in listed] == [person["id"]] and listed[0]["identity_count"] == 2
    unlinked = post(owner_client, f"/api/people/{person['id']}/unlink", {"identity_id": bob.pk})
    assert unlinked.json()["messages"] == 1
    again = post(owner_client, f"/api/people/{person['id']}/unlink", {"identity_id": bob.pk})
    assert again.status_code == 404
    assert owner_client.get("/api/people/999").status_code == 404
    assert owner_client.get("/api/people", {"sort": "shoe"}).status_code == 422
    assert owner_client.get("/api/people/suggestions").json() == []
    refused = post(
        owner_client, "/api/people/suggestions/accept", {"identity_ids": [alice.pk, bob.pk]}
    )
    # Well formed (two existing identities): the archive's state refuses it, 409 not 422.
    assert refused.status_code == 409 and "share no phone" in refused.json()["detail"]


def test_tag_and_people_api_need_authentication(client: Client, stored: list[Message]) -> None:
    assert client.get("/api/tags").status_code == 401
    assert client.get("/api/people").status_code == 401
    assert (
        post(client, "/api/tags/add", {"kind": "chat", "key": "1", "name": "x"}).status_code == 401
    )
    assert not Tagging.objects.exists()


def test_openapi_documents_tags_and_people(owner_client: Client) -> None:
    paths = owner_client.get("/api/openapi.json").json()["paths"]
    for path in ("/api/tags", "/api/tags/add", "/api/people", "/api/people/{person_id}/link"):
        assert path in paths, path


def test_openapi_has_examples_and_scopes() -> None:
    from wirecat.api import api

    spec = api.get_openapi_schema()
    components = spec["components"]["schemas"]
    for name in ("SendIn", "MarkReadIn", "TagTargetIn", "PersonIn"):
        assert components[name].get("examples"), name
    send = spec["paths"]["/api/messages/send"]["post"]
    assert send["x-scope"] == "messages.send"
    assert {"202", "403", "409", "422", "429"} <= set(map(str, send["responses"]))
    assert any(p["name"] == "Idempotency-Key" for p in send["parameters"])
