"""Places a provider cannot be reached at, on loopback: a port nothing listens on, a host
name that never resolves (`.invalid`, RFC 2606), and a server that answers bytes that are
not the provider's protocol (what a proxy, a captive portal or a wrong port answers)."""

from __future__ import annotations

import contextlib
import socket
import threading

NO_SUCH_HOST = "wirecat-test.invalid"  # never resolves (RFC 2606)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go: connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class GarbageServer:
    """Accepts, reads what the client says first (unless `greets`), answers `answer` and
    hangs up. `greets`: it speaks first, as an IMAP or SMTP server does."""

    def __init__(self, answer: bytes, *, greets: bool = False) -> None:
        self._answer = answer
        self._greets = greets
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(8)
        self.port: int = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._socket.accept()
            except OSError:  # closed
                return
            with client:
                try:
                    client.settimeout(5)
                    if not self._greets:
                        client.recv(4096)
                    client.sendall(self._answer)
                except OSError:
                    pass

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting
        self._socket.close()
