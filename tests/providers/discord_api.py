"""A Discord REST API v10 server on loopback, answering what the real one answers
(https://discord.com/developers/docs): `Authorization: Bot <token>`, snowflake ids as
strings, ISO 8601 timestamps, `after=` paging newest-first, rate-limit headers on every
answer and a 429 body `{"message", "retry_after", "global"}` with `Retry-After`."""

from __future__ import annotations

import bisect
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.providers.json_server import JsonServer

TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAx.GtEsT.discord-secret-token-for-tests"
BOT = {"id": "1000000000000000001", "username": "keeper", "global_name": "Keeper", "bot": True}
GUILD = {"id": "2000000000000000001", "name": "Makers"}
GENERAL = {"id": "3000000000000000001", "type": 0, "name": "general", "guild_id": GUILD["id"]}
NEWS = {"id": "3000000000000000002", "type": 5, "name": "news", "guild_id": GUILD["id"]}
VOICE = {"id": "3000000000000000003", "type": 2, "name": "Lounge", "guild_id": GUILD["id"]}
ANN = {"id": "4000000000000000001", "username": "ann", "global_name": "Ann"}
BEN = {"id": "4000000000000000002", "username": "ben", "global_name": None}


class DiscordApi:
    def __init__(self) -> None:
        self.channels: list[dict[str, Any]] = [GENERAL, NEWS, VOICE]
        # Per text channel its messages, ids ascending (and those ids as ints, for bisect).
        self.messages: dict[str, list[dict[str, Any]]] = {GENERAL["id"]: [], NEWS["id"]: []}
        self._ids: dict[str, list[int]] = {GENERAL["id"]: [], NEWS["id"]: []}
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []
        self.request_times: list[float] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.rate_limit_requests: dict[
            int, float
        ] = {}  # message-list request number -> retry_after
        self.spent_bucket_every = 0  # every n-th answer says Remaining 0, Reset-After 0.2 s
        self.delay = 0.0  # seconds each message listing takes
        self._lock = threading.Lock()
        self._next = 5_000_000_000_000_000_000
        self._listings = 0
        self._http = JsonServer(self.answer)
        self.url = self._http.origin + "/api/v10"

    def close(self) -> None:
        self._http.close()

    def post(
        self, channel: dict[str, Any], author: dict[str, Any], content: str, **extra: Any
    ) -> str:
        with self._lock:
            self._next += 1
            snowflake = str(self._next)
            minute = len(self.messages[channel["id"]])
            stamp = f"2025-11-30T{10 + minute // 60:02d}:{minute % 60:02d}:00.000000+00:00"
            message = {
                "id": snowflake,
                "type": 19 if "message_reference" in extra else 0,
                "channel_id": channel["id"],
                "author": author,
                "content": content,
                "timestamp": stamp,
                "edited_timestamp": None,
                "attachments": [],
                "embeds": [],
                "mentions": [],
                **extra,
            }
            self.messages[channel["id"]].append(message)
            self._ids[channel["id"]].append(int(snowflake))
        return snowflake

    def delete(self, channel: dict[str, Any], snowflake: str) -> None:
        with self._lock:
            at = self._ids[channel["id"]].index(int(snowflake))
            del self.messages[channel["id"]][at]
            del self._ids[channel["id"]][at]

    def load(self, channel: dict[str, Any], messages: list[dict[str, Any]]) -> None:
        """A whole channel at once (ids ascending): the benchmark's history."""
        self.channels.append(channel)
        self.messages[channel["id"]] = messages
        self._ids[channel["id"]] = [int(m["id"]) for m in messages]

    def edit(self, channel: dict[str, Any], snowflake: str, content: str) -> None:
        with self._lock:
            for message in self.messages[channel["id"]]:
                if message["id"] == snowflake:
                    message["content"] = content
                    message["edited_timestamp"] = "2025-12-01T08:00:00.000000+00:00"

    def answer(
        self, method: str, path: str, authorization: str, body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        route = parts.path.removeprefix("/api/v10")
        with self._lock:
            self.requests.append((method, route, query))
            self.request_times.append(time.monotonic())
            count = len(self.requests)
        headers = {
            "X-RateLimit-Limit": "5",
            "X-RateLimit-Bucket": "abcd",
            "X-RateLimit-Remaining": "4",
            "X-RateLimit-Reset-After": "1.0",
        }
        if self.spent_bucket_every and count % self.spent_bucket_every == 0:
            headers.update({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": "0.2"})
        if authorization != f"Bot {TOKEN}":
            return 401, {"message": "401: Unauthorized", "code": 0}, headers
        if method == "GET" and route == "/users/@me":
            return 200, BOT, headers
        if method == "GET" and route == "/users/@me/guilds":
            return 200, [GUILD], headers
        if method == "GET" and route == f"/guilds/{GUILD['id']}/channels":
            return 200, self.channels, headers
        if route.startswith("/channels/") and route.endswith("/messages"):
            channel = route.split("/")[2]
            if channel not in self.messages:
                return 404, {"message": "Unknown Channel", "code": 10003}, headers
            if method == "POST":
                return self._send(channel, body, headers)
            with self._lock:
                self._listings += 1
                retry = self.rate_limit_requests.pop(self._listings, None)
            if retry is not None:
                headers["Retry-After"] = str(int(retry) or 1)
                return (
                    429,
                    {
                        "message": "You are being rate limited.",
                        "retry_after": retry,
                        "global": False,
                    },
                    headers,
                )
            if self.delay:
                time.sleep(self.delay)
            after = int(query.get("after", ["0"])[0])
            limit = min(100, int(query.get("limit", ["50"])[0]))
            start = bisect.bisect_right(self._ids[channel], after)
            newer = self.messages[channel][start : start + limit]
            return 200, list(reversed(newer)), headers  # newest first, as Discord answers
        return 404, {"message": "404: Not Found", "code": 0}, headers

    def _send(
        self, channel: str, body: Any, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        if not isinstance(body, dict) or not body.get("content"):
            return 400, {"message": "Cannot send an empty message", "code": 50006}, headers
        self.sent.append((channel, body))
        extra = {}
        if "message_reference" in body:
            extra["message_reference"] = {
                "message_id": body["message_reference"]["message_id"],
                "channel_id": channel,
            }
        snowflake = self.post({"id": channel}, BOT, body["content"], **extra)
        sent = next(m for m in self.messages[channel] if m["id"] == snowflake)
        return 200, sent, headers

    def rate_limit_in(self, listings: int, retry_after: float) -> None:
        """The `listings`-th message listing from now answers 429 with `retry_after`."""
        with self._lock:
            self.rate_limit_requests[self._listings + listings] = retry_after

    def listings(self) -> list[tuple[str, str]]:
        """(channel, after) of every message listing asked for."""
        return [
            (route.split("/")[2], query.get("after", [""])[0])
            for method, route, query in self.requests
            if method == "GET" and route.endswith("/messages")
        ]
