"""What a build makes of a chat, on a real store written through the sink: the choice
order (reply, fresh agent answer, rule), stale answers ignored, the conversation rows'
aggregates and titles, and memory kept bounded on long chats."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from archive.conversations import rules
from archive.conversations.domain import Candidate, Line
from archive.conversations.models import (
    Conversation,
    ConversationAnswer,
    ConversationState,
    Need,
    Source,
)
from archive.conversations.services import builds, writer
from archive.conversations.services.builds import choose, conversations_build
from archive.store.domain import DeletionRecord
from archive.store.models import Message
from tests.conversations.build_support import (
    SENDERS,
    answer,
    answers_start,
    chat,
    expected_rows,
    link_rows,
    links,
    pk,
    record,
    rows_of,
    talk,
)
from tests.factories import T0, message

pytestmark = pytest.mark.django_db(transaction=True)


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
