"""A MAX Bot API server on loopback, answering what the real one answers
(https://dev.max.ru/docs-api): the token in `Authorization`, `GET /me`, `GET /updates` with
`marker` (asking with a marker confirms every update before it) answering
`{"updates": [...], "marker": n}`, `POST /messages?chat_id=`, errors as
`{"code": ..., "message": ...}`."""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.providers.json_server import JsonServer

TOKEN = "max-bot-secret-token-0123456789abcdef"
BOT = {"user_id": 9001, "name": "Courier", "username": "courier_bot", "is_bot": True}
VERA = {"user_id": 501, "name": "Vera", "username": "vera"}
OLEG = {"user_id": 502, "first_name": "Oleg", "last_name": "P.", "username": "oleg"}
DIALOG = {"chat_id": 7001, "chat_type": "dialog", "user_id": 501}
TEAM = {"chat_id": -7002, "chat_type": "chat"}
T0_MS = 1_764_460_800_000


class MaxApi:
    def __init__(self) -> None:
        self.updates: list[tuple[int, dict[str, Any]]] = []  # (number, update), not confirmed
        self.calls: list[tuple[str, str, dict[str, list[str]]]] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.rate_limit_next = 0  # this many /updates calls answer 429 first
        self.delay = 0.0  # seconds each /updates call takes
        self._lock = threading.Lock()
        self._number = 0
        self._messages: dict[str, dict[str, Any]] = {}
        self._http = JsonServer(self.answer)
        self.url = self._http.origin + ""

    def close(self) -> None:
        self._http.close()

    def _add(self, update: dict[str, Any]) -> None:
        self._number += 1
        self.updates.append((self._number, update))

    def post(
        self, chat: dict[str, Any], sender: dict[str, Any], text: str, reply_to: str = ""
    ) -> str:
        with self._lock:
            mid = f"mid.{len(self._messages) + 1:016x}"
            stamp = T0_MS + len(self._messages) * 60_000
            message: dict[str, Any] = {
                "sender": sender,
                "recipient": {k: v for k, v in chat.items()},
                "timestamp": stamp,
                "body": {"mid": mid, "seq": len(self._messages) + 1, "text": text},
            }
            if reply_to:
                message["link"] = {
                    "type": "reply",
                    "chat_id": chat["chat_id"],
                    "message": {"mid": reply_to, "seq": 0, "text": ""},
                }
            self._messages[mid] = message
            self._add({"update_type": "message_created", "timestamp": stamp, "message": message})
        return mid

    def edit(self, mid: str, text: str) -> None:
        with self._lock:
            message = self._messages[mid]
            message = {**message, "body": {**message["body"], "text": text}}
            self._messages[mid] = message
            self._add(
                {
                    "update_type": "message_edited",
                    "timestamp": T0_MS + 86_400_000,
                    "message": message,
                }
            )

    def remove(self, chat: dict[str, Any], mid: str) -> None:
        with self._lock:
            self._add(
                {
                    "update_type": "message_removed",
                    "timestamp": T0_MS + 90_000_000,
                    "message_id": mid,
                    "chat_id": chat["chat_id"],
                    "user_id": 501,
                }
            )

    def answer(
        self, method: str, path: str, authorization: str, body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        with self._lock:
            self.calls.append((method, parts.path, query))
        if "access_token" in query:
            return 401, {"code": "verify.token", "message": "query tokens are not accepted"}, {}
        if authorization != TOKEN:
            return 401, {"code": "verify.token", "message": "Invalid access_token"}, {}
        if method == "GET" and parts.path == "/me":
            return 200, BOT, {}
        if method == "GET" and parts.path == "/updates":
            if self.delay:
                time.sleep(self.delay)
            with self._lock:
                if self.rate_limit_next:
                    self.rate_limit_next -= 1
                    return (
                        429,
                        {"code": "too.many.requests", "message": "Too many requests"},
                        {"Retry-After": "2"},
                    )
                if "marker" in query:
                    marker = int(query["marker"][0])
                    self.updates = [(n, u) for n, u in self.updates if n >= marker]
                limit = int(query.get("limit", ["100"])[0])
                page = self.updates[:limit]
                following = (
                    page[-1][0] + 1
                    if page
                    else (self.updates[0][0] if self.updates else self._number + 1)
                )
                return 200, {"updates": [u for _, u in page], "marker": following}, {}
        if method == "POST" and parts.path == "/messages":
            if not isinstance(body, dict) or not body.get("text"):
                return 400, {"code": "proto.payload", "message": "text is empty"}, {}
            chat_id = int(query["chat_id"][0])
            self.sent.append((str(chat_id), body))
            mid = f"mid.sent{len(self.sent):012x}"
            message = {
                "sender": BOT,
                "recipient": {"chat_id": chat_id, "chat_type": "dialog"},
                "timestamp": T0_MS,
                "body": {"mid": mid, "seq": 0, "text": body["text"]},
            }
            return 200, {"message": message}, {}
        return 404, {"code": "not.found", "message": "Not found"}, {}

    def markers_asked(self) -> list[str | None]:
        return [q.get("marker", [None])[0] for m, p, q in self.calls if p == "/updates"]
