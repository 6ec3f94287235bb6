"""`from:` as people type it: any word prefix of a name, handle or mail local part, case and
accents folded; several people named are listed (page and API), none is said so."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from archive.search.compiler import compile_query
from archive.search.parser import parse, to_json
from archive.search.selectors import message_search
from archive.search.senders import SHOWN, resolved, sender_ids_sql, sender_matches
from archive.store.domain import Batch, ChatRecord, IdentityRecord
from archive.store.models import Identity, Person
from archive.store.sink import batch_record
from tests.factories import ACCOUNT, message

PEOPLE = (
    IdentityRecord(external_id="aw", display_name="Alice Walker", handle="@alice_w"),
    IdentityRecord(external_id="alice.walker@example.com", email="alice.walker@example.com"),
    IdentityRecord(external_id="ak", display_name="Alicia Keys"),
    IdentityRecord(external_id="zo", display_name="Zoë Ölund", handle="zoe_o"),
    IdentityRecord(external_id="bm", display_name="Bob Marley", handle="bobby", phone="+15550009"),
    IdentityRecord(external_id="jw", display_name="John Walker"),
    IdentityRecord(external_id="cd", email="carol.danvers@example.com"),
)
SENDERS = {"1": "aw", "2": "alice.walker@example.com", "3": "ak", "4": "zo", "5": "bm"}
SENDERS |= {"6": "jw", "7": "cd"}


def record(*messages: Any, identities: tuple[IdentityRecord, ...] = PEOPLE) -> None:
    batch_record(
        batch=Batch(
            account=ACCOUNT,
            chats=(ChatRecord(external_id="chat-1", kind="group", title="Family"),),
            identities=identities,
            messages=messages,
        )
    )


@pytest.fixture
def people(db: None) -> None:
    record(
        *(
            message(key, f"hello number {key}", sender=sender, minutes=int(key))
            for key, sender in SENDERS.items()
        ),
        message("8", "hello from me", sender="me", minutes=8, direction="out"),
    )
    alice = Person.objects.create(name="Alice Walker")
    Identity.objects.filter(external_id__in=["aw", "alice.walker@example.com"]).update(person=alice)
    Identity.objects.filter(external_id="ak").update(person=Person.objects.create(name="Aunt May"))


def found(query: str, **options: Any) -> set[str]:
    return {hit.message.external_id for hit in message_search(query=query, **options).hits}


FINDS = [
    # first name, last name, prefixes: every word of a name, any sender holding one
    ("from:alice", {"1", "2"}),  # not Alicia: "alice" does not begin "alicia"
    ("from:ali", {"1", "2", "3"}),
    ("from:walker", {"1", "2", "6"}),
    ("from:walk", {"1", "2", "6"}),
    ("from:keys", {"3"}),
    ("from:marley", {"5"}),
    # a person's own name (the owner's), all of their identities
    ("from:aunt", {"3"}),
    ("from:may", {"3"}),
    # handles, with and without @, whole or begun
    ("from:@alice_w", {"1", "2"}),
    ("from:alice_w", {"1", "2"}),
    ("from:bobby", {"5"}),
    ("from:@bob", {"5"}),
    ("from:zoe_o", {"4"}),
    # a mail local part: its words in order, the last begun
    ("from:carol", {"7"}),
    ("from:danvers", {"7"}),
    ("from:carol.d", {"7"}),
    ("from:carol.danvers", {"7"}),
    ("from:alice.w", {"1", "2"}),
    ("from:example", set()),  # the domain is no name
    # case and accents, folded as the search folds them
    ("from:ALICE", {"1", "2"}),
    ("from:ALI", {"1", "2", "3"}),
    ("from:zoe", {"4"}),
    ("from:Zoë", {"4"}),
    ("from:olund", {"4"}),
    ("from:ÖLUND", {"4"}),
    # exact as before: the whole address, phone, external id; a quoted whole name
    ("from:alice.walker@example.com", {"1", "2"}),
    ("from:+15550009", {"5"}),
    ("from:jw", {"6"}),
    ('from:"Alice Walker"', {"1", "2"}),
    ('from:"alice walker"', {"1", "2"}),
    ('from:"John Walker"', {"6"}),
    ('from:"Alice"', set()),  # quoted: the whole name, not a word of it
    ('from:"Zoë Ölund"', {"4"}),
    # not a word's start, nothing, no word at all
    ("from:lice", set()),
    ("from:nobody", set()),
    ("from:@", set()),
    ("from:_", set()),
    # with words, negated, in OR, and the owner
    ("hello from:walker", {"1", "2", "6"}),
    ("hello number from:ali", {"1", "2", "3"}),
    ("from:ali -from:aunt", {"1", "2"}),
    ("from:walker OR from:zoe", {"1", "2", "4", "6"}),
    ("hello -from:walker", {"3", "4", "5", "7", "8"}),
    ("from:me", {"8"}),
]


@pytest.mark.parametrize(("query", "expected"), FINDS, ids=[q for q, _ in FINDS])
@pytest.mark.parametrize("sort", ["relevance", "newest"])
def test_from_finds_a_sender_by_any_word_they_go_by(
    people: None, query: str, expected: set[str], sort: str
) -> None:
    assert found(query, sort=sort) == expected
    if sort == "newest":  # unresolved (tag all results): the ids resolved in the statement
        compiled = compile_query(parse(query))
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT m.external_id FROM archive_message AS m WHERE {compiled.where}",
                compiled.params,
            )
            assert {row[0] for row in cursor.fetchall()} == expected


def test_a_quoted_value_is_exact_and_says_so_in_the_parsed_query() -> None:
    assert to_json(parse('from:"Ann Lee"')) == {
        "operator": "from",
        "operand": "Ann Lee",
        "negated": False,
        "exact": True,
    }
    assert to_json(parse("-from:ann")) == {"operator": "from", "operand": "ann", "negated": True}
    assert to_json(parse('-from:"Ann"'))["exact"] is True  # type: ignore[index]
    assert "exact" not in to_json(parse('in:"Ann Lee"'))  # type: ignore[operator]


def labels(query: str) -> list[tuple[str, list[str], int]]:
    return [
        (match.operator, [sender.label for sender in match.senders], match.more)
        for match in message_search(query=query).senders
    ]


def test_several_people_named_are_listed_each_with_an_exact_operator(people: None) -> None:
    page = message_search(query="from:ali")
    (match,) = page.senders
    assert [(s.label, s.operator) for s in match.senders] == [
        ("Alice Walker", 'from:"Alice Walker"'),
        ("Aunt May", 'from:"Aunt May"'),
    ]
    alice = match.senders[0]
    assert alice.person_id == Person.objects.get(name="Alice Walker").pk
    assert set(alice.identity_ids) == set(
        Identity.objects.filter(person_id=alice.person_id).values_list("pk", flat=True)
    )
    # Each operator narrows the results to that one person.
    assert found(f"from:ali {match.senders[0].operator}") == {"1", "2"}
    assert found(f"from:ali {match.senders[1].operator}") == {"3"}
    # People first, then identities no person holds, by name.
    assert labels("from:walker") == [("from:walker", ["Alice Walker", "John Walker"], 0)]
    assert labels("from:carol") == [("from:carol", ["carol.danvers@example.com"], 0)]
    assert labels('-from:"Alice Walker" from:nobody from:me') == [
        ('-from:"Alice Walker"', ["Alice Walker"], 0),
        ("from:nobody", [], 0),
    ]
    assert labels("hello") == []


def test_a_long_list_is_cut_and_counted(people: None) -> None:
    many = tuple(IdentityRecord(external_id=f"s{i}", display_name=f"Sam {i:02}") for i in range(25))
    record(message("s", "hi", sender="s0", minutes=50), identities=many)
    ((operator, names, more),) = labels("from:sam")
    assert (operator, len(names), more) == ("from:sam", SHOWN, 25 - SHOWN)
    assert names[:2] == ["Sam 00", "Sam 01"]


def test_the_words_follow_renames_links_and_deletions(people: None) -> None:
    record(
        message("9", "renamed", sender="jw", minutes=9),
        identities=(IdentityRecord(external_id="jw", display_name="Jonathan Strange"),),
    )
    assert found("from:strange") == {"6", "9"}
    assert found("from:walker") == {"1", "2"}
    person = Person.objects.get(name="Aunt May")
    person.name = "Auntie Em"
    person.save()
    assert found("from:em") == {"3"}
    assert found("from:may") == set()
    person.delete()
    assert found("from:auntie") == set()
    assert found("from:alicia") == {"3"}  # the identity itself is still named so
    Identity.objects.filter(person__name="Alice Walker").update(person=None)
    assert found("from:alice.w") == {"1", "2"}  # each by its own words now
    assert found("from:@alice_w") == {"1", "2"}  # alice_w is alice.w: alice, then w…
    assert found('from:"Alice Walker"') == {"1"}  # her name, no more her identities
    assert found("from:alice.walker@example.com") == {"2"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_identity_words")
        assert cursor.fetchone()[0] == Identity.objects.count()


def test_resolving_reads_identities_not_messages(people: None) -> None:
    sql, _ = sender_ids_sql("ali", exact=False)
    assert "archive_message" not in sql
    compiled = compile_query(parse("from:ali"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"EXPLAIN QUERY PLAN SELECT count(*) FROM archive_message AS m WHERE {compiled.where}",
            compiled.params,
        )
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    assert "SCAN m" not in plan, plan
    assert "sender" in plan, plan
    # Resolved once by the search, each statement then takes the ids as they are.
    matches = sender_matches(parse("from:ali"))
    compiled = compile_query(parse("from:ali"), senders=resolved(matches))
    assert compiled.params == []
    ids = ",".join(str(i) for i in matches[0].identity_ids)
    assert compiled.where == f"(m.sender_id IN ({ids}))"
    assert len(matches[0].identity_ids) == 3


def test_no_sender_matches_is_said_on_the_page_and_in_the_api(
    owner_client: Any, people: None
) -> None:
    response = owner_client.get("/search/", {"q": "hello from:nobody"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "No sender matches <code>from:nobody</code>" in html
    answer = owner_client.get("/api/search/messages", {"q": "hello from:nobody"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["hits"] == []
    assert body["senders"] == [{"operator": "from:nobody", "senders": [], "more": 0}]
    quoted = owner_client.get("/search/", {"q": 'from:"Alice"'}).content.decode()
    assert "No sender matches <code>from:&quot;Alice&quot;</code>: no name, handle" in quoted


def test_the_page_and_api_list_the_senders_a_from_named(owner_client: Any, people: None) -> None:
    html = owner_client.get("/search/", {"q": "hello from:walker"}).content.decode()
    assert "<code>from:walker</code> matches 2 senders" in html
    assert 'href="?q=hello%20from%3Awalker%20from%3A%22John%20Walker%22&amp;sort=relevance"' in html
    assert ">Alice Walker</a>" in html
    single = owner_client.get("/search/", {"q": "from:keys"}).content.decode()
    assert "<code>from:keys</code> is Aunt May." in single
    body = owner_client.get("/api/search/messages", {"q": "hello from:walker"}).json()
    (match,) = body["senders"]
    assert match["operator"] == "from:walker" and match["more"] == 0
    john = Identity.objects.get(external_id="jw")
    assert match["senders"][1] == {
        "label": "John Walker",
        "person_id": None,
        "identity_ids": [john.pk],
        "operator": 'from:"John Walker"',
    }
    assert match["senders"][0]["person_id"] == Person.objects.get(name="Alice Walker").pk
    assert {hit["sender"] for hit in body["hits"]} == {
        "Alice Walker",
        "alice.walker@example.com",
        "John Walker",
    }
    assert owner_client.get("/api/search/messages", {"q": "hello"}).json()["senders"] == []


def test_the_sender_facets_name_their_sender_exactly(people: None) -> None:
    page = message_search(query="hello", facets=True, limit=100)
    assert page.facets is not None
    counts = {value.operator: value.count for value in page.facets.sender}
    assert counts['from:"John Walker"'] == 1  # not Alice Walker too, as from:walker would be
    assert counts['from:"Zoë Ölund"'] == 1
    for operator, count in counts.items():
        assert len(found(f"hello {operator}", limit=100)) == count or operator in (
            'from:"Alice Walker"',  # the person's name: all her identities
            'from:"alice.walker@example.com"',
        )
