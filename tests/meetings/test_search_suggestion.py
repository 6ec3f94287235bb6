"""Meetings search "did you mean": a query that finds little gets the query back with its
unknown words replaced by the closest words said in transcripts or written in titles and
descriptions (the messages' suggester, over the meetings' words index vocabulary)."""

from __future__ import annotations

import pytest
from django.test import Client

from archive.gateway.services.agents import agent_create
from meetings.search import meeting_search
from tests.meetings.search_factories import meeting, transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def breakfast() -> None:
    made = meeting("Quarterly budget", description="numbers for the river office")
    transcript(
        made,
        [
            ("Ann", "the marmalade is on the table"),
            ("Bob", "pass the toast please"),
            ("Ann", "more toast for the river team"),
            ("Bob", "toast again"),
        ],
    )


def _suggestion(query: str) -> str | None:
    return meeting_search(query=query).suggestion


def test_a_misspelt_word_suggests_the_word_said_in_a_transcript(breakfast: None) -> None:
    page = meeting_search(query="marmelade")
    assert page.hits == []
    assert page.suggestion == "marmalade"
    [hit] = meeting_search(query=page.suggestion).hits
    assert hit.segment is not None and hit.segment.text == "the marmalade is on the table"
    # Titles and descriptions are known words too.
    assert _suggestion("quartrly") == "quarterly"
    # Two letters swapped at the start (no trigram shares them) are still found.
    assert _suggestion("amrmalade") == "marmalade"


def test_known_words_get_no_suggestion(breakfast: None) -> None:
    assert _suggestion("marmalade") is None
    assert _suggestion("river marmalade") is None  # found little, but every word is known
    assert _suggestion("river marmelade") == "river marmalade"  # the known word stays
    assert _suggestion("zzzzqqqq") is None  # nothing close is known


def test_a_query_that_finds_enough_gets_no_suggestion(breakfast: None) -> None:
    page = meeting_search(query="marmelade OR toast")
    assert len(page.hits) == 3
    assert page.suggestion is None


def test_operators_are_kept_in_the_suggested_query(breakfast: None) -> None:
    assert _suggestion("from:Ann marmelade in:Work") == "from:Ann marmalade in:Work"
    assert _suggestion('marmelade before:2030-01-01 "pass the"') == (
        'marmalade before:2030-01-01 "pass the"'
    )
    # Operator values, excluded words and quoted words are never corrected.
    assert _suggestion('from:marmelade "marmelade" -marmelade') is None


def test_the_api_answers_the_suggestion(breakfast: None) -> None:
    token = agent_create(name="reader", scopes=["meetings.read"]).token
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    body = client.get("/api/search/meetings", {"q": "marmelade"}).json()
    assert body["hits"] == []
    assert body["suggestion"] == "marmalade"
    known = client.get("/api/search/meetings", {"q": "marmalade"}).json()
    assert len(known["hits"]) == 1
    assert known["suggestion"] is None


def test_the_meetings_tab_offers_the_suggestion(owner_client: Client, breakfast: None) -> None:
    html = owner_client.get("/search/", {"q": "marmelade", "kind": "meetings"}).content.decode()
    assert 'Did you mean\n      <a href="?q=marmalade&amp;tab=meeting">marmalade</a>?' in html
