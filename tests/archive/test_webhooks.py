"""Webhooks against a real local HTTP receiver: events enqueued with their cause, signed,
retried with backoff while the receiver fails, delivered when it recovers, dead after the
last attempt, replayed by hand; SSRF refusals."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.gateway.models import DeliveryState, GatewaySettings, WebhookDelivery
from archive.gateway.services import webhooks
from archive.gateway.services.sends import send_reject, send_request
from archive.store.domain import DeletionRecord
from archive.store.models import Account, Chat
from archive.store.sink import batch_record, quiet_changes
from archive.tags.services import tag_add, tag_target
from tests.factories import T0, batch, message
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db


class Receiver:
    """An HTTP server on 127.0.0.1 that fails the first `failures` requests with 503."""

    def __init__(self) -> None:
        self.failures = 0
        self.received: list[tuple[dict[str, str], bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if outer.failures > 0:
                    outer.failures -= 1
                    self.send_response(503)
                    self.end_headers()
                    self.wfile.write(b"busy, try later")
                    return
                outer.received.append((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver(db: None) -> Iterator[Receiver]:
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    found = Receiver()
    yield found
    found.server.shutdown()


def run_due(at_hours: float = 0) -> int:
    return webhooks.deliver_due(now=timezone.now() + timedelta(hours=at_hours))


def test_events_are_enqueued_with_their_cause_and_signed(receiver: Receiver) -> None:
    endpoint = webhooks.endpoint_create(url=receiver.url, events=[], secret="s3cret")
    with quiet_changes():  # an import of history: no webhook
        batch_record(batch=batch(message("old", "history", minutes=0)))
    assert not WebhookDelivery.objects.exists()
    batch_record(batch=batch(message("1", "hello", minutes=1)))
    batch_record(
        batch=batch(message("1", "hello, edited", minutes=1, edited_at=T0 + timedelta(hours=1)))
    )
    batch_record(batch=batch(deletions=(DeletionRecord("chat-1", "1", T0 + timedelta(hours=2)),)))
    tag_add(
        target=tag_target(kind="chat", key=Chat.objects.get().pk),
        name="x",
    )
    events = list(WebhookDelivery.objects.order_by("id").values_list("event", flat=True))
    assert events == ["message.inbound", "message.edited", "message.deleted", "tag.changed"]
    assert run_due() == 4
    assert WebhookDelivery.objects.filter(state=DeliveryState.DELIVERED).count() == 4
    headers, body = receiver.received[0]
    stamp = headers["WireCat-Timestamp"]
    expected = hmac.new(b"s3cret", f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert headers["WireCat-Signature"] == f"v1={expected}"
    assert headers["WireCat-Event"] == "message.inbound"
    sent = json.loads(body)
    assert sent["event"] == "message.inbound" and sent["data"]["message"]["text"] == "hello, edited"
    assert endpoint.deliveries.count() == 4


def test_the_event_filter_and_pausing(receiver: Receiver) -> None:
    endpoint = webhooks.endpoint_create(url=receiver.url, events=["message.deleted"])
    batch_record(batch=batch(message("1", "hello")))
    assert not WebhookDelivery.objects.exists()
    webhooks.endpoint_set_active(endpoint_id=endpoint.pk, active=False)
    batch_record(batch=batch(deletions=(DeletionRecord("chat-1", "1", T0 + timedelta(hours=2)),)))
    assert not WebhookDelivery.objects.exists()  # paused endpoints get nothing
    with pytest.raises(Invalid, match=r"events: unknown message\.read"):
        webhooks.endpoint_create(url=receiver.url, events=["message.read"])


def test_failures_retry_with_backoff_then_deliver(receiver: Receiver) -> None:
    webhooks.endpoint_create(url=receiver.url, events=[])
    receiver.failures = 3
    batch_record(batch=batch(message("1", "hello")))
    delivery = WebhookDelivery.objects.get()
    waits = []
    for _ in range(3):
        assert run_due(at_hours=30) == 1  # far enough ahead for any backoff
        delivery.refresh_from_db()
        assert delivery.state == DeliveryState.RETRYING and delivery.last_status == 503
        assert delivery.last_response == "busy, try later"
        waits.append((delivery.next_attempt_at - timezone.now()).total_seconds())
    assert waits[0] < waits[1] < waits[2]  # exponential (with jitter)
    assert run_due() == 0  # not due yet
    run_due(at_hours=30)
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == (DeliveryState.DELIVERED, 4)
    assert len(receiver.received) == 1


def test_dead_after_the_last_attempt_then_replayed(
    receiver: Receiver, owner_client: Client
) -> None:
    endpoint = webhooks.endpoint_create(url=receiver.url, events=[])
    receiver.failures = webhooks.MAX_ATTEMPTS
    batch_record(batch=batch(message("1", "hello")))
    for _ in range(webhooks.MAX_ATTEMPTS):
        run_due(at_hours=30)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts) == (DeliveryState.DEAD, webhooks.MAX_ATTEMPTS)
    assert run_due(at_hours=60) == 0  # dead stays dead
    page = owner_client.get(f"/webhooks/{endpoint.pk}/").content.decode()
    assert "Dead" in page and "503" in page
    owner_client.post(f"/webhooks/{endpoint.pk}/", {"action": "replay", "delivery": delivery.pk})
    assert run_due() == 1
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.DELIVERED and len(receiver.received) == 1


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://example.org/x", "only http:// and https://"),
        ("file:///etc/passwd", "only http:// and https://"),
        ("http://169.254.169.254/latest/meta-data", "metadata"),
        ("http://127.0.0.1:9/x", "^url: 127.0.0.1 is a loopback address"),
        ("http://10.1.2.3/x", "^url: 10.1.2.3 is an address on a private network"),
        ("http://[::1]/x", "^url: ::1 is a loopback address"),
        ("http://169.254.1.1/x", "^url: 169.254.1.1 is a link-local address"),
        ("http://no-such-host.invalid/x", "cannot resolve"),
    ],
)
def test_ssrf_addresses_are_refused_unless_private_is_allowed(
    db: None, url: str, words: str
) -> None:
    with pytest.raises(Invalid, match=words):
        webhooks.url_check(url, allow_private=False)
    if "only http" not in words and "resolve" not in words:
        assert webhooks.url_check(url, allow_private=True) == url


def test_a_private_address_is_refused_again_at_delivery(receiver: Receiver) -> None:
    webhooks.endpoint_create(url=receiver.url, events=[])
    GatewaySettings.objects.update(webhooks_allow_private=False)
    batch_record(batch=batch(message("1", "hello")))
    run_due()
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == DeliveryState.RETRYING and "loopback" in delivery.last_error
    assert receiver.received == []


def test_webhooks_page_adds_shows_the_secret_once_and_refuses_bad_urls(
    owner_client: Client,
) -> None:
    GatewaySettings.objects.update_or_create(pk=1, defaults={"webhooks_allow_private": True})
    made = owner_client.post(
        "/webhooks/", {"url": "http://127.0.0.1:9/hook", "events": ["tag.changed"]}
    )
    html = made.content.decode()
    assert (
        made.status_code == 200 and "Signing secret" in html and "no-store" in made["Cache-Control"]
    )
    assert "Signing secret" not in owner_client.get("/webhooks/").content.decode()
    bad = owner_client.post("/webhooks/", {"url": "ftp://127.0.0.1/"})
    assert bad.status_code == 422 and "only http:// and https://" in bad.content.decode()


def test_send_status_changes_are_events(receiver: Receiver) -> None:
    webhooks.endpoint_create(url=receiver.url, events=["send.status", "message.outbound"])
    batch_record(batch=batch(message("1", "hello")))
    Account.objects.update(send_permission="ask", send_to_any_chat=True)
    attempt = send_request(
        agent=None,
        account_id=Account.objects.get().pk,
        chat_id=Chat.objects.get().pk,
        text="may I?",
    )
    send_reject(send_id=attempt.public_id)
    assert list(WebhookDelivery.objects.order_by("id").values_list("event", flat=True)) == [
        "message.outbound",
        "send.status",
        "send.status",
    ]
    run_due()
    statuses = [json.loads(body)["data"].get("status") for _, body in receiver.received]
    assert statuses == [None, "rejected", "rejected"]  # the send as it is when delivered
    assert json.loads(receiver.received[1][1])["data"]["send_id"] == attempt.public_id


def test_a_delivery_connects_to_the_address_it_checked(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is resolved once per attempt and the POST goes to that address (with the
    name in Host), so a name that resolves elsewhere a moment later cannot redirect it."""
    answers = {"hooks.example": "127.0.0.1"}
    real = socket.getaddrinfo

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhooks.socket, "getaddrinfo", resolve)
    port = receiver.server.server_port
    webhooks.endpoint_create(url=f"http://hooks.example:{port}/hook", events=[])
    batch_record(batch=batch(message("1", "hello")))
    run_due()
    headers, _ = receiver.received[0]
    assert headers["Host"] == f"hooks.example:{port}"
    answers["hooks.example"] = "169.254.169.254"  # rebound to the metadata address
    GatewaySettings.objects.update(webhooks_allow_private=False)
    batch_record(batch=batch(message("2", "again")))
    run_due()
    latest = WebhookDelivery.objects.order_by("-id").first()
    assert latest is not None and "metadata" in latest.last_error
    assert len(receiver.received) == 1


def test_a_delivery_is_replayed_only_through_its_own_endpoint(
    receiver: Receiver, owner_client: Client
) -> None:
    mine = webhooks.endpoint_create(url=receiver.url, events=[])
    other = webhooks.endpoint_create(url=receiver.url + "/other", events=["tag.changed"])
    batch_record(batch=batch(message("1", "hello")))
    delivery = WebhookDelivery.objects.get(endpoint=mine)
    run_due()
    answer = owner_client.post(
        f"/webhooks/{other.pk}/", {"action": "replay", "delivery": delivery.pk}
    )
    assert answer.status_code == 404
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.DELIVERED  # untouched
