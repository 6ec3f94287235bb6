"""Webhooks: endpoints the owner registers, and the delivery of events to them.

Deliveries are enqueued by a trigger on the changes feed (migration 0017), in the
transaction of their cause; the feed's vocabulary (its kinds, and the events webhooks call
them by) is `archive.store.changes`. The `webhooks_deliver` job POSTs what is due, signed:

    WireCat-Timestamp: <unix seconds>
    WireCat-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

and retries failures with exponential backoff and jitter for about a day, then marks them
dead. Each attempt has one deadline (`WIRECAT_WEBHOOK_TIMEOUT_SECONDS`, connecting, sending
and reading together) and reads at most `ANSWER_MAX` bytes of the answer: an answer that
is longer, or not complete in time, is a failure. The job runs on its own queue
(`webhooks`), so a slow receiver holds up no send. URLs must be http(s); loopback, private,
link-local and metadata addresses are refused unless the owner allows private addresses
(checked when saved and before every attempt).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import random
import secrets
import socket
import time
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from archive.gateway.models import (
    WEBHOOK_EVENTS,
    DeliveryState,
    SendAttempt,
    WebhookDelivery,
    WebhookEndpoint,
)
from archive.gateway.services.deadline import DeadlineClient, deadline_client
from archive.gateway.services.sends import gateway_settings
from archive.store.changes import ChangeKind
from archive.store.models import Change, Message
from notes.models import Note
from notes.services.folders import folder_path
from wirecat.errors import Invalid, NotFound

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 20  # 30 s doubling to 2 h, then every 2 h: about a day in all
FIRST_DELAY = 30.0
LONGEST_DELAY = 2 * 60 * 60.0
ANSWER_MAX = 4 * 1024  # bytes of an answer read at most; a longer one is a failure
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


def url_check(url: str, *, allow_private: bool | None = None) -> str:
    """The URL when it may be called; Invalid saying why not."""
    url_target(url, allow_private=allow_private)
    return url.strip()


def url_target(url: str, *, allow_private: bool | None = None) -> tuple[str, str]:
    """(the URL with its host replaced by the checked address, the host): a delivery
    connects to the very address that was checked, so a name that resolves differently a
    moment later (DNS rebinding) cannot lead it elsewhere."""
    allow = gateway_settings().webhooks_allow_private if allow_private is None else allow_private
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https"):
        raise Invalid("url: only http:// and https:// addresses")
    if not parts.hostname:
        raise Invalid("url: no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = socket.getaddrinfo(parts.hostname, port, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, ValueError, UnicodeError) as exc:
        raise Invalid(f"url: cannot resolve {parts.hostname!r}") from exc
    checked = []
    for *_, address in found:
        ip = ipaddress.ip_address(address[0])
        if ip in _METADATA and not allow:
            raise Invalid(
                f"url: {_named(parts.hostname, ip)} a cloud metadata address: it is refused,"
                " as a webhook there could read this machine's cloud credentials."
            )
        if not ip.is_global and not allow:
            raise Invalid(
                f"url: {_named(parts.hostname, ip)} {_private_kind(ip)}. Such addresses are"
                " refused so that a webhook cannot reach inside your network; to use it,"
                " choose “Allow private and loopback addresses” on the Webhooks page."
            )
        checked.append(ip)
    first = checked[0]
    host = f"[{first}]" if first.version == 6 else str(first)
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return parts._replace(netloc=netloc).geturl(), parts.hostname


def _named(host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """The start of a refusal: the address itself, or the name and what it resolves to."""
    if _is_ip(host) and ipaddress.ip_address(host.strip("[]")) == ip:
        return f"{ip} is"
    return f"{host} resolves to {ip},"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _private_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if ip.is_loopback:
        return "a loopback address (this machine itself)"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_private:
        return "an address on a private network"
    return "not a public internet address"


def _events_clean(events: list[str]) -> list[str]:
    unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
    if unknown:
        raise Invalid(f"events: unknown {', '.join(unknown)}; known: {', '.join(WEBHOOK_EVENTS)}")
    return sorted(set(events))


def endpoint_create(*, url: str, events: list[str], secret: str = "") -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        url=url_check(url),
        events=_events_clean(events),
        secret=secret.strip() or secrets.token_urlsafe(24),
    )


def endpoint_get(*, endpoint_id: int) -> WebhookEndpoint:
    found = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
    if found is None:
        raise NotFound(f"webhook endpoint {endpoint_id} does not exist")
    return found


def endpoint_set_active(*, endpoint_id: int, active: bool) -> WebhookEndpoint:
    endpoint = endpoint_get(endpoint_id=endpoint_id)
    endpoint.active = active
    endpoint.save(update_fields=["active"])
    return endpoint


def endpoint_delete(*, endpoint_id: int) -> None:
    endpoint_get(endpoint_id=endpoint_id).delete()


def delivery_replay(*, endpoint_id: int, delivery_id: int) -> WebhookDelivery:
    """Deliver again (a dead one, or one already delivered), with a fresh retry budget."""
    delivery = WebhookDelivery.objects.filter(pk=delivery_id, endpoint_id=endpoint_id).first()
    if delivery is None:
        raise NotFound(f"delivery {delivery_id} of endpoint {endpoint_id} does not exist")
    delivery.state, delivery.attempts = DeliveryState.PENDING, 0
    delivery.next_attempt_at = timezone.now()
    delivery.save(update_fields=["state", "attempts", "next_attempt_at"])
    return delivery


def sign(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"v1={digest.hexdigest()}"


def _message(pk: int | None) -> dict[str, Any] | None:
    if pk is None:
        return None
    m = Message.objects.select_related("chat", "sender").filter(pk=pk).first()
    if m is None:
        return None  # purged since
    return {
        "id": m.public_id,
        "chat_id": m.chat_id,
        "chat_title": m.chat.title or m.chat.external_id,
        "direction": m.direction,
        "sender": str(m.sender) if m.sender else None,
        "sent_at": m.sent_at.isoformat(),
        "text": m.text,
        "deleted": m.deleted_at is not None,
        "delivery_status": m.delivery_status,
    }


_NOTE_KINDS = (ChangeKind.NOTE_CREATED, ChangeKind.NOTE_UPDATED, ChangeKind.NOTE_DELETED)


def _note(change: Change) -> dict[str, Any] | None:
    """The note a change names, as it is now (like a message's): its id, title, revision,
    author and folder. A note deleted since has only its id (a note's row keeps it)."""
    kept = change.tag if change.kind in _NOTE_KINDS else ""
    which: dict[str, object] = {"public_id": kept} if kept else {"pk": change.target_id}
    note = Note.objects.select_related("folder").filter(**which).first()
    if note is None:
        return {"id": kept, "deleted": True} if kept else None
    return {
        "id": note.public_id,
        "title": note.title,
        "revision": note.revision,
        "author": note.author,
        "folder": folder_path(note.folder),
        "updated_at": note.updated_at.isoformat(),
        "deleted": False,
    }


def payload(delivery: WebhookDelivery) -> dict[str, Any]:
    change = Change.objects.filter(pk=delivery.change_pk).first()
    data: dict[str, Any] = {}
    if change is not None:
        data["message"] = _message(change.message_pk)
        if change.kind in (ChangeKind.TAG_ADDED, ChangeKind.TAG_REMOVED):
            data.update(
                tag=change.tag,
                added=change.kind == ChangeKind.TAG_ADDED,
                target_kind=change.target_kind,
                target_id=change.target_id,
            )
        if change.target_kind == "note" and change.target_id is not None:
            data["note"] = _note(change)
        if change.kind == ChangeKind.SEND_STATUS and change.target_id:
            attempt = SendAttempt.objects.filter(pk=change.target_id).first()
            if attempt is not None:
                data.update(send_id=attempt.public_id, status=attempt.outcome, error=attempt.error)
    return {
        "delivery": delivery.pk,
        "event": delivery.event,
        "change": delivery.change_pk,
        "at": change.at.isoformat() if change else None,
        "data": data,
    }


def _backoff(attempts: int) -> timedelta:
    delay = min(FIRST_DELAY * 2 ** (attempts - 1), LONGEST_DELAY)
    return timedelta(seconds=delay * random.uniform(0.8, 1.2))  # noqa: S311 - jitter


def _deadline() -> float:
    return float(settings.WEBHOOK_TIMEOUT_SECONDS)


def _answer(response: httpx.Response) -> tuple[bytes, str]:
    """At most ANSWER_MAX bytes of the answer (raw: never decompressed), and the error when
    it is longer."""
    too_long = (
        f"answered {response.status_code} with more than {ANSWER_MAX // 1024} KB: stopped reading"
    )
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > ANSWER_MAX:
        return b"", too_long
    read = bytearray()
    for chunk in response.iter_raw():
        read += chunk
        if len(read) > ANSWER_MAX:
            return bytes(read[:ANSWER_MAX]), too_long
    return bytes(read), ""


def _attempt(delivery: WebhookDelivery, client: DeadlineClient) -> None:
    endpoint = delivery.endpoint
    status, error, answer = None, "", ""
    seconds = _deadline()
    client.start(seconds)  # one deadline: connecting, sending and reading the answer
    try:
        pinned, host = url_target(endpoint.url)
        body = json.dumps(payload(delivery), separators=(",", ":")).encode()
        stamp = int(time.time())
        port = urlsplit(endpoint.url).port
        with client.stream(
            "POST",
            pinned,
            content=body,
            # TLS still checks the certificate against the name (SNI), not the address.
            extensions={"sni_hostname": host},
            headers={
                "Host": host if port is None else f"{host}:{port}",
                "Content-Type": "application/json",
                "Accept-Encoding": "identity",
                "User-Agent": "WireCat-Webhooks/1",
                "WireCat-Event": delivery.event,
                "WireCat-Delivery": str(delivery.pk),
                "WireCat-Timestamp": str(stamp),
                "WireCat-Signature": sign(endpoint.secret, stamp, body),
            },
        ) as response:
            status = response.status_code
            raw, error = _answer(response)
        answer = raw.decode("utf-8", errors="replace")[:500]
        if not error and not 200 <= status < 300:
            error = f"answered {status}"
    except Invalid as exc:
        error = str(exc)
    except httpx.TimeoutException:
        error = (
            f"no complete answer within {seconds:g} s (WIRECAT_WEBHOOK_TIMEOUT_SECONDS): gave up"
        )
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: could not deliver"
    now = timezone.now()
    delivery.attempts += 1
    delivery.last_status, delivery.last_error, delivery.last_response = status, error, answer
    if not error:
        delivery.state, delivery.delivered_at = DeliveryState.DELIVERED, now
    elif delivery.attempts >= MAX_ATTEMPTS:
        delivery.state = DeliveryState.DEAD
    else:
        delivery.state = DeliveryState.RETRYING
        delivery.next_attempt_at = now + _backoff(delivery.attempts)
    delivery.save()


def deliver_due(*, limit: int = 100, now: datetime | None = None) -> int:
    """Attempt the deliveries that are due (each POST outside any transaction)."""
    due = list(
        WebhookDelivery.objects.select_related("endpoint")
        .filter(
            Q(state=DeliveryState.PENDING) | Q(state=DeliveryState.RETRYING),
            next_attempt_at__lte=now or timezone.now(),
            endpoint__active=True,
        )
        .order_by("next_attempt_at", "id")[:limit]
    )
    if not due:
        return 0
    with deadline_client(_deadline()) as client:
        for delivery in due:
            _attempt(delivery, client)
    return len(due)
