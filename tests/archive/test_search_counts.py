"""How many messages a search matches (issue 16): exact when every match was counted; when
the counts come from the newest window of a common word, marked as such ("4,000+", "about
N") on the page, in the facets and in the API, never shown as if they were the total."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from archive.search import selectors as search_selectors
from archive.search.compiler import compile_query
from archive.search.facets import estimated, message_facets
from archive.search.parser import parse
from archive.search.selectors import message_search
from archive.search.services.index import search_analyzer, stems_drain
from archive.store.models import Message
from archive.store.sink import batch_record
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

COMMON = 40  # messages holding "common"


@pytest.fixture
def corpus(db: None) -> None:
    records = [
        message(str(n), f"common word number {n}", sender="alice" if n % 2 else "bob", minutes=n)
        for n in range(COMMON)
    ]
    records += [message(f"r{n}", f"rare thing {n}", minutes=100 + n) for n in range(3)]
    batch_record(batch=batch(*records))
    stems_drain()


def test_a_query_counted_whole_gives_its_exact_total(corpus: None) -> None:
    page = message_search(query="rare", facets=True)
    assert page.facets is not None
    assert not page.facets.sampled
    assert (page.facets.total, page.facets.counted, page.facets.estimate) == (3, 3, None)


def test_a_full_window_of_a_common_word_is_a_sample_with_an_estimate(
    corpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The newest 5 candidates per index: the counts cover the window, not the archive.
    monkeypatch.setattr(search_selectors, "FACET_WINDOW", 5)
    page = message_search(query="common", facets=True)
    assert page.facets is not None
    assert page.facets.sampled
    assert page.facets.total is None
    assert page.facets.counted == 5
    assert sum(v.count for v in page.facets.sender) == 5
    # 5 matches among the newest 8 of 43 messages: about 27, never fewer than counted
    assert page.facets.estimate is not None
    assert 5 < page.facets.estimate <= Message.objects.count()


def test_a_window_that_reaches_the_first_message_is_the_whole_count(
    corpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_selectors, "FACET_WINDOW", COMMON)
    page = message_search(query="common", facets=True)
    assert page.facets is not None
    assert not page.facets.sampled and page.facets.total == COMMON


def test_counting_stops_at_the_sample_size_when_no_index_drives_the_query(corpus: None) -> None:
    compiled = compile_query(parse("from:alice"), analyzer=search_analyzer())
    facets = message_facets(compiled, size=7)
    assert facets.sampled and facets.counted == 7
    assert facets.total is None and facets.estimate is None
    whole = message_facets(compiled, size=100)
    assert not whole.sampled and whole.total == COMMON // 2 + 3  # and the 3 rare ones


@pytest.mark.parametrize(
    ("counted", "lowest", "top", "about"),
    [
        (4_000, 900_000, 1_000_000, 40_000),  # the newest tenth holds 4,000
        (4_000, 990_000, 1_000_000, 400_000),
        (4_000, 0, 1_000_000, 4_000),  # the window covers everything
        (123, 49, 100, 240),  # 123 * 100 / 51 = 241.2: two significant figures
        (10, 94, 100, 170),  # 10 * 100 / 6 = 166.7
        (5, 0, 100, 5),  # nothing older: exact
    ],
)
def test_the_estimate_scales_by_the_share_of_the_archive_covered(
    counted: int, lowest: int, top: int, about: int
) -> None:
    assert estimated(counted, lowest, top) == about


def test_the_page_and_api_say_when_counts_are_a_sample(
    owner_client: Client, corpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    exact = owner_client.get("/search/", {"q": "rare"}).content.decode()
    assert '<p class="result-count" role="status"><strong>3</strong> messages</p>' in exact
    assert "Counted over the newest" not in exact

    monkeypatch.setattr(search_selectors, "FACET_WINDOW", 5)
    html = owner_client.get("/search/", {"q": "common"}).content.decode()
    page = message_search(query="common", facets=True)
    assert page.facets is not None and page.facets.estimate is not None
    assert f"About {page.facets.estimate}</strong> messages" in html
    assert "the newest 5 counted, the rest estimated" in html
    assert "Counted over the newest 5 matches of about" in html
    assert 'title="At least' in html  # each facet count says it is a lower bound

    body: Any = owner_client.get("/api/search/messages", {"q": "common", "facets": "true"}).json()
    facets = body["facets"]
    assert facets["sampled"] is True and facets["total"] is None
    assert facets["counted"] == 5 and facets["estimate"] == page.facets.estimate
    rare = owner_client.get("/api/search/messages", {"q": "rare", "facets": "true"}).json()
    assert rare["facets"]["total"] == 3 and rare["facets"]["sampled"] is False
