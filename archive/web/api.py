"""Who calls the API: an agent by its bearer token, or the owner by their session; and
what each operation needs (a scope an agent must hold; the owner holds them all)."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from django.http import HttpRequest
from ninja import Path, Query
from ninja.security import HttpBearer, django_auth

from archive.gateway.models import Agent
from archive.gateway.services.agents import SCOPES, agent_authenticate, agent_hit
from archive.web.schemas import ID_MAX
from wirecat.errors import Forbidden, Invalid

F = TypeVar("F", bound=Callable[..., Any])


class AgentToken(HttpBearer):
    """`Authorization: Bearer wct_…`: the agent, counted against its rate limit, and when
    the operation names a scope, refused (403) without it. Authentication runs before
    ninja reads the parameters, so an agent without the scope learns nothing of them."""

    openapi_scheme = "bearer"

    def __init__(self, scope: str | None = None) -> None:
        super().__init__()
        self.scope = scope

    def authenticate(self, request: HttpRequest, token: str) -> Agent | None:
        agent = agent_authenticate(token)
        if agent is not None:
            agent_hit(agent)  # RateLimited: 429 with Retry-After
            _scope_check(agent, self.scope)
        return agent


def _scope_check(agent: Agent, name: str | None) -> None:
    if name is not None and name not in agent.scopes:
        raise Forbidden(f"this needs the scope {name}; agent {agent.name!r} lacks it")


def caller_agent(request: HttpRequest) -> Agent | None:
    """The agent making the request, or None for the owner."""
    auth = getattr(request, "auth", None)
    return auth if isinstance(auth, Agent) else None


def caller_sees(request: HttpRequest, chat: Any) -> bool:
    """Whether the caller may see `chat` (an agent limited to accounts or chats sees only
    those; the owner everything): gateway.selectors' one rule."""
    from archive.gateway.selectors import agent_sees_chat

    return agent_sees_chat(caller_agent(request), chat)


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


RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds until a request is accepted again",
        "required": True,
        "schema": {"type": "integer", "minimum": 0},
    }
}


def links(module: str, **targets: tuple[str, dict[str, str]]) -> dict[str, Any]:
    """OpenAPI links from an answer to operations of `module` (a router's `__name__`):
    name=(view function, {parameter: runtime expression}). They say what a client (and
    schemathesis' stateful phase) can do next with what it got."""
    return {
        "links": {
            name: {
                "operationId": f"{module}_{view}".replace(".", "_"),  # ninja's operationId
                "parameters": parameters,
            }
            for name, (view, parameters) in targets.items()
        }
    }


def scope(name: str, *, responses: dict[int, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Route options: the scope an operation needs (`x-scope` in OpenAPI; an agent's token
    without it is refused before the parameters are read), the `Retry-After` of its 429,
    and what `responses` add to its answers (headers, links)."""
    assert name in SCOPES, name
    documented: dict[int, dict[str, Any]] = {429: {"headers": RETRY_AFTER}}
    for status, extra in (responses or {}).items():
        documented[status] = {**documented.get(status, {}), **extra}
    return {
        "auth": [AgentToken(scope=name), django_auth],
        "openapi_extra": {"x-scope": name, "responses": documented},
    }


def requires(name: str) -> Callable[[F], F]:
    """Refuse an agent without scope `name` (403 naming it); the owner passes."""
    assert name in SCOPES, name

    def wrap(view: F) -> F:
        @functools.wraps(view)
        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            agent = caller_agent(request)
            if agent is not None:
                _scope_check(agent, name)
            return view(request, *args, **kwargs)

        # ninja reads the parameters from the signature: give it the view's, with its
        # annotations resolved in the view's own module (they are strings here).
        del checked.__wrapped__
        checked.__signature__ = inspect.signature(view, eval_str=True)  # type: ignore[attr-defined]
        checked.__annotations__ = typing.get_type_hints(view)
        return checked  # type: ignore[return-value]

    return wrap


OFFSET_MAX = 1_000_000
# A public id in a path: its type's prefix and a ULID (letters and digits, which also keeps
# a `/` or a `?` out of the path). Format with the prefix: PUBLIC_ID.format("msg").
PUBLIC_ID = "^{}_[0-9A-Za-z]{{1,40}}$"


def limit_query(default: int, most: int) -> Any:
    """A list operation's `limit` query parameter: 1 to `most`."""
    return Query(default, ge=1, le=most, description=f"how many, 1 to {most:,}")


def offset_query() -> Any:
    """A list operation's `offset` query parameter: 0 to OFFSET_MAX."""
    return Query(0, ge=0, le=OFFSET_MAX, description=f"how many to skip, 0 to {OFFSET_MAX:,}")


def row_id(what: str) -> Any:
    """A row id in a path: 1 to 2**63 - 1 (a larger one would overflow in the ORM)."""
    return Path(..., ge=1, le=ID_MAX, description=f"the {what}'s id")


def public_id(prefix: str, what: str) -> Any:
    """A public id (`prefix`_…) in a path."""
    return Path(..., pattern=PUBLIC_ID.format(prefix), description=f"the {what}'s id")


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
