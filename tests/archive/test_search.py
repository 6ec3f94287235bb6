"""The search query language and the search selector, on messages written by the sink."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive.search.analyzer import Analyzer
from archive.search.compiler import compile_query, fts_string, like_pattern
from archive.search.parser import QuerySyntaxError, parse, to_json
from archive.search.selectors import message_search, search_sql, snippet
from archive.search.services.index import stems_drain, vocabulary_refresh
from archive.search.suggest import edit_distance
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Identity, Message, Person
from archive.store.sink import batch_record
from tests.factories import T0, batch, message
from wirecat.errors import Invalid


def shape(node: dict[str, Any] | None) -> Any:
    """A compact form of the JSON tree for the case table: "-word:x", ["and", …]."""
    if node is None:
        return None
    sign = "-" if node["negated"] else ""
    if "operands" in node:
        return [sign + node["operator"], *[shape(item) for item in node["operands"]]]
    return f"{sign}{node['operator']}:{node['operand']}"


PARSES = [
    ("hello", "word:hello"),
    ("hello world", ["and", "word:hello", "word:world"]),
    ('"exact phrase here"', "phrase:exact phrase here"),
    ('"  spaced   out "', "phrase:spaced out"),
    ("run*", "prefix:run"),
    ("*fix*", "infix:fix"),
    ("*suffix", "infix:suffix"),
    ("-spam", "-word:spam"),
    ("a OR b", ["or", "word:a", "word:b"]),
    ("a b OR c", ["or", ["and", "word:a", "word:b"], "word:c"]),
    ("a (b OR c)", ["and", "word:a", ["or", "word:b", "word:c"]]),
    ("-(b OR c)", ["-or", "word:b", "word:c"]),
    ("a AND b", ["and", "word:a", "word:b"]),
    ("a or b", ["and", "word:a", "word:or", "word:b"]),
    ("https://example.com/x?y=1", "substring:https://example.com/x?y=1"),
    ("sess.opts", "substring:sess.opts"),
    ("report_v2.pdf*", "substring:report_v2.pdf"),
    ("from:alice", "from:alice"),
    ('from:"Ann Lee"', "from:Ann Lee"),
    ("in:general chat:random", ["and", "chat:general", "chat:random"]),
    ("source:Telegram", "source:telegram"),
    ("after:2024-03-01 before:7d on:today", ["and", "after:2024-03-01", "before:7d", "on:today"]),
    ("has:Attachment -is:edited", ["and", "has:attachment", "-is:edited"]),
    ("exact:Running", "exact:Running"),
    ('exact:"two words"', "exact:two words"),
    ("filename:invoice", "filename:invoice"),
    ("tag:x", "tag:x"),
    ('-tag:"to do"', "-tag:to do"),
    ("книгами", "word:книгами"),
    ("", None),
    ("   \t\n", None),
    ("a\x00b", ["and", "word:a", "word:b"]),
]


@pytest.mark.parametrize(("query", "expected"), PARSES, ids=[q or "empty" for q, _ in PARSES])
def test_parser_case_table(query: str, expected: Any) -> None:
    assert shape(to_json(parse(query))) == expected


ERRORS = [
    ("(a", "this ( is never closed", 0),
    ("a)", "this ) closes nothing", 1),
    ("()", "empty parentheses", 0),
    ('say "hi', 'a quoted phrase has no closing "', 4),
    ('""', "an empty phrase matches nothing", 0),
    ("OR a", "OR needs something before it", 0),
    ("a OR", "OR needs something after it", 2),
    ("a OR OR b", "OR needs something after it", 2),
    ("AND a", "AND needs something before it", 0),
    ("- a", "a lone - excludes nothing", 0),
    ("-(", "this ( is never closed", 1),
    ("*", "* needs letters beside it", 0),
    ("**", "* needs letters beside it", 0),
    ("from:", "from: needs a value", 0),
    ('from:"', 'a quoted value has no closing "', 5),
    ("has:everything", "has: takes attachment, link, file, voice, image", 0),
    ("x is:blue", "is: takes dm, group, channel, reply, edited, deleted, mine", 2),
    ("after:last-week", "after: takes a date", 0),
    ("(" * 20 + "a" + ")" * 20, "parentheses nest at most 16 deep", 16),
    (" ".join(["w"] * 70), "a query holds at most 64 terms", 128),
    ("x" * 2001, "the query is longer than 2000 characters", 2000),
]


@pytest.mark.parametrize(("query", "problem", "position"), ERRORS)
def test_syntax_errors_say_what_and_where(query: str, problem: str, position: int) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse(query)
    assert caught.value.problem.startswith(problem)
    assert caught.value.position == position
    assert f"(at character {position + 1})" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "literal"),
    [("plain", '"plain"'), ('say "hi"', '"say ""hi"""'), ("NEAR(a b)", '"NEAR(a b)"')],
)
def test_terms_reach_match_only_as_quoted_strings(text: str, literal: str) -> None:
    assert fts_string(text) == literal
    compiled = compile_query(parse(f'"{text}"' if '"' not in text else "x"))
    assert all("%s" not in str(param) for param in compiled.params)


def test_like_patterns_escape_wildcards() -> None:
    assert like_pattern("50%_\\") == "%50\\%\\_\\\\%"


def test_snippets_mark_the_terms_without_making_html() -> None:
    text = "x" * 300 + " the <b>Report</b> is due " + "y" * 300
    segments = snippet(text, [r"\breport\b", r"\bdu\w*"])
    assert segments[0].text == "…" and segments[-1].text == "…"
    assert [s.text for s in segments if s.hit] == ["Report", "due"]
    assert "<b>" in "".join(s.text for s in segments)  # kept as text; the template escapes


# --- searching real rows ----------------------------------------------------------------

NOW = datetime(2024, 3, 10, 12, 0, tzinfo=UTC)


@pytest.fixture
def archive(db: None) -> dict[str, Message]:
    batch_record(
        batch=batch(
            message("1", "Running late, the train stopped", sender="alice", minutes=0),
            message("2", "runs every morning along the river", sender="bob", minutes=10),
            message(
                "3",
                "see https://example.com/docs/sess.opts for the options",
                sender="alice",
                minutes=20,
            ),
            message(
                "4", "reply about the train", sender="bob", minutes=30, reply_to_external_id="1"
            ),
            message(
                "5",
                "the invoice is attached",
                sender="me",
                minutes=40,
                direction="out",
                attachments=(
                    AttachmentRecord(
                        external_id="a", file_name="Invoice-March.pdf", mime_type="application/pdf"
                    ),
                ),
            ),
            message(
                "6",
                "photo from the trip",
                sender="alice",
                minutes=50,
                chat="chat-2",
                attachments=(
                    AttachmentRecord(
                        external_id="p", file_name="IMG_1.jpg", mime_type="image/jpeg"
                    ),
                ),
            ),
            message("7", "this one was deleted: secret train plans", sender="bob", minutes=60),
            message("8", "Книгами полна полка", sender="alice", minutes=70, chat="chat-2"),
            message(
                "9",
                "edited train text",
                sender="bob",
                minutes=80,
                edited_at=T0 + timedelta(minutes=85),
            ),
            message("10", "50% off_sale today", sender="bob", minutes=90),
            deletions=(DeletionRecord("chat-1", "7", T0 + timedelta(hours=2)),),
        )
    )
    return {m.external_id: m for m in Message.objects.all()}


def found(query: str, **options: Any) -> list[str]:
    return [hit.message.external_id for hit in message_search(query=query, **options).hits]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("train", {"1", "4", "9"}),
        ("TRAIN", {"1", "4", "9"}),
        ('"the train"', {"1", "4"}),
        ("run*", {"1", "2"}),
        ("*unnin*", {"1"}),
        ("*iver*", {"2"}),
        ("sess.opts", {"3"}),
        ("example.com/docs", {"3"}),
        ("train -reply", {"1", "9"}),
        ("invoice OR photo", {"5", "6"}),
        ("(invoice OR photo) trip", {"6"}),
        ("from:Alice", {"1", "3", "6", "8"}),
        ("from:+15550001 train", {"1"}),
        ("from:me", {"5"}),
        ("is:mine", {"5"}),
        ("in:chat-2", {"6", "8"}),
        ('in:"Chat chat-2" photo', {"6"}),
        ("source:testnet train", {"1", "4", "9"}),
        ("source:telegram", set()),
        ("has:attachment", {"5", "6"}),
        ("has:image", {"6"}),
        ("has:file", {"5"}),
        ("has:link", {"3"}),
        ("filename:invoice", {"5"}),
        ("is:reply", {"4"}),
        ("is:edited", {"9"}),
        ("is:deleted", {"7"}),
        ("secret", set()),
        ("secret is:deleted", {"7"}),
        ("книгами", {"8"}),
        ("exact:runs", {"2"}),
        ("50%", {"10"}),
        ("off_sale", {"10"}),
        ("of", set()),
        ("-train", {"2", "3", "5", "6", "8", "10"}),
        ("on:2024-03-01 train", {"1", "4", "9"}),
        ("after:2024-03-02", set()),
        ("before:2024-03-01", set()),
        ("on:2024-02-31", set()),
        ("after:2024", {"1", "2", "3", "4", "5", "6", "8", "9", "10"}),
    ],
)
def test_each_operator_finds_what_it_says(
    archive: dict[str, Message], query: str, expected: set[str]
) -> None:
    assert set(found(query)) == expected


def test_a_person_means_all_their_identities(archive: dict[str, Message]) -> None:
    person = Person.objects.create(name="Alice Smith")
    Identity.objects.filter(external_id__in=["alice", "bob"]).update(person=person)
    assert set(found('from:"alice smith" train')) == {"1", "4", "9"}


def test_relevance_ranks_better_matches_first_and_sorts_by_time(
    archive: dict[str, Message],
) -> None:
    ranked = message_search(query="train")
    assert all(hit.score is not None for hit in ranked.hits)
    scores = [hit.score for hit in ranked.hits]
    assert scores == sorted(scores)  # bm25: lower is better
    assert found("train", sort="newest") == ["9", "4", "1"]
    assert found("train", sort="oldest") == ["1", "4", "9"]


def test_pages_follow_the_cursor_without_gaps_or_repeats(archive: dict[str, Message]) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = message_search(query="-nothingmatchesthis", sort="oldest", limit=3, cursor=cursor)
        seen.extend(hit.message.external_id for hit in page.hits)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == ["1", "2", "3", "4", "5", "6", "8", "9", "10"]
    with pytest.raises(Invalid, match="cursor"):
        message_search(query="train", cursor="not-a-cursor!")


def test_hits_carry_marked_snippets(archive: dict[str, Message]) -> None:
    (hit,) = message_search(query="river").hits
    assert [s.text for s in hit.snippet if s.hit] == ["river"]


def test_search_cost_does_not_grow_with_the_hits(
    archive: dict[str, Message], django_assert_max_num_queries: Any
) -> None:
    batch_record(
        batch=batch(*[message(f"m{i}", f"bulk train {i}", minutes=100 + i) for i in range(60)])
    )
    stems_drain()
    # the search itself, and the stems queue's check (settings, is anything queued), and
    # whom from:alice names (senders.py)
    with django_assert_max_num_queries(5):
        page = message_search(query="train from:alice OR bulk", limit=50)
        assert len(page.hits) == 50
        assert all(hit.message.chat.account.provider == "testnet" for hit in page.hits)


def test_bad_options_are_refused_clearly(archive: dict[str, Message]) -> None:
    with pytest.raises(Invalid, match="sort: one of relevance, newest, oldest"):
        message_search(query="x", sort="random")
    with pytest.raises(Invalid, match="limit: between 1 and 100"):
        message_search(query="x", limit=0)


FTS5_SYNTAX = st.sampled_from(
    [
        '"',
        "(",
        ")",
        "*",
        "-",
        "^",
        ":",
        "NEAR",
        "NOT",
        "AND",
        "OR",
        "{",
        "}",
        "+",
        "\x00",
        "from:",
        "in:",
        "has:",
        "is:",
        "on:",
        "after:",
        "before:",
        "exact:",
        "filename:",
        " ",
        "a",
        "train",
        "%",
        "_",
        "\\",
        "'",
        "é",
        "книга",
        "\ud83d",
        "😀",
        "col:",
        "rank",
        "bm25(",
    ]
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.text(max_size=80), st.lists(FTS5_SYNTAX, max_size=25).map("".join)))
def test_no_input_makes_search_raise_anything_but_a_clear_error(
    archive: dict[str, Message], query: str
) -> None:
    try:
        page = message_search(query=query, limit=5)
    except QuerySyntaxError as exc:
        assert 0 <= exc.position <= len(query)
        return
    assert len(page.hits) <= 5
    with connection.cursor() as cursor:  # the connection is still usable
        cursor.execute("SELECT 1")


# --- the page ---------------------------------------------------------------------------


def test_search_page_without_javascript(owner_client: Any, archive: dict[str, Message]) -> None:
    response = owner_client.get("/search/", {"q": "river"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<!doctype html>" in html.lower() and 'name="q"' in html
    assert "<mark>river</mark>" in html
    assert f'href="/m/{archive["2"].public_id}/"' in html  # opens the chat at the hit


def test_search_page_as_you_type_returns_the_results_fragment(
    owner_client: Any, archive: dict[str, Message]
) -> None:
    response = owner_client.get(
        "/search/", {"q": "train", "sort": "oldest"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="results"')
    assert "<html" not in html
    assert html.count('class="hit"') == 3
    assert response["Vary"] and "HX-Request" in response["Vary"]


def test_search_page_escapes_message_text_and_the_query(owner_client: Any, db: None) -> None:
    batch_record(batch=batch(message("x", "<script>alert(1)</script> payload")))
    html = owner_client.get("/search/", {"q": "payload <img src=x>"}).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<img src=x>" not in html
    html = owner_client.get("/search/", {"q": "payload"}).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("params", "shown"),
    [
        ({"q": "(train"}, "this ( is never closed — at character 1."),
        ({"q": "is:blue"}, "is: takes dm"),
        ({"q": "train", "cursor": "garbage!!"}, "cursor: not a cursor this search gave out"),
        ({"q": "train", "sort": "sideways"}, 'class="hit"'),  # an unknown sort falls back
        ({"q": "nothingatall"}, "Nothing matches"),
        ({}, "Type to search"),
    ],
)
def test_search_page_answers_bad_input_in_the_page(
    owner_client: Any, archive: dict[str, Message], params: dict[str, str], shown: str
) -> None:
    response = owner_client.get("/search/", params)
    assert response.status_code == 200
    assert shown in response.content.decode()


def test_search_page_needs_the_owner(client: Any, db: None) -> None:
    response = client.get("/search/", {"q": "x"})
    assert response.status_code == 302 and "/login" in response["Location"]


def test_search_page_query_count_is_bounded(
    owner_client: Any, archive: dict[str, Message], django_assert_max_num_queries: Any
) -> None:
    owner_client.get("/search/", {"q": "train"})  # warm the session
    # session and user, the stems queue check, the search, its hits, the facets and theirs
    with django_assert_max_num_queries(10):
        owner_client.get("/search/", {"q": "the"}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="q")


# --- the API and the shell --------------------------------------------------------------


def test_search_api_answers_hits_the_parsed_query_and_a_cursor(
    owner_client: Any, archive: dict[str, Message]
) -> None:
    response = owner_client.get(
        "/api/search/messages", {"q": "train -reply", "limit": 1, "sort": "oldest"}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["parsed"] == {
        "operator": "and",
        "operands": [
            {"operator": "word", "operand": "train", "negated": False},
            {"operator": "word", "operand": "reply", "negated": True},
        ],
        "negated": False,
    }
    (hit,) = body["hits"]
    assert hit["id"] == archive["1"].public_id
    assert hit["source"] == "testnet" and hit["chat_title"] == "Chat chat-1"
    assert {"text": "train", "hit": True} in hit["snippet"]
    following = owner_client.get(
        "/api/search/messages",
        {"q": "train -reply", "limit": 1, "sort": "oldest", "cursor": body["next_cursor"]},
    ).json()
    assert [h["id"] for h in following["hits"]] == [archive["9"].public_id]
    assert following["next_cursor"] is None


def test_search_api_syntax_error_is_a_422_with_the_position(
    owner_client: Any, archive: dict[str, Message]
) -> None:
    response = owner_client.get("/api/search/messages", {"q": "train OR"})
    assert response.status_code == 422
    assert response.json() == {
        "error": "QuerySyntaxError",
        "detail": "OR needs something after it (at character 7)",
        "position": 6,
    }
    assert owner_client.get("/api/search/messages", {"q": "x", "limit": 1000}).status_code == 422


def test_search_api_needs_authentication(client: Any, db: None) -> None:
    assert client.get("/api/search/messages", {"q": "x"}).status_code == 401


def test_search_command_prints_hits_and_explains_syntax_errors(
    archive: dict[str, Message],
) -> None:
    out = StringIO()
    call_command("search", "river", stdout=out, no_color=True)
    assert archive["2"].public_id in out.getvalue()
    assert "runs every morning along the river" in out.getvalue()
    out = StringIO()
    call_command("search", "train", "--json", "--sort", "oldest", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["id"] for line in lines] == [archive[k].public_id for k in ("1", "4", "9")]
    with pytest.raises(CommandError, match=r"this \( is never closed\n  a \(b\n    \^"):
        call_command("search", "a (b", stdout=StringIO())


def test_snippets_mark_whole_words_prefixes_and_phrases(archive: dict[str, Message]) -> None:
    def marked(query: str) -> list[str]:
        hits = message_search(query=query, sort="oldest").hits
        return [s.text for hit in hits for s in hit.snippet if s.hit]

    batch_record(batch=batch(message("w", "there, the other one", minutes=200)))
    (hit,) = message_search(query="the other").hits
    assert [s.text for s in hit.snippet if s.hit] == ["the", "other"]  # not "the" in "there"
    assert marked("runn*") == ["Running"]
    assert marked('"the train"') == ["the train", "the train"]
    assert marked("*iver*") == ["iver"]


# --- facets -----------------------------------------------------------------------------


def test_facets_count_the_whole_query_and_each_narrows_it(archive: dict[str, Message]) -> None:
    page = message_search(query="the", facets=True, limit=1)
    assert page.facets is not None
    chat = {v.label: (v.count, v.operator) for v in page.facets.chat}
    assert chat == {"Chat chat-1": (5, 'in:"Chat chat-1"'), "Chat chat-2": (1, 'in:"Chat chat-2"')}
    sender = {v.label: v.count for v in page.facets.sender}
    assert sender == {"Alice": 3, "Bob": 2, "Owner Person": 1}
    assert [(v.label, v.count, v.operator) for v in page.facets.source] == [
        ("testnet", 6, "source:testnet")
    ]
    assert [(v.label, v.operator) for v in page.facets.year] == [("2024", "on:2024")]
    assert not page.facets.sampled
    for value in page.facets.chat + page.facets.sender:
        narrowed = message_search(query=f"the {value.operator}", limit=100)
        assert len(narrowed.hits) == value.count


def test_the_page_and_api_show_facets(owner_client: Any, archive: dict[str, Message]) -> None:
    html = owner_client.get("/search/", {"q": "train"}).content.decode()
    assert 'aria-label="Narrow the search"' in html
    assert "q=train%20from%3A%22Alice%22" in html  # quoted: exactly this sender
    body = owner_client.get("/api/search/messages", {"q": "train", "facets": "true"}).json()
    assert {v["label"] for v in body["facets"]["sender"]} == {"Alice", "Bob"}
    assert owner_client.get("/api/search/messages", {"q": "train"}).json()["facets"] is None


# --- did you mean -------------------------------------------------------------------------


def test_a_query_that_finds_little_offers_the_closest_known_words(
    owner_client: Any, archive: dict[str, Message]
) -> None:
    assert vocabulary_refresh(force=True)
    assert vocabulary_refresh() is None  # current: nothing to rebuild
    page = message_search(query="trian strpped")
    assert page.hits == []
    assert page.suggestion == "train stopped"
    assert [h.message.external_id for h in message_search(query=page.suggestion).hits] == ["1"]
    # A known word is left alone; a query that finds enough gets no suggestion.
    assert message_search(query="river invioce").suggestion == "river invoice"
    assert message_search(query="train").suggestion is None
    assert message_search(query="zzzzqqqq").suggestion is None  # nothing close is known
    assert message_search(query='"trian" -trian from:trian').suggestion is None
    html = owner_client.get("/search/", {"q": "trian"}).content.decode()
    assert 'Did you mean\n      <a href="?q=train&amp;sort=relevance">train</a>?' in html
    body = owner_client.get("/api/search/messages", {"q": "trian"}).json()
    assert body["suggestion"] == "train"


def test_edit_distance_stops_early() -> None:
    assert edit_distance("kitten", "sitting", 3) == 3
    assert edit_distance("kitten", "sitting", 1) == 2  # over the limit: limit + 1
    assert edit_distance("a", "abcdef", 2) == 3
    assert edit_distance("trian", "train", 1) == 1  # a swap is one edit


@pytest.mark.parametrize("query", ["train", "train river", "train OR river", "run* -river"])
def test_relevance_scores_are_looked_up_by_index_not_scanned(
    archive: dict[str, Message], query: str
) -> None:
    """The scored matches are joined through an index: a scan of them per candidate row
    made a common word take minutes at a million messages."""
    compiled = compile_query(parse(query), analyzer=Analyzer())
    sql, params = search_sql(compiled, sort="relevance", limit=20, offset=0)
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = [row[-1] for row in cursor.fetchall()]
    assert not any(step.startswith("SCAN rank") for step in plan), plan
    assert any("rank USING AUTOMATIC COVERING INDEX" in step for step in plan), plan
