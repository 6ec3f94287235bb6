"""Building a chat's conversations: every live message given a parent in the choice order
(the messenger's reply, a fresh agent answer, the most confident rule) and a conversation.

A full build is written as a new `ConversationBuild` beside the current one, in short
transactions (about `SLICE_SECONDS` of writing each, with a pause a little longer than the
last one between them, so imports, syncs and the owner's tagging are never starved of the
write lock), then made current in one more; older builds are dropped the same way. The
rules run between transactions, never while the lock is held. A chat that only grew is
built on: its new messages are appended to the current build, each slice whole. A build
killed mid-way leaves the current build current; its remains are dropped by the next
build of the chat.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from archive.conversations import rules
from archive.conversations.domain import Choice, Line
from archive.conversations.models import (
    BuildState,
    Conversation,
    ConversationAnswer,
    ConversationBuild,
    ConversationState,
    Need,
    Source,
)
from archive.conversations.services.answers import answers_freshness
from wirecat.db.values import db_time

log = logging.getLogger(__name__)

SLICE_SECONDS = 0.25  # the longest a build holds the write lock at once (about)
PAUSE_SECONDS = 0.12  # and how long it lets go between two transactions, at most
# A writer kept waiting retries at growing intervals (SQLite's busy handler: 1, 2, 5, 10,
# 15, 20, 25 … 100 ms), each no longer than about what it has waited so far: a pause a
# little longer than the transaction before it lets it in, and no shorter than this.
PAUSE_MIN_SECONDS = 0.02
READ_ROWS = 5_000  # messages read from the store at a time
FIRST_SLICE = 500  # messages written in the first transaction; later ones sized by time
PARTICIPANTS_KEPT = 50
TITLE_CHARS = 120
# Conversations not heard from for this many messages leave memory (their row holds them).
OPEN_KEPT = 20_000

Progress = Callable[[int, int], None]  # (messages done, messages in all)

# Outbound messages that never went out (a draft awaiting the owner, refused, failed) were
# never part of the chat.
_UNSENT = ("awaiting", "refused", "failed")

_LINES_SQL = (
    "SELECT m.id, COALESCE(m.sender_id, 0), COALESCE(NULLIF(i.display_name, ''), i.handle, ''),"
    " m.sent_at, m.text, m.kind, m.reply_to_id"
    " FROM archive_message AS m LEFT JOIN archive_identity AS i ON i.id = m.sender_id"
    " WHERE m.chat_id = %s AND m.deleted_at IS NULL"
    " AND m.delivery_status NOT IN ('awaiting', 'refused', 'failed')"
    # A row value, so that SQLite reads the index from `after` on (an OR of the two
    # comparisons reads the chat's messages from its first).
    " AND (m.sent_at, m.id) > (%s, %s)"
    " ORDER BY m.sent_at, m.id LIMIT %s"
)

_LINK_INSERT = (
    "INSERT INTO archive_conversationlink"
    " (build_id, message_id, parent_id, conversation_id, source, confidence, rule)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
)


@dataclass
class BuildRun:
    """What one build did."""

    chat_id: int
    build_id: int | None = None
    mode: str = "nothing"  # "full", "grown", "nothing"
    messages: int = 0
    conversations: int = 0
    transactions: int = 0
    longest_write: float = 0.0
    seconds: float = 0.0
    sources: Counter[str] = field(default_factory=Counter)


@dataclass
class _Open:
    """A conversation being written: what its row says, kept while it may still grow."""

    id: int
    first_at: datetime
    last_at: datetime
    count: int
    senders: Counter[int]
    title: str
    seen: int  # the message number that last touched it
    dirty: bool = True


def _parse_time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)


def _title(text: str) -> str:
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return ""


@dataclass(frozen=True, slots=True)
class _Row:
    line: Line
    sent_at: datetime
    kind: str


def _rows_read(chat_id: int, after: tuple[datetime, int] | None, limit: int) -> list[_Row]:
    """Up to `limit` of the chat's live messages after `after` (sent_at, id), in order."""
    sent = db_time(after[0]) if after else ""
    last = after[1] if after else 0
    with connection.cursor() as cursor:
        cursor.execute(_LINES_SQL, [chat_id, sent, last, limit])
        fetched = cursor.fetchall()
    page = []
    for pk, sender, name, sent_at, text, kind, reply_to in fetched:
        when = _parse_time(sent_at)
        page.append(
            _Row(
                Line(
                    pk=pk,
                    sender=sender,
                    name=name or "",
                    at=when.timestamp(),
                    text=text or "",
                    service=kind == "service",
                    reply_to=reply_to,
                ),
                when,
                kind,
            )
        )
    return page


def lines_after(
    chat_id: int, after: tuple[datetime, int] | None, limit: int
) -> list[tuple[Line, datetime]]:
    """Up to `limit` of the chat's live messages after `after` (sent_at, id), in order, as
    the rules read them, each with its time: what the agent's batches show."""
    return [(row.line, row.sent_at) for row in _rows_read(chat_id, after, limit)]


def _rows_after(chat_id: int, after: tuple[datetime, int] | None) -> Iterator[list[_Row]]:
    """The chat's live messages after `after` (sent_at, id), in order, READ_ROWS at a time
    (each page a short read of its own)."""
    while True:
        page = _rows_read(chat_id, after, READ_ROWS)
        if not page:
            return
        yield page
        after = (page[-1].sent_at, page[-1].line.pk)
        if len(page) < READ_ROWS:
            return


def _answers_fresh(rows: Sequence[_Row]) -> dict[int, ConversationAnswer]:
    """The fresh agent answers of these messages (message and parent unchanged since)."""
    by_pk = {row.line.pk: row for row in rows}
    answers = list(ConversationAnswer.objects.filter(message_id__in=list(by_pk)))
    if not answers:
        return {}
    fresh = answers_freshness(answers)
    return {answer.message_id: answer for answer in answers if fresh[answer.message_id]}


def choose(
    line: Line,
    answer: ConversationAnswer | None,
    proposed: Sequence[rules.Candidate],
    known: Callable[[int], bool],
) -> Choice:
    """The choice order: the messenger's reply (to an earlier live message), then a fresh
    agent answer (its "starts a conversation" drops the rules' parent; a parent the chat no
    longer holds leaves the choice to the rules), then the most confident rule."""
    if line.reply_to is not None and known(line.reply_to):
        return Choice(line.reply_to, Source.REPLY, 1.0, "reply")
    if answer is not None and (answer.parent_id is None or known(answer.parent_id)):
        return Choice(answer.parent_id, Source.AGENT, answer.confidence, answer.model[:24])
    for candidate in proposed:
        if candidate.parent is None or known(candidate.parent):
            return Choice(candidate.parent, Source.RULE, candidate.confidence, candidate.rule)
    return Choice(None, Source.RULE, 1.0, "starts")


class _Writer:
    """Writes one build's links and conversations, slice by slice, each slice one
    transaction that commits whole."""

    def __init__(
        self,
        build: ConversationBuild,
        run: BuildRun,
        *,
        through_pk: int,
        slice_seconds: float,
        pause_seconds: float,
    ) -> None:
        self.build = build
        self.run = run
        # The chat's highest message id when the build began (see `_grown_only`).
        self.through_pk = max(build.through_pk, through_pk)
        self.slice_seconds = slice_seconds
        self.pause_seconds = pause_seconds
        self.slice_size = FIRST_SLICE
        self.conversation_of: dict[int, int] = {}  # message pk -> conversation id (recent)
        self.open: dict[int, _Open] = {}
        self.number = 0
        self.pending: list[tuple[_Row, Choice]] = []
        self.pause = 0.0  # before the next transaction: none before the first
        self.rate = 0.0  # messages per second the last slice was written at
        self.started = 0  # conversations started in the slice being written
        self._next_id = 0  # the last conversation id given (allocated per slice)
        self._fresh: list[tuple[_Open, int]] = []  # started in this slice, with their roots

    # -- where a parent is ------------------------------------------------------------

    def known(self, pk: int) -> bool:
        return self._conversation_id(pk) is not None

    def _conversation_id(self, pk: int) -> int | None:
        found = self.conversation_of.get(pk)
        if found is not None:
            return found
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT conversation_id FROM archive_conversationlink"
                " WHERE message_id = %s AND build_id = %s",
                [pk, self.build.pk],
            )
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    def _open_of(self, conversation_id: int) -> _Open:
        found = self.open.get(conversation_id)
        if found is not None:
            return found
        row = Conversation.objects.get(pk=conversation_id)
        # Its row keeps only the most active senders: count them all again from its links
        # (a late reply to a long-quiet conversation is rare, and this reads one thread),
        # in the order they first spoke, as a build that never let it go counts them.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT m.sender_id, count(*) FROM archive_conversationlink AS l"
                " JOIN archive_message AS m ON m.id = l.message_id"
                " WHERE l.conversation_id = %s AND m.sender_id IS NOT NULL"
                " GROUP BY m.sender_id ORDER BY min(m.sent_at), min(m.id)",
                [conversation_id],
            )
            senders = Counter({int(pk): int(n) for pk, n in cursor.fetchall()})
        found = _Open(
            row.pk,
            row.first_at,
            row.last_at,
            row.message_count,
            senders,
            row.title,
            self.number,
            dirty=False,
        )
        self.open[conversation_id] = found
        return found

    def remember(self, pk: int, conversation_id: int) -> None:
        self.conversation_of[pk] = conversation_id

    # -- writing ------------------------------------------------------------------------

    def add(self, row: _Row, choice: Choice) -> None:
        # A parent must be placed before its child is: the choice was made against what is
        # known, and a message placed in this slice is known from here on.
        self.pending.append((row, choice))
        self.conversation_of.setdefault(row.line.pk, -1)  # placed, id given at write
        if len(self.pending) >= self.slice_size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if self.pause:
            time.sleep(self.pause)
        with transaction.atomic():
            # Timed from here, once the write lock is held (the backend begins IMMEDIATE):
            # time spent waiting for another writer is not this slice's writing.
            started = time.monotonic()
            self._write(self.pending)
        spent = time.monotonic() - started
        self.pause = min(self.pause_seconds, max(PAUSE_MIN_SECONDS, 1.2 * spent))
        self.run.transactions += 1
        self.run.longest_write = max(self.run.longest_write, spent)
        # The next slice sized from the slower of the last two slices' rates, to about
        # two thirds of SLICE_SECONDS (a commit may checkpoint the log; other processes
        # share the CPU), and growing at most twofold: the first slice is small and its
        # rate a rough guess, so one fast slice must not let the next hold the lock long.
        rate = len(self.pending) / max(spent, 1e-4)
        slower = min(rate, self.rate or rate)
        self.rate = rate
        fitting = int(slower * self.slice_seconds * 0.65)
        self.slice_size = max(100, min(50_000, 2 * len(self.pending), fitting))
        self.pending = []
        self._forget()

    def _write(self, pending: list[tuple[_Row, Choice]]) -> None:
        self._ids_allocate()
        links: list[tuple[int | float | str | None, ...]] = []
        for row, choice in pending:
            self.number += 1
            line = row.line
            # A parent placed earlier in this slice was given its conversation above.
            parent_conversation = (
                None if choice.parent is None else self._conversation_id(choice.parent)
            )
            if parent_conversation is None or parent_conversation < 0:
                conversation = self._start(row)
            else:
                conversation = self._open_of(parent_conversation)
                conversation.count += 1
                conversation.last_at = max(conversation.last_at, row.sent_at)
                if line.sender:
                    conversation.senders[line.sender] += 1
                if not conversation.title and not line.service:
                    conversation.title = _title(line.text)
                conversation.seen = self.number
                conversation.dirty = True
            self.conversation_of[line.pk] = conversation.id
            links.append(
                (
                    self.build.pk,
                    line.pk,
                    choice.parent,
                    conversation.id,
                    str(choice.source),
                    round(choice.confidence, 4),
                    choice.rule[:24],
                )
            )
            self.run.sources[str(choice.source)] += 1
        with connection.cursor() as cursor:
            cursor.executemany(_LINK_INSERT, links)
        self._fresh_insert()
        self._conversations_save()
        self.run.messages += len(pending)
        last = pending[-1][0]
        ConversationBuild.objects.filter(pk=self.build.pk).update(
            last_message_id=last.line.pk,
            last_sent_at=last.sent_at,
            through_pk=self.through_pk,
            message_count=self.build.message_count + len(pending),
            conversation_count=self.build.conversation_count + self.started,
        )
        self.build.last_message_id = last.line.pk
        self.build.last_sent_at = last.sent_at
        self.build.through_pk = self.through_pk
        self.build.message_count += len(pending)
        self.build.conversation_count += self.started
        self.run.conversations += self.started
        self.started = 0

    def _start(self, row: _Row) -> _Open:
        """A new conversation, its id taken from those this slice allocated; its row is
        written with the others at the end of the slice (one statement, not one each)."""
        line = row.line
        self._next_id += 1
        opened = _Open(
            self._next_id,
            row.sent_at,
            row.sent_at,
            1,
            Counter({line.sender: 1}) if line.sender else Counter(),
            "" if line.service else _title(line.text),
            self.number,
            dirty=False,
        )
        self.started += 1
        self._fresh.append((opened, line.pk))
        self.open[opened.id] = opened
        return opened

    def _ids_allocate(self) -> None:
        """The highest conversation id ever given (AUTOINCREMENT keeps it in
        sqlite_sequence, so a dropped build's ids are never given again); read inside
        the slice's transaction, which holds the write lock, so no one else takes them."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT max(COALESCE((SELECT seq FROM sqlite_sequence"
                " WHERE name = 'archive_conversation'), 0),"
                " COALESCE((SELECT max(id) FROM archive_conversation), 0))"
            )
            self._next_id = int(cursor.fetchone()[0])
        self._fresh = []

    def _fresh_insert(self) -> None:
        if not self._fresh:
            return
        rows = []
        for item, root in self._fresh:
            kept = [pk for pk, _ in item.senders.most_common(PARTICIPANTS_KEPT)]
            rows.append(
                (
                    item.id,
                    self.build.pk,
                    self.build.chat_id,
                    root,
                    db_time(item.first_at),
                    db_time(item.last_at),
                    item.count,
                    _json(kept),
                    len(item.senders),
                    item.title,
                )
            )
            item.dirty = False
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO archive_conversation (id, build_id, chat_id, root_id, first_at,"
                " last_at, message_count, participants, participant_count, title)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
        self._fresh = []

    def _conversations_save(self) -> None:
        rows = []
        for item in self.open.values():
            if not item.dirty:
                continue
            kept = [pk for pk, _ in item.senders.most_common(PARTICIPANTS_KEPT)]
            rows.append(
                (
                    db_time(item.last_at),
                    item.count,
                    _json(kept),
                    len(item.senders),
                    item.title,
                    item.id,
                )
            )
            item.dirty = False
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(
                    "UPDATE archive_conversation SET last_at = %s, message_count = %s,"
                    " participants = %s, participant_count = %s, title = %s WHERE id = %s",
                    rows,
                )

    def _forget(self) -> None:
        """Keep memory bounded: conversations and messages long quiet are read back from
        the store when a late reply names them."""
        if len(self.open) > OPEN_KEPT:
            cutoff = self.number - OPEN_KEPT
            for key in [k for k, v in self.open.items() if v.seen < cutoff]:
                del self.open[key]
        if len(self.conversation_of) > 4 * OPEN_KEPT:
            keep = list(self.conversation_of.items())[-OPEN_KEPT:]
            self.conversation_of = dict(keep)


def _json(values: list[int]) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def _state(chat_id: int) -> ConversationState:
    state, _ = ConversationState.objects.get_or_create(
        chat_id=chat_id, defaults={"need": Need.REBUILD, "marked_at": timezone.now()}
    )
    return state


def _grown_only(chat_id: int, build: ConversationBuild) -> bool:
    """True when every message stored since the build began sorts after its last one (or
    was read by it: one stored while it ran, after where it was reading), and no earlier
    message has since found its recorded parent among them. `through_pk` is the chat's
    highest message id when the build began, not the highest it wrote: a message stored
    during a build, behind where the build was reading, has an id below later ones the
    build did write."""
    if build.last_sent_at is None:
        return build.message_count == 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM archive_message AS m WHERE m.chat_id = %s AND m.id > %s"
            " AND m.deleted_at IS NULL"
            " AND (m.sent_at < %s OR (m.sent_at = %s AND m.id < %s))"
            " AND NOT EXISTS (SELECT 1 FROM archive_conversationlink AS l"
            "   WHERE l.message_id = m.id AND l.build_id = %s) LIMIT 1",
            [
                chat_id,
                build.through_pk,
                db_time(build.last_sent_at),
                db_time(build.last_sent_at),
                build.last_message_id or 0,
                build.pk,
            ],
        )
        if cursor.fetchone() is not None:
            return False
        cursor.execute(
            "SELECT 1 FROM archive_message WHERE chat_id = %s AND reply_to_id > %s"
            " AND id <= %s LIMIT 1",
            [chat_id, build.through_pk, build.through_pk],
        )
        return cursor.fetchone() is None


def _highest_pk(chat_id: int) -> int:
    """The chat's highest message id now (every message up to it is already stored)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT max(id) FROM archive_message WHERE chat_id = %s", [chat_id])
        return int(cursor.fetchone()[0] or 0)


def _live_count(chat_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM archive_message WHERE chat_id = %s AND deleted_at IS NULL"
            " AND delivery_status NOT IN ('awaiting', 'refused', 'failed')",
            [chat_id],
        )
        return int(cursor.fetchone()[0])


def conversations_build(
    *,
    chat_id: int,
    full: bool = False,
    slice_seconds: float = SLICE_SECONDS,
    pause_seconds: float = PAUSE_SECONDS,
    progress: Progress | None = None,
) -> BuildRun:
    """Build (or build on) one chat's conversations, as the module says. `full` rebuilds
    even a chat that only grew or needs nothing."""
    started = time.monotonic()
    run = BuildRun(chat_id=chat_id)
    state = _state(chat_id)
    marked_at = state.marked_at
    current = state.current
    stale_rules = current is not None and current.rules != rules.RULES_NAME
    if not full and current is not None and not stale_rules and state.need == Need.NOTHING:
        return run
    # What a killed build left (and builds replaced but not yet dropped) goes first.
    _drop_builds(
        chat_id, keep=current.pk if current else None, run=None, pause_seconds=pause_seconds
    )
    through_pk = _highest_pk(chat_id)
    grown = (
        not full
        and current is not None
        and not stale_rules
        and state.need == Need.GROWN
        and _grown_only(chat_id, current)
    )
    total = _live_count(chat_id)
    if grown:
        assert current is not None
        run.mode = "grown"
        build = current
        done = current.message_count
        writer = _Writer(
            build,
            run,
            through_pk=through_pk,
            slice_seconds=slice_seconds,
            pause_seconds=pause_seconds,
        )
        context = _context_rows(build)
        for row, conversation_id in context:
            writer.remember(row.line.pk, conversation_id)
        after = (build.last_sent_at, build.last_message_id or 0) if build.last_sent_at else None
        _link_all(chat_id, after, [row for row, _ in context], writer, progress, done, total)
    else:
        run.mode = "full"
        build = ConversationBuild.objects.create(
            chat_id=chat_id, started_at=timezone.now(), rules=rules.RULES_NAME
        )
        writer = _Writer(
            build,
            run,
            through_pk=through_pk,
            slice_seconds=slice_seconds,
            pause_seconds=pause_seconds,
        )
        _link_all(chat_id, None, [], writer, progress, 0, total)
    writer.flush()
    run.build_id = build.pk
    _make_current(state, build, marked_at, grown=grown, through_pk=writer.through_pk)
    if not grown and current is not None:
        # A reader that found the old build current a moment ago may still be reading it.
        if pause_seconds:
            time.sleep(pause_seconds)
        _drop_builds(chat_id, keep=build.pk, run=run, pause_seconds=pause_seconds)
    run.seconds = time.monotonic() - started
    return run


def _context_rows(build: ConversationBuild) -> list[tuple[_Row, int]]:
    """The last `rules.CONTEXT` messages of a build, with their conversations (what the
    rules read before the new messages)."""
    if build.last_sent_at is None:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, COALESCE(m.sender_id, 0),"
            " COALESCE(NULLIF(i.display_name, ''), i.handle, ''), m.sent_at, m.text, m.kind,"
            " m.reply_to_id, l.conversation_id"
            " FROM archive_conversationlink AS l"
            " JOIN archive_message AS m ON m.id = l.message_id"
            " LEFT JOIN archive_identity AS i ON i.id = m.sender_id"
            " WHERE m.chat_id = %s AND l.build_id = %s AND m.deleted_at IS NULL"
            " ORDER BY m.sent_at DESC, m.id DESC LIMIT %s",
            [build.chat_id, build.pk, rules.CONTEXT],
        )
        fetched = cursor.fetchall()
    out = []
    for pk, sender, name, sent_at, text, kind, reply_to, conversation_id in reversed(fetched):
        when = _parse_time(sent_at)
        line = Line(
            pk=pk,
            sender=sender,
            name=name or "",
            at=when.timestamp(),
            text=text or "",
            service=kind == "service",
            reply_to=reply_to,
        )
        out.append((_Row(line, when, kind), int(conversation_id)))
    return out


def _link_all(
    chat_id: int,
    after: tuple[datetime, int] | None,
    context: list[_Row],
    writer: _Writer,
    progress: Progress | None,
    done: int,
    total: int,
) -> None:
    """Read the chat's messages after `after`, choose each one's parent, hand them to the
    writer; the rules see `rules.CONTEXT` messages before each page."""
    for page in _rows_after(chat_id, after):
        answers = _answers_fresh(page)
        lines = [row.line for row in (*context, *page)]
        start = len(context)
        proposed = rules.candidates(lines, start)
        for row, found in zip(page, proposed, strict=True):
            choice = choose(row.line, answers.get(row.line.pk), found, writer.known)
            writer.add(row, choice)
        context = (list(context) + page)[-rules.CONTEXT :]
        done += len(page)
        if progress is not None:
            progress(done, max(total, done))


def _make_current(
    state: ConversationState,
    build: ConversationBuild,
    marked_at: datetime | None,
    *,
    grown: bool,
    through_pk: int,
) -> None:
    """One short transaction: the build becomes current (the one before it old), and the
    chat needs nothing more, unless something marked it while the build ran."""
    now = timezone.now()
    with transaction.atomic():
        if not grown:
            ConversationBuild.objects.filter(
                chat_id=state.chat_id, state=BuildState.CURRENT
            ).exclude(pk=build.pk).update(state=BuildState.OLD)
        # `through_pk` too: a build that wrote no slice (nothing new, no live message)
        # still covers every message stored before it began.
        ConversationBuild.objects.filter(pk=build.pk).update(
            state=BuildState.CURRENT, finished_at=now, through_pk=through_pk
        )
        ConversationState.objects.filter(chat_id=state.chat_id).update(
            current_id=build.pk, built_at=now, error=""
        )
        ConversationState.objects.filter(chat_id=state.chat_id, marked_at=marked_at).update(
            need=Need.NOTHING
        )


DROP_CONVERSATIONS = 2_000  # conversations (and their links) deleted per transaction


def _drop_builds(
    chat_id: int, *, keep: int | None, run: BuildRun | None, pause_seconds: float
) -> None:
    """Delete the chat's builds other than `keep` (replaced ones, and what a killed build
    left), a slice of conversations per transaction."""
    builds = ConversationBuild.objects.filter(chat_id=chat_id)
    if keep is not None:
        builds = builds.exclude(pk=keep)
    doomed = list(builds.values_list("pk", flat=True))
    for build_id in doomed:
        while True:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT id FROM archive_conversation WHERE build_id = %s LIMIT %s",
                    [build_id, DROP_CONVERSATIONS],
                )
                ids = [row[0] for row in cursor.fetchall()]
                if ids:
                    marks = ",".join(["%s"] * len(ids))
                    cursor.execute(
                        f"DELETE FROM archive_conversationlink WHERE conversation_id IN ({marks})",
                        ids,
                    )
                    cursor.execute(f"DELETE FROM archive_conversation WHERE id IN ({marks})", ids)
                else:
                    # Links of a build whose conversation rows never committed (none: a
                    # slice commits both), then the build itself.
                    cursor.execute(
                        "DELETE FROM archive_conversationbuild WHERE id = %s", [build_id]
                    )
            if run is not None:
                run.transactions += 1
            if not ids:
                break
            if pause_seconds:
                time.sleep(pause_seconds)


@contextmanager
def builder_lock(*, wait: bool) -> Iterator[bool]:
    """True while this process is the one building conversations (a file lock in the
    state folder, let go when the process dies): two builders of one chat would drop each
    other's builds. `wait` blocks until the other builder is done."""
    path = Path(settings.STATE_DIR) / "conversations-build.lock"
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_DUE_SQL = (
    "SELECT c.id FROM archive_chat AS c"
    " LEFT JOIN archive_conversationstate AS s ON s.chat_id = c.id"
    " WHERE (s.chat_id IS NULL AND c.message_count > 0) OR s.need > 0"
    " OR (s.current_id IS NOT NULL AND s.current_id IN"
    "   (SELECT id FROM archive_conversationbuild WHERE rules != %s))"
    " ORDER BY c.last_message_at DESC, c.id"
)


def chats_due() -> list[int]:
    """The chats whose conversations need building: never built, marked since their build
    (grown, changed, answered), or built by other rules; the most recent first."""
    with connection.cursor() as cursor:
        cursor.execute(_DUE_SQL, [rules.RULES_NAME])
        return [int(row[0]) for row in cursor.fetchall()]


@dataclass
class DueRun:
    built: list[BuildRun] = field(default_factory=list)
    left: int = 0
    failed: dict[int, str] = field(default_factory=dict)


def conversations_build_due(
    *,
    budget_seconds: float | None = None,
    chat_progress: Callable[[int, int, int], None] | None = None,
) -> DueRun:
    """Build every chat that needs it, the most recent first, until `budget_seconds` run
    out (the chat being built is finished). `chat_progress(chat_id, done, total)`. A chat
    whose build fails keeps its current build and the reason."""
    started = time.monotonic()
    due = chats_due()
    out = DueRun()
    for index, chat_id in enumerate(due):
        if budget_seconds is not None and time.monotonic() - started > budget_seconds:
            out.left = len(due) - index
            break
        progress = None
        if chat_progress is not None:
            progress = functools.partial(chat_progress, chat_id)
        try:
            out.built.append(conversations_build(chat_id=chat_id, progress=progress))
        except Exception as error:  # one chat's failure never holds up the others
            reason = f"{type(error).__name__}: {error}"[:500]
            out.failed[chat_id] = reason
            ConversationState.objects.filter(chat_id=chat_id).update(error=reason)
            log.exception("conversations of chat %s: the build failed", chat_id)
    return out
