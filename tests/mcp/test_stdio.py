"""`wirecat mcp` over stdio, driven by the SDK's own client: the command spawned as an
agent host would, on a real migrated store (the test's, committed), as the agent whose
token is in WIRECAT_AGENT_TOKEN."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from django.db import connection
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.mcp import scenario

pytestmark = pytest.mark.django_db(transaction=True)

WIRECAT = Path(sys.executable).with_name("wirecat")


def environment(state: Path, token: str | None) -> dict[str, str]:
    """The child's store is the test's own database file, in the test's state folder."""
    env = {
        "WIRECAT_STATE_DIR": str(state),
        "WIRECAT_DB": str(connection.settings_dict["NAME"]),
        "CELERY_BROKER_URL": f"sqla+sqlite:///{state / 'broker.db'}",
    }
    if token is not None:
        env["WIRECAT_AGENT_TOKEN"] = token
    return env


@asynccontextmanager
async def session(state: Path, token: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=str(WIRECAT), args=["mcp"], env=environment(state, token)
    )
    with open(state / "mcp-stderr.log", "a") as errors:
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


def test_an_agent_uses_every_tool_over_stdio(_state_dir: Path) -> None:
    w = scenario.world()

    async def run() -> None:
        async with session(_state_dir, w.token) as client:
            await scenario.tools_listed(client)
            await scenario.every_tool(client, w)
            await scenario.guarded_send(client, w)
            await scenario.bad_argument(client, w)
            await scenario.resources(client, w)
        async with session(_state_dir, w.reader) as client:
            await scenario.refused_scope(client, w)

    scenario.off_loop(lambda: anyio.run(run))
    # Nothing but the protocol went to stdout: the logs are on stderr.
    assert "MCP over stdio as agent 'mcp agent'" in (_state_dir / "mcp-stderr.log").read_text()


@pytest.mark.parametrize(
    ("token", "says"),
    [
        (None, "WIRECAT_AGENT_TOKEN is not set"),
        ("wct_nope_nope", "WIRECAT_AGENT_TOKEN holds no valid agent token"),
    ],
)
def test_it_refuses_to_start_without_a_valid_token(
    _state_dir: Path, token: str | None, says: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WIRECAT_AGENT_TOKEN"}
    out = subprocess.run(
        [str(WIRECAT), "mcp"],
        env={**env, **environment(_state_dir, token)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1
    assert says in out.stderr and out.stdout == ""
    assert "wct_nope_nope" not in out.stderr  # the token is never printed
