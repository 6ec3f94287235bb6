"""Sending through the guard, idempotently, and following a send."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Header, Router

from archive.api_auth import answers, caller_agent, requires, scope
from archive.jobs import send_deliver as send_deliver_job
from archive.models import SendAttempt, SendOutcome
from archive.schemas import SendIn, SendOut
from archive.services.idempotency import idempotent, key_clean
from archive.services.sends import SendRefused, send_get, send_request
from wirecat.errors import NotFound

router = Router(tags=["sends"])


def send_out(attempt: SendAttempt) -> SendOut:
    return SendOut(
        send_id=attempt.public_id,
        status=attempt.outcome,
        message_id=attempt.message.public_id if attempt.message else None,
        rule=attempt.rule or None,
        error=attempt.error or None,
        at=attempt.at,
    )


@router.post(
    "/messages/send",
    response=answers(SendOut, 202),
    summary="Send a message through the guard (needs an Idempotency-Key header)",
    **scope("messages.send"),
)
@requires("messages.send")
def send(
    request: HttpRequest,
    body: SendIn,
    idempotency_key: str | None = Header(
        None, alias="Idempotency-Key", description="any unique string per send, reused on retry"
    ),
) -> HttpResponse:
    """The first answer to an `Idempotency-Key` is kept for 24 hours: a retry with the same
    key and body gets it again (and `Idempotent-Replayed: true`) and sends nothing; the same
    key with another body is 409. The guard refuses with 403 naming its rule."""
    agent = caller_agent(request)
    key = key_clean(idempotency_key)

    def run() -> tuple[int, dict[str, Any]]:
        try:
            attempt = send_request(
                agent=agent,
                account_id=body.account_id,
                chat_id=body.chat_id,
                text=body.text,
                reply_to=body.reply_to,
            )
        except SendRefused as exc:
            refusal = {"error": "Forbidden", "detail": str(exc), "send_id": exc.send_id}
            return 403, {**refusal, "rule": exc.rule}
        if attempt.outcome == SendOutcome.QUEUED:
            send_deliver_job.delay_on_commit(attempt.pk)
        return 202, json.loads(send_out(attempt).model_dump_json())

    status, answer, replayed = idempotent(agent=agent, key=key, body=request.body, run=run)
    response = HttpResponse(json.dumps(answer), status=status, content_type="application/json")
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


@router.get(
    "/sends/{send_id}",
    response=answers(SendOut),
    summary="What became of a send",
    **scope("messages.send"),
)
@requires("messages.send")
def send_status(request: HttpRequest, send_id: str) -> SendOut:
    attempt = send_get(send_id=send_id)
    agent = caller_agent(request)
    if agent is not None and attempt.agent_id != agent.pk:
        raise NotFound(f"send {send_id[:40]!r} does not exist")  # another agent's
    return send_out(attempt)
