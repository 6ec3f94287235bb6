"""Who calls the API: an agent by its bearer token, or the owner by their session; and
what each operation needs (a scope an agent must hold; the owner holds them all)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest
from ninja.security import HttpBearer

from archive.gateway.models import Agent
from archive.gateway.services.agents import SCOPES, agent_authenticate, agent_hit
from wirecat.errors import Forbidden, Invalid

F = TypeVar("F", bound=Callable[..., Any])


class AgentToken(HttpBearer):
    """`Authorization: Bearer wct_…`: the agent, counted against its rate limit."""

    openapi_scheme = "bearer"

    def authenticate(self, request: HttpRequest, token: str) -> Agent | None:
        agent = agent_authenticate(token)
        if agent is not None:
            agent_hit(agent)  # RateLimited: 429 with Retry-After
        return agent


def caller_agent(request: HttpRequest) -> Agent | None:
    """The agent making the request, or None for the owner."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, Agent) else None


def caller_actor(request: HttpRequest) -> str:
    """Who a write is recorded as having made (the `actor` every service takes):
    "agent:<name>" for an agent's token, "owner" for the owner's session."""
    agent = caller_agent(request)
    return f"agent:{agent.name}" if agent is not None else "owner"


def answers(ok: Any, status: int = 200) -> dict[int, Any]:
    """The documented answers of an operation: `ok`, and the one error shape for every
    error it can give (bad input, no or a bad token, a missing scope, not found, a
    conflict, too many requests)."""
    from archive.web.schemas import ErrorOut

    return {status: ok, **dict.fromkeys((400, 401, 403, 404, 409, 422, 429), ErrorOut)}


def scope(name: str) -> dict[str, Any]:
    """Route options documenting the scope an operation needs (`x-scope` in OpenAPI)."""
    assert name in SCOPES, name
    return {"openapi_extra": {"x-scope": name}}


def requires(name: str) -> Callable[[F], F]:
    """Refuse an agent without scope `name` (403 naming it); the owner passes."""
    assert name in SCOPES, name

    def wrap(view: F) -> F:
        @functools.wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            agent = caller_agent(request)
            if agent is not None and name not in agent.scopes:
                raise Forbidden(f"this needs the scope {name}; agent {agent.name!r} lacks it")
            return view(request, *args, **kwargs)

        # ninja reads the parameters from the signature: give it the view's, with its
        # annotations resolved in the view's own module (they are strings here).
        del checked.__wrapped__
        checked.__signature__ = inspect.signature(view, eval_str=True)  # type: ignore[attr-defined]
        checked.__annotations__ = typing.get_type_hints(view)
        return checked  # type: ignore[return-value]

    return wrap


OFFSET_MAX = 1_000_000


def window(limit: int, offset: int, most: int) -> slice:
    """The slice a list operation's `limit` and `offset` ask for; Invalid (422) outside
    1..most and 0..OFFSET_MAX (a larger number would not even fit SQLite's integers)."""
    if not 1 <= limit <= most or not 0 <= offset <= OFFSET_MAX:
        raise Invalid(f"limit: between 1 and {most}; offset: between 0 and {OFFSET_MAX:,}")
    return slice(offset, offset + limit)


def agent_only(request: HttpRequest, what: str) -> Agent:
    agent = caller_agent(request)
    if agent is None:
        raise Forbidden(f"{what} belongs to an agent: call with the agent's token")
    return agent
