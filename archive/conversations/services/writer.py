"""Writing one build's links and conversations, slice by slice: each slice one transaction
that commits whole, sized by time so the write lock is never held long, with a pause after
it so other writers get their turn. Conversations started in a slice are given their ids
inside its transaction and written set-wise at its end."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from archive.conversations.domain import Choice
from archive.conversations.models import Conversation, ConversationBuild
from archive.conversations.services.lines import Row
from wirecat.db.values import db_time

SLICE_SECONDS = 0.25  # the longest a build holds the write lock at once (about)
PAUSE_SECONDS = 0.12  # and how long it lets go between two transactions, at most
# A writer kept waiting retries at growing intervals (SQLite's busy handler: 1, 2, 5, 10,
# 15, 20, 25 … 100 ms), each no longer than about what it has waited so far: a pause a
# little longer than the transaction before it lets it in, and no shorter than this.
PAUSE_MIN_SECONDS = 0.02
FIRST_SLICE = 500  # messages written in the first transaction; later ones sized by time
PARTICIPANTS_KEPT = 50
TITLE_CHARS = 120
# Conversations not heard from for this many messages leave memory (their row holds them).
OPEN_KEPT = 20_000

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


def _title(text: str) -> str:
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return ""


class BuildWriter:
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
        self.pending: list[tuple[Row, Choice]] = []
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

    def add(self, row: Row, choice: Choice) -> None:
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

    def _write(self, pending: list[tuple[Row, Choice]]) -> None:
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

    def _start(self, row: Row) -> _Open:
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
