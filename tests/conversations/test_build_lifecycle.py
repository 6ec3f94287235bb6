"""When a chat is built and how builds replace each other: a chat that only grew is built
on, one whose earlier messages changed is rebuilt, marks from the sink and during a build,
what is due, old and half-written builds dropped, a failing chat not holding up others, and
a reader during a build seeing the old build whole, then the new one."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import sqlean
from django.db import connection

from archive.conversations import rules
from archive.conversations.models import (
    BuildState,
    Conversation,
    ConversationBuild,
    ConversationLink,
    ConversationState,
    Need,
)
from archive.conversations.selectors import chat_links
from archive.conversations.services import builds, lines, writer
from archive.conversations.services.builds import chats_due, conversations_build
from archive.store.domain import DeletionRecord
from archive.store.models import Chat
from archive.store.sink import message_purge
from tests.conversations.build_support import (
    SENDERS,
    answers_start,
    chat,
    expected_rows,
    links,
    pk,
    record,
    rows_of,
    talk,
)
from tests.factories import T0, message

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_chat_that_only_grew_is_built_on_as_a_full_build_would_be() -> None:
    record(*talk(40))
    record(message("41", "service: bob joined", sender="bob", minutes=41, kind="service"))
    first = conversations_build(chat_id=chat().pk)
    assert first.mode == "full"
    assert ConversationState.objects.get(chat=chat()).need == Need.NOTHING
    record(*talk(30, start=41), message("90", "late: reply", minutes=90, reply_to_external_id="3"))
    assert ConversationState.objects.get(chat=chat()).need == Need.GROWN
    assert chat().pk in chats_due()
    grown = conversations_build(chat_id=chat().pk)
    assert (grown.mode, grown.messages, grown.build_id) == ("grown", 31, first.build_id)
    # Links were written for the new messages only.
    assert ConversationLink.objects.filter(build_id=first.build_id).count() == 72
    assert links(chat().pk)["90"] == "3"
    after_grown, rows_grown = links(chat().pk), rows_of(chat().pk)
    assert rows_grown == expected_rows(chat().pk)
    assert first.build_id is not None
    build = ConversationBuild.objects.get(pk=first.build_id)
    assert build.message_count == 72
    assert build.conversation_count == Conversation.objects.filter(build=build).count()
    full = conversations_build(chat_id=chat().pk, full=True)
    assert full.mode == "full" and full.build_id != first.build_id
    assert links(chat().pk) == after_grown
    assert rows_of(chat().pk) == rows_grown == expected_rows(chat().pk)
    # Up to date: nothing to do.
    assert conversations_build(chat_id=chat().pk).mode == "nothing"


@pytest.mark.parametrize("change", ["edited", "tombstoned", "re-dated", "arrived earlier"])
def test_a_chat_whose_earlier_messages_changed_is_rebuilt(change: str) -> None:
    record(
        *talk(10),
        message("est", "a photo, its date guessed", minutes=3, date_estimated=True),
    )
    conversations_build(chat_id=chat().pk)
    before = links(chat().pk)
    if change == "edited":
        record(message("2", "line 2, edited", sender=SENDERS[2], minutes=2))
    elif change == "tombstoned":
        record(deletions=(DeletionRecord("chat-1", "2", T0 + timedelta(hours=1)),))
    elif change == "re-dated":
        record(message("est", "a photo, its date guessed", minutes=11))
    else:
        # New, but it sorts before the build's last message: the sink says "grown".
        record(message("0", "an old line found later", minutes=-5), *talk(2, start=10))
        assert ConversationState.objects.get(chat=chat()).need == Need.GROWN
    run = conversations_build(chat_id=chat().pk)
    assert run.mode == "full"
    after = links(chat().pk)
    if change == "tombstoned":
        assert "2" not in after and set(after) == set(before) - {"2"}
    if change == "re-dated":
        assert list(after)[-1] == "est"
    if change == "arrived earlier":
        assert next(iter(after)) == "0" and len(after) == 14
    assert rows_of(chat().pk) == expected_rows(chat().pk)
    assert ConversationBuild.objects.filter(chat=chat()).count() == 1


def test_older_builds_are_dropped_with_their_rows() -> None:
    record(*talk(30))
    first = conversations_build(chat_id=chat().pk)
    second = conversations_build(chat_id=chat().pk, full=True)
    assert list(ConversationBuild.objects.filter(chat=chat()).values_list("pk", "state")) == [
        (second.build_id, BuildState.CURRENT)
    ]
    assert not Conversation.objects.filter(build_id=first.build_id).exists()
    assert not ConversationLink.objects.filter(build_id=first.build_id).exists()
    assert ConversationLink.objects.count() == 30
    assert Conversation.objects.count() == second.conversations


def test_marks_arriving_during_a_build_keep_the_chat_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message stored while a build reads, behind where it reads, is in no build: the
    chat stays due and its next build is a full one that holds the message (the build
    covers the messages stored before it began, not the highest id it wrote)."""
    monkeypatch.setattr(lines, "READ_ROWS", 10)
    record(*talk(30))
    conversations_build(chat_id=chat().pk)
    record(*talk(30, start=30))  # grown
    stored: list[int] = []

    def meanwhile(done: int, total: int) -> None:
        if not stored:  # after the first page: one behind the build, one after it
            record(
                message("early", "stored during the build", minutes=35),
                message("late", "after everything", minutes=500),
            )
            stored.append(done)

    run = conversations_build(chat_id=chat().pk, progress=meanwhile)
    assert run.mode == "grown" and stored
    state = ConversationState.objects.get(chat=chat())
    assert state.need == Need.GROWN and chat().pk in chats_due()
    assert "early" not in links(chat().pk)
    again = conversations_build(chat_id=chat().pk)
    assert again.mode == "full"
    got = links(chat().pk)
    assert "early" in got and "late" in got and len(got) == 62
    assert ConversationState.objects.get(chat=chat()).need == Need.NOTHING
    assert chat().pk not in chats_due()


def test_a_message_stored_during_a_build_after_where_it_reads_is_built_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lines, "READ_ROWS", 10)
    record(*talk(30))
    stored: list[int] = []

    def meanwhile(done: int, total: int) -> None:
        if not stored:
            record(message("late", "after everything", minutes=500))
            stored.append(done)

    conversations_build(chat_id=chat().pk, progress=meanwhile)
    assert "late" in links(chat().pk)  # read by the build: no rebuild for it
    assert ConversationState.objects.get(chat=chat()).need == Need.GROWN
    assert conversations_build(chat_id=chat().pk).mode == "grown"
    assert ConversationState.objects.get(chat=chat()).need == Need.NOTHING


def test_the_sink_marks_what_each_chat_needs() -> None:
    record(*talk(3), *talk(3, chat="chat-2"))
    for external in ("chat-1", "chat-2"):
        conversations_build(chat_id=Chat.objects.get(external_id=external).pk)
    state = ConversationState.objects.get

    def need(external: str) -> int:
        return state(chat__external_id=external).need

    record(*talk(1, start=3))
    assert (need("chat-1"), need("chat-2")) == (Need.GROWN, Need.NOTHING)
    record(message("1", "line 1, edited", sender="bob", minutes=1))
    assert need("chat-1") == Need.REBUILD
    record(*talk(1, start=4))  # growing never lowers a rebuild
    assert need("chat-1") == Need.REBUILD
    record(*talk(3, chat="chat-2"))  # the same messages again: no news
    assert need("chat-2") == Need.NOTHING
    message_purge(message_ids=[pk("2", chat="chat-2")])
    assert need("chat-2") == Need.REBUILD
    conversations_build(chat_id=Chat.objects.get(external_id="chat-2").pk)
    assert "2" not in links(Chat.objects.get(external_id="chat-2").pk)


def test_chats_due_most_recent_first_and_those_built_by_other_rules() -> None:
    record(*talk(3, chat="old"))
    record(*[message(f"n{n}", "x", chat="new", minutes=100 + n) for n in range(3)])
    old, new = (Chat.objects.get(external_id=e).pk for e in ("old", "new"))
    assert chats_due() == [new, old]
    run = builds.conversations_build_due()
    assert [b.chat_id for b in run.built] == [new, old] and chats_due() == []
    ConversationBuild.objects.filter(chat_id=old).update(rules="other rules 0")
    assert chats_due() == [old]
    again = conversations_build(chat_id=old)
    assert again.mode == "full"
    assert ConversationBuild.objects.get(chat_id=old).rules == rules.RULES_NAME
    assert chats_due() == []


# -- failures and edges ------------------------------------------------------------------


def test_a_build_that_failed_half_way_leaves_the_old_one_and_the_next_drops_its_remains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lines, "READ_ROWS", 20)
    monkeypatch.setattr(writer, "FIRST_SLICE", 10)
    record(*talk(100))

    def crash(done: int, total: int) -> None:
        if done >= 60:
            raise RuntimeError("the power went")

    # The first build ever fails: nothing is current, its remains wait.
    with pytest.raises(RuntimeError):
        conversations_build(chat_id=chat().pk, progress=crash)
    leftover = ConversationBuild.objects.get(chat=chat())
    assert leftover.state == BuildState.WRITING and leftover.message_count >= 10
    assert ConversationLink.objects.filter(build_id=leftover.pk).exists()
    assert ConversationState.objects.get(chat=chat()).current_id is None
    assert list(chat_links(chat().pk)) == []
    good = conversations_build(chat_id=chat().pk)
    assert not ConversationBuild.objects.filter(pk=leftover.pk).exists()
    assert not ConversationLink.objects.filter(build_id=leftover.pk).exists()
    assert not Conversation.objects.filter(build_id=leftover.pk).exists()
    # A rebuild fails too: the good build stays current and whole.
    before, rows = links(chat().pk), rows_of(chat().pk)
    with pytest.raises(RuntimeError):
        conversations_build(chat_id=chat().pk, full=True, progress=crash)
    assert ConversationState.objects.get(chat=chat()).current_id == good.build_id
    assert links(chat().pk) == before and rows_of(chat().pk) == rows
    assert conversations_build(chat_id=chat().pk, full=True).mode == "full"
    assert ConversationBuild.objects.filter(chat=chat()).count() == 1
    assert ConversationLink.objects.count() == 100


def test_a_failing_chat_does_not_hold_up_the_others() -> None:
    record(*talk(3, chat="bad"))
    record(*talk(3, chat="good"))
    bad = Chat.objects.get(external_id="bad").pk

    def progress(chat_id: int, done: int, total: int) -> None:
        if chat_id == bad:
            raise ValueError("a rules bug")

    run = builds.conversations_build_due(chat_progress=progress)
    assert [b.chat_id for b in run.built] == [Chat.objects.get(external_id="good").pk]
    assert "a rules bug" in run.failed[bad]
    assert "a rules bug" in ConversationState.objects.get(chat_id=bad).error


def test_a_chat_with_no_live_message_gets_an_empty_build_then_grows() -> None:
    record(*talk(3))
    record(
        deletions=tuple(
            DeletionRecord("chat-1", str(n), T0 + timedelta(hours=1)) for n in (1, 2, 3)
        )
    )
    run = conversations_build(chat_id=chat().pk)
    assert (run.mode, run.messages) == ("full", 0)
    state = ConversationState.objects.get(chat=chat())
    assert state.current_id == run.build_id and state.need == Need.NOTHING
    assert list(chat_links(chat().pk)) == [] and not Conversation.objects.exists()
    record(*talk(2, start=3))
    grown = conversations_build(chat_id=chat().pk)
    assert (grown.mode, grown.messages) == ("grown", 2)
    assert list(links(chat().pk)) == ["4", "5"]
    assert rows_of(chat().pk) == expected_rows(chat().pk)


def _reader(
    db_path: str, chat_id: int
) -> Callable[[], tuple[int, frozenset[tuple[int, int]], int, int]]:
    """One read of the chat's conversations as a reader on its own connection does it, in
    one read transaction: (current build, its links as (message, parent), its conversations,
    how many messages a build being written holds)."""
    db = sqlean.connect(db_path, isolation_level=None, timeout=30)

    def read() -> tuple[int, frozenset[tuple[int, int]], int, int]:
        db.execute("BEGIN")
        try:
            (current,) = db.execute(
                "SELECT current_id FROM archive_conversationstate WHERE chat_id = ?", [chat_id]
            ).fetchone()
            pairs = frozenset(
                (m, p or 0)
                for m, p in db.execute(
                    "SELECT message_id, parent_id FROM archive_conversationlink WHERE build_id = ?",
                    [current],
                )
            )
            (conversations,) = db.execute(
                "SELECT count(*) FROM archive_conversation WHERE build_id = ?", [current]
            ).fetchone()
            writing = db.execute(
                "SELECT coalesce(max(message_count), 0) FROM archive_conversationbuild"
                " WHERE chat_id = ? AND state = 'writing'",
                [chat_id],
            ).fetchone()[0]
        finally:
            db.execute("COMMIT")
        return current, pairs, conversations, writing

    return read


def test_a_reader_during_a_build_sees_the_old_build_whole_then_the_new_one() -> None:
    total = 3_000
    for start in range(0, total, 1_000):
        record(*talk(1_000, start=start))
    first = conversations_build(chat_id=chat().pk)
    old_pairs = frozenset(
        (p, q or 0) for p, q in ConversationLink.objects.values_list("message_id", "parent_id")
    )
    assert len(old_pairs) == total
    # The next build differs: every fourth message starts a conversation.
    answers_start([str(n) for n in range(1, total + 1, 4)])
    read = _reader(str(connection.settings_dict["NAME"]), chat().pk)
    done = threading.Event()
    result: dict[str, Any] = {}

    def build() -> None:
        try:
            result["run"] = conversations_build(
                chat_id=chat().pk, slice_seconds=1e-6, pause_seconds=0.005
            )
        finally:
            connection.close()
            done.set()

    builder = threading.Thread(target=build)
    builder.start()
    seen = []
    while not done.is_set():
        seen.append(read())
    builder.join()
    seen.append(read())
    run = result["run"]
    assert run.mode == "full" and run.transactions >= 10
    new_pairs = frozenset(
        (p, q or 0)
        for p, q in ConversationLink.objects.filter(build_id=run.build_id).values_list(
            "message_id", "parent_id"
        )
    )
    assert new_pairs != old_pairs and len(new_pairs) == total
    sizes = {first.build_id: first.conversations, run.build_id: run.conversations}
    for current, pairs, conversations, _ in seen:
        assert pairs == {first.build_id: old_pairs, run.build_id: new_pairs}[current]
        assert conversations == sizes[current]
    # The reader read while the new build was half written, and after it was current.
    assert any(c == first.build_id and 0 < w < total for c, _, _, w in seen)
    assert seen[-1][0] == run.build_id
