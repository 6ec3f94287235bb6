"""`/mcp`: the MCP server over streamable HTTP, for agents only, behind the same bearer
tokens as the API (the owner's session is not enough). The request's Authorization
reaches the tools, which make their API requests with it (archive/mcp/asgi.py runs the
SDK's transport; it is imported on the first request, not with the URL table)."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from archive.gateway.services.agents import agent_authenticate
from archive.mcp.tools import BEARER

# The API's body limit, and room for the JSON-RPC envelope around the arguments (read
# past Django's own limit with request.read(), as the length is checked here first).
MAX_BODY = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 64 * 1024
_HOP = {"content-length", "connection", "transfer-encoding"}


def _refused(status: int, kind: str, detail: str) -> JsonResponse:
    response = JsonResponse({"error": kind, "detail": detail}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="wirecat"'
    return response


@csrf_exempt
@login_not_required
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    from archive.mcp.asgi import serve

    host = request.get_host()  # ALLOWED_HOSTS decides (DisallowedHost: 400)
    found = BEARER.match(request.headers.get("Authorization", ""))
    if found is None or agent_authenticate(found.group(1)) is None:
        return _refused(401, "Unauthorized", "a valid agent token is needed (Bearer wct_...)")
    length = request.headers.get("Content-Length", "0") or "0"
    if not length.isdigit() or int(length) > MAX_BODY:
        return _refused(413, "TooLarge", f"the request's body is over {MAX_BODY:,} bytes")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
            if name.lower() != "host"
        ]
        + [(b"host", host.encode("latin-1"))],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (host, 0),
    }
    status, headers, content = async_to_sync(serve)(scope, request.read(), MAX_BODY)
    response = HttpResponse(content, status=status)
    for name, value in headers:
        if name.lower() not in _HOP:
            response[name] = value
    return response
