"""The MCP server (the SDK's low-level `Server`): tools and resource templates from the
table in tools.py, each call an API request made as the calling agent. Over stdio the
agent is the one whose token `wirecat mcp` was started with; over HTTP, the one whose
bearer token came with the request (the SDK hands the HTTP request to the handlers)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from archive.mcp.dispatch import REFUSED, RESOURCE_NOT_FOUND, Caller, call
from archive.mcp.tools import BEARER, RESOURCES, describe, operations, resource_operations

INSTRUCTIONS = (
    "WireCat: the owner's archive of messages from every messenger, with their notes, "
    "tasks and meetings. Each tool is an operation of WireCat's JSON API with the same "
    "arguments, answers, scopes and errors (an error's message is the API's detail)."
)


def _caller(ctx: ServerRequestContext[Any, Any], token: str | None) -> Caller:
    """Who the call is made as: stdio's agent, or the bearer token, host and scheme of the
    HTTP request the SDK hands the handler (`ctx.request`)."""
    if token is not None:
        return Caller(token=token)
    request = ctx.request
    headers = getattr(request, "headers", None)
    found = BEARER.match(headers.get("authorization", "")) if headers is not None else None
    if headers is None or found is None:  # the view lets no such request in: say so all the same
        raise MCPError(REFUSED, "a valid agent token is needed", {"error": "Unauthorized"})
    scheme = getattr(getattr(request, "url", None), "scheme", "http")
    return Caller(token=found.group(1), host=headers.get("host", ""), scheme=scheme)


def _result(answer: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(answer, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=answer
    )


def build(token: str | None = None) -> Server[Any]:
    """The server; `token` is the agent's for stdio, None to take each HTTP request's."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=name,
                description=describe(op),
                input_schema=op.input_schema,
                annotations=types.ToolAnnotations(
                    read_only_hint=op.method == "GET",
                    destructive_hint=False if op.method == "GET" else None,
                    open_world_hint=name == "send",
                ),
            )
            for name, op in operations().items()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        op = operations().get(params.name)
        if op is None:
            raise MCPError(types.INVALID_PARAMS, f"no tool named {params.name!r}")
        caller = _caller(ctx, token)
        answer = await _off_loop(call)(op, dict(params.arguments or {}), caller)
        return _result(answer)

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[])  # by reference only: the templates

    async def list_templates(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = []
        for uri, op in resource_operations().items():
            name = RESOURCES[uri][0]
            templates.append(
                types.ResourceTemplate(
                    uri_template=uri,
                    name=name,
                    description=describe(op),
                    mime_type="application/json",
                )
            )
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        for template, op in resource_operations().items():
            prefix = template.split("{", 1)[0]
            value = uri[len(prefix) :] if uri.startswith(prefix) else ""
            if value:
                name = op.path_params[0]
                answer = await _off_loop(call)(op, {name: value}, _caller(ctx, token))
                text = json.dumps(answer, ensure_ascii=False)
                return types.ReadResourceResult(
                    contents=[
                        types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
                    ]
                )
        raise MCPError(RESOURCE_NOT_FOUND, f"no resource at {uri}", {"uri": uri})

    return Server(
        "wirecat",
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


def _off_loop(function: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    """`function` run off the event loop, in the thread Django's sync code shares (the
    HTTP view's own thread when it runs the server; one thread for stdio)."""
    return sync_to_async(function, thread_sensitive=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wirecat")
    except PackageNotFoundError:
        return "0"
