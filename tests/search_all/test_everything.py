"""Search all by words: each kind's own search, mail apart from messages, the kinds that
cannot answer listed with their reason, fused by RRF and paged; bad input is Invalid."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from archive.conversations.services.builds import conversations_build
from archive.files.models import AttachmentText
from archive.search.everything import DEPTH, MAX_LIMIT, AllPage, fused_order, rrf, search_all
from archive.search.parser import QuerySyntaxError
from archive.store.domain import AccountRecord, AttachmentRecord, IdentityRecord
from archive.store.models import Attachment, Chat
from archive.store.sink import batch_record
from notes.services.notes import note_create
from tests.factories import batch, message
from tests.meetings.search_factories import meeting, transcript
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db(transaction=True)

MAIL = AccountRecord(
    provider="mail",
    external_id="owner@example.org",
    name="Mail",
    owner=IdentityRecord(external_id="owner@example.org", display_name="Owner Person"),
)


def _chat() -> Chat:
    batch_record(
        batch=batch(
            message("1", "the budget review moved to friday", sender="alice", minutes=0),
            message("2", "fine, I will bring the budget sheets", sender="bob", minutes=5),
            message("3", "lunch anyone?", sender="alice", minutes=900),
        )
    )
    return Chat.objects.get(external_id="chat-1")


def _mail() -> None:
    mail = batch(
        message("m1", "Re: budget approval for the new laptops", chat="inbox", sender="bob"),
    )
    batch_record(batch=dataclasses.replace(mail, account=MAIL))


def _file_text(message_id: str, name: str, text: str) -> Attachment:
    """A message with one file, and the file's text (the triggers index it)."""
    batch_record(
        batch=batch(
            message(
                message_id,
                "see attached",
                minutes=len(message_id),
                attachments=(AttachmentRecord(external_id=name, file_name=name),),
            )
        )
    )
    attachment = Attachment.objects.get(message__external_id=message_id)
    AttachmentText.objects.create(
        attachment=attachment, text=text, state="done", made_at=datetime.now(UTC)
    )
    return attachment


def _refs(page: AllPage) -> list[str]:
    return [item.ref for item in page.items]


def test_rrf_sums_reciprocal_ranks_so_an_item_in_two_lists_outranks_one_in_one() -> None:
    scores = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    order = fused_order(scores, {"a": 0, "b": 1, "c": 2, "d": 3})
    assert order[0] == "b" and order[1] == "a"
    # Ties (the same rank in two lists) keep the order they were first seen in.
    tied = rrf([["x"], ["y"]])
    assert fused_order(tied, {"y": 0, "x": 1}) == ["y", "x"]
    assert fused_order(tied, {"x": 0, "y": 1}) == ["x", "y"]


def test_words_find_messages_and_mail_apart_each_with_its_snippet() -> None:
    _chat()
    _mail()
    page = search_all(query="budget", mode="words")
    kinds = {item.ref: item.kind for item in page.items}
    assert sorted(kinds.values()).count("message") == 2
    assert list(kinds.values()).count("mail") == 1
    assert page.counts["message"] == 2 and page.counts["mail"] == 1
    mail = next(item for item in page.items if item.kind == "mail")
    assert "laptops" in "".join(part.text for part in mail.snippet)
    assert any(part.hit and part.text.lower() == "budget" for part in mail.snippet)
    assert all(item.why == frozenset({"words"}) for item in page.items)
    only_mail = search_all(query="budget", mode="words", kinds=["mail"])
    assert [item.kind for item in only_mail.items] == ["mail"]
    assert only_mail.kinds == ("mail",)


def test_a_kind_with_nothing_stored_or_refusing_an_operator_is_skipped_with_the_reason() -> None:
    _chat()
    page = search_all(query="budget", mode="words")
    assert page.skipped["note"] == "no notes stored"
    assert page.skipped["mail"] == "no mail stored"
    assert page.skipped["meeting"] == "no meetings stored"
    assert page.skipped["conversation"].startswith("no conversations built yet")
    assert page.skipped["file"].startswith("no file text stored")
    assert "message" not in page.skipped
    note_create(title="Budget", body="the budget for 2025")
    refused = search_all(query="budget from:alice", mode="words")
    assert "from: is for messages" in refused.skipped["note"]
    assert {item.kind for item in refused.items} == {"message"}
    found = search_all(query="budget", mode="words", kinds=["note", "message"])
    assert {item.kind for item in found.items} == {"note", "message"}


def test_notes_meetings_and_conversations_are_found_by_their_own_searches() -> None:
    chat = _chat()
    conversations_build(chat_id=chat.pk)
    note = note_create(title="Quarter plan", body="the budget grows by ten percent")
    held = meeting("Finance sync", description="numbers")
    transcript(held, [("Ann", "hello all"), ("Bob", "the budget is tight this year")])
    page = search_all(query="budget", mode="words")
    by_kind = {item.kind: item for item in page.items}
    assert by_kind["note"].ref == f"note:{note.public_id}"
    assert by_kind["meeting"].ref == f"meeting:{held.public_id}"
    assert by_kind["meeting"].at_ms == 5_000  # the line that said it
    assert by_kind["conversation"].ref.startswith("conversation:cnv_")
    assert page.counts["meeting"] == 1 and page.counts["conversation"] == 1


def test_pages_follow_the_fused_list_with_a_cursor() -> None:
    batch_record(
        batch=batch(*[message(str(n), f"report number {n}", minutes=n) for n in range(1, 8)])
    )
    first = search_all(query="report", mode="words", kinds=["message"], limit=3)
    assert len(first.items) == 3 and first.next_cursor
    second = search_all(
        query="report", mode="words", kinds=["message"], limit=3, cursor=first.next_cursor
    )
    third = search_all(
        query="report", mode="words", kinds=["message"], limit=3, cursor=second.next_cursor
    )
    refs = _refs(first) + _refs(second) + _refs(third)
    assert len(refs) == len(set(refs)) == 7 and third.next_cursor is None
    assert first.counts["message"] == 7 and not first.capped["message"]
    assert first.items[0].score > first.items[-1].score


def test_bad_input_is_invalid_with_a_sentence() -> None:
    for bad, named in [
        ({"mode": "sideways"}, "mode:"),
        ({"kinds": ["message", "spam"]}, "kinds:"),
        ({"limit": 0}, "limit:"),
        ({"limit": MAX_LIMIT + 1}, "limit:"),
        ({"cursor": "not-ours"}, "cursor:"),
        ({"like": "person:prs_1"}, "like:"),
        ({"like": "note:note_missing"}, "note:note_missing"),
    ]:
        with pytest.raises(Invalid) as raised:
            search_all(query="budget", **bad)  # type: ignore[arg-type]
        assert named in str(raised.value)
    with pytest.raises(QuerySyntaxError):
        search_all(query='"unclosed', mode="words")


def test_the_depth_caps_a_kinds_list() -> None:
    batch_record(
        batch=batch(*[message(str(n), f"ticket {n}", minutes=n) for n in range(DEPTH + 2)])
    )
    page = search_all(query="ticket", mode="words", kinds=["message"], limit=MAX_LIMIT)
    assert page.counts["message"] == DEPTH and page.capped["message"]


def test_files_are_found_by_their_text_best_first() -> None:
    total = _file_text("a", "invoice.pdf", "Acme Ltd\fThe invoice total is due in thirty days")
    other = _file_text("b", "march.pdf", "The invoice for march, and the total of march, total")
    _file_text("c", "menu.pdf", "soup of the day")
    page = search_all(query="invoice total", mode="words", kinds=["file"])
    assert [item.ref for item in page.items] == [
        f"attachment:{other.public_id}",
        f"attachment:{total.public_id}",
    ]
    assert page.items[1].title == "invoice.pdf"
    assert isinstance(page.items[1].target, AttachmentText)
    shown = "".join(part.text for part in page.items[1].snippet)
    assert "\f" not in shown and "invoice total" in shown
    phrase = search_all(query='"invoice total"', mode="words", kinds=["file"])
    assert [item.ref for item in phrase.items] == [f"attachment:{total.public_id}"]
    # The messages the files came with are found by them too, shown where the file matched.
    messages = search_all(query="soup", mode="words", kinds=["message"])
    assert "soup" in "".join(part.text for part in messages.items[0].snippet)
    refused = search_all(query="invoice is:dm", mode="words", kinds=["file"])
    assert refused.items == [] and "is: is for messages" in refused.skipped["file"]
