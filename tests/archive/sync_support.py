"""What the live-sync tests share: an agent's send through the real API and guard, then
the delivery job as the worker runs it."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from archive.gateway.jobs import send_deliver as send_deliver_job
from archive.gateway.models import SendAttempt
from archive.gateway.services import agents as agent_service
from archive.store.models import Account, Chat, Message


def agent_send(
    account: Account, chat: Chat, text: str, *, reply_to: Message | None, key: str
) -> tuple[Any, SendAttempt]:
    """Allow sends on `account` to `chat`, send `text` as an agent, deliver it. Returns the
    API's answer and the delivered attempt."""
    account.send_permission = "allow"
    account.save()
    Chat.objects.filter(pk=chat.pk).update(send_allowed=True)
    issued = agent_service.agent_create(name=f"helper-{key}", scopes=["messages.send"])
    body = {
        "account_id": account.pk,
        "chat_id": chat.pk,
        "text": text,
        "reply_to": reply_to.public_id if reply_to is not None else None,
    }
    response = Client().post(
        "/api/messages/send",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {issued.token}",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert response.status_code == 202, response.content
    attempt = SendAttempt.objects.get(public_id=response.json()["send_id"])
    send_deliver_job(attempt.pk)
    attempt.refresh_from_db()
    assert attempt.outcome == "sent", attempt.error
    return response, attempt
