"""The agents' API for what is new and for sends: unread, mark read, the changes feed, and
guarded idempotent sends with their status."""

from __future__ import annotations

import json
from typing import Annotated, Any

from django.http import HttpRequest, HttpResponse
from ninja import Header, Router
from pydantic import Field

from archive.gateway.models import SendAttempt
from archive.gateway.schemas import (
    ChangeOut,
    ChangesOut,
    ImportedMessagesOut,
    MarkReadIn,
    MarkReadOut,
    SendIn,
    SendOut,
    UnreadOut,
)
from archive.gateway.selectors import (
    NOTE_KINDS,
    changes_page,
    first_unread_id,
    imported_messages_page,
    unread_page,
)
from archive.gateway.services.agents import mark_read
from archive.gateway.services.idempotency import KEY_MAX, idempotent, key_clean
from archive.gateway.services.sends import SendRefused, send_get, send_request
from archive.store.changes import ChangeKind, imported_count
from archive.store.models import Change, Message
from archive.store.schemas import message_out
from archive.store.selectors import messages_full
from archive.web.api import (
    agent_only,
    answers,
    caller_agent,
    limit_query,
    links,
    public_id,
    requires,
    row_id,
    scope,
)
from archive.web.schemas import Format
from wirecat.errors import NotFound

UnreadCursor = Annotated[
    str, Format("wirecat-unread-cursor"), Field(description="the `next_cursor` of a page")
]
ChangesCursor = Annotated[
    str, Format("wirecat-changes-cursor"), Field(description="the `cursor` of a page")
]
ImportedCursor = Annotated[
    str, Format("wirecat-imported-cursor"), Field(description="the `next_cursor` of a page")
]

router = Router(tags=["messages"])

# A send's answer given again for a retry with the same Idempotency-Key and body.
REPLAYED = {
    "Idempotent-Replayed": {
        "description": "true when this is the kept answer to an earlier request with this key",
        "required": False,
        "schema": {"type": "string", "enum": ["true"]},
    }
}


@router.get(
    "/messages/unread",
    response=answers(UnreadOut),
    summary="This agent's unread inbound messages, oldest first",
    **scope("messages.read"),
)
@requires("messages.read")
def unread(
    request: HttpRequest,
    cursor: UnreadCursor | None = None,
    limit: int = limit_query(50, 200),
) -> UnreadOut:
    """Read state is the calling agent's own: never shared with other agents, never sent to
    any messenger. An agent starts with the history before its creation (or before its
    `since`) counted as read."""
    agent = agent_only(request, "unread")
    page = unread_page(agent=agent, cursor=cursor, limit=limit)
    messages = messages_full([m.pk for m in page.messages])
    return UnreadOut(messages=[message_out(m) for m in messages], next_cursor=page.next_cursor)


@router.post(
    "/messages/mark_read",
    response=answers(MarkReadOut),
    summary="Mark messages read for this agent: by ids, up to one, or a whole chat",
    **scope("messages.read"),
)
@requires("messages.read")
def mark_read_view(request: HttpRequest, body: MarkReadIn) -> MarkReadOut:
    agent = agent_only(request, "mark_read")
    marked = mark_read(agent=agent, ids=body.ids, up_to=body.up_to, chat_id=body.chat_id)
    agent.refresh_from_db(fields=["read_through"])
    first = first_unread_id(agent)
    public = None
    if first is not None:
        public = Message.objects.filter(pk=first).values_list("public_id", flat=True).first()
    return MarkReadOut(marked=marked, unread_first=public)


@router.get(
    "/changes",
    response=answers(ChangesOut),
    summary="What changed, in order, after a cursor (for agents that poll)",
    **scope("messages.read"),
)
@requires("messages.read")
def changes(
    request: HttpRequest,
    cursor: ChangesCursor | None = None,
    limit: int = limit_query(100, 1000),
) -> ChangesOut:
    """An agent sees its own sends' status only, and within its limits only their chats'
    rows; the owner sees every row."""
    page = changes_page(agent=caller_agent(request), cursor=cursor, limit=limit)
    return ChangesOut(
        changes=[_change_out(c, page.public_ids, page.notes) for c in page.changes],
        cursor=page.cursor,
    )


def _change_out(c: Change, public_ids: dict[int, str], notes: dict[int, str]) -> ChangeOut:
    # A note's own row keeps the note's id in `tag` (shown as `note`); a messages.imported
    # row its count in `tag` and its last message's row id in `target_id` (shown as
    # `count` and `last_message`).
    imported = c.kind == ChangeKind.MESSAGES_IMPORTED
    return ChangeOut(
        seq=c.pk,
        kind=c.kind,
        at=c.at,
        message=public_ids.get(c.message_pk or 0),
        chat_id=c.chat_pk,
        tag=None if imported or c.kind in NOTE_KINDS else c.tag or None,
        target_kind=c.target_kind or None,
        target_id=None if imported else c.target_id,
        note=notes.get(c.pk),
        last_message=public_ids.get(c.target_id or 0) if imported else None,
        count=imported_count(c.tag) if imported else None,
    )


@router.get(
    "/changes/{seq}/messages",
    response=answers(ImportedMessagesOut),
    summary="The messages of a messages.imported change, in the order they were stored",
    **scope("messages.read"),
)
@requires("messages.read")
def imported_messages(
    request: HttpRequest,
    seq: int = row_id("change"),
    cursor: ImportedCursor | None = None,
    limit: int = limit_query(100, 200),
) -> ImportedMessagesOut:
    """A messages.imported row of the feed (its `seq`) stands for a chat's new messages of
    one quiet batch: these are they, as many as are still stored (tombstoned ones too,
    `deleted`), first to last; `next_cursor` pages on. 404 for a `seq` that is not such a
    row or that this agent does not see in its feed."""
    page = imported_messages_page(agent=caller_agent(request), seq=seq, cursor=cursor, limit=limit)
    return ImportedMessagesOut(
        messages=[message_out(m) for m in page.messages], next_cursor=page.next_cursor
    )


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
    **scope(
        "messages.send",
        responses={
            202: {
                "headers": REPLAYED,
                **links(__name__, GetSend=("send_status", {"send_id": "$response.body#/send_id"})),
            },
            403: {"headers": REPLAYED},
        },
    ),
)
@requires("messages.send")
def send(
    request: HttpRequest,
    body: SendIn,
    idempotency_key: str = Header(
        ...,
        alias="Idempotency-Key",
        description="any unique string per send (printable ASCII), reused on retry",
        min_length=1,
        max_length=KEY_MAX,
        pattern=r"^[ -~]*[!-~][ -~]*$",
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
def send_status(request: HttpRequest, send_id: str = public_id("snd", "send")) -> SendOut:
    attempt = send_get(send_id=send_id)
    agent = caller_agent(request)
    if agent is not None and attempt.agent_id != agent.pk:
        raise NotFound(f"send {send_id[:40]!r} does not exist")  # another agent's
    return send_out(attempt)
