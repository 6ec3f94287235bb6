"""A Telegram Bot API server on loopback, answering what the real one answers
(https://core.telegram.org/bots/api): `{"ok": true, "result": …}` or
`{"ok": false, "error_code": …, "description": …, "parameters": {"retry_after": …}}`, the
methods a bot token reaches at `/bot<token>/<method>`, JSON bodies, getUpdates confirming
every update below the offset it is asked for."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = "7000000001:AAH-secret-token-for-tests-0123456789"
BOT = {"id": 7000000001, "is_bot": True, "first_name": "Archivist", "username": "archivist_bot"}
T0 = 1_764_460_800  # 2025-11-30 00:00 UTC


def user(number: int, name: str) -> dict[str, Any]:
    return {"id": number, "is_bot": False, "first_name": name, "username": name.lower()}


ALICE = user(101, "Alice")
BOB = user(102, "Bob")
PRIVATE = {"id": 101, "type": "private", "first_name": "Alice", "username": "alice"}
GROUP = {"id": -1001234567890, "type": "supergroup", "title": "Night owls"}


class BotApi:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []  # not yet confirmed by a later offset
        self._history: list[dict[str, Any]] = []  # every update ever made
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[dict[str, Any]] = []
        self.valid_tokens = {TOKEN}
        self.rate_limit_calls: dict[int, int] = {}  # getUpdates call number -> retry_after
        self.delay = 0.0  # seconds each getUpdates takes
        self.busy = 0
        self.most_busy = 0
        self._lock = threading.Lock()
        self._next_update = 1
        self._next_message = 1
        self._get_updates = 0
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                status, body = api.answer(self.path, json.loads(raw or b"{}"))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", str(body["parameters"]["retry_after"]))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # what the chats do ----------------------------------------------------------------

    def post(self, chat: dict[str, Any], sender: dict[str, Any], text: str, **extra: Any) -> int:
        """A message arrives in `chat`: one more update. Returns its message_id."""
        with self._lock:
            number = self._next_message
            self._next_message += 1
            message = {
                "message_id": number,
                "from": sender,
                "chat": chat,
                "date": T0 + number * 60,
                "text": text,
                **extra,
            }
            self._add({"message": message})
        return number

    def edit(self, message_id: int, text: str) -> None:
        with self._lock:
            original = next(
                u["message"]
                for u in self._history
                if u.get("message", {}).get("message_id") == message_id
            )
            edited = {**original, "text": text, "edit_date": original["date"] + 600}
            self._add({"edited_message": edited})

    def _add(self, update: dict[str, Any]) -> None:
        update = {"update_id": 500_000 + self._next_update, **update}
        self._next_update += 1
        self.updates.append(update)
        self._history = [*self._history, update]

    # the API --------------------------------------------------------------------------

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        _, _, rest = path.partition("/bot")
        token, _, method = rest.partition("/")
        if token not in self.valid_tokens:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        with self._lock:
            self.calls.append((method, body))
        if method == "getMe":
            return 200, {"ok": True, "result": BOT}
        if method == "getUpdates":
            return self._updates(body)
        if method == "sendMessage":
            return self._send(body)
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _updates(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self._get_updates += 1
            retry = self.rate_limit_calls.pop(self._get_updates, None)
            self.busy += 1
            self.most_busy = max(self.most_busy, self.busy)
        try:
            if self.delay:
                time.sleep(self.delay)
            if retry is not None:
                return 429, {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {retry}",
                    "parameters": {"retry_after": retry},
                }
            with self._lock:
                offset = int(body.get("offset") or 0)
                if offset:  # asking from an offset confirms every update before it
                    self.updates = [u for u in self.updates if u["update_id"] >= offset]
                limit = int(body.get("limit") or 100)
                return 200, {"ok": True, "result": self.updates[:limit]}
        finally:
            with self._lock:
                self.busy -= 1

    def _send(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if not body.get("text"):
            return 400, {
                "ok": False,
                "error_code": 400,
                "description": "Bad Request: message text is empty",
            }
        chat = {"id": int(body["chat_id"]), "type": "private"}
        with self._lock:
            number = self._next_message
            self._next_message += 1
            self.sent.append(body)
        message = {
            "message_id": number,
            "from": BOT,
            "chat": chat,
            "date": T0,
            "text": body["text"],
        }
        return 200, {"ok": True, "result": message}

    def offsets_asked(self) -> list[int | None]:
        return [body.get("offset") for method, body in self.calls if method == "getUpdates"]
