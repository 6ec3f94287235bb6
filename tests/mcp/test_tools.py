"""Each tool's input schema is its API operation's, read from the OpenAPI: every
parameter, header and body field with the API's own bounds, the same required ones, and
nothing else taken; an argument the operation does not take is refused before any
request is made."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import pytest
from django.test import Client
from mcp.shared.exceptions import MCPError

from archive.gateway.services.agents import agent_create
from archive.mcp.dispatch import Caller, call, request_parts
from archive.mcp.tools import RESOURCES, TOOLS, operations, resource_operations
from wirecat.api import api


@functools.cache
def spec() -> dict[str, Any]:
    return api.get_openapi_schema()


def components(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    return dict(spec()["components"]["schemas"][ref.rsplit("/", 1)[1]])


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_a_tools_schema_is_its_operations(name: str) -> None:
    method, path = TOOLS[name]
    op = spec()["paths"][path][method.lower()]
    schema = operations()[name].input_schema
    expected_required = set()
    for param in op.get("parameters", []):
        argument = param["name"].lower().replace("-", "_")
        assert argument in schema["properties"], argument
        for bound in ("maximum", "minimum", "maxLength", "pattern", "enum"):
            if bound in param["schema"]:
                assert schema["properties"][argument][bound] == param["schema"][bound]
        if param.get("required"):
            expected_required.add(argument)
    content = op.get("requestBody", {}).get("content", {})
    if content:
        body = components(content["application/json"]["schema"])
        assert set(body["properties"]) <= set(schema["properties"])
        expected_required |= set(body.get("required", []))
    assert set(schema.get("required", [])) == expected_required
    assert schema["additionalProperties"] is False
    # A valid JSON Schema (the API's patterns are ECMA-262's, with \p{C}: Python's `re`
    # cannot check them as formats, so the meta-schema is applied without formats).
    meta = jsonschema.Draft202012Validator.META_SCHEMA
    jsonschema.Draft202012Validator(meta).validate(schema)
    assert "$ref" not in repr(schema)  # inlined: a host needs no components


def test_the_apis_examples_fit_and_an_extra_argument_does_not() -> None:
    send = operations()["send"].input_schema
    example = components({"$ref": "#/components/schemas/SendIn"})["examples"][0]
    jsonschema.validate({**example, "idempotency_key": "k-1"}, send)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**example, "idempotency_key": "k-1", "colour": "red"}, send)
    with pytest.raises(jsonschema.ValidationError):  # the key is required, as the header is
        jsonschema.validate(example, send)
    mark = operations()["mark_read"].input_schema
    jsonschema.validate({"ids": ["msg_01JD8ZV3Q0V6Y1T9B2C4D5E6F7"]}, mark)
    with pytest.raises(jsonschema.ValidationError):  # exactly one of ids, up_to, chat_id
        jsonschema.validate({}, mark)


def test_arguments_go_where_the_operation_takes_them() -> None:
    path, query, headers, body = request_parts(
        operations()["send"],
        {"idempotency_key": "k-1", "account_id": 1, "chat_id": 2, "text": "hi"},
    )
    assert (path, query) == ("/api/messages/send", "")
    assert headers == {"HTTP_IDEMPOTENCY_KEY": "k-1"}
    assert body == b'{"account_id": 1, "chat_id": 2, "text": "hi"}'
    path, query, _, body = request_parts(
        operations()["chat_messages"], {"chat_id": 7, "limit": 5, "deleted": True, "after": None}
    )
    assert (path, query, body) == ("/api/chats/7/messages", "limit=5&deleted=true", b"")


@pytest.mark.django_db(transaction=True)  # a call ends its request as a server does
def test_a_value_no_operation_takes_is_the_apis_to_refuse() -> None:
    """A path value that is no id reaches the API as a server would pass it (its UTF-8
    bytes), and the API refuses it in its own words."""
    token = agent_create(name="reader", scopes=["notes.read"]).token
    with pytest.raises(MCPError) as refused:
        call(operations()["note"], {"id": "n\u2603te"}, Caller(token=token))
    expected = Client().get("/api/notes/n%E2%98%83te", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert expected.status_code == 422 and refused.value.data["status"] == 422
    assert refused.value.message == expected.json()["detail"]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"chat_id": 7, "colour": "red"}, "arguments: colour not taken by this tool"),
        ({"chat_id": ""}, "path.chat_id: needs a value without '/'"),
        ({"chat_id": "7/../../notes"}, "path.chat_id: needs a value without '/'"),
    ],
)
def test_what_no_request_could_carry_is_refused(arguments: dict[str, Any], says: str) -> None:
    with pytest.raises(MCPError) as refused:
        request_parts(operations()["chat_messages"], arguments)
    assert refused.value.message.startswith(says)
    assert refused.value.data == {"error": "Invalid", "status": 422}


def test_every_resource_is_a_get_by_one_path_parameter() -> None:
    for uri, op in resource_operations().items():
        assert op.method == "GET" and len(op.path_params) == 1
        assert "{" + op.path_params[0] + "}" in uri and uri in RESOURCES
