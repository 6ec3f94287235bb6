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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from archive.conversations import rules
from archive.conversations.domain import Choice, Line
from archive.conversations.models import (
    BuildState,
    ConversationAnswer,
    ConversationBuild,
    ConversationState,
    Need,
    Source,
)
from archive.conversations.services.answers import answers_freshness
from archive.conversations.services.lines import Row, context_rows, rows_after
from archive.conversations.services.state import CONVERSATIONS_BUILT
from archive.conversations.services.writer import (
    PAUSE_SECONDS,
    SLICE_SECONDS,
    BuildRun,
    BuildWriter,
)
from archive.store.effects import on_commit_effect
from wirecat.db.values import db_time

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]  # (messages done, messages in all)


def _answers_fresh(rows: Sequence[Row]) -> dict[int, ConversationAnswer]:
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
        writer = BuildWriter(
            build,
            run,
            through_pk=through_pk,
            slice_seconds=slice_seconds,
            pause_seconds=pause_seconds,
        )
        context = context_rows(build)
        for row, conversation_id in context:
            writer.remember(row.line.pk, conversation_id)
        after = (build.last_sent_at, build.last_message_id or 0) if build.last_sent_at else None
        _link_all(chat_id, after, [row for row, _ in context], writer, progress, done, total)
    else:
        run.mode = "full"
        build = ConversationBuild.objects.create(
            chat_id=chat_id, started_at=timezone.now(), rules=rules.RULES_NAME
        )
        writer = BuildWriter(
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


def _link_all(
    chat_id: int,
    after: tuple[datetime, int] | None,
    context: list[Row],
    writer: BuildWriter,
    progress: Progress | None,
    done: int,
    total: int,
) -> None:
    """Read the chat's messages after `after`, choose each one's parent, hand them to the
    writer; the rules see `rules.CONTEXT` messages before each page."""
    for page in rows_after(chat_id, after):
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
        on_commit_effect(CONVERSATIONS_BUILT)


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
