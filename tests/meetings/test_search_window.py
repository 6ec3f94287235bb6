"""Meetings search ranks a window of the best matches, not every match: with a window far
smaller than the matches, pages, filters, ties and stem-only matches come out exactly as
ranking every match would put them."""

from __future__ import annotations

import pytest

from meetings import search
from meetings.search import meeting_search
from meetings.search_index import meeting_stems_drain
from tests.meetings.search_factories import meeting, transcript

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "WINDOW", 2)
    monkeypatch.setattr(search, "WIDEN", 2)
    monkeypatch.setattr(search, "WINDOW_MAX", 8)


def _all_pages(query: str, limit: int) -> list[tuple[str, int, float | None]]:
    found: list[tuple[str, int, float | None]] = []
    cursor = None
    while True:
        page = meeting_search(query=query, limit=limit, cursor=cursor)
        found += [(hit.kind, (hit.segment or hit.meeting).pk, hit.score) for hit in page.hits]
        cursor = page.next_cursor
        if cursor is None:
            return found


def _lines() -> None:
    made = meeting("Planning")
    lines = []
    for n in range(30):
        speaker = "Zed" if n % 7 == 0 else "Ann"
        lines.append((speaker, "budget " * (1 + n % 4) + f"line {n} " + "filler words " * n))
    lines += [("Bob", "the budgets were late"), ("Bob", "budget budget budget")]
    transcript(made, lines)
    meeting_stems_drain()


def test_a_small_window_pages_as_ranking_every_match_does(
    tiny_window: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lines()
    windowed = {query: _all_pages(query, 3) for query in ("budget", "budget from:zed")}
    # A window as large as every match: the whole ranking at once.
    monkeypatch.setattr(search, "WINDOW", 10_000)
    monkeypatch.setattr(search, "WINDOW_MAX", 10_000)
    for query, pages in windowed.items():
        assert pages == _all_pages(query, 100)
    everything = windowed["budget"]
    # Every line is found once, the stem-only one ("budgets") last, unranked.
    assert len(everything) == len({pk for _, pk, _ in everything}) == 32
    assert everything[-1][2] is None
    scores = [score for _, _, score in everything if score is not None]
    assert scores == sorted(scores)
    # from: leaves few of the window's candidates: the window widens and still finds all.
    assert len(windowed["budget from:zed"]) == 5


def test_ties_at_the_windows_edge_are_not_lost(tiny_window: None) -> None:
    made = meeting("Standup")
    transcript(made, [("Ann", "same words here") for _ in range(12)])
    pages = _all_pages("same", 1)
    assert len(pages) == len({pk for _, pk, _ in pages}) == 12
    # Equal scores: the order ranking every match gives (by id, newest first).
    assert [pk for _, pk, _ in pages] == sorted((pk for _, pk, _ in pages), reverse=True)
