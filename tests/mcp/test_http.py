"""MCP over streamable HTTP at /mcp, driven by the SDK's own client against a live
server: the same tools as the agent whose bearer token comes with each request, and
the door: agents only (no token, a bad one or the owner's session: 401 in the API's
shape), hosts as ALLOWED_HOSTS says, a bounded body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from django.test import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from archive.gateway.services.agents import agent_create
from archive.mcp.views import MAX_BODY
from tests.mcp import scenario

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
ACCEPT = "application/json, text/event-stream"


def post(client: Client, **meta: Any) -> Any:
    """A ping posted to /mcp as a client of the transport would (off the browser tests'
    event loop, as a server's request thread is)."""
    return scenario.off_loop(
        lambda: client.post(
            "/mcp", json.dumps(PING), content_type="application/json", HTTP_ACCEPT=ACCEPT, **meta
        )
    )


@asynccontextmanager
async def session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


@pytest.mark.django_db(transaction=True)
def test_an_agent_uses_every_tool_over_http(live_server: Any) -> None:
    w = scenario.world()

    async def run() -> None:
        async with session(live_server.url, w.token) as client:
            await scenario.tools_listed(client)
            await scenario.every_tool(client, w)
            await scenario.guarded_send(client, w)
            await scenario.bad_argument(client, w)
            await scenario.resources(client, w)
        async with session(live_server.url, w.reader) as client:
            await scenario.refused_scope(client, w)

    scenario.off_loop(lambda: anyio.run(run))


@pytest.mark.django_db(transaction=True)
def test_only_an_agents_token_opens_the_door(owner_client: Client) -> None:
    token = agent_create(name="door", scopes=["messages.read"]).token
    auth: dict[str, str]
    for client, auth in (
        (Client(), {}),
        (Client(), {"HTTP_AUTHORIZATION": "Bearer wct_nope_nope"}),
        (owner_client, {}),  # the owner's session is not an agent
    ):
        answer = post(client, **auth)
        assert answer.status_code == 401 and answer["WWW-Authenticate"].startswith("Bearer")
        assert answer.json() == {
            "error": "Unauthorized",
            "detail": "a valid agent token is needed (Bearer wct_...)",
        }
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    answer = post(Client(), **auth)
    assert answer.status_code == 200
    assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    # Hosts: Django's ALLOWED_HOSTS decides, as for every page.
    elsewhere = post(Client(), **auth, HTTP_HOST="evil.example")
    assert elsewhere.status_code == 400
    # A body over the bound is refused before it is read.
    big = post(Client(), **auth, CONTENT_LENGTH=str(MAX_BODY + 1))
    assert big.status_code == 413 and big.json()["error"] == "TooLarge"
