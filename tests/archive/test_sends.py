"""Sends: the guard's rules in order, idempotency keys, the journal (never the text), the
owner's approval for "ask", and delivery through the account's connector (a double at the
provider edge: the send port, registered for the test provider)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from archive.connectors.sending import (
    OutboundMessage,
    SendError,
    register_sender,
    unregister_sender,
)
from archive.gateway.jobs import send_deliver as send_deliver_job
from archive.gateway.models import Agent, IdempotencyKey, SendAttempt, SendOutcome
from archive.gateway.services import agents as agent_service
from archive.gateway.services.sends import SEND_QUEUED, gateway_settings
from archive.store.effects import Effect
from archive.store.models import Account, Chat, DeliveryStatus, Message
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

SECRET = "the launch code is 4-8-15-16-23-42"


class Provider:
    """The provider edge: what the connector would hand over the wire."""

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []
        self.fail: str | None = None

    def __call__(self, outbound: OutboundMessage) -> str:
        if self.fail:
            raise SendError(self.fail)
        self.sent.append(outbound)
        return f"provider-{len(self.sent)}"


@pytest.fixture
def provider() -> Iterator[Provider]:
    edge = Provider()
    register_sender("testnet", edge)
    yield edge
    unregister_sender("testnet")


@contextmanager
def queued_sends_delivered() -> Iterator[None]:
    """What the worker does after the requests: run the delivery job of every queued send
    (the job function itself, as Celery calls it)."""
    yield
    for attempt in SendAttempt.objects.filter(outcome=SendOutcome.QUEUED):
        send_deliver_job(attempt.pk)


@pytest.fixture
def setup(db: None) -> dict[str, Any]:
    batch_record(batch=batch(message("1", "hello there"), message("2", "elsewhere", chat="chat-2")))
    account = Account.objects.get()
    account.send_permission = "allow"
    account.save()
    Chat.objects.filter(external_id="chat-1").update(send_allowed=True)
    issued = agent_service.agent_create(name="sender", scopes=["messages.send", "messages.read"])
    return {
        "account": account,
        "chat": Chat.objects.get(external_id="chat-1"),
        "other_chat": Chat.objects.get(external_id="chat-2"),
        "agent": issued.agent,
        "token": issued.token,
    }


def send(client: Client, setup: dict[str, Any], key: str = "k1", **overrides: Any) -> Any:
    body = {"account_id": setup["account"].pk, "chat_id": setup["chat"].pk, "text": SECRET}
    body.update(overrides)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {setup['token']}"}
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(
        "/api/messages/send", json.dumps(body), content_type="application/json", **headers
    )


def test_an_allowed_send_is_written_pending_then_delivered(
    client: Client,
    setup: dict[str, Any],
    provider: Provider,
) -> None:
    with queued_sends_delivered():
        response = send(client, setup)
    assert response.status_code == 202
    answer = response.json()
    assert answer["status"] == "queued" and answer["send_id"].startswith("snd_")
    outbound = Message.objects.get(public_id=answer["message_id"])
    assert outbound.direction == "out" and outbound.text == SECRET
    assert outbound.delivery_status == DeliveryStatus.SENT  # the job ran on commit
    assert outbound.provider_metadata["provider_id"] == "provider-1"
    assert [m.text for m in provider.sent] == [SECRET]
    assert provider.sent[0].chat_external_id == "chat-1"
    status = client.get(
        f"/api/sends/{answer['send_id']}", HTTP_AUTHORIZATION=f"Bearer {setup['token']}"
    ).json()
    assert status["status"] == "sent"


def test_a_provider_failure_is_send_failed_with_its_reason(
    client: Client,
    setup: dict[str, Any],
    provider: Provider,
) -> None:
    provider.fail = "chat not found (400)"
    with queued_sends_delivered():
        answer = send(client, setup).json()
    attempt = SendAttempt.objects.get(public_id=answer["send_id"])
    assert (attempt.outcome, attempt.error) == (SendOutcome.FAILED, "chat not found (400)")
    assert Message.objects.get(public_id=answer["message_id"]).delivery_status == "failed"


def sends_queued(callbacks: list[Any]) -> list[Effect]:
    return [c for c in callbacks if isinstance(c, Effect) and c.name == SEND_QUEUED]


def test_a_queued_send_hands_itself_to_the_worker_on_commit(
    client: Client,
    owner_client: Client,
    setup: dict[str, Any],
    provider: Provider,
    celery_inline: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks() as queued:
        answer = send(client, setup, key="go").json()
    attempt = SendAttempt.objects.get(public_id=answer["send_id"])
    # The service asks for it; nothing goes out before the transaction commits.
    assert sends_queued(queued) == [Effect(SEND_QUEUED, (("attempt_id", attempt.pk),))]
    assert provider.sent == []
    for callback in queued:  # the commit: the gateway's jobs enqueue send_deliver
        callback()
    assert [m.text for m in provider.sent] == [SECRET]
    Account.objects.update(send_permission="ask")
    with django_capture_on_commit_callbacks() as waiting:
        waits = send(client, setup, key="wait").json()
    assert sends_queued(waiting) == []  # "ask": nothing goes out until the owner approves
    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post(f"/sends/{waits['send_id']}/", {"decision": "approve"})
    assert [m.text for m in provider.sent] == [SECRET, SECRET]
    assert SendAttempt.objects.get(public_id=waits["send_id"]).outcome == SendOutcome.SENT


def test_no_connector_for_the_provider_fails_clearly(client: Client, setup: dict[str, Any]) -> None:
    with queued_sends_delivered():
        answer = send(client, setup).json()
    assert SendAttempt.objects.get(public_id=answer["send_id"]).error == (
        "no connector can send for testnet yet"
    )


@pytest.mark.parametrize(
    ("arrange", "rule", "words"),
    [
        (
            lambda s: gateway_settings().__class__.objects.filter(pk=1).update(read_only=True),
            "read-only-lock",
            "read-only switch is on",
        ),
        (
            lambda s: Account.objects.update(send_permission="deny"),
            "permission",
            "sending is denied",
        ),
        (
            lambda s: Account.objects.update(send_permission="read-only"),
            "permission",
            "is read-only",
        ),
        (lambda s: Chat.objects.update(send_allowed=False), "allow-list", "not on the allow-list"),
        (
            lambda s: Account.objects.update(sends_per_hour=0),
            "account-hourly-limit",
            "0 sends an hour",
        ),
        (lambda s: Agent.objects.update(sends_per_hour=0), "agent-hourly-limit", "0 sends an hour"),
    ],
    ids=["lock", "deny", "read-only", "allow-list", "account-limit", "agent-limit"],
)
def test_each_guard_rule_refuses_naming_itself(
    client: Client, setup: dict[str, Any], provider: Provider, arrange: Any, rule: str, words: str
) -> None:
    gateway_settings()
    arrange(setup)
    response = send(client, setup)
    assert response.status_code == 403
    body = response.json()
    assert body["error"] == "Forbidden" and body["rule"] == rule and words in body["detail"]
    attempt = SendAttempt.objects.get(public_id=body["send_id"])
    assert (attempt.outcome, attempt.rule) == (SendOutcome.REFUSED, rule)
    assert attempt.message is None and not Message.objects.filter(direction="out").exists()
    assert provider.sent == []


def test_the_guard_checks_in_order(client: Client, setup: dict[str, Any]) -> None:
    gateway_settings()
    Account.objects.update(send_permission="deny")
    Chat.objects.update(send_allowed=False)
    assert send(client, setup).json()["rule"] == "permission"  # before the allow-list
    gateway_settings().__class__.objects.filter(pk=1).update(read_only=True)
    assert send(client, setup, key="k2").json()["rule"] == "read-only-lock"  # first of all


def test_hourly_limits_count_sends_of_the_last_hour(
    client: Client,
    setup: dict[str, Any],
    provider: Provider,
) -> None:
    Agent.objects.update(sends_per_hour=2)
    with queued_sends_delivered():
        assert send(client, setup, key="a").status_code == 202
        assert send(client, setup, key="b").status_code == 202
    assert send(client, setup, key="c").json()["rule"] == "agent-hourly-limit"
    SendAttempt.objects.update(at=timezone.now() - timedelta(hours=2))
    assert send(client, setup, key="d").status_code == 202


def test_idempotency_replays_conflicts_and_expires(
    client: Client,
    setup: dict[str, Any],
    provider: Provider,
) -> None:
    with queued_sends_delivered():
        first = send(client, setup, key="same")
        again = send(client, setup, key="same")
    assert first.json() == again.json() and again.status_code == 202
    assert again["Idempotent-Replayed"] == "true"
    assert SendAttempt.objects.count() == 1 and len(provider.sent) == 1
    other = send(client, setup, key="same", text="a different text")
    assert other.status_code == 409 and "different body" in other.json()["detail"]
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=25))
    with queued_sends_delivered():
        later = send(client, setup, key="same")
    assert later.json()["send_id"] != first.json()["send_id"]  # 24 hours on: a new send
    assert len(provider.sent) == 2
    refused_first = send(client, setup, key="r", chat_id=setup["other_chat"].pk)
    refused_again = send(client, setup, key="r", chat_id=setup["other_chat"].pk)
    assert refused_first.status_code == refused_again.status_code == 403
    assert refused_first.json() == refused_again.json()
    missing = send(client, setup, key="")
    assert missing.status_code == 422 and "Idempotency-Key" in missing.json()["detail"]


def test_bad_send_input_is_explained(client: Client, setup: dict[str, Any]) -> None:
    cases = [
        ({"text": "   "}, 422, "text: empty"),
        ({"text": "x" * 10_001}, 422, "at most 10,000"),
        ({"chat_id": 999}, 404, "no chat 999"),
        ({"account_id": 999}, 404, "no account 999"),
        ({"reply_to": Message.objects.get(external_id="2").public_id}, 404, "reply_to"),
    ]
    for n, (override, status, words) in enumerate(cases):
        response = send(client, setup, key=f"bad{n}", **override)
        assert response.status_code == status and words in response.json()["detail"], override
    assert not SendAttempt.objects.exists()  # bad input is not an attempt
    assert not IdempotencyKey.objects.exists()  # and does not use up the key


def test_ask_waits_for_the_owner_who_approves_or_refuses(
    client: Client,
    owner_client: Client,
    setup: dict[str, Any],
    provider: Provider,
) -> None:
    Account.objects.update(send_permission="ask")
    first = send(client, setup, key="one").json()
    second = send(client, setup, key="two", text="another one").json()
    assert first["status"] == second["status"] == "awaiting"
    assert provider.sent == []
    page = owner_client.get("/sends/").content.decode()
    assert SECRET in page and "another one" in page and "Approve and send" in page
    with queued_sends_delivered():
        decided = owner_client.post(
            f"/sends/{first['send_id']}/", {"decision": "approve"}, HTTP_HX_REQUEST="true"
        )
    assert decided.status_code == 200 and "Queued" in decided.content.decode()
    assert [m.text for m in provider.sent] == [SECRET]
    owner_client.post(f"/sends/{second['send_id']}/", {"decision": "refuse"})
    statuses = {
        s: client.get(f"/api/sends/{s}", HTTP_AUTHORIZATION=f"Bearer {setup['token']}").json()[
            "status"
        ]
        for s in (first["send_id"], second["send_id"])
    }
    assert statuses == {first["send_id"]: "sent", second["send_id"]: "rejected"}
    assert Message.objects.get(public_id=second["message_id"]).delivery_status == "refused"
    twice = owner_client.post(f"/sends/{second['send_id']}/", {"decision": "approve"}, follow=True)
    assert "not awaiting" in twice.content.decode()


def test_the_text_is_nowhere_but_in_the_outbound_message(
    client: Client,
    setup: dict[str, Any],
    provider: Provider,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with queued_sends_delivered():
        send(client, setup, key="ok")
        send(client, setup, key="refused", chat_id=setup["other_chat"].pk)
    provider.fail = "provider said no"
    with queued_sends_delivered():
        send(client, setup, key="failed")
    marker = SECRET.split()[-1]
    holders = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            if table.startswith(
                ("message_fts", "message_trigram", "message_stems", "search_terms")
            ):
                continue  # the indexes of the message text: its tokens, by design
            cursor.execute(f'SELECT * FROM "{table}"')
            for row in cursor.fetchall():
                if any(marker in str(value) for value in row):
                    holders.append(table)
    assert holders == ["archive_message", "archive_message"]  # the two delivered attempts
    assert marker not in caplog.text


def test_an_agent_sees_only_its_own_sends(client: Client, setup: dict[str, Any]) -> None:
    Account.objects.update(send_permission="ask")
    mine = send(client, setup).json()["send_id"]
    other = agent_service.agent_create(name="other", scopes=["messages.send"]).token
    response = client.get(f"/api/sends/{mine}", HTTP_AUTHORIZATION=f"Bearer {other}")
    assert response.status_code == 404
