"""What both transports' tests share: a store with something of every kind (written by
the sink and the services), agents, and a session that lists the tools, calls every one
of them, reads the resources and meets the API's refusals through the SDK's client."""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.test import Client
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from archive.connectors.sending import OutboundMessage, register_sender, unregister_sender
from archive.files.services import attachment_texts_extract
from archive.gateway.services.agents import SCOPES, agent_create
from archive.gateway.services.sends import send_approve
from archive.mcp.tools import TOOLS, operations
from archive.people.models import Person
from archive.store.models import Account, Chat, Message
from archive.store.sink import batch_record
from meetings.models import Meeting
from notes.services.notes import note_create
from tasks.services import project_create, task_create
from tests.factories import T0, batch, message
from tests.files.test_services import png, store_file
from tests.meetings.search_factories import meeting

T = TypeVar("T")


@dataclass
class World:
    token: str  # an agent with every scope
    reader: str  # an agent that may only read messages
    chat: Chat
    account: Account
    note: str
    task: str
    meeting: str
    attachment: str
    message: str
    person: int


def world() -> World:
    batch_record(
        batch=batch(
            message("1", "the invoice is due on friday"),
            message("2", "see you at lunch", minutes=1, sender="bob"),
            message("3", "elsewhere entirely", chat="chat-2", minutes=2),
        )
    )
    photo = store_file(png(), "whiteboard.png", "image/png", minutes=3)
    attachment_texts_extract(limit=10, budget_seconds=60)
    Account.objects.update(send_permission="ask")  # every send waits for the owner
    Chat.objects.filter(external_id="chat-1").update(send_allowed=True)
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Fix the boiler")
    note = note_create(title="Boiler", body="Call the plumber about the invoice.")
    planned = meeting("Weekly sync", participants=[("Alice", "alice@example.com")])
    since = T0 - timedelta(days=1)  # the history is unread for these agents
    return World(
        token=agent_create(name="mcp agent", scopes=list(SCOPES), since=since).token,
        reader=agent_create(name="reader", scopes=["messages.read"], since=since).token,
        chat=Chat.objects.get(external_id="chat-1"),
        account=Account.objects.get(),
        note=note.public_id,
        task=task.key,
        meeting=Meeting.objects.get(pk=planned.pk).public_id,
        attachment=photo.public_id,
        message=Message.objects.get(external_id="1").public_id,
        person=Person.objects.order_by("pk").values_list("pk", flat=True)[0],
    )


def _api(method: str, path: str, token: str, body: Any = None, **headers: Any) -> Any:
    """The JSON API's own answer, for comparing an MCP error's message with it."""
    return Client().generic(
        method,
        path,
        json.dumps(body) if body is not None else "",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        **headers,
    )


# The API's answer and the store's state are read off the event loop (the ORM is sync).
api = sync_to_async(_api)


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


async def refused(session: ClientSession, tool: str, /, **arguments: Any) -> MCPError:
    try:
        await session.call_tool(tool, arguments)
    except MCPError as error:
        return error
    raise AssertionError(f"{tool} was not refused")


async def tools_listed(session: ClientSession) -> None:
    """Every tool of the table, with the API operation's schema: strict, with the same
    required fields, and described with its scope."""
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == set(TOOLS)
    for name, op in operations().items():
        tool = listed[name]
        assert tool.input_schema == op.input_schema
        assert tool.input_schema["additionalProperties"] is False
        assert f"`{op.scope}`" in (tool.description or "")
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (op.method == "GET")
    send = listed["send"].input_schema
    assert set(send["required"]) == {"idempotency_key", "account_id", "chat_id", "text"}
    assert send["properties"]["text"]["maxLength"] == 10_000  # the API's own bound
    assert listed["message"].input_schema["properties"]["message_id"]["pattern"]
    assert "oneOf" in listed["mark_read"].input_schema  # ids, up_to or chat_id
    answers = listed["conversation_batch_answers"].input_schema["properties"]["answers"]
    assert answers["items"]["additionalProperties"] is False  # nested $refs inlined


async def every_tool(session: ClientSession, w: World) -> None:
    """Each tool once (most more), on the store's real data."""
    found = await call(session, "search_messages", q="invoice")
    assert [hit["id"] for hit in found["hits"]] == [w.message]
    everything = await call(session, "search_all", q="invoice", mode="words")
    assert {item["kind"] for item in everything["items"]} >= {"message", "note"}

    unread = await call(session, "unread")
    ids = [m["id"] for m in unread["messages"]]
    assert w.message in ids
    await call(session, "mark_read", ids=[w.message])
    assert w.message not in [m["id"] for m in (await call(session, "unread"))["messages"]]

    shown = await call(session, "message", message_id=w.message, context=1)
    assert shown["message"]["text"] == "the invoice is due on friday"
    chats = (await call(session, "chats", limit=10))["result"]
    assert {c["id"] for c in chats} >= {w.chat.pk}
    page = await call(session, "chat_messages", chat_id=w.chat.pk, limit=5)
    assert w.message in [m["id"] for m in page["messages"]]

    people = await call(session, "people", limit=50)
    assert w.person in [p["id"] for p in people["result"]]
    assert (await call(session, "person", person_id=w.person))["id"] == w.person

    target = {"kind": "chat", "key": str(w.chat.pk), "name": "work"}
    await call(session, "tag_add", **target)
    assert "work" in [t["name"] for t in (await call(session, "tags"))["result"]]
    on = await call(session, "tags_of", kind="chat", key=str(w.chat.pk))
    assert [t["name"] for t in on["result"]] == ["work"]
    await call(session, "tag_remove", **target)

    assert w.note in [n["id"] for n in (await call(session, "notes"))["notes"]]
    note = await call(session, "note", id=w.note)
    made = await call(session, "note_create", title="Plumber", body="Ring on Monday.")
    edited = await call(
        session, "note_update", id=made["id"], revision=made["revision"], body="Ring Tuesday."
    )
    assert edited["revision"] > made["revision"] and note["title"] == "Boiler"
    notes_found = await call(session, "search_notes", q="plumber")
    assert w.note in json.dumps(notes_found)

    assert w.task in [t["key"] for t in (await call(session, "tasks"))["result"]]
    assert (await call(session, "task", key=w.task))["title"] == "Fix the boiler"
    new = await call(session, "task_create", project="HOME", title="Pay the invoice")
    await call(session, "task_update", key=new["key"], status="in_progress")
    await call(session, "task_comment", key=new["key"], text="Paid half.")
    assert (await call(session, "task", key=new["key"]))["status"] == "in_progress"

    status = await call(session, "conversation_batch_status", chat=w.chat.pk)
    assert status["chat_id"] == w.chat.pk
    offered = (await call(session, "conversation_batch_next", chat=w.chat.pk, size=5))["batch"]
    first = offered["messages"][0]["id"]
    answer = {"message": first, "parent": None, "confidence": 0.9}
    stored = await call(
        session, "conversation_batch_answers", batch_id=offered["id"], model="m-1", answers=[answer]
    )
    assert stored["stored"] == 1 and stored["chat_id"] == w.chat.pk

    waiting = await call(session, "attachments", needs_text=True)
    assert [a["id"] for a in waiting["attachments"]] == [w.attachment]
    written = await call(
        session, "attachment_text_write", att_id=w.attachment, text="Ship by May", model="v-1"
    )
    assert written["origin"] == "agent" and written["extractor"] == "agent:mcp agent"
    assert (await call(session, "attachment_text", att_id=w.attachment))["text"] == "Ship by May"

    window = await call(session, "meetings", after="2025-03-01", before="2025-03-10")
    assert [m["id"] for m in window["meetings"]] == [w.meeting]
    assert (await call(session, "meeting", id=w.meeting))["title"] == "Weekly sync"
    assert "hits" in await call(session, "search_meetings", q="sync")


async def guarded_send(session: ClientSession, w: World) -> None:
    """A send waits for the owner ("ask"); its key answers a retry with the first answer
    and sends nothing more; the owner's approval is what the agent then reads."""
    body = {"account_id": w.account.pk, "chat_id": w.chat.pk, "text": "On my way"}
    first = await call(session, "send", idempotency_key="mcp-1", **body)
    assert first["status"] == "awaiting" and first["send_id"].startswith("snd_")
    again = await call(session, "send", idempotency_key="mcp-1", **body)
    assert again == first
    assert await sync_to_async(Message.objects.filter(text="On my way").count)() == 1
    other = await refused(session, "send", idempotency_key="mcp-1", **{**body, "text": "Late"})
    expected = await api("POST", "/api/messages/send", w.token, {**body, "text": "Late"},
                   HTTP_IDEMPOTENCY_KEY="mcp-1")  # fmt: skip
    assert expected.status_code == 409
    assert other.message == expected.json()["detail"] and other.data["status"] == 409
    assert (await call(session, "send_status", send_id=first["send_id"]))["status"] == "awaiting"
    await sync_to_async(owner_approves)(first["send_id"])
    after = await call(session, "send_status", send_id=first["send_id"])
    assert after["status"] == "queued"  # for the delivery job, which the worker runs


def owner_approves(send_id: str) -> None:
    """The owner approves on the Sends page; the account's provider can send (a double at
    the provider's edge: nothing is delivered here, the delivery job is the worker's)."""

    def provider(outbound: OutboundMessage) -> str:
        raise AssertionError("delivered in the test process")

    register_sender("testnet", provider)
    try:
        send_approve(send_id=send_id)
    finally:
        unregister_sender("testnet")


async def bad_argument(session: ClientSession, w: World) -> None:
    """A bad argument: the API's 422 and its detail, word for word."""
    error = await refused(session, "chats", limit=0)
    expected = (await api("GET", "/api/chats?limit=0", w.token)).json()
    assert error.message == expected["detail"] and "query.limit" in error.message
    assert error.data == {**expected, "status": 422}
    body_error = await refused(session, "note_create", title="")
    expected_body = await api("POST", "/api/notes", w.token, {"title": ""})
    assert body_error.message == expected_body.json()["detail"]
    unknown = await refused(session, "chats", limit=5, colour="red")
    assert "colour" in unknown.message


async def refused_scope(session: ClientSession, w: World) -> None:
    """An agent without the scope: the API's 403 detail (run as the reader)."""
    body = {"account_id": w.account.pk, "chat_id": w.chat.pk, "text": "hi"}
    error = await refused(session, "send", idempotency_key="r-1", **body)
    expected = await api("POST", "/api/messages/send", w.reader, body, HTTP_IDEMPOTENCY_KEY="r-1")
    assert expected.status_code == 403
    assert error.message == expected.json()["detail"] and "messages.send" in error.message
    assert error.data["status"] == 403 and error.data["error"] == "Forbidden"
    note_error = await refused(session, "note", id=w.note)
    assert "notes.read" in note_error.message
    chat = await session.read_resource(f"wirecat://chat/{w.chat.pk}")
    assert w.message in chat.contents[0].text  # type: ignore[union-attr]


async def resources(session: ClientSession, w: World) -> None:
    """A chat, a person and a note by reference, read through the same GET operations."""
    templates = (await session.list_resource_templates()).resource_templates
    assert {t.uri_template for t in templates} == {
        "wirecat://chat/{chat_id}",
        "wirecat://person/{person_id}",
        "wirecat://note/{id}",
    }
    note = await session.read_resource(f"wirecat://note/{w.note}")
    text = note.contents[0].text  # type: ignore[union-attr]
    assert json.loads(text)["id"] == w.note
    assert json.loads(text) == (await api("GET", f"/api/notes/{w.note}", w.token)).json()
    chat = await session.read_resource(f"wirecat://chat/{w.chat.pk}")
    assert w.message in chat.contents[0].text  # type: ignore[union-attr]
    read = await session.read_resource(f"wirecat://person/{w.person}")
    assert json.loads(read.contents[0].text)["id"] == w.person  # type: ignore[union-attr]
    try:
        await session.read_resource("wirecat://note/note_01JD8ZV3Q0V6Y1T9B2C4D5E6F7")
    except MCPError as error:
        assert error.data["status"] == 404 and "does not exist" in error.message
    else:
        raise AssertionError("a missing note was read")


def off_loop(work: Callable[[], T]) -> T:
    """`work()` on a thread of its own: the browser tests' Playwright keeps an event loop
    running in the main thread for the rest of the session, and neither anyio.run nor
    asgiref's async_to_sync (the /mcp view) may start inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(work).result()
