"""Builds of a chat's conversations on a real store written through the sink: the choice
order, stale answers, incremental builds and rebuilds, marks, dropping old builds, the
rows' aggregates, memory bounded, and builds switching whole while readers read."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import sqlean
from django.db import connection
from django.utils import timezone

from archive.conversations import rules
from archive.conversations.domain import Candidate, Line
from archive.conversations.models import (
    BuildState,
    Conversation,
    ConversationAnswer,
    ConversationBuild,
    ConversationLink,
    ConversationState,
    Need,
    Source,
)
from archive.conversations.selectors import chat_links
from archive.conversations.services import builds, lines, writer
from archive.conversations.services.answers import prints_of
from archive.conversations.services.builds import chats_due, choose, conversations_build
from archive.conversations.services.state import chats_mark
from archive.store.domain import DeletionRecord, MessageRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record, message_purge
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db(transaction=True)

SENDERS = ("alice", "bob", "me")


def record(*messages: MessageRecord, **extra: Any) -> None:
    batch_record(batch=batch(*messages, **extra))


def talk(count: int, *, start: int = 0, chat: str = "chat-1", **extra: Any) -> list[MessageRecord]:
    """`count` messages a minute apart, external ids start+1…, senders in turn."""
    return [
        message(
            str(n),
            f"line {n} about topic {n % 7}",
            chat=chat,
            sender=SENDERS[n % 3],
            minutes=n,
            **extra,
        )
        for n in range(start + 1, start + count + 1)
    ]


def pk(external_id: str, chat: str = "chat-1") -> int:
    return Message.objects.get(external_id=external_id, chat__external_id=chat).pk


def answer(external_id: str, parent: str | None, *, confidence: float = 0.9) -> None:
    """The agent's answer as the batches store it: with the prints of its message and
    parent as they are now."""
    message_pk = pk(external_id)
    parent_pk = pk(parent) if parent is not None else None
    prints = prints_of([message_pk] + ([parent_pk] if parent_pk else []))
    chat_id = Message.objects.get(pk=message_pk).chat_id
    ConversationAnswer.objects.update_or_create(
        message_id=message_pk,
        defaults={
            "chat_id": chat_id,
            "parent_id": parent_pk,
            "confidence": confidence,
            "model": "test-model 1",
            "message_print": prints[message_pk],
            "parent_print": prints[parent_pk] if parent_pk else "",
            "answered_at": timezone.now(),
        },
    )
    chats_mark(chat_ids=[chat_id], need=Need.REBUILD)  # as storing answers does


def answers_start(external_ids: list[str]) -> None:
    """Many answers "starts a conversation" at once."""
    pks = dict(Message.objects.filter(external_id__in=external_ids).values_list("pk", "chat_id"))
    prints = prints_of(pks)
    ConversationAnswer.objects.bulk_create(
        ConversationAnswer(
            message_id=message_pk,
            chat_id=chat_id,
            parent_id=None,
            confidence=0.8,
            model="test-model 1",
            message_print=prints[message_pk],
            answered_at=timezone.now(),
        )
        for message_pk, chat_id in pks.items()
    )
    chats_mark(chat_ids=set(pks.values()), need=Need.REBUILD)


def links(chat_id: int) -> dict[str, str]:
    return dict(chat_links(chat_id))


def link_rows(chat_id: int) -> dict[str, tuple[str | None, str, float]]:
    """External id -> (parent's external id, source, confidence) in the current build."""
    state = ConversationState.objects.get(chat_id=chat_id)
    external = dict(Message.objects.filter(chat_id=chat_id).values_list("pk", "external_id"))
    return {
        external[row.message_id]: (
            external.get(row.parent_id) if row.parent_id else None,
            row.source,
            row.confidence,
        )
        for row in ConversationLink.objects.filter(build_id=state.current_id)
    }


def rows_of(chat_id: int) -> set[tuple[object, ...]]:
    """The current build's conversation rows, comparable across builds."""
    state = ConversationState.objects.get(chat_id=chat_id)
    return {
        (c.root_id, c.first_at, c.last_at, c.message_count, tuple(c.participants), c.title)
        for c in Conversation.objects.filter(build_id=state.current_id)
    }


def title(text: str) -> str:
    first = next(" ".join(raw.split()) for raw in text.splitlines() if raw.strip())
    cut = writer.TITLE_CHARS
    return first if len(first) <= cut else first[: cut - 1] + "…"


def expected_rows(chat_id: int) -> set[tuple[object, ...]]:
    """The conversation rows the current build's links imply, worked out from scratch."""
    state = ConversationState.objects.get(chat_id=chat_id)
    messages = {m.pk: m for m in Message.objects.filter(chat_id=chat_id)}
    members: dict[int, list[Message]] = {}
    for link in ConversationLink.objects.filter(build_id=state.current_id):
        members.setdefault(link.conversation_id, []).append(messages[link.message_id])
    out: set[tuple[object, ...]] = set()
    for found in members.values():
        found.sort(key=lambda m: (m.sent_at, m.pk))
        senders = Counter(m.sender_id for m in found if m.sender_id)
        titled = [title(m.text) for m in found if m.kind != "service" and m.text.strip()]
        out.add(
            (
                found[0].pk,
                found[0].sent_at,
                found[-1].sent_at,
                len(found),
                tuple(s for s, _ in senders.most_common(writer.PARTICIPANTS_KEPT)),
                titled[0] if titled else "",
            )
        )
    return out


def chat() -> Chat:
    return Chat.objects.get(external_id="chat-1")


# -- the choice order ---------------------------------------------------------------------


def line(pk: int, reply_to: int | None = None) -> Line:
    return Line(pk=pk, sender=1, name="a", at=float(pk), text="x", reply_to=reply_to)


def test_choose_takes_the_reply_then_a_fresh_answer_then_the_best_known_rule() -> None:
    known = {1, 2, 3}.__contains__
    agent = ConversationAnswer(parent_id=2, confidence=0.7, model="m")
    starts = ConversationAnswer(parent_id=None, confidence=0.6, model="m")
    proposed = [Candidate(9, 0.9, "gone"), Candidate(3, 0.5, "previous")]
    assert choose(line(5, reply_to=1), agent, proposed, known).source == Source.REPLY
    assert choose(line(5, reply_to=1), agent, proposed, known).parent == 1
    # A reply to a message the build does not hold (gone, later, another chat) is no reply.
    chosen = choose(line(5, reply_to=8), agent, proposed, known)
    assert (chosen.parent, chosen.source, chosen.confidence) == (2, Source.AGENT, 0.7)
    # "Starts a conversation" from the agent drops the rules' parent.
    chosen = choose(line(5), starts, proposed, known)
    assert (chosen.parent, chosen.source) == (None, Source.AGENT)
    # An answer naming a message the chat no longer holds leaves the choice to the rules,
    # which skip candidates the build does not hold either.
    gone = ConversationAnswer(parent_id=8, confidence=0.99, model="m")
    chosen = choose(line(5), gone, proposed, known)
    assert (chosen.parent, chosen.source, chosen.rule) == (3, Source.RULE, "previous")
    assert choose(line(5), None, [], known).parent is None


def test_a_build_chooses_reply_then_fresh_answer_then_rules() -> None:
    record(*talk(8))
    record(deletions=(DeletionRecord("chat-1", "7", T0 + timedelta(hours=1)),))
    # 4 replies to 2 and the agent says 3: the recorded reply wins.
    record(message("4", "line 4 about topic 4", sender="bob", minutes=4, reply_to_external_id="2"))
    answer("4", "3")
    answer("5", "1", confidence=0.65)  # fresh: the agent's parent
    answer("6", None)  # starts a conversation, whatever the rules say
    answer("8", "7")  # names a message the chat no longer holds (tombstoned): the rules
    assert ConversationState.objects.get(chat=chat()).need == Need.REBUILD
    run = conversations_build(chat_id=chat().pk)
    assert run.mode == "full" and run.messages == 7
    got = link_rows(chat().pk)
    assert got["4"] == ("2", Source.REPLY, 1.0)
    assert got["5"] == ("1", Source.AGENT, 0.65)
    assert got["6"][:2] == (None, Source.AGENT)
    assert "7" not in got
    # What the rules give 8 and 3, on the same lines as the build read them.
    assert got["8"][1] == Source.RULE and got["3"][1] == Source.RULE
    lines = [
        Line(
            pk=m.pk,
            sender=m.sender_id or 0,
            name=m.sender.display_name if m.sender else "",
            at=m.sent_at.timestamp(),
            text=m.text,
            reply_to=m.reply_to_id,
        )
        for m in Message.objects.filter(chat=chat(), deleted_at=None).order_by("sent_at", "id")
    ]
    proposed = rules.candidates(lines, 0)
    by_pk = {ln.pk: i for i, ln in enumerate(lines)}
    for external in ("3", "8"):
        best = proposed[by_pk[pk(external)]][0]
        parent = Message.objects.get(pk=best.parent).external_id if best.parent else None
        assert got[external][0] == parent
    assert run.sources == Counter({"reply": 1, "agent": 2, "rule": 4})


@pytest.mark.parametrize("edited", ["message", "parent", "parent tombstoned"])
def test_a_stale_answer_is_ignored(edited: str) -> None:
    record(*talk(6))
    answer("6", None)  # starts a conversation
    answer("5", "1")
    conversations_build(chat_id=chat().pk)
    assert link_rows(chat().pk)["6"][:2] == (None, Source.AGENT)
    assert link_rows(chat().pk)["5"][:2] == ("1", Source.AGENT)
    if edited == "message":
        record(message("5", "line 5, edited", sender=SENDERS[2], minutes=5))
        record(message("6", "line 6, edited", sender=SENDERS[0], minutes=6))
    elif edited == "parent":
        record(message("1", "line 1, edited", sender=SENDERS[1], minutes=1))
    else:
        record(deletions=(DeletionRecord("chat-1", "1", T0 + timedelta(hours=1)),))
    assert ConversationState.objects.get(chat=chat()).need == Need.REBUILD
    run = conversations_build(chat_id=chat().pk)
    assert run.mode == "full"
    got = link_rows(chat().pk)
    assert got["5"][1] == Source.RULE
    if edited == "message":
        assert got["6"][1] == Source.RULE
    else:
        assert got["6"][:2] == (None, Source.AGENT)  # its answer did not depend on 1


# -- incremental builds and rebuilds --------------------------------------------------------


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


def test_aggregates_and_titles_service_messages_never_title() -> None:
    record(
        message("1", "Alice joined the group", minutes=0, kind="service"),
        message("2", "\n\n  hello   all \nsecond line", sender="bob", minutes=1),
        message("3", "x" * 300, sender="me", minutes=2, reply_to_external_id="2"),
        message("4", "Bob pinned a message", sender="bob", minutes=3, kind="service"),
        message("5", "", sender="alice", minutes=4, reply_to_external_id="4"),
        message("6", "the real topic", sender="me", minutes=5, reply_to_external_id="5"),
        message("7", "a reply to the join", sender="bob", minutes=6, reply_to_external_id="1"),
    )
    answer("2", None)
    answer("4", None)
    conversations_build(chat_id=chat().pk)
    got = links(chat().pk)
    assert got["7"] == "1" and got["2"] == "2" and got["4"] == "4"
    by_root = {
        Message.objects.get(pk=c.root_id).external_id: c
        for c in Conversation.objects.filter(build_id=builds._state(chat().pk).current_id)
    }
    assert by_root["1"].title == "a reply to the join"  # the join itself never titles
    assert by_root["2"].title == "hello all"
    assert by_root["4"].title == "the real topic"  # not the pin, not the empty message
    assert rows_of(chat().pk) == expected_rows(chat().pk)
    # A grown build keeps them right; a conversation of service messages alone has none.
    record(message("8", "Carol left", sender="bob", minutes=50, kind="service"))
    answer("8", None)
    record(message("9", "me too", sender="me", minutes=51, reply_to_external_id="3"))
    conversations_build(chat_id=chat().pk, full=True)
    record(message("10", "and another", sender="alice", minutes=52, reply_to_external_id="9"))
    assert conversations_build(chat_id=chat().pk).mode == "grown"
    assert rows_of(chat().pk) == expected_rows(chat().pk)
    two = Conversation.objects.get(build_id=builds._state(chat().pk).current_id, root_id=pk("2"))
    assert (two.message_count, two.last_at) == (4, T0 + timedelta(minutes=52))
    assert two.participant_count == 3
    eight = Conversation.objects.get(build_id=builds._state(chat().pk).current_id, root_id=pk("8"))
    assert (eight.title, eight.message_count) == ("", 1)


def test_memory_stays_bounded_and_late_replies_land_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for a few conversations only, a late reply to one long forgotten still
    joins it, its counts and participants right: the same rows as with room for all."""
    messages = [
        message("a1", "first topic", sender="alice", minutes=0),
        message("a2", "more", sender="bob", minutes=1, reply_to_external_id="a1"),
        message("a3", "more", sender="bob", minutes=2, reply_to_external_id="a2"),
        message("a4", "yes", sender="bob", minutes=3, reply_to_external_id="a1"),
    ]
    messages += [
        message(f"s{n}", f"topic {n}", sender=SENDERS[n % 3], minutes=10 + n * 30)
        for n in range(200)
    ]
    messages += [
        message("late", "back to it", sender="me", minutes=10_000, reply_to_external_id="a3"),
        message("late2", "and", sender="me", minutes=10_001, reply_to_external_id="late"),
        message("late3", "so", sender="me", minutes=10_002, reply_to_external_id="late2"),
    ]
    record(*messages)
    answers_start([f"s{n}" for n in range(200)])  # 200 conversations whatever the rules say
    full = conversations_build(chat_id=chat().pk)
    roomy = rows_of(chat().pk)
    monkeypatch.setattr(writer, "OPEN_KEPT", 3)
    monkeypatch.setattr(writer, "FIRST_SLICE", 10)
    forgetting: list[writer.BuildWriter] = []
    real_forget = writer.BuildWriter._forget

    def watched(self: writer.BuildWriter) -> None:
        real_forget(self)
        forgetting.append(self)
        # Each message touches one conversation: those touched by the last 3 at most.
        assert len(self.open) <= 3 + 1 and len(self.conversation_of) <= 4 * 3

    monkeypatch.setattr(writer.BuildWriter, "_forget", watched)
    tight = conversations_build(chat_id=chat().pk, full=True, slice_seconds=1e-6)
    assert len(forgetting) >= 3  # after every slice
    assert rows_of(chat().pk) == roomy == expected_rows(chat().pk)
    assert tight.conversations == full.conversations
    root = Conversation.objects.get(build_id=tight.build_id, root_id=pk("a1"))
    assert root.message_count == 7 and root.last_at == T0 + timedelta(minutes=10_002)
    assert root.participant_count == 3
    alice, bob, me = (Message.objects.get(external_id=e).sender_id for e in ("a1", "a4", "late"))
    # The most active first (bob and the owner three each: who spoke first), then alice.
    assert root.participants == [bob, me, alice]


# -- builds switch whole ------------------------------------------------------------------


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
