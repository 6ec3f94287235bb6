"""Notes search: the words and trigram indexes kept by triggers, the stems by the index job
with the messages' analyzer, the query language the messages' (the operators a note can
answer, the rest refused with a sentence), ranking, paging, snippets, "did you mean"."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from archive.search.models import SearchConfig
from archive.search.parser import QuerySyntaxError
from archive.tags.services import tag_add, tag_target
from notes.models import Note
from notes.search import note_search
from notes.search_index import note_stems_drain, note_stems_for_search
from notes.services.notes import note_create, note_delete, note_update
from tests.factories import T0
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db


def _note(title: str, body: str = "", *, folder: str | None = None, minutes: int = 0) -> Note:
    at = T0 + timedelta(minutes=minutes)
    return note_create(title=title, body=body, folder=folder, created_at=at, updated_at=at)


def _titles(query: str, **options: Any) -> list[str]:
    return [hit.note.title for hit in note_search(query=query, **options).hits]


def _rows(table: str, match: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH %s", [match])
        return {int(row[0]) for row in cursor.fetchall()}


def _queued() -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT note_id FROM notes_stem_queue")
        return {int(row[0]) for row in cursor.fetchall()}


def _statements(action: Callable[[], object]) -> list[str]:
    seen: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        action()
    return seen


# --- the indexes ------------------------------------------------------------------------


def test_the_migration_made_the_indexes_and_their_triggers() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")
        names = {row[0] for row in cursor.fetchall()}
    assert {
        "note_words",
        "note_trigram",
        "note_stems",
        "notes_stem_queue",
        "notes_search_state",
        "note_words_vocab",
        "notes_note_search_ai",
        "notes_note_search_au",
        "notes_note_search_ad",
    } <= names


def test_triggers_keep_the_words_index_on_create_edit_and_delete() -> None:
    note = _note("Budget review", "numbers for the quarter")
    assert _rows("note_words", '"budget"') == {note.pk}
    assert _rows("note_words", '"quarter"') == {note.pk}
    assert _rows("note_trigram", '"uarte"') == {note.pk}
    assert _queued() == {note.pk}
    note_stems_drain()

    edited = note_update(public_id=note.public_id, revision=1, body="the receipts came")
    assert _rows("note_words", '"quarter"') == set()
    assert _rows("note_words", '"receipts"') == {note.pk}
    assert _rows("note_words", '"budget"') == {note.pk}  # the title stays
    assert _queued() == {note.pk}  # its stems wait for the job
    note_stems_drain()

    # Moving a note changes neither its title nor its body: nothing is indexed again.
    note_update(public_id=note.public_id, revision=edited.revision, folder="Archive")
    assert _queued() == set()

    note_delete(public_id=note.public_id)
    assert _rows("note_words", '"receipts"') == set()
    assert _rows("note_words", '"budget"') == set()
    assert _rows("note_trigram", '"ceipt"') == set()
    assert _queued() == {note.pk}
    note_stems_drain()
    assert _rows("note_stems", '"receipt"') == set() and _queued() == set()


def test_stems_find_other_forms_once_the_job_has_drained_and_a_search_never_writes() -> None:
    _note("Morning", "she runs every day")
    statements = _statements(lambda: note_search(query="running"))
    assert statements and not [
        sql for sql in statements if sql.lstrip().upper().startswith(("INSERT", "DELETE", "UPDATE"))
    ]
    page = note_search(query="running")
    assert (page.hits, page.stems_behind) == ([], True)  # not stemmed yet: words only
    assert _titles("runs") == ["Morning"]

    result = note_stems_drain()
    assert (result.indexed, result.left, result.rebuilt) == (1, 0, True)
    page = note_search(query="running")
    assert [hit.note.title for hit in page.hits] == ["Morning"] and not page.stems_behind
    assert [part.text for part in page.hits[0].snippet if part.hit] == ["runs"]
    assert _titles("exact:running") == []  # exact: takes the form as written, never a stem
    assert _titles("exact:runs") == ["Morning"]
    assert _titles("-running") == []  # excluded in every form

    # An edit is stemmed again by the next drain; until then the stems index is behind.
    note = Note.objects.get()
    note_update(public_id=note.public_id, revision=note.revision, body="walked home")
    assert note_search(query="walking").stems_behind
    note_stems_drain()
    assert _titles("walking") == ["Morning"] and _titles("running") == []


def test_a_changed_analyzer_rebuilds_the_stems_before_they_are_used() -> None:
    _note("Spanish", "ella corre cada mañana")
    note_stems_drain()
    assert _titles("corriendo") == []  # English stems only
    SearchConfig.objects.update_or_create(pk=1, defaults={"latin_stemmers": "english,spanish"})
    # The index holds English stems: a search does not mix them with Spanish ones.
    stems = note_stems_for_search()
    assert stems.analyzer is None and stems.behind
    assert note_search(query="corriendo").stems_behind
    result = note_stems_drain()
    assert result.rebuilt and result.indexed == 1 and result.left == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT stems_analyzer FROM notes_search_state")
        assert "latin=english+spanish" in cursor.fetchone()[0]
    assert _titles("corriendo") == ["Spanish"]
    assert note_stems_drain().rebuilt is False


def test_notes_stored_before_the_migration_are_indexed_by_it() -> None:
    migration = importlib.import_module("notes.migrations.0003_note_search")
    note = _note("Older", "written before search existed")
    with connection.cursor() as cursor:
        # The store as it was before 0003 (in this test's transaction), then 0003's SQL.
        for sql in [*migration.REVERSE, *migration.FORWARD]:
            cursor.execute(sql)
    assert _rows("note_words", '"existed"') == {note.pk}
    assert _rows("note_trigram", '"efore"') == {note.pk}
    assert _queued() == {note.pk}
    note_stems_drain()
    assert _titles("exists") == ["Older"]


# --- the query language -----------------------------------------------------------------


def test_words_phrases_prefixes_exclusions_and_substrings() -> None:
    _note("Car one", "the blue car is fast", minutes=1)
    _note("Car two", "a car that is blue", minutes=2)
    _note("Link", "see https://example.org/a_b for sess.opts", minutes=3)
    assert _titles("blue") == ["Car two", "Car one"]
    assert _titles('"blue car"') == ["Car one"]
    assert _titles("blu*") == ["Car two", "Car one"]
    assert _titles("-fast car") == ["Car two"]
    assert _titles("*ast") == ["Car one"]  # an infix
    assert _titles("*LUE*") == ["Car two", "Car one"]  # substrings in any case
    assert _titles("sess.opts") == ["Link"]  # punctuation: a substring
    assert _titles("a_b") == ["Link"]
    assert _titles("is") == ["Car two", "Car one"]  # a word, not a substring of "this"
    assert _titles("exact:car -two") == ["Car one"]  # a title's words count


def test_or_and_parentheses() -> None:
    _note("Alpha", "apples and pears", minutes=1)
    _note("Beta", "pears and plums", minutes=2)
    _note("Gamma", "plums only", minutes=3)
    assert sorted(_titles("apples OR plums")) == ["Alpha", "Beta", "Gamma"]
    assert sorted(_titles("(apples OR plums) pears")) == ["Alpha", "Beta"]
    assert _titles("pears -(apples OR gamma)") == ["Beta"]
    assert _titles("(apples AND pears) OR only") == ["Gamma", "Alpha"]


def test_tag_finds_the_notes_tagged_so_in_any_case() -> None:
    tagged = _note("Tagged", "a plan", minutes=1)
    _note("Plain", "a plan", minutes=2)
    tag_add(target=tag_target(kind="note", key=tagged.public_id), name="Urgent")
    assert _titles("tag:urgent") == ["Tagged"]
    assert _titles("plan tag:URGENT") == ["Tagged"]
    assert _titles("plan -tag:urgent") == ["Plain"]
    assert _titles('tag:"no such tag"') == []
    # A message's tagging of the same id is not the note's.
    assert _titles("tag:urgent OR tag:other") == ["Tagged"]


def test_in_names_a_folder_by_path_or_name_with_its_subfolders() -> None:
    _note("Top", "report", minutes=1)
    _note("Work", "report", folder="Work", minutes=2)
    _note("Clients", "report", folder="Work/Clients", minutes=3)
    _note("Acme", "report", folder="Work/Clients/Acme", minutes=4)
    _note("Homework", "report", folder="Homework", minutes=5)
    _note("Personal clients", "report", folder="Personal/Clients", minutes=6)
    assert _titles("report in:work") == ["Acme", "Clients", "Work"]
    assert _titles('report in:"Work/Clients"') == ["Acme", "Clients"]
    assert _titles("report in:/work/clients/") == ["Acme", "Clients"]
    assert _titles("in:clients") == ["Personal clients", "Acme", "Clients"]  # by name
    assert _titles("in:Clients/Acme") == ["Acme"]  # the end of a path
    assert _titles("in:nowhere") == []
    # Excluding a folder keeps the notes at the top (they have none).
    assert sorted(_titles("report -in:work")) == ["Homework", "Personal clients", "Top"]
    assert _titles("-in:work") == ["Personal clients", "Homework", "Top"]  # newest first
    [hit] = note_search(query="in:acme").hits
    assert hit.folder == "Work/Clients/Acme"
    assert note_search(query="in:homework").hits[0].folder == "Homework"
    assert note_search(query="top").hits[0].folder == ""


def test_dates_read_the_notes_last_change_as_the_messages_search_does() -> None:
    day = 24 * 60
    _note("March first", "entry", minutes=0)  # 2024-03-01 12:00 UTC
    _note("March second", "entry", minutes=day)
    _note("April", "entry", minutes=40 * day)
    assert _titles("entry on:2024-03-01") == ["March first"]
    assert _titles("entry after:2024-03-02") == ["April", "March second"]
    assert _titles("entry before:2024-03-02") == ["March first"]
    assert _titles("entry on:2024-03") == ["March second", "March first"]
    assert _titles("entry -on:2024-03") == ["April"]
    assert _titles("entry on:2024-02-31") == []  # a date that does not exist: nothing
    # Relative dates count from `now`.
    now = T0 + timedelta(days=41)
    assert _titles("entry on:yesterday", now=now) == ["April"]
    assert _titles("after:2d", now=now) == ["April"]
    # An edit moves a note's date.
    first = Note.objects.get(title="March first")
    later = T0 + timedelta(days=60)
    note_update(public_id=first.public_id, revision=1, body="entry again", updated_at=later)
    assert _titles("entry on:2024-04-30") == ["March first"]


@pytest.mark.parametrize("field", ["from:ann", '-from:"Ann Lee"', "budget from:me"])
def test_from_on_notes_is_a_sentence_saying_notes_have_no_sender(field: str) -> None:
    _note("Budget", "from ann")
    with pytest.raises(Invalid) as raised:
        note_search(query=field)
    assert str(raised.value) == (
        'notes are searched by words, "phrases", exact:, tag:, in: (a folder), before:,'
        " after: and on:; from: is for messages"
    )


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("budget has:attachment", "has"),
        ("is:dm", "is"),
        ("(a OR source:telegram)", "source"),
        ("filename:a.pdf", "filename"),
        ("-has:link budget", "has"),
    ],
)
def test_every_field_a_note_lacks_is_refused_with_its_name(query: str, name: str) -> None:
    _note("Budget", "a plan")
    with pytest.raises(Invalid, match=rf"notes are searched by words.*; {name}: is for messages"):
        note_search(query=query)


def test_a_syntax_error_names_its_place() -> None:
    with pytest.raises(QuerySyntaxError) as raised:
        note_search(query='budget "open')
    assert raised.value.position == 7
    assert str(raised.value) == 'a quoted phrase has no closing " (at character 8)'
    with pytest.raises(QuerySyntaxError, match=r"this \( is never closed \(at character 1\)"):
        note_search(query="(budget")
    with pytest.raises(QuerySyntaxError, match="on: takes a date"):
        note_search(query="on:soon")


def test_odd_input_never_breaks_the_sql() -> None:
    _note("Odd", 'say "hi" 100% of_the time')
    for query in ['"hi"', "100%", "of_the", "in:%", "tag:'x", "NEAR(x y)", "*", '"', "a:b"]:
        with contextlib.suppress(Invalid):
            note_search(query=query)
    assert _titles("100%") == ["Odd"]
    assert _titles("%") == ["Odd"]
    assert note_search(query="   ").hits == [] and note_search(query="").parsed is None


# --- ranking, pages, snippets, suggestions ----------------------------------------------


def test_titles_rank_above_bodies_exact_forms_above_stems_and_ties_newest_first() -> None:
    _note("Notes", "budget " + "and other words " * 20, minutes=1)
    _note("Budget", "plans " + "and other words " * 20, minutes=0)
    _note("Same words", "we budgeted nothing", minutes=2)  # a stem-only match
    _note("Tie old", "tie", minutes=3)
    _note("Tie new", "tie", minutes=4)
    note_stems_drain()
    page = note_search(query="budget")
    assert [hit.note.title for hit in page.hits] == ["Budget", "Notes", "Same words"]
    assert [hit.score is None for hit in page.hits] == [False, False, True]
    assert _titles("tie") == ["Tie new", "Tie old"]


def test_pages_follow_the_cursor() -> None:
    for n in range(5):
        _note(f"Item {n}", f"item {n} of the list", minutes=n)
    first = note_search(query="item", limit=2)
    assert len(first.hits) == 2 and first.next_cursor
    second = note_search(query="item", limit=2, cursor=first.next_cursor)
    third = note_search(query="item", limit=2, cursor=second.next_cursor)
    assert third.next_cursor is None
    seen = [hit.note.title for page in (first, second, third) for hit in page.hits]
    assert seen == ["Item 4", "Item 3", "Item 2", "Item 1", "Item 0"]


@pytest.mark.parametrize("cursor", ["nope", "bTEw", "!!!", "bi0x"])
def test_a_bad_cursor_is_a_sentence(cursor: str) -> None:
    with pytest.raises(Invalid, match="cursor: not a cursor this search gave out"):
        note_search(query="x", cursor=cursor)


@pytest.mark.parametrize("limit", [0, 101])
def test_a_limit_out_of_range_is_a_sentence(limit: int) -> None:
    with pytest.raises(Invalid, match="limit: between 1 and 100"):
        note_search(query="x", limit=limit)


def test_a_snippet_marks_the_words_in_the_body() -> None:
    _note("Trip", "We met at the station. " * 10 + "The deploy broke on Friday.")
    [hit] = note_search(query="deploy").hits
    assert [(part.text, part.hit) for part in hit.snippet if part.hit] == [("deploy", True)]
    assert hit.snippet[0].text == "…"  # cut around the match
    _note("Empty body")
    [hit] = note_search(query="empty").hits
    assert [(part.text, part.hit) for part in hit.snippet] == [
        ("Empty", True),
        (" body", False),
    ]


def test_did_you_mean_offers_a_known_word_when_little_is_found() -> None:
    _note("Garden", "the tomatoes are ripe")
    page = note_search(query="tomatoez")
    assert page.hits == [] and page.suggestion == "tomatoes"
    assert note_search(query="tomatoes").suggestion is None
