"""`wirecat mcp`: the MCP server over stdio, for an agent host that starts it as a child.
The agent's token comes from the environment (WIRECAT_AGENT_TOKEN), never the command
line; every tool call is an API request made with it (archive/mcp/). Only the protocol
goes to stdout: logs and errors go to stderr."""

from __future__ import annotations

import logging
import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from archive.gateway.services.agents import agent_authenticate
from archive.mcp.server import build

TOKEN_VARIABLE = "WIRECAT_AGENT_TOKEN"  # noqa: S105 - the variable's name, not a token
log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = f"Serve the MCP tools over stdio as the agent whose token is in ${TOKEN_VARIABLE}."

    def handle(self, *args: Any, **options: Any) -> None:
        token = os.environ.get(TOKEN_VARIABLE, "").strip()
        if not token:
            raise CommandError(
                f"{TOKEN_VARIABLE} is not set: put an agent's token (made on the Agents page)"
                " in the agent host's environment for this server"
            )
        agent = agent_authenticate(token)
        if agent is None:
            raise CommandError(
                f"{TOKEN_VARIABLE} holds no valid agent token (unknown, wrong or revoked):"
                " make one on the Agents page"
            )
        log.info("MCP over stdio as agent %r", agent.name)
        anyio.run(_serve, token)


async def _serve(token: str) -> None:
    server = build(token)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
