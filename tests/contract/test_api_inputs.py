"""What the contract run found, each as a test of its own (fast, no live server): integers
too large for the store, bodies that are not objects, lax fields, the schema's silence on
ranges, enums, patterns and the Idempotency-Key header, date-times without a zone, well
formed requests the archive's state refuses (409, not 422), unreadable bodies, and the
schema for agents' tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from archive.gateway.services.agents import SCOPES, agent_create
from archive.people.services import person_create
from archive.store.models import Identity
from archive.store.sink import batch_record
from tasks.services import project_create, task_create
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

BIG = 2**63  # one more than SQLite's largest integer


@pytest.fixture
def token(db: None) -> str:
    batch_record(batch=batch(message("1", "hello", sender="alice"), message("2", sender="bob")))
    project_create(key="HOME", name="Home")
    return agent_create(name="inputs", scopes=list(SCOPES)).token


def call(method: str, url: str, token: str, body: Any = None, **extra: Any) -> Any:
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", **extra}
    if method == "get":
        return client.get(url, **headers)
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    content_type = headers.pop("content_type", "application/json")
    return client.generic(method.upper(), url, raw, content_type=content_type, **headers)


def shape(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    answer = response.json()
    assert {"error", "detail"} <= set(answer), answer
    return dict(answer)


def test_integers_too_large_for_the_store_are_422_in_the_api_shape(token: str) -> None:
    """These answered 500 HTML (OverflowError in the ORM)."""
    accept = call("post", "/api/people/suggestions/accept", token, {"identity_ids": [1, BIG]})
    assert "identity_ids.1" in shape(accept, 422)["detail"]
    task = call(
        "post", "/api/tasks", token, '{"project": "HOME", "title": "x", "assignees": [1e23]}'
    )
    assert "assignees.0" in shape(task, 422)["detail"]
    for url in (f"/api/people/{BIG}", f"/api/chats/{BIG}/messages", f"/api/tasks?assignee={BIG}0"):
        shape(call("get", url, token), 422)
    link = call("post", "/api/people/1/link", token, {"identity_id": -1})
    shape(link, 422)


@pytest.mark.parametrize("body", ["null", "42", '"hello"', "[]", "true"])
def test_a_body_is_a_json_object(token: str, body: str) -> None:
    """`POST /api/projects/HOME` took null, 42 and "hello" as an empty change."""
    answer = shape(call("post", "/api/projects/HOME", token, body), 422)
    assert "the body must be a JSON object" in answer["detail"]


def test_unreadable_bodies_are_400_in_the_api_shape(token: str) -> None:
    assert "not JSON" in shape(call("post", "/api/projects", token, "{nope"), 400)["detail"]
    # A form body without its boundary (the session's CSRF check reads it first): was a 500.
    client = Client(enforce_csrf_checks=True)
    client.force_login(_owner())
    client.cookies["csrftoken"] = csrf = "inputs" * 5 + "ab"  # 32 characters
    odd = client.post(
        "/api/projects", "{}", content_type="multipart/form-data", HTTP_X_CSRFTOKEN=csrf
    )
    assert shape(odd, 400)["error"] == "Invalid"


def _owner() -> Any:
    from archive.owner.services import login_code_issue, owner_set_password

    return owner_set_password(code=login_code_issue().code, password="a long enough password")


@pytest.mark.parametrize(
    ("url", "body"),
    [
        ("/api/people/1/link", {"identity_id": "1"}),  # a string for an integer
        ("/api/projects/HOME", {"archived": "yes"}),  # a string for a boolean
        ("/api/projects/HOME", {"archived": 1}),  # a number for a boolean
        ("/api/tasks", {"project": "HOME", "title": "x", "due": 1_700_000_000}),  # seconds
        ("/api/tasks", {"project": "HOME", "title": "x", "status": "nope"}),
        ("/api/tasks", {"project": "home-", "title": "x"}),
        ("/api/tags/add", {"kind": "chat", "key": "msg_x", "name": 'say "hi"'}),
        ("/api/messages/mark_read", {"ids": ["msg_x"], "chat_id": 1}),
    ],
)
def test_fields_are_what_the_schema_says(token: str, url: str, body: dict[str, Any]) -> None:
    shape(call("post", url, token, body), 422)


def test_the_services_messages_survive_the_schemas(token: str) -> None:
    answer = shape(
        call("post", "/api/tags/add", token, {"kind": "x", "key": "1", "name": "a"}), 422
    )
    assert answer["detail"] == "body.kind: target kind: one of chat, person, message, note"
    answer = shape(call("post", "/api/tasks", token, {"project": "HOME", "title": "  "}), 422)
    assert answer["detail"] == "body.title: title: empty"


def test_well_formed_requests_the_state_refuses_are_409(token: str) -> None:
    alice, bob = Identity.objects.get(external_id="alice"), Identity.objects.get(external_id="bob")
    accept = call(
        "post", "/api/people/suggestions/accept", token, {"identity_ids": [alice.pk, bob.pk]}
    )
    assert "share no phone" in shape(accept, 409)["detail"]
    missing = call(
        "post", "/api/people/suggestions/accept", token, {"identity_ids": [alice.pk, 999]}
    )
    assert "identity 999 does not exist" in shape(missing, 404)["detail"]
    call("post", "/api/tags/add", token, {"kind": "message", "key": "1", "name": "a b"})
    merge = call("post", "/api/tags/merge", token, {"name": "a b", "into": "A  B"})
    assert "into itself" in shape(merge, 409)["detail"]
    parent = task_create(project="HOME", title="Parent")
    child = task_create(project="HOME", title="Child", parent=parent.key)
    cycle = call("post", f"/api/tasks/{parent.key}", token, {"parent": child.key})
    assert "own ancestor" in shape(cycle, 409)["detail"]
    # A chat is never named msg_…: well formed, and no such chat.
    shape(call("get", "/api/tags/of?kind=chat&key=msg_x", token), 404)


def test_answers_carry_their_zone(token: str) -> None:
    """`last_at` of a person's identities and chats came from raw SQL without a zone."""
    alice = Identity.objects.get(external_id="alice")
    person = person_create(name="Alice", identity_ids=[alice.pk])
    shown = call("get", f"/api/people/{person.pk}", token).json()
    for at in [shown["identities"][0]["last_at"], shown["chats"][0]["last_at"]]:
        assert at.endswith("Z"), at
    assert call("get", "/api/people", token).json()[0]["last_at"].endswith("Z")


def test_the_schema_says_what_the_server_accepts(token: str) -> None:
    spec = call("get", "/api/openapi.json", token).json()
    paths, components = spec["paths"], spec["components"]["schemas"]

    def parameter(path: str, name: str, method: str = "get") -> dict[str, Any]:
        found = [p for p in paths[path][method]["parameters"] if p["name"] == name]
        return dict(found[0])

    limit = parameter("/api/chats", "limit")["schema"]
    assert (limit["minimum"], limit["maximum"]) == (1, 500)
    assert parameter("/api/search/messages", "sort")["schema"]["enum"] == [
        "relevance",
        "newest",
        "oldest",
    ]
    assert parameter("/api/people", "sort")["schema"]["enum"] == ["recent", "name"]
    assert parameter("/api/tasks/{key}", "key")["schema"]["pattern"].startswith("^[A-Za-z]")
    assert parameter("/api/people/{person_id}", "person_id")["schema"]["maximum"] == 2**63 - 1
    key = parameter("/api/messages/send", "Idempotency-Key", "post")
    assert key["in"] == "header" and key["required"] is True
    assert components["SuggestionIn"]["properties"]["identity_ids"]["items"]["maximum"] == BIG - 1
    assert len(components["MarkReadIn"]["oneOf"]) == 3
    retry = paths["/api/chats"]["get"]["responses"]["429"]["headers"]["Retry-After"]
    assert retry["required"] is True


def test_agents_read_the_schema_with_their_token(token: str) -> None:
    """It redirected an agent's token to the login page; the docs page stays the owner's."""
    schema = call("get", "/api/openapi.json", token)
    assert schema.status_code == 200 and schema.json()["paths"]
    shape(call("get", "/api/openapi.json", "wct_nope_nope"), 401)
    docs = call("get", "/api/docs", token)
    assert docs.status_code == 302 and "/login/" in docs["Location"]
    assert Client().get("/api/openapi.json").status_code == 302


def test_an_agent_without_the_scope_learns_nothing_of_the_parameters(db: None) -> None:
    reader = agent_create(name="reader", scopes=["messages.read"]).token
    refused = call("post", "/api/tasks", reader, "not even json")
    assert shape(refused, 403)["error"] == "Forbidden"
