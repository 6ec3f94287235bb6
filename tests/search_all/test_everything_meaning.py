"""Search all by meaning and hybrid, on the real store and the real model: a paraphrase
finds what words cannot, a hit found both ways says so, what is not embedded yet (or a
query meaning cannot read) is skipped with the reason, and "more like this" leaves out
the thing it started from."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from archive.conversations.selectors import conversations_of
from archive.conversations.services.builds import conversations_build
from archive.files.models import AttachmentText
from archive.meaning.services.refresh import embeddings_refresh
from archive.search.everything import search_all
from archive.store.domain import AccountRecord, AttachmentRecord, IdentityRecord
from archive.store.models import Attachment, Chat, Message
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.factories import batch, message
from tests.meetings.search_factories import meeting, transcript
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)

LINES = [
    ("1", "alice", "I was running late to the meeting because the bus broke down"),
    ("2", "bob", "no worries, we started ten minutes after nine anyway"),
    ("3", "alice", "grub fails to install on my new ubuntu laptop"),
    ("4", "bob", "try reinstalling grub from a live usb"),
]
PARAPHRASE = "delayed arrival at the gathering"
MAIL = AccountRecord(
    provider="mail",
    external_id="owner@example.org",
    name="Mail",
    owner=IdentityRecord(external_id="owner@example.org", display_name="Owner Person"),
)


def _chat() -> Chat:
    batch_record(
        batch=batch(
            *[message(ext, text, sender=who, minutes=int(ext) * 600) for ext, who, text in LINES]
        )
    )
    chat = Chat.objects.get(external_id="chat-1")
    conversations_build(chat_id=chat.pk)
    return chat


def _late() -> Message:
    return Message.objects.get(external_id="1")


def test_a_paraphrase_is_found_by_meaning_where_words_find_nothing() -> None:
    _chat()
    embeddings_refresh()
    assert search_all(query=PARAPHRASE, mode="words").items == []
    page = search_all(query=PARAPHRASE, mode="meaning", kinds=["message", "conversation"])
    first_message = next(item for item in page.items if item.kind == "message")
    assert first_message.ref == f"message:{_late().public_id}"
    assert first_message.why == frozenset({"meaning"})
    assert "running late" in "".join(part.text for part in first_message.snippet)
    assert not any(part.hit for part in first_message.snippet)
    conversation = next(item for item in page.items if item.kind == "conversation")
    assert "running late" in "".join(part.text for part in conversation.snippet)
    assert page.mode == "meaning" and page.skipped == {}


def test_hybrid_says_a_hit_was_found_by_words_and_meaning() -> None:
    _chat()
    batch_record(
        batch=batch(message("d", "sorry, I got delayed on my way to the office", chat="x"))
    )
    conversations_build(chat_id=Chat.objects.get(external_id="x").pk)
    embeddings_refresh()
    page = search_all(query="late meeting", kinds=["message"])
    late = next(item for item in page.items if item.ref == f"message:{_late().public_id}")
    assert late.why == frozenset({"words", "meaning"})
    assert page.items[0] is late  # in both lists: first of the fusion
    assert any(part.hit for part in late.snippet)  # the words' snippet, the words marked
    by_meaning = [item for item in page.items if item.why == frozenset({"meaning"})]
    delayed = f"message:{Message.objects.get(external_id='d').public_id}"
    assert by_meaning[0].ref == delayed  # alike in meaning, with none of the words
    assert late.score > max(item.score for item in by_meaning)


def test_what_meaning_cannot_answer_is_skipped_with_the_reason() -> None:
    _chat()
    before = search_all(query="late", kinds=["message", "note"])
    assert before.skipped["message:meaning"].startswith("nothing is embedded yet")
    assert [item.why for item in before.items] == [frozenset({"words"})]
    embeddings_refresh()
    note_create(title="Travel", body="the train was late again")  # not embedded yet
    after = search_all(query="late", kinds=["message", "note"])
    assert "message:meaning" not in after.skipped
    assert after.skipped["note:meaning"] == "no note is embedded yet"
    assert {item.kind for item in after.items} == {"message", "note"}
    only_meaning = search_all(query="late", mode="meaning", kinds=["note"])
    assert only_meaning.skipped == {"note": "no note is embedded yet"}
    filtered = search_all(query="late from:alice", kinds=["message"])
    assert "from: is answered by words" in filtered.skipped["message:meaning"]
    assert [item.why for item in filtered.items] == [frozenset({"words"})]


def test_meaning_keeps_mail_apart_from_messages() -> None:
    _chat()
    mail = batch(
        message("m1", "Sorry, my train was delayed and I reached the office late", chat="inbox"),
    )
    batch_record(batch=dataclasses.replace(mail, account=MAIL))
    conversations_build(chat_id=Chat.objects.get(external_id="inbox").pk)
    embeddings_refresh()
    page = search_all(query=PARAPHRASE, mode="meaning", kinds=["message", "mail"])
    mail_items = [item for item in page.items if item.kind == "mail"]
    assert [item.ref for item in mail_items] == [
        f"message:{Message.objects.get(external_id='m1').public_id}"
    ]
    messages = [item.target for item in page.items if item.kind == "message"]
    assert messages and all(found.account.provider != "mail" for found in messages)
    assert page.counts["mail"] == 1


def test_more_like_this_leaves_out_what_it_started_from() -> None:
    _chat()
    first = note_create(title="Bus trouble", body="the bus broke down and I came late")
    second = note_create(title="Late again", body="the train was delayed, I arrived late")
    note_create(title="Recipes", body="flour, butter, two eggs and a pinch of salt")
    embeddings_refresh()
    page = search_all(query="", like=f"note:{first.public_id}", kinds=["note", "message"])
    refs = [item.ref for item in page.items]
    assert f"note:{first.public_id}" not in refs
    assert refs.index(f"note:{second.public_id}") < len(refs)
    notes = [item.ref for item in page.items if item.kind == "note"]
    assert notes[0] == f"note:{second.public_id}"
    assert page.mode == "meaning" and page.like == f"note:{first.public_id}"
    late = _late()
    from_message = search_all(query="", like=f"message:{late.public_id}")
    assert f"message:{late.public_id}" not in [item.ref for item in from_message.items]
    assert from_message.items and all(
        item.why == frozenset({"meaning"}) for item in from_message.items
    )
    with pytest.raises(Invalid, match="message:msg_nothing"):
        search_all(query="", like="message:msg_nothing")


def test_meetings_and_files_are_found_by_meaning_and_like_leaves_them_out() -> None:
    standup = meeting("Standup", description="daily")
    transcript(standup, [("Ann", "good morning"), ("Bob", "sorry, my bus was delayed again")])
    retro = meeting("Retro", description="what went wrong")
    transcript(retro, [("Ann", "the train came late and we began after everyone arrived")])
    batch_record(
        batch=batch(
            message("f", "see attached", attachments=(AttachmentRecord("r", file_name="r.txt"),))
        )
    )
    AttachmentText.objects.create(
        attachment=Attachment.objects.get(),
        text="Travel report: the flight was delayed and we arrived at the conference late",
        state="done",
        made_at=datetime.now(UTC),
    )
    embeddings_refresh()
    page = search_all(query=PARAPHRASE, mode="meaning", kinds=["meeting", "file"])
    meetings = [item for item in page.items if item.kind == "meeting"]
    assert {item.ref for item in meetings} == {
        f"meeting:{standup.public_id}",
        f"meeting:{retro.public_id}",
    }
    assert all(item.at_ms == 0 for item in meetings)  # each chunk's first line
    (found_file,) = [item for item in page.items if item.kind == "file"]
    assert found_file.ref == f"attachment:{Attachment.objects.get().public_id}"
    assert found_file.title == "r.txt"
    like = search_all(query="", like=f"meeting:{standup.public_id}", kinds=["meeting"])
    assert [item.ref for item in like.items] == [f"meeting:{retro.public_id}"]


def test_more_like_a_conversation_leaves_it_out() -> None:
    _chat()
    embeddings_refresh()
    late = conversations_of([_late().pk])[_late().pk]
    page = search_all(query="", like=f"conversation:{late.public_id}", kinds=["conversation"])
    refs = [item.ref for item in page.items]
    assert refs and f"conversation:{late.public_id}" not in refs
