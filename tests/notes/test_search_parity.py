"""Search parity: a query string means the same thing in the messages' search and the notes'.
The same texts are stored as messages (through the sink, as an import stores them) and as
notes (as their bodies, at the same times, with the same tags), both stems indexes are
drained, and each query finds the same texts, in the same order, in both."""

from __future__ import annotations

from datetime import timedelta

import pytest

from archive.search.selectors import message_search
from archive.search.services.index import stems_drain
from archive.store.models import Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_target
from notes.search import note_search
from notes.search_index import note_stems_drain
from notes.services.notes import note_create
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db

DAY = 24 * 60
# (text, day after T0, tagged "Urgent")
TEXTS = [
    ("the cat sat on the blue car", 0, False),
    ("cats are running in the garden", 1, True),
    ("she runs to the café every morning", 2, False),
    ("a dog and a cat, friends at last", 3, False),
    ("the blue car is fast", 4, True),
    ("dogs barking all night", 5, False),
    ("run the deploy with sess.opts set", 6, False),
    ("the runner's high after a long run", 7, True),
    ("Книга лежит на столе", 8, False),
    ("cafe au lait and a croissant", 9, False),
    ("unrelated words about the weather", 10, False),
    ("car car car, cars everywhere", 11, False),
]

QUERIES = [
    # words, and their other forms through the stems index
    "cat",
    "cats",
    "running",
    "runs",
    "dog",
    "книгами",
    "cafe",
    "café",
    # the form as written only
    "exact:running",
    "exact:cats",
    # phrases and prefixes
    '"blue car"',
    '"the cat"',
    "ru*",
    "ca*",
    # exclusion
    "-cat",
    "car -blue",
    "the -(cat OR dog)",
    "-exact:run",
    # OR and parentheses
    "cat OR dog",
    "(cat OR dog) -blue",
    "(blue car) OR barking",
    "cat AND dog",
    # substrings
    "*unn*",
    "sess.opts",
    "*afé*",
    "*LUE*",
    # dates
    "on:2024-03-03",
    "after:2024-03-05",
    "before:2024-03-04 car",
    "on:2024-03 cat",
    "-on:2024-03-01",
    "after:2024-03-07 OR before:2024-03-02",
    # tags
    "tag:urgent",
    "tag:URGENT car",
    "-tag:urgent",
    "tag:urgent OR dog",
    "tag:nothing",
    # a bit of everything
    '(running OR "blue car") -tag:urgent after:2024-03-01',
]


@pytest.fixture
def corpus() -> None:
    batch_record(
        batch=batch(
            *(
                message(str(number), text, minutes=day * DAY)
                for number, (text, day, _) in enumerate(TEXTS)
            )
        )
    )
    for number, (text, day, urgent) in enumerate(TEXTS):
        at = T0 + timedelta(minutes=day * DAY)
        # A title with no word in it: only the body is the text.
        note = note_create(title="§", body=text, created_at=at, updated_at=at)
        if urgent:
            stored = Message.objects.get(external_id=str(number))
            tag_add(target=tag_target(kind="message", key=stored.public_id), name="Urgent")
            tag_add(target=tag_target(kind="note", key=note.public_id), name="urgent")
    stems_drain()
    note_stems_drain()


def _messages(query: str) -> list[str]:
    return [hit.message.text for hit in message_search(query=query, limit=100).hits]


def _notes(query: str) -> list[str]:
    return [hit.note.body for hit in note_search(query=query, limit=100).hits]


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_finds_the_same_texts_in_messages_and_notes(corpus: None, query: str) -> None:
    assert _notes(query) == _messages(query)


def test_the_corpus_tells_the_queries_apart(corpus: None) -> None:
    """Each query finds something and leaves something out, so parity is not the
    agreement of two empty (or two full) answers."""
    for query in QUERIES:
        if query == "tag:nothing":
            continue
        found = _messages(query)
        assert 0 < len(found) < len(TEXTS), (query, found)
    assert _messages("tag:nothing") == _notes("tag:nothing") == []
