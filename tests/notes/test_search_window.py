"""Notes search ranks by windows (as the messages' search does): candidates drawn from the
indexes newest first, ranked within their window, paged across windows without gaps or
repeats, always exactly the notes the whole query matches; a query within one window is
ranked as a whole."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from archive.search.parser import parse
from archive.search.services.index import search_analyzer
from archive.tags.services import tag_add, tag_target
from notes import search
from notes.models import Note
from notes.search import note_search
from notes.search_index import note_stems_drain
from notes.services.notes import note_create
from tests.factories import T0

pytestmark = pytest.mark.django_db

WORDS = ["running", "runs", "the river", "a long winding common road", "rare", "plain"]


@pytest.fixture
def corpus(db: None) -> list[Note]:
    """60 notes holding "common" (some as "commonly"), in two folders and at the top, a
    fifth tagged; written in id order, changed in another order."""
    for n in range(60):
        extra = f"{WORDS[n % 6]} {WORDS[(n // 6 + 2 * n) % 6]}"
        body = f"common {extra} {'x ' * (n % 7)}" if n % 5 else f"commonly said {extra}"
        at = T0 + timedelta(minutes=(n * 37) % 60)
        folder = "Work/Clients" if n % 4 == 0 else ("Home" if n % 4 == 1 else None)
        note = note_create(title=f"N{n}", body=body, folder=folder, updated_at=at)
        if n % 5 == 2:
            tag_add(target=tag_target(kind="note", key=note.pk), name="flagged")
    note_stems_drain()
    return list(Note.objects.order_by("id"))


def every_page(query: str, limit: int = 4) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(200):
        page = note_search(query=query, limit=limit, cursor=cursor)
        seen.extend(hit.note.title for hit in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            return seen
    raise AssertionError("the pages never ended")


def whole(query: str) -> set[str]:
    """What the whole query matches, read without windows."""
    tree = parse(query)
    assert tree is not None
    rows = search._newest_page(
        tree,
        limit=1000,
        offset=0,
        now=T0 + timedelta(days=1),
        analyzer=search_analyzer(),
        folders=search._folders_named(tree),
    )
    return set(Note.objects.filter(pk__in=[pk for pk, _ in rows]).values_list("title", flat=True))


QUERIES = [
    "common",
    "running",
    "common rare",
    "common runs",
    '"the river" running',
    "exact:running common",
    "run*",
    "common OR plain",
    "running OR rare",
    "common in:work",
    "running in:home tag:flagged",
    "common after:2024-03-01 before:2024-03-02",
    "common on:2024-03-01 -in:clients",
    "common -rare",
    "common tag:flagged",
    "common (rare OR plain)",
    "common *iver*",
]


@pytest.mark.parametrize("scope_max", [0, 20_000], ids=["filters-per-candidate", "narrow-scan"])
@pytest.mark.parametrize("query", QUERIES)
def test_windows_page_through_exactly_the_matches(
    corpus: list[Note], monkeypatch: pytest.MonkeyPatch, query: str, scope_max: int
) -> None:
    monkeypatch.setattr(search, "WINDOW", 3)
    monkeypatch.setattr(search, "WINDOW_MAX", 12)
    monkeypatch.setattr(search, "SCOPE_MAX", scope_max)
    seen = every_page(query)
    assert len(seen) == len(set(seen)), "a hit repeated across pages"
    assert set(seen) == whole(query)
    assert seen, "the case table should hold queries that match"


def test_a_query_within_one_window_is_ranked_as_a_whole(corpus: list[Note]) -> None:
    """Fewer matches than a window: exact forms in the whole query's bm25 order first, then
    what matched by stem only."""
    for query, match in (("running", '"running"'), ("common rare", '"common" AND "rare"')):
        hits = note_search(query=query, limit=100).hits
        ranked = [hit.note.pk for hit in hits if hit.score is not None]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid FROM note_words WHERE note_words MATCH %s"
                " AND rank MATCH 'bm25(2.0, 1.0)' ORDER BY rank, rowid",
                [match],
            )
            everything = [row[0] for row in cursor.fetchall()]
        assert sorted(ranked) == sorted(everything)
        scores = [hit.score for hit in hits if hit.score is not None]
        assert scores == sorted(scores)
        assert [hit.score is not None for hit in hits] == sorted(
            (hit.score is not None for hit in hits), reverse=True
        )
        assert {hit.note.title for hit in hits} == whole(query)
    stem_only = [hit for hit in note_search(query="running", limit=100).hits if not hit.score]
    assert stem_only and all("runs" in hit.note.body for hit in stem_only)


def test_stem_only_matches_rank_by_the_stems_index(db: None) -> None:
    """Among notes that hold only another form of the word, the closer match (bm25 of the
    stems index: here the shorter note) comes first, even when it is older."""
    filler = " ".join(f"word{n}" for n in range(40))
    note_create(title="Short", body="she runs", updated_at=T0)
    note_create(title="Long", body=f"he runs {filler}", updated_at=T0 + timedelta(minutes=5))
    note_create(title="Exact", body=f"running {filler}", updated_at=T0 + timedelta(minutes=1))
    note_stems_drain()
    assert [hit.note.title for hit in note_search(query="running").hits] == [
        "Exact",
        "Short",
        "Long",
    ]


def test_a_full_window_ranks_the_newest_matches_first(
    corpus: list[Note], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "WINDOW", 5)
    newest = {note.title for note in corpus if "common " in note.body or "commonly" in note.body}
    first = note_search(query="common", limit=3)
    # The first page comes from the newest five notes holding the word (by rowid).
    written = [note for note in corpus if note.title in newest]
    assert {hit.note.title for hit in first.hits} <= {note.title for note in written[-5:]}
    assert first.next_cursor is not None


def test_ties_at_the_windows_edge_are_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "WINDOW", 2)
    monkeypatch.setattr(search, "WINDOW_MAX", 8)
    for n in range(12):
        note_create(title="Same", body="same words here", updated_at=T0 + timedelta(minutes=n))
    pages: list[int] = []
    cursor = None
    while True:
        page = note_search(query="same", limit=1, cursor=cursor)
        pages += [hit.note.pk for hit in page.hits]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(pages) == len(set(pages)) == 12
    # Equal scores, newest first (the notes were written in time order).
    assert pages == sorted(pages, reverse=True)
