"""Which API operation each MCP tool and resource is, and the tool's input schema, read
from the API's own OpenAPI: the path and query parameters, the headers an operation
needs (`Idempotency-Key` as `idempotency_key`) and the JSON body's fields, side by side
in one object that takes nothing else. The API checks every call itself, so a tool is
exactly as strict as its operation and answers its errors word for word."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

# `Authorization: Bearer <token>`, as the API reads it.
BEARER = re.compile(r"^Bearer\s+(\S+)\s*$", re.IGNORECASE)

# name -> (method, path) of the operation in the API's OpenAPI.
TOOLS: dict[str, tuple[str, str]] = {
    "search_messages": ("GET", "/api/search/messages"),
    "search_all": ("GET", "/api/search/all"),
    "unread": ("GET", "/api/messages/unread"),
    "mark_read": ("POST", "/api/messages/mark_read"),
    "message": ("GET", "/api/messages/{message_id}"),
    "chats": ("GET", "/api/chats"),
    "chat_messages": ("GET", "/api/chats/{chat_id}/messages"),
    "people": ("GET", "/api/people"),
    "person": ("GET", "/api/people/{person_id}"),
    "tags": ("GET", "/api/tags"),
    "tags_of": ("GET", "/api/tags/of"),
    "tag_add": ("POST", "/api/tags/add"),
    "tag_remove": ("POST", "/api/tags/remove"),
    "send": ("POST", "/api/messages/send"),
    "send_status": ("GET", "/api/sends/{send_id}"),
    "notes": ("GET", "/api/notes"),
    "note": ("GET", "/api/notes/{id}"),
    "note_create": ("POST", "/api/notes"),
    "note_update": ("PATCH", "/api/notes/{id}"),
    "search_notes": ("GET", "/api/search/notes"),
    "tasks": ("GET", "/api/tasks"),
    "task": ("GET", "/api/tasks/{key}"),
    "task_create": ("POST", "/api/tasks"),
    "task_update": ("POST", "/api/tasks/{key}"),
    "task_comment": ("POST", "/api/tasks/{key}/comments"),
    "conversation_batch_next": ("GET", "/api/conversations/batches/next"),
    "conversation_batch_status": ("GET", "/api/conversations/batches/status"),
    "conversation_batch_answers": ("POST", "/api/conversations/batches/{batch_id}/answers"),
    "attachments": ("GET", "/api/attachments"),
    "attachment_text": ("GET", "/api/attachments/{att_id}/text"),
    "attachment_text_write": ("PUT", "/api/attachments/{att_id}/text"),
    "meetings": ("GET", "/api/meetings"),
    "meeting": ("GET", "/api/meetings/{id}"),
    "search_meetings": ("GET", "/api/search/meetings"),
}

# Resource templates: a chat (its newest messages), a person and a note by reference,
# each read through the GET operation of the same path (the template's variable is the
# path parameter's name).
RESOURCES: dict[str, tuple[str, str]] = {
    "wirecat://chat/{chat_id}": ("chat", "/api/chats/{chat_id}/messages"),
    "wirecat://person/{person_id}": ("person", "/api/people/{person_id}"),
    "wirecat://note/{id}": ("note", "/api/notes/{id}"),
}


@dataclass(frozen=True)
class Operation:
    """One API operation as a tool sees it: where each argument goes."""

    method: str
    path: str
    scope: str
    summary: str
    description: str
    input_schema: dict[str, Any]
    path_params: tuple[str, ...] = ()
    query_params: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)  # argument -> header name
    body_fields: tuple[str, ...] = ()
    has_body: bool = False


def _resolve(node: Any, components: dict[str, Any], depth: int = 0) -> Any:
    """`node` with every `$ref` to a component replaced by the component (the schemas
    nest a few levels; a cycle would be a bug in the API's schemas)."""
    if depth > 20:
        raise ValueError("the API's schemas nest too deep to inline")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            target = components[ref.rsplit("/", 1)[1]]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {**_resolve(target, components, depth + 1), **rest}
        return {k: _resolve(v, components, depth) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(item, components, depth) for item in node]
    return node


def _argument_name(header: str) -> str:
    return header.lower().replace("-", "_")


def operation(spec: dict[str, Any], method: str, path: str) -> Operation:
    """The operation `method path` of the OpenAPI `spec`, with the tool's input schema."""
    op = spec["paths"][path][method.lower()]
    components = spec.get("components", {}).get("schemas", {})
    properties: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, list[str]] = {"path": [], "query": []}
    headers: dict[str, str] = {}
    for param in op.get("parameters", []):
        kind, name = param["in"], param["name"]
        shape = dict(_resolve(param.get("schema", {}), components))
        if param.get("description") and "description" not in shape:
            shape["description"] = param["description"]
        if kind == "header":
            argument = _argument_name(name)
            headers[argument] = name
            shape["description"] = f"{shape.get('description', '')} (the {name} header)".strip()
        elif kind in where:
            argument = name
            where[kind].append(name)
        else:
            raise ValueError(f"{method} {path}: a {kind} parameter has no place in a tool")
        properties[argument] = shape
        if param.get("required"):
            required.append(argument)
    extra: dict[str, Any] = {}
    body_fields: tuple[str, ...] = ()
    content = op.get("requestBody", {}).get("content", {})
    if content:
        if list(content) != ["application/json"]:
            raise ValueError(f"{method} {path}: only a JSON body can be a tool's arguments")
        body = _resolve(content["application/json"]["schema"], components)
        clash = set(body.get("properties", {})) & set(properties)
        if clash:
            raise ValueError(f"{method} {path}: {sorted(clash)} is both a parameter and a field")
        properties.update(body.get("properties", {}))
        required.extend(body.get("required", []))
        body_fields = tuple(body.get("properties", {}))
        # Rules over the body as a whole (exactly one of these fields) hold for the
        # arguments as a whole, as the other arguments never name those fields.
        extra = {k: body[k] for k in ("oneOf", "anyOf", "allOf") if k in body}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        **extra,
    }
    if required:
        schema["required"] = required
    return Operation(
        method=method,
        path=path,
        scope=op.get("x-scope", ""),
        summary=op.get("summary", ""),
        description=op.get("description", ""),
        input_schema=schema,
        path_params=tuple(where["path"]),
        query_params=tuple(where["query"]),
        headers=headers,
        body_fields=body_fields,
        has_body=bool(content),
    )


def describe(op: Operation) -> str:
    """A tool's description: the operation's summary and description, and its scope."""
    parts = [op.summary, op.description, f"Needs the agent scope `{op.scope}`."]
    return "\n\n".join(part for part in parts if part)


@functools.cache
def operations() -> dict[str, Operation]:
    """Every tool's operation, read once from the API's OpenAPI."""
    from wirecat.api import api

    spec = api.get_openapi_schema()
    return {name: operation(spec, method, path) for name, (method, path) in TOOLS.items()}


@functools.cache
def resource_operations() -> dict[str, Operation]:
    from wirecat.api import api

    spec = api.get_openapi_schema()
    return {uri: operation(spec, "GET", path) for uri, (_, path) in RESOURCES.items()}
