"""Webhook attempts are bounded whatever the receiver does: real local servers (127.0.0.1)
that answer an endless body, trickle their answer slower than the deadline, or never
answer. Each attempt ends within the one deadline, reads a few KB at most, is recorded as
failed with its reason and retried by the usual policy; the job has its own queue."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from archive.gateway.models import DeliveryState, GatewaySettings, WebhookDelivery
from archive.gateway.services import webhooks
from archive.store.sink import batch_record
from tests.factories import batch, message
from wirecat.celery import app

pytestmark = pytest.mark.django_db

DEADLINE = 1.0
SLACK = 0.75  # scheduling, the database write


def _read_request(conn: socket.socket) -> None:
    """Read one request's head and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(4096)
        if not chunk:
            return
        body += chunk


class Server:
    """A TCP server on 127.0.0.1 answering each connection with `answer(conn, stop)`."""

    def __init__(self, answer: Callable[[socket.socket, threading.Event], None]) -> None:
        self.stop = threading.Event()
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                _read_request(self.request)
                with contextlib.suppress(OSError):  # the client hung up: what it should do
                    answer(self.request, outer.stop)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def endless(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
    block = b"x" * 65536
    while not stop.is_set():
        conn.sendall(block)


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    # Every byte comes well within any per-read timeout; the whole never within the deadline.
    answer = b"HTTP/1.1 204 No Content\r\nX-Padding: " + b"p" * 200 + b"\r\n\r\n"
    for byte in answer:
        if stop.wait(0.05):
            return
        conn.sendall(bytes([byte]))


def silent(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(60)


@pytest.fixture
def serve(db: None, settings: Any) -> Iterator[Callable[..., Server]]:
    settings.WEBHOOK_TIMEOUT_SECONDS = DEADLINE
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    made: list[Server] = []

    def make(answer: Callable[[socket.socket, threading.Event], None]) -> Server:
        made.append(Server(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


def attempt_once(server: Server) -> tuple[WebhookDelivery, float, int]:
    """One delivery to `server`, attempted once: (the delivery, seconds, peak bytes)."""
    webhooks.endpoint_create(url=server.url, events=[])
    batch_record(batch=batch(message("1", "hello")))
    tracemalloc.start()
    began = time.monotonic()
    try:
        assert webhooks.deliver_due() == 1
        took = time.monotonic() - began
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return WebhookDelivery.objects.get(), took, peak


def assert_retried(delivery: WebhookDelivery) -> None:
    """Failed once, retried by the existing policy (30 s with jitter, then doubling)."""
    assert delivery.state == DeliveryState.RETRYING
    assert delivery.attempts == 1 and delivery.delivered_at is None
    wait = (delivery.next_attempt_at - timezone.now()).total_seconds()
    assert 30 * 0.8 - 5 <= wait <= 30 * 1.2


def test_an_endless_answer_is_cut_after_a_few_kb(serve: Callable[..., Server]) -> None:
    delivery, took, peak = attempt_once(serve(endless))
    assert took < DEADLINE + SLACK
    assert peak < 1024 * 1024  # a few KB kept, one bounded read at a time
    assert delivery.last_status == 200
    assert "more than 4 KB" in delivery.last_error
    assert len(delivery.last_response) <= 500
    assert_retried(delivery)


def test_an_answer_trickled_slower_than_the_deadline_fails_at_the_deadline(
    serve: Callable[..., Server],
) -> None:
    delivery, took, _ = attempt_once(serve(trickle))
    assert DEADLINE - 0.1 <= took < DEADLINE + SLACK
    assert "no complete answer within 1 s" in delivery.last_error
    assert "WIRECAT_WEBHOOK_TIMEOUT_SECONDS" in delivery.last_error
    assert_retried(delivery)


def test_a_receiver_that_never_answers_fails_at_the_deadline(
    serve: Callable[..., Server],
) -> None:
    delivery, took, _ = attempt_once(serve(silent))
    assert DEADLINE - 0.1 <= took < DEADLINE + SLACK
    assert delivery.last_status is None
    assert "no complete answer within 1 s" in delivery.last_error
    assert_retried(delivery)
    # The retry is another attempt with its own whole deadline, then the next backoff.
    began = time.monotonic()
    webhooks.deliver_due(now=timezone.now() + timedelta(hours=1))
    assert time.monotonic() - began < DEADLINE + SLACK
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and delivery.state == DeliveryState.RETRYING
    wait = (delivery.next_attempt_at - timezone.now()).total_seconds()
    assert 60 * 0.8 - 5 <= wait <= 60 * 1.2


def test_a_short_answer_still_delivers(serve: Callable[..., Server]) -> None:
    def short(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    delivery, took, _ = attempt_once(serve(short))
    assert delivery.state == DeliveryState.DELIVERED and delivery.last_response == "ok"
    assert took < DEADLINE


def test_webhook_delivery_has_its_own_queue_that_the_worker_takes() -> None:
    def queue(task: str) -> str:
        return str(app.amqp.router.route({}, task)["queue"].name)

    assert queue("archive.jobs.webhooks_deliver") == "webhooks"
    assert queue("archive.jobs.send_deliver") == "delivery"  # sends stay on their own
    assert "webhooks" in django_settings.WORKER_QUEUES.split(",")
    procfile = (Path(django_settings.BASE_DIR) / "Procfile").read_text()
    worker = next(line for line in procfile.splitlines() if line.startswith("worker:"))
    default = worker.split("${WIRECAT_WORKER_QUEUES:-", 1)[1].split("}", 1)[0]
    assert set(default.split(",")) == set(django_settings.WORKER_QUEUES.split(","))
