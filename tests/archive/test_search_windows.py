"""Relevance search by windows (archive/search/windows.py): candidates drawn from
the indexes newest first, ranked within their window, paged across windows without gaps or
repeats, and always exactly the messages the whole query matches."""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from archive.search import windows
from archive.search.compiler import compile_query
from archive.search.parser import parse
from archive.search.selectors import message_search, search_sql
from archive.search.services.index import search_analyzer, stems_drain
from archive.store.domain import DeletionRecord
from archive.store.models import Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message
from wirecat.errors import Invalid

WORDS = ["running", "runs", "the river", "a long winding common road", "rare", "plain"]


@pytest.fixture
def corpus(db: None) -> list[Message]:
    """60 messages holding "common" (some as "commonly"), in two chats, from two senders,
    a few replies, one tombstone; stored in id order = the order written here."""
    records = []
    for n in range(60):
        extra = f"{WORDS[n % 6]} {WORDS[(n // 6 + 2 * n) % 6]}"
        text = f"common {extra} {'x ' * (n % 7)}" if n % 5 else f"commonly said {extra}"
        records.append(
            message(
                str(n),
                text,
                sender="alice" if n % 2 else "bob",
                chat="chat-2" if n % 4 == 0 else "chat-1",
                minutes=n,
                reply_to_external_id="1" if n in (3, 58) else "",
            )
        )
    batch_record(
        batch=batch(*records, deletions=(DeletionRecord("chat-1", "7", T0 + timedelta(days=1)),))
    )
    stems_drain()
    return list(Message.objects.order_by("id"))


def every_page(query: str, limit: int = 4) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(200):
        page = message_search(query=query, limit=limit, cursor=cursor)
        seen.extend(hit.message.external_id for hit in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            return seen
    raise AssertionError("the pages never ended")


def exact(query: str, sort: str = "newest") -> list[str]:
    """What the whole WHERE matches, in `sort` order, without windows."""
    compiled = compile_query(parse(query), analyzer=search_analyzer())
    sql, params = search_sql(compiled, sort=sort, limit=1000, offset=0)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ids = [row[0] for row in cursor.fetchall()]
    by_id = Message.objects.in_bulk(ids)
    return [by_id[i].external_id for i in ids]


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
    "*ommo*",
    "*iver* *ong*",
    "common from:alice",
    "common in:chat-2",
    "running in:chat-2 from:bob",
    "common after:2024-03-01 before:2024-03-02",
    "common -rare",
    "common is:reply",
    "common is:deleted",
    "common (rare OR plain)",
]


@pytest.mark.parametrize("scope_max", [0, 20_000], ids=["filters-per-candidate", "narrow-scan"])
@pytest.mark.parametrize("query", QUERIES)
def test_windows_page_through_exactly_the_matches(
    corpus: list[Message], monkeypatch: pytest.MonkeyPatch, query: str, scope_max: int
) -> None:
    monkeypatch.setattr(windows, "WINDOW", 3)
    monkeypatch.setattr(windows, "WINDOW_MAX", 12)
    monkeypatch.setattr(windows, "SCOPE_MAX", scope_max)
    assert compile_query(parse(query), analyzer=search_analyzer()).plan is not None
    seen = every_page(query)
    assert len(seen) == len(set(seen)), "a hit repeated across pages"
    assert set(seen) == set(exact(query))
    assert seen, "the case table should hold queries that match"


def test_a_query_within_one_window_is_ranked_as_a_whole(corpus: list[Message]) -> None:
    """Fewer matches than a window: exact forms in the whole query's bm25 order first, then
    what matched by stem only."""
    for query in ("running", "common rare", "run*", "common OR plain"):
        hits = message_search(query=query, limit=100).hits
        exact_forms = [hit.message.external_id for hit in hits if hit.score is not None]
        whole = exact(query, sort="relevance")
        assert exact_forms == whole[: len(exact_forms)]
        assert {hit.message.external_id for hit in hits} == set(whole)
        assert [hit.score is not None for hit in hits] == sorted(
            (hit.score is not None for hit in hits), reverse=True
        )
    stem_only = [hit for hit in message_search(query="running", limit=100).hits if not hit.score]
    assert stem_only and all("runs" in hit.message.text for hit in stem_only)


def test_stem_only_matches_rank_by_the_stems_index(db: None) -> None:
    """Among messages that hold only another form of the word, the closer match (bm25 of
    the stems index: here the shorter message) comes first, even when it is older."""
    filler = " ".join(f"word{n}" for n in range(40))
    batch_record(
        batch=batch(
            message("short", "she runs", minutes=0),
            message("long", f"he runs {filler}", minutes=5),
            message("exact", f"running {filler}", minutes=1),
        )
    )
    stems_drain()
    page = message_search(query="running")
    assert [hit.message.external_id for hit in page.hits] == ["exact", "short", "long"]


def test_a_full_window_ranks_the_newest_matches_first(
    corpus: list[Message], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(windows, "WINDOW", 5)
    first = message_search(query="common", limit=5).hits
    newest = [m.external_id for m in reversed(corpus) if m.deleted_at is None][:5]
    assert {hit.message.external_id for hit in first} == set(newest)
    scores = [hit.score for hit in first if hit.score is not None]
    assert scores == sorted(scores)


def test_a_rare_combination_grows_the_window_instead_of_scanning_one_by_one(
    corpus: list[Message], monkeypatch: pytest.MonkeyPatch, django_assert_max_num_queries: Any
) -> None:
    monkeypatch.setattr(windows, "WINDOW", 2)
    monkeypatch.setattr(windows, "WINDOW_MAX", 32)
    # message 3 is the oldest reply: 57 newer candidates fail is:reply before it
    with django_assert_max_num_queries(8):
        page = message_search(query="common is:reply", limit=5)
    assert [hit.message.external_id for hit in page.hits] == ["58", "3"]


def test_cursors_of_another_kind_are_refused(corpus: list[Message]) -> None:
    newest = message_search(query="common", sort="newest", limit=2)
    assert newest.next_cursor
    with pytest.raises(Invalid, match="cursor: not a cursor this search gave out"):
        message_search(query="common", cursor=newest.next_cursor)
    made = [base64.urlsafe_b64encode(raw.encode()).decode() for raw in ("w0.2.3", "w1.0.3", "w1.2")]
    for garbage in ("w", "!!", "d0xLjIuLTE", *made):
        with pytest.raises(Invalid, match="cursor"):
            message_search(query="common", cursor=garbage)


def test_facets_count_the_matches_of_the_windowed_query(corpus: list[Message]) -> None:
    page = message_search(query="common in:chat-2", facets=True)
    assert page.facets is not None
    (chat,) = page.facets.chat
    assert chat.count == len(exact("common in:chat-2"))
    assert not page.facets.sampled


def every_timed_page(query: str, sort: str, limit: int = 4) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(200):
        page = message_search(query=query, sort=sort, limit=limit, cursor=cursor)
        seen.extend(hit.message.external_id for hit in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            return seen
    raise AssertionError("the pages never ended")


@pytest.mark.parametrize("walk", [False, True], ids=["read-whole", "time-walk"])
@pytest.mark.parametrize("sort", ["newest", "oldest"])
@pytest.mark.parametrize("query", QUERIES)
def test_time_order_pages_are_exactly_the_whole_querys_order(
    corpus: list[Message], monkeypatch: pytest.MonkeyPatch, query: str, sort: str, walk: bool
) -> None:
    # Messages sharing one instant: the keyset must split ties by id, never skip or repeat.
    batch_record(
        batch=batch(*[message(f"tie{n}", f"common rare tie {n}", minutes=30) for n in range(5)])
    )
    stems_drain()
    if walk:
        monkeypatch.setattr(windows, "SMALL", 0)
        monkeypatch.setattr(windows, "SCOPE_MAX", 0)
        monkeypatch.setattr(windows, "CHUNK", 3)
        monkeypatch.setattr(windows, "CHUNK_MAX", 12)
    assert every_timed_page(query, sort) == exact(query, sort=sort)


def test_time_cursors_are_checked(corpus: list[Message]) -> None:
    page = message_search(query="common", sort="oldest", limit=2)
    assert page.next_cursor
    with pytest.raises(Invalid, match="cursor"):
        message_search(
            query="common",
            sort="oldest",
            cursor=message_search(query="common", limit=2).next_cursor,
        )
    bad = [base64.urlsafe_b64encode(raw.encode()).decode() for raw in ("t0|2024-01-01", "tx|y")]
    for garbage in ("t", "!!", *bad):
        with pytest.raises(Invalid, match="cursor"):
            message_search(query="common", sort="newest", cursor=garbage)


def test_a_common_word_walks_time_in_chunks_instead_of_reading_every_match(
    corpus: list[Message], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(windows, "SMALL", 10)  # "common" matches 59: more than "few"
    monkeypatch.setattr(windows, "CHUNK", 8)
    with CaptureQueriesContext(connection) as queries:
        page = message_search(query="common", sort="newest", limit=3)
    walks = [q["sql"] for q in queries.captured_queries if "chunk AS MATERIALIZED" in q["sql"]]
    assert len(walks) == 1 and "LIMIT 8" in walks[0]
    assert [hit.message.external_id for hit in page.hits] == exact("common")[:3]
