"""One HTTP request through the SDK's streamable HTTP transport, as ASGI, in stateless
JSON mode: a session manager per request (it keeps nothing between requests, and
making and starting one costs about 0.2 ms), its answer gathered whole."""

from __future__ import annotations

import functools
import logging
from collections.abc import MutableMapping
from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from archive.mcp.server import build

# Django has already held the Host against ALLOWED_HOSTS (request.get_host()): the SDK's
# own host and origin lists would be a second, differing list of the same thing. Tokens
# are never cookies, so a page elsewhere cannot make a browser send one.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)

# A manager per request says it started and stopped at INFO, twice a request: not news.
for _name in ("mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_name).setLevel(logging.WARNING)


@functools.cache
def _server() -> Server[Any]:
    return build(token=None)


async def serve(
    scope: dict[str, Any], body: bytes, max_body: int
) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of the SDK's answer to the request `scope` with `body`."""
    answered = anyio.Event()
    sent_body = False
    status = 500
    headers: list[tuple[str, str]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.extend(
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", [])
            )
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    manager = StreamableHTTPSessionManager(
        app=_server(),
        json_response=True,
        stateless=True,
        security_settings=_SECURITY,
        max_request_body_size=max_body,
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)
