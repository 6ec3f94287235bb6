"""The owner's agent's batches: the earliest messages of a chat that need the agent (no
reply the messenger recorded, no fresh agent answer) with the messages before them as
context and the rules' candidates; and the agent's answers to a batch, checked whole
before any is stored.

No table holds batches. A batch's id names the chat, its first and last message and a
hash of every live message between them: the answers read that span again and are
refused when it moved (a message added, edited or deleted inside it), since the agent
then answered a window that no longer is.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.db import connection, transaction
from django.utils import timezone

from archive.conversations import rules
from archive.conversations.domain import MESSAGE_PREFIX, Candidate, Line, message_print
from archive.conversations.models import ConversationAnswer, ConversationState, Need
from archive.conversations.services.answers import answer_fresh, answers_freshness, prints_of
from archive.conversations.services.lines import lines_after, parse_time
from archive.conversations.services.state import chats_mark
from archive.store.models import Message
from wirecat.db.values import db_time
from wirecat.errors import Conflict, Invalid, NotFound

BATCH_SIZE = 50  # messages a batch holds unless asked otherwise
BATCH_MAX = 200
BATCH_CONTEXT = 50  # messages before the first one, shown as context
MODEL_MAX = 120
PROBLEMS_SHOWN = 20  # a refusal names at most this many problems
SCAN_ROWS = 2_000  # messages read at a time while looking for the first that waits
BATCH_PREFIX = "bat_"
_HASH_CHARS = 16
_ID_MAX = 2**63 - 1
# bat_<chat id>_<first message's ULID>_<last message's ULID>_<hash>
BATCH_ID = r"bat_([1-9][0-9]{0,18})_([0-9A-Za-z]{1,40})_([0-9A-Za-z]{1,40})_([0-9a-f]{16})"
_BATCH_ID = re.compile(BATCH_ID)

NeedName = Literal["nothing", "grown", "rebuild"]
NEED_NAMES: dict[Need, NeedName] = {
    Need.NOTHING: "nothing",
    Need.GROWN: "grown",
    Need.REBUILD: "rebuild",
}

# A live message (as builds read them): not deleted, and not an outbound draft that never
# went out.
_LIVE = "m.deleted_at IS NULL AND m.delivery_status NOT IN ('awaiting', 'refused', 'failed')"
# The messenger recorded no reply the build would keep (one to a live, earlier message of
# the chat): the message is the agent's to answer.
_NO_REPLY = (
    "(m.reply_to_id IS NULL OR NOT EXISTS (SELECT 1 FROM archive_message AS p"
    " WHERE p.id = m.reply_to_id AND p.chat_id = m.chat_id AND p.deleted_at IS NULL"
    " AND p.delivery_status NOT IN ('awaiting', 'refused', 'failed')"
    " AND (p.sent_at < m.sent_at OR (p.sent_at = m.sent_at AND p.id < m.id))))"
)
# The chat's live messages without a reply a build keeps, each with its agent answer (if
# any) and that answer's parent as it is now: whether the answer is fresh, in one read.
_WAITING_SQL = (
    "SELECT m.id, m.sent_at, a.message_id, a.message_print, a.parent_id, a.parent_print,"
    " CASE WHEN a.message_id IS NULL THEN NULL ELSE m.text END, m.sender_id,"
    " p.id, p.text, p.sent_at, p.deleted_at, p.sender_id"
    " FROM archive_message AS m"
    " {join} archive_conversationanswer AS a ON a.message_id = m.id"
    " LEFT JOIN archive_message AS p ON p.id = a.parent_id"
    f" WHERE m.chat_id = %s AND {_LIVE} AND {_NO_REPLY}"
    " AND (m.sent_at, m.id) > (%s, %s){unsure}"
    " ORDER BY m.sent_at, m.id LIMIT %s"
)
# An answer is surely fresh when neither its message nor its parent was written since it
# was given (the sink stamps `updated_at` on every change of a stored message): a fully
# answered chat is then skipped in SQL, and only the answers that may have gone stale are
# fingerprinted in Python.
_SURELY_FRESH = (
    "a.message_id IS NOT NULL AND m.updated_at <= a.answered_at"
    " AND ((a.parent_id IS NULL AND a.parent_print = '')"
    " OR (p.id IS NOT NULL AND p.updated_at <= a.answered_at))"
)
_WAITING_COUNT_SQL = (
    f"SELECT count(*), sum({_SURELY_FRESH}) FROM archive_message AS m"
    " LEFT JOIN archive_conversationanswer AS a ON a.message_id = m.id"
    " LEFT JOIN archive_message AS p ON p.id = a.parent_id"
    f" WHERE m.chat_id = %s AND {_LIVE} AND {_NO_REPLY}"
)
_BEFORE_SQL = (
    "SELECT m.sent_at, m.id FROM archive_message AS m"
    f" WHERE m.chat_id = %s AND {_LIVE} AND (m.sent_at, m.id) < (%s, %s)"
    " ORDER BY m.sent_at DESC, m.id DESC LIMIT 1 OFFSET %s"
)


@dataclass(frozen=True)
class BatchMessage:
    """A message of a batch or its context, as the agent reads it."""

    public_id: str
    sender: str  # display name, else handle; "" when unknown
    sent_at: datetime
    text: str
    reply_to: str | None  # msg_… the messenger recorded as its parent, if any
    service: bool
    asked: bool = False  # the batch asks about it (no reply recorded)
    answered: bool = False  # a fresh agent answer stands (a new one replaces it)
    candidates: list[tuple[str | None, float, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Batch:
    id: str
    chat_id: int
    messages: list[BatchMessage]
    context: list[BatchMessage]


@dataclass(frozen=True)
class AnswerGiven:
    """One answer: `message` and `parent` are msg_… ids; parent None: it starts a
    conversation."""

    message: str
    parent: str | None
    confidence: float


@dataclass(frozen=True)
class AnswersStored:
    batch_id: str
    chat_id: int
    stored: int
    need: NeedName


@dataclass(frozen=True)
class _Window:
    """A batch's span and its context, read from the store."""

    chat_id: int
    context: list[tuple[Line, datetime]]
    span: list[tuple[Line, datetime]]


def _suffix(public_id: str) -> str:
    return public_id.removeprefix(MESSAGE_PREFIX)


def _span_hash(span: Sequence[tuple[Line, datetime]]) -> str:
    """A hash of every live message of the span: which, in which order, and what each says
    (its fingerprint, and the reply it records)."""
    digest = hashlib.sha256()
    for line, sent_at in span:
        printed = message_print(
            text=line.text, sent_at=sent_at, deleted=False, sender_id=line.sender
        )
        digest.update(f"{line.pk}\x1f{printed}\x1f{line.reply_to or 0}\n".encode())
    return digest.hexdigest()[:_HASH_CHARS]


def batch_id_parse(batch_id: str) -> tuple[int, str, str, str]:
    """(chat id, first msg_…, last msg_…, hash) named by a batch id; Invalid when it is not
    one this server makes."""
    match = _BATCH_ID.fullmatch(batch_id)
    if match is None:
        raise Invalid(f"batch id: {batch_id[:60]!r} is not a batch id (bat_…, from batches/next)")
    chat, first, last, digest = match.groups()
    if int(chat) > _ID_MAX:
        raise NotFound(f"batch {batch_id}: chat {chat} does not exist")
    return int(chat), MESSAGE_PREFIX + first, MESSAGE_PREFIX + last, digest


def _replies_kept(chat_id: int, span: Sequence[tuple[Line, datetime]]) -> set[int]:
    """The span's messages whose recorded reply a build keeps (to a live, earlier message
    of the chat): those the batch does not ask about."""
    wanted = {line.reply_to for line, _ in span if line.reply_to is not None}
    if not wanted:
        return set()
    targets = {
        pk: parse_time(sent_at)
        for pk, sent_at in Message.objects.filter(
            pk__in=wanted, chat_id=chat_id, deleted_at__isnull=True
        )
        .exclude(delivery_status__in=("awaiting", "refused", "failed"))
        .values_list("pk", "sent_at")
    }
    kept = set()
    for line, sent_at in span:
        target = targets.get(line.reply_to or 0)
        if target is not None and (target, line.reply_to or 0) < (sent_at, line.pk):
            kept.add(line.pk)
    return kept


def _fresh_answers(message_ids: Sequence[int]) -> set[int]:
    """Which of these messages have a fresh agent answer."""
    answers = list(ConversationAnswer.objects.filter(message_id__in=list(message_ids)))
    fresh = answers_freshness(answers)
    return {pk for pk, ok in fresh.items() if ok}


def _waiting_pages(
    chat_id: int, *, answered_only: bool = False
) -> Iterator[list[tuple[object, int, bool]]]:
    """The chat's live messages without a reply a build keeps (`answered_only`: those with
    an agent answer), in order, SCAN_ROWS at a time: (sent_at as stored, id, whether a
    fresh agent answer stands), the answer judged as `answers_freshness` does. Answers
    surely fresh (nothing written since) are left out in SQL."""
    sql = _WAITING_SQL.format(
        join="JOIN" if answered_only else "LEFT JOIN", unsure=f" AND NOT ({_SURELY_FRESH})"
    )
    sent, last = "", 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, [chat_id, sent, last, SCAN_ROWS])
            fetched = cursor.fetchall()
        if not fetched:
            return
        page = []
        for (
            pk,
            sent_at,
            answered,
            answer_print,
            parent_id,
            parent_print,
            text,
            sender_id,
            parent_pk,
            parent_text,
            parent_sent_at,
            parent_deleted_at,
            parent_sender_id,
        ) in fetched:
            fresh = answered is not None and answer_fresh(
                message_print=answer_print,
                parent_id=parent_id,
                parent_print=parent_print,
                message_now=message_print(
                    text=text, sent_at=parse_time(sent_at), deleted=False, sender_id=sender_id
                ),
                parent_now=None
                if parent_pk is None
                else message_print(
                    text=parent_text,
                    sent_at=parse_time(parent_sent_at),
                    deleted=parent_deleted_at is not None,
                    sender_id=parent_sender_id,
                ),
            )
            page.append((sent_at, int(pk), fresh))
        yield page
        sent, last = db_time(parse_time(page[-1][0])), page[-1][1]
        if len(fetched) < SCAN_ROWS:
            return


def _first_waiting(chat_id: int) -> tuple[datetime, int] | None:
    """(sent_at, id) of the chat's earliest live message that needs the agent: no reply a
    build keeps, no fresh agent answer. None when none does."""
    for page in _waiting_pages(chat_id):
        for sent_at, pk, fresh in page:
            if not fresh:
                return parse_time(sent_at), pk
    return None


def _window(chat_id: int, first: tuple[datetime, int], size: int) -> _Window:
    """Up to BATCH_CONTEXT live messages before `first` (sent_at, id), then up to `size`
    from it on."""
    sent = db_time(first[0])
    with connection.cursor() as cursor:
        cursor.execute(_BEFORE_SQL, [chat_id, sent, first[1], BATCH_CONTEXT])
        row = cursor.fetchone()
    anchor = None if row is None else (parse_time(row[0]), int(row[1]))
    rows = lines_after(chat_id, anchor, BATCH_CONTEXT + size)
    at = next((i for i, (line, _) in enumerate(rows) if line.pk == first[1]), None)
    if at is None:
        raise Conflict("the chat changed while its batch was read: ask again")
    return _Window(chat_id, rows[:at], rows[at : at + size])


def _public_ids(pks: Sequence[int]) -> dict[int, str]:
    return dict(Message.objects.filter(pk__in=set(pks)).values_list("pk", "public_id"))


def batch_next(*, chat_id: int, size: int = BATCH_SIZE) -> Batch | None:
    """The chat's next batch: its earliest live message that needs the agent and the live
    messages after it (`size` in all), BATCH_CONTEXT messages before it as context, and
    for each message the batch asks about, the rules' candidate parents. None when no
    message of the chat needs the agent."""
    if not 1 <= size <= BATCH_MAX:
        raise Invalid(f"size: between 1 and {BATCH_MAX}")
    start = _first_waiting(chat_id)
    if start is None:
        return None
    window = _window(chat_id, start, size)
    lines = [line for line, _ in (*window.context, *window.span)]
    proposed = rules.candidates(lines, len(window.context))
    replied = _replies_kept(chat_id, window.span)
    fresh = _fresh_answers([line.pk for line, _ in window.span])
    names = _public_ids(
        [line.pk for line in lines] + [line.reply_to for line in lines if line.reply_to]
    )

    def shown(
        line: Line, sent_at: datetime, found: Sequence[Candidate] | None = None
    ) -> BatchMessage:
        asked = found is not None and line.pk not in replied
        return BatchMessage(
            public_id=names[line.pk],
            sender=line.name,
            sent_at=sent_at,
            text=line.text,
            reply_to=names.get(line.reply_to) if line.reply_to else None,
            service=line.service,
            asked=asked,
            answered=asked and line.pk in fresh,
            candidates=[
                (None if c.parent is None else names[c.parent], round(c.confidence, 4), c.rule)
                for c in (found or ())
            ]
            if asked
            else [],
        )

    first, last = window.span[0][0], window.span[-1][0]
    batch_id = (
        f"{BATCH_PREFIX}{chat_id}_{_suffix(names[first.pk])}_{_suffix(names[last.pk])}"
        f"_{_span_hash(window.span)}"
    )
    return Batch(
        id=batch_id,
        chat_id=chat_id,
        messages=[
            shown(line, sent_at, found)
            for (line, sent_at), found in zip(window.span, proposed, strict=True)
        ],
        context=[shown(line, sent_at) for line, sent_at in window.context],
    )


def chat_waiting_count(*, chat_id: int) -> int:
    """How many of the chat's live messages need the agent: those without a reply a build
    keeps, less those with a fresh agent answer."""
    with connection.cursor() as cursor:
        cursor.execute(_WAITING_COUNT_SQL, [chat_id])
        waiting, surely_fresh = cursor.fetchone()
    fresh = sum(
        1 for page in _waiting_pages(chat_id, answered_only=True) for _, _, ok in page if ok
    )
    return int(waiting or 0) - int(surely_fresh or 0) - fresh


def _window_again(batch_id: str) -> _Window:
    """The span a batch id names, read again; Conflict when it moved."""
    chat_id, first_id, last_id, digest = batch_id_parse(batch_id)
    ends = {
        public: (pk, chat, sent_at)
        for public, pk, chat, sent_at in Message.objects.filter(
            public_id__in=(first_id, last_id)
        ).values_list("public_id", "pk", "chat_id", "sent_at")
    }
    for public in (first_id, last_id):
        if public not in ends or ends[public][1] != chat_id:
            raise NotFound(f"batch {batch_id}: message {public} of chat {chat_id} does not exist")
    first_pk, _, first_at = ends[first_id]
    last_pk = ends[last_id][0]
    moved = Conflict(
        f"batch {batch_id}: the messages between {first_id} and {last_id} changed since it"
        " was given (one added, edited or deleted): ask for the next batch"
    )
    span = lines_after(chat_id, (parse_time(first_at), first_pk - 1), BATCH_MAX + 1)
    if not span or span[0][0].pk != first_pk:
        raise moved
    end = next((i for i, (line, _) in enumerate(span) if line.pk == last_pk), None)
    if end is None:
        raise moved
    span = span[: end + 1]
    if _span_hash(span) != digest:
        raise moved
    window = _window(chat_id, (span[0][1], first_pk), 1)
    return _Window(chat_id, window.context, span)


def _problems(
    window: _Window, answers: Sequence[AnswerGiven], model: str, pks: dict[str, int]
) -> list[str]:
    """What is wrong with the answers to this window, each problem named with where."""
    problems: list[str] = []
    if not model.strip():
        problems.append("model: empty (name the model that answered)")
    elif len(model) > MODEL_MAX:
        problems.append(f"model: at most {MODEL_MAX} characters")
    if not answers:
        problems.append("answers: empty")
    order = {line.pk: i for i, (line, _) in enumerate((*window.context, *window.span))}
    span_pks = {line.pk for line, _ in window.span}
    replied = _replies_kept(window.chat_id, window.span)
    seen: dict[str, int] = {}
    for i, answer in enumerate(answers):
        where = f"answers[{i}]"
        message = pks.get(answer.message)
        if message is None or message not in span_pks:
            problems.append(
                f"{where}.message: {answer.message} is not a message this batch asks about"
            )
        elif message in replied:
            problems.append(
                f"{where}.message: {answer.message} has the reply the messenger recorded;"
                " this batch does not ask about it"
            )
        if answer.message in seen:
            problems.append(
                f"{where}.message: {answer.message} is answered twice"
                f" (also answers[{seen[answer.message]}])"
            )
        else:
            seen[answer.message] = i
        if not (math.isfinite(answer.confidence) and 0 <= answer.confidence <= 1):
            problems.append(f"{where}.confidence: between 0 and 1, not {answer.confidence}")
        if answer.parent is not None:
            parent = pks.get(answer.parent)
            if parent is None or parent not in order:
                problems.append(
                    f"{where}.parent: {answer.parent} is not in this batch or its context"
                )
            elif message is not None and message in order and order[parent] >= order[message]:
                problems.append(f"{where}.parent: {answer.parent} is not earlier than its message")
    return problems


def batch_answers_store(
    *, batch_id: str, model: str, answers: Sequence[AnswerGiven], agent: str
) -> AnswersStored:
    """Store the agent's answers to a batch, all or none. Each answered message must be one
    the batch asks about, once; each parent a message of the batch or its context earlier
    than its message (None: the message starts a conversation); confidence 0 to 1; the
    model named. Any problem: Invalid naming every one (up to PROBLEMS_SHOWN), nothing
    stored. The span changed since the batch was given: Conflict. A message's answer
    replaces its earlier one; the chat is marked for a rebuild, which chooses them."""
    with transaction.atomic():
        window = _window_again(batch_id)
        named = {a.message for a in answers} | {a.parent for a in answers if a.parent}
        pks = {
            public: pk
            for public, pk in Message.objects.filter(
                public_id__in=named, chat_id=window.chat_id
            ).values_list("public_id", "pk")
        }
        problems = _problems(window, answers, model, pks)
        if problems:
            more = len(problems) - PROBLEMS_SHOWN
            shown = "; ".join(problems[:PROBLEMS_SHOWN]) + (
                f"; and {more} more" if more > 0 else ""
            )
            raise Invalid(f"nothing stored: {shown}")
        prints = prints_of([pks[public] for public in named])
        now = timezone.now()
        rows = [
            ConversationAnswer(
                message_id=pks[a.message],
                chat_id=window.chat_id,
                parent_id=None if a.parent is None else pks[a.parent],
                confidence=float(a.confidence),
                model=model.strip(),
                agent=agent[:120],
                message_print=prints[pks[a.message]],
                parent_print="" if a.parent is None else prints[pks[a.parent]],
                answered_at=now,
            )
            for a in answers
        ]
        ConversationAnswer.objects.filter(message_id__in=[row.message_id for row in rows]).delete()
        ConversationAnswer.objects.bulk_create(rows)
        chats_mark(chat_ids=[window.chat_id], need=Need.REBUILD)
        need = (
            ConversationState.objects.filter(chat_id=window.chat_id)
            .values_list("need", flat=True)
            .first()
        )
    return AnswersStored(
        batch_id=batch_id,
        chat_id=window.chat_id,
        stored=len(rows),
        need=NEED_NAMES[Need(need if need is not None else Need.REBUILD)],
    )
