"""An httpx transport with one overall deadline per request: connecting, sending and reading
the answer (its status line and headers too, however slowly they trickle in) share one
budget, enforced on every socket operation. httpx's own timeouts are per operation only,
so a receiver that sends a byte a second would otherwise hold a delivery for ever.

The webhooks use it (`services/webhooks.py`): `deadline_client()` gives a client whose
`start(seconds)` opens the next attempt's budget."""

from __future__ import annotations

import math
import ssl
import time
import typing

import httpcore
import httpx

_READ_CHUNK = 16 * 1024  # one socket read at most: bounds what an answer can cost


class _Deadline:
    def __init__(self) -> None:
        self.at = math.inf

    def left(self, timeout: float | None, error: type[Exception]) -> float:
        """The seconds an operation may take: the smaller of its own timeout and what is
        left of the deadline; `error` when nothing is left."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("the deadline passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: _Deadline) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        wait = self._deadline.left(timeout, httpcore.ReadTimeout)
        return self._stream.read(min(max_bytes, _READ_CHUNK), wait)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._deadline.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._deadline.left(timeout, httpcore.ConnectTimeout)
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, wait), self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, deadline: _Deadline) -> None:
        self._backend = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        wait = self._deadline.left(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, wait, local_address, socket_options)
        return _Stream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """No proxies, no kept-alive connections (each attempt connects afresh, to the address
    it checked), every socket operation within the current deadline."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        self.deadline = _Deadline()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_keepalive_connections=0,
            network_backend=_Backend(self.deadline),
        )


class DeadlineClient(httpx.Client):
    def __init__(self, seconds: float) -> None:
        self._transport_deadline = DeadlineTransport()
        timeout = httpx.Timeout(seconds)
        super().__init__(
            transport=self._transport_deadline,
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
        )

    def start(self, seconds: float) -> None:
        """Open a new budget of `seconds` for what follows (one attempt)."""
        self._transport_deadline.deadline.at = time.monotonic() + seconds


def deadline_client(seconds: float) -> DeadlineClient:
    return DeadlineClient(seconds)
