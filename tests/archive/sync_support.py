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
from tests.providers.bot_api import ALICE, BOB, GROUP, PRIVATE, BotApi


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


def chatter(api: BotApi, count: int) -> None:
    """`count` messages in the Bot API server: Alice and Bob in the group, every 7th a
    reply, every 10th private."""
    for n in range(1, count + 1):
        if n % 10 == 0:
            api.post(PRIVATE, ALICE, f"private note {n}")
        elif n % 7 == 0:
            api.post(GROUP, BOB, f"answer {n}", reply_to_message={"message_id": n - 1})
        else:
            api.post(GROUP, ALICE if n % 2 else BOB, f"group line {n}")
