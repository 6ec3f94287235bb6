"""A tool call as an API request, through Django's whole handler (middleware, the URL
table, ninja's authentication, scopes and schemas, the exception mapping), in-process;
and the API's answer as the tool's result or an MCP error with the API's detail."""

from __future__ import annotations

import io
import json
import sys
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.http.request import validate_host
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from archive.mcp.tools import Operation

# JSON-RPC codes for the API's refusals; `data` carries the API's error body and status.
RESOURCE_NOT_FOUND = -32002  # MCP's own code for a resource that is not there
REFUSED = -32010  # no or a bad token, a missing scope, the guard, a conflict, too many
_CODES = {400: INVALID_PARAMS, 404: RESOURCE_NOT_FOUND, 413: INVALID_PARAMS, 422: INVALID_PARAMS}

_handler: WSGIHandler | None = None
_handler_lock = threading.Lock()


def _django() -> WSGIHandler:
    """Django's handler with its middleware loaded, once per process."""
    global _handler
    with _handler_lock:
        if _handler is None:
            _handler = WSGIHandler()
        return _handler


@dataclass(frozen=True)
class Caller:
    """Who calls and how the request is addressed: the bearer token the API checks, and
    the host (the HTTP transport's own, already accepted by ALLOWED_HOSTS) and scheme."""

    token: str
    host: str = ""
    scheme: str = "http"


def local_host() -> str:
    """A host ALLOWED_HOSTS accepts, for calls that come in over stdio."""
    allowed = list(settings.ALLOWED_HOSTS)
    if validate_host("localhost", allowed):
        return "localhost"
    for pattern in allowed:
        name = pattern.lstrip(".")
        if name and name != "*" and validate_host(name, allowed):
            return name
    return "localhost"  # DEBUG with no ALLOWED_HOSTS accepts it


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)  # the API refuses it with its own detail
    return str(value)


def _wsgi(value: str) -> str:
    """A path or header value as a WSGI server hands it over: its UTF-8 bytes as latin-1."""
    return value.encode("utf-8", "surrogatepass").decode("latin-1")


def request_parts(
    op: Operation, arguments: dict[str, Any]
) -> tuple[str, str, dict[str, str], bytes]:
    """(path, query string, headers as WSGI keys, body) of a call of `op`. An argument the
    operation does not take is refused here, as the input schema says; everything else
    is left to the API to check."""
    unknown = sorted(set(arguments) - set(op.input_schema["properties"]))
    if unknown:
        known = ", ".join(op.input_schema["properties"]) or "none"
        raise MCPError(
            INVALID_PARAMS,
            f"arguments: {', '.join(unknown)} not taken by this tool (it takes: {known})",
            {"error": "Invalid", "status": 422},
        )
    path = op.path
    for name in op.path_params:
        value = _text(arguments.get(name, ""))
        # An empty value or a "/" would address another operation, not this one.
        if not value or "/" in value:
            raise MCPError(
                INVALID_PARAMS,
                f"path.{name}: needs a value without '/'",
                {"error": "Invalid", "status": 422},
            )
        path = path.replace("{" + name + "}", _wsgi(value))
    query = [
        (name, _text(arguments[name]))
        for name in op.query_params
        if name in arguments and arguments[name] is not None
    ]
    headers = {
        "HTTP_" + header.upper().replace("-", "_"): _wsgi(_text(arguments[argument]))
        for argument, header in op.headers.items()
        if argument in arguments and arguments[argument] is not None
    }
    body = b""
    if op.has_body:
        fields = {k: arguments[k] for k in op.body_fields if k in arguments}
        body = json.dumps(fields, ensure_ascii=False).encode()
    return path, urlencode(query), headers, body


def call(op: Operation, arguments: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """Make the API request of `op` with `arguments` as `caller`; its JSON answer, or an
    MCPError whose message is the API's `detail` (synchronous: the ORM runs here)."""
    path, query, headers, body = request_parts(op, arguments)
    host = caller.host or local_host()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": op.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "localhost",  # unused: HTTP_HOST names the host
        "SERVER_PORT": "443" if caller.scheme == "https" else "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": host,
        "HTTP_ACCEPT": "application/json",
        "HTTP_AUTHORIZATION": f"Bearer {caller.token}",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": caller.scheme,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        **headers,
    }
    response = _django().get_response(WSGIRequest(environ))
    try:
        status = response.status_code
        content = b"".join(response) if response.streaming else response.content  # type: ignore[attr-defined]
        retry_after = response.get("Retry-After")
    finally:
        response.close()  # as a server does: the work queued after the answer runs now
    try:
        answer = json.loads(content) if content else {}
    except ValueError:
        answer = None
    if 200 <= status < 300:
        if isinstance(answer, dict):
            return answer
        return {"result": answer}
    if not isinstance(answer, dict) or "detail" not in answer:
        raise MCPError(INTERNAL_ERROR, f"the API answered {status}", {"status": status})
    data = {**answer, "status": status}
    if retry_after is not None:
        data["retry_after"] = int(retry_after)
    code = _CODES.get(status, INTERNAL_ERROR if status >= 500 else REFUSED)
    raise MCPError(code, str(answer["detail"]), data)
