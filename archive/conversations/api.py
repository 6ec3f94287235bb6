"""The agent's batches (scope conversations.links): the earliest messages of a chat that
need the agent with their context and the rules' candidates, and the agent's answers,
checked whole before any is stored and kept outside builds, so a rebuild keeps them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Query, Router

from archive.conversations.schemas import (
    AnswersIn,
    AnswersOut,
    BatchMessageOut,
    BatchNextOut,
    BatchOut,
    BatchStatusOut,
    CandidateOut,
    ContextMessageOut,
)
from archive.conversations.services.batches import (
    BATCH_ID,
    BATCH_MAX,
    BATCH_SIZE,
    AnswerGiven,
    Batch,
    BatchMessage,
    batch_answers_store,
    batch_id_parse,
    batch_next,
    chat_waiting_count,
)
from archive.gateway.selectors import agent_chat_get
from archive.web.api import answers, caller_actor, caller_agent, requires, scope
from archive.web.schemas import ID_MAX

router = Router(tags=["conversations"])


def _chat_query() -> Any:
    return Query(..., ge=1, le=ID_MAX, description="the chat's id")


def _context_out(message: BatchMessage) -> ContextMessageOut:
    return ContextMessageOut(
        id=message.public_id,
        sender=message.sender,
        sent_at=message.sent_at,
        text=message.text,
        reply_to=message.reply_to,
        service=message.service,
    )


def _message_out(message: BatchMessage) -> BatchMessageOut:
    return BatchMessageOut(
        **_context_out(message).model_dump(),
        asked=message.asked,
        answered=message.answered,
        candidates=[
            CandidateOut(parent=parent, confidence=confidence, rule=rule)
            for parent, confidence, rule in message.candidates
        ],
    )


def _batch_out(batch: Batch) -> BatchOut:
    return BatchOut(
        id=batch.id,
        chat_id=batch.chat_id,
        messages=[_message_out(m) for m in batch.messages],
        context=[_context_out(m) for m in batch.context],
    )


@router.get(
    "/conversations/batches/next",
    response=answers(BatchNextOut),
    summary="The chat's next messages that need the agent to say what each replies to",
    **scope("conversations.links"),
)
@requires("conversations.links")
@requires("messages.read")
def batches_next(
    request: HttpRequest,
    chat: int = _chat_query(),
    size: int = Query(
        BATCH_SIZE, ge=1, le=BATCH_MAX, description=f"messages in the batch, 1 to {BATCH_MAX}"
    ),
) -> BatchNextOut:
    """The chat's earliest live message that needs the agent (the messenger recorded no
    reply, no fresh answer of the agent stands) and the live messages after it, `size` in
    all, with up to 50 messages before it as `context`. Each message the batch asks about
    (`asked`) comes with the rules' candidate parents and their confidence. Answer with
    `POST /api/conversations/batches/{id}/answers`. `{"batch": null}` when no message of
    the chat needs the agent. It shows message text, so it needs scope messages.read too.
    An agent limited to some chats gets 404 for the others."""
    agent_chat_get(agent=caller_agent(request), chat_id=chat)
    found = batch_next(chat_id=chat, size=size)
    return BatchNextOut(batch=None if found is None else _batch_out(found))


@router.get(
    "/conversations/batches/status",
    response=answers(BatchStatusOut),
    summary="How many of the chat's messages need the agent",
    **scope("conversations.links"),
)
@requires("conversations.links")
def batches_status(
    request: HttpRequest,
    chat: int = _chat_query(),
) -> BatchStatusOut:
    """How many of the chat's live messages need the agent (no reply recorded, no fresh
    answer), without their text."""
    agent_chat_get(agent=caller_agent(request), chat_id=chat)
    return BatchStatusOut(chat_id=chat, waiting=chat_waiting_count(chat_id=chat))


@router.post(
    "/conversations/batches/{batch_id}/answers",
    response=answers(AnswersOut),
    summary="Store the agent's answers to a batch: all of them, or none",
    **scope("conversations.links"),
)
@requires("conversations.links")
def batch_answers(
    request: HttpRequest,
    body: AnswersIn,
    batch_id: str = Path(
        ..., pattern=f"^{BATCH_ID}$", description="the batch's id, from batches/next"
    ),
) -> AnswersOut:
    """For each message the batch asks about (some or all of them, each once): its
    `parent` (a message of the batch or its context earlier than it; null: it starts a
    conversation) and the `confidence`, 0 to 1; `model` names the model that answered.
    Checked whole before anything is stored: any problem is 422 naming every one
    (`answers[3].parent: …`) and stores nothing. 409 when a message was added, edited or
    deleted between the batch's first and last message since it was given: ask for the
    next batch. A message's answer replaces its earlier one; it goes stale when its
    message or parent changes, and the message needs the agent again. The chat is marked
    for a rebuild (`need`), which chooses the answers after the messenger's replies and
    before the rules."""
    chat_id = batch_id_parse(batch_id)[0]
    agent_chat_get(agent=caller_agent(request), chat_id=chat_id)
    stored = batch_answers_store(
        batch_id=batch_id,
        model=body.model,
        answers=[
            AnswerGiven(message=a.message, parent=a.parent, confidence=a.confidence)
            for a in body.answers
        ],
        agent=caller_actor(request),
    )
    return AnswersOut(
        batch=stored.batch_id, chat_id=stored.chat_id, stored=stored.stored, need=stored.need
    )
