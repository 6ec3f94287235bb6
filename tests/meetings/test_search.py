"""Meetings search: the words index kept by triggers, stems by the messages' analyzer,
the operators a meeting answers, phrases, ranking, snippets, hits at the second said."""

from __future__ import annotations

import contextlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from meetings.models import Meeting, Segment
from meetings.search import meeting_search
from meetings.search_index import meeting_stems_drain
from tests.meetings.search_factories import T0, calendar, meeting, transcript
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db


def _words(match: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid FROM meeting_words WHERE meeting_words MATCH %s", [match])
        return {int(row[0]) for row in cursor.fetchall()}


def _texts(query: str) -> list[str]:
    return [
        hit.segment.text if hit.segment else hit.meeting.title
        for hit in meeting_search(query=query).hits
    ]


def test_the_migration_made_the_index_and_its_triggers() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        triggers = {row[0] for row in cursor.fetchall()}
    assert {
        "meetings_segment_ai",
        "meetings_segment_au",
        "meetings_segment_ad",
        "meetings_meeting_ai",
        "meetings_meeting_au",
        "meetings_meeting_ad",
    } <= triggers


def test_triggers_keep_the_words_index_on_insert_update_and_delete() -> None:
    made = meeting("Budget review", description="numbers for the quarter")
    spoken = transcript(made, [("Ann", "the invoice is late")])
    segment = spoken.segments.get()
    assert _words('"invoice"') == {segment.pk * 2}
    assert _words('"quarter"') == {made.pk * 2 + 1}

    segment.text = "the receipt came"
    segment.save(update_fields=["text"])
    assert _words('"invoice"') == set()
    assert _words('"receipt"') == {segment.pk * 2}

    Meeting.objects.filter(pk=made.pk).update(title="Planning")
    assert _words('"budget"') == set()
    assert _words('"planning"') == {made.pk * 2 + 1}

    Segment.objects.filter(pk=segment.pk).delete()
    assert _words('"receipt"') == set()
    made.delete()
    assert _words('"planning"') == set()
    assert _words('"quarter"') == set()


def test_a_hit_points_at_the_second_it_was_said() -> None:
    made = meeting("Standup")
    transcript(made, [("Ann", "good morning"), ("Bob", "the deploy broke", 73_500)])
    page = meeting_search(query="deploy")
    [hit] = page.hits
    assert hit.kind == "segment"
    assert hit.meeting.public_id == made.public_id
    assert hit.segment is not None
    assert (hit.segment.seq, hit.segment.speaker, hit.start_ms) == (1, "Bob", 73_500)
    assert [(part.text, part.hit) for part in hit.snippet] == [
        ("the ", False),
        ("deploy", True),
        (" broke", False),
    ]


def test_a_title_or_description_hit_points_at_the_meeting() -> None:
    made = meeting("Roadmap review", description="what ships in spring")
    transcript(made, [("Ann", "hello")])
    [hit] = meeting_search(query="spring").hits
    assert hit.kind == "meeting" and hit.segment is None
    assert hit.meeting.pk == made.pk
    assert any(part.hit and part.text == "spring" for part in hit.snippet)


def test_stems_find_other_forms_of_a_word_once_drained() -> None:
    made = meeting("Sync")
    transcript(made, [("Ann", "we keep meeting on Mondays")])
    assert meeting_search(query="meetings").hits == []  # not stemmed yet: words only
    assert meeting_search(query="meetings").stems_behind
    meeting_stems_drain()
    page = meeting_search(query="meetings")
    assert not page.stems_behind
    assert _texts("meetings") == ["we keep meeting on Mondays"]
    assert _texts("exact:meetings") == []  # exact: takes the form as written
    # A changed text is stemmed again (the triggers queue it).
    segment = Segment.objects.get()
    segment.text = "nothing here"
    segment.save(update_fields=["text"])
    meeting_stems_drain()
    assert _texts("meetings") == []


def test_phrases_and_prefixes() -> None:
    made = meeting("Sync")
    transcript(made, [("Ann", "the blue car is fast"), ("Bob", "a car that is blue")])
    assert _texts('"blue car"') == ["the blue car is fast"]
    assert sorted(_texts("blu*")) == ["a car that is blue", "the blue car is fast"]
    assert _texts("-fast car") == ["a car that is blue"]
    assert _texts("*ast") == ["the blue car is fast"]  # an infix, as a substring


def test_from_names_the_speaker_or_a_participant() -> None:
    made = meeting(
        "Launch plan",
        participants=[("Carol Diaz", "carol@example.com")],
        organizer=("Dan Organizer", "dan@example.com"),
    )
    transcript(made, [("Ann Lee", "launch on Friday"), ("Bob", "launch on Monday")])
    assert _texts("launch from:ann") == ["launch on Friday"]
    assert _texts('launch from:"Ann Lee"') == ["launch on Friday"]
    assert _texts('launch from:"Ann"') == []  # a quoted name is the whole name
    assert _texts("launch from:lee") == ["launch on Friday"]  # any word of the name
    # A meeting's own title: its participants and organizer.
    assert _texts("launch from:carol") == ["Launch plan"]
    assert _texts("launch from:carol@example.com") == ["Launch plan"]
    assert _texts("launch from:dan") == ["Launch plan"]


def test_dates_read_the_meetings_start_and_in_names_the_calendar() -> None:
    home = calendar("Family", key="family.ics")
    march = meeting("Review", start=T0)
    may = meeting("Review", start=T0 + timedelta(days=70), cal=home)
    assert {h.meeting.pk for h in meeting_search(query="review after:2025-04").hits} == {may.pk}
    assert {h.meeting.pk for h in meeting_search(query="review before:2025-04").hits} == {march.pk}
    assert {h.meeting.pk for h in meeting_search(query="review on:2025-03-03").hits} == {march.pk}
    assert {h.meeting.pk for h in meeting_search(query="review in:family").hits} == {may.pk}
    assert {h.meeting.pk for h in meeting_search(query="review -in:family").hits} == {march.pk}


def test_ranking_puts_the_denser_match_first_and_titles_above_text() -> None:
    made = meeting("Weekly", start=T0)
    transcript(
        made,
        [
            ("Ann", "budget " + "and some other words " * 20),
            ("Bob", "budget budget"),
        ],
    )
    titled = meeting("Budget", start=T0 - timedelta(days=1))
    page = meeting_search(query="budget")
    assert [hit.score is not None for hit in page.hits] == [True, True, True]
    scores = [hit.score for hit in page.hits if hit.score is not None]
    assert scores == sorted(scores)
    assert page.hits[0].meeting.pk == titled.pk and page.hits[0].segment is None
    assert page.hits[1].segment is not None and page.hits[1].segment.text == "budget budget"


def test_pages_follow_the_cursor() -> None:
    made = meeting("Sync")
    transcript(made, [("Ann", f"item {n} of the list") for n in range(5)])
    first = meeting_search(query="item", limit=2)
    assert len(first.hits) == 2 and first.next_cursor
    second = meeting_search(query="item", limit=2, cursor=first.next_cursor)
    third = meeting_search(query="item", limit=2, cursor=second.next_cursor)
    assert third.next_cursor is None
    seen = [h.segment.pk for p in (first, second, third) for h in p.hits if h.segment]
    assert len(seen) == len(set(seen)) == 5


@pytest.mark.parametrize(
    ("query", "sentence"),
    [
        ("budget has:attachment", "has: is for messages"),
        ("tag:urgent", "tag: is for messages"),
        ("is:dm", "is: is for messages"),
        ("source:telegram", "source: is for messages"),
        ("filename:a.pdf", "filename: is for messages"),
        ('"open', 'a quoted phrase has no closing "'),
        ("(", "this ( is never closed"),
    ],
)
def test_what_meetings_cannot_answer_is_a_sentence(query: str, sentence: str) -> None:
    with pytest.raises(Invalid, match=sentence.replace("(", r"\(")):
        meeting_search(query=query)


@pytest.mark.parametrize("cursor", ["nope", "bzEw", "!!!"])
def test_a_bad_cursor_is_a_sentence(cursor: str) -> None:
    with pytest.raises(Invalid, match="cursor"):
        meeting_search(query="x", cursor=cursor)


def test_odd_input_never_breaks_the_sql() -> None:
    made = meeting("Sync")
    transcript(made, [("Ann", 'say "hi" 100% of_the time')])
    for query in ['"hi"', "100%", "of_the", 'from:"a\'b"', "in:%", "NEAR(x y)", "*"]:
        with contextlib.suppress(Invalid):
            meeting_search(query=query)
    assert _texts("100%") == ['say "hi" 100% of_the time']


def test_the_search_command_takes_meetings() -> None:
    made = meeting("Standup")
    transcript(made, [("Bob", "the deploy broke", 73_500)])
    out = StringIO()
    call_command("search", "deploy", "--meetings", stdout=out)
    printed = out.getvalue()
    assert made.public_id in printed and "Bob" in printed and "01:13" in printed
    with pytest.raises(CommandError, match="has: is for messages"):
        call_command("search", "has:link", "--meetings", stdout=StringIO())


def test_the_minute_job_stems_what_was_written() -> None:
    from meetings.jobs import meetings_stems_drain
    from wirecat.celery import app

    made = meeting("Sync")
    transcript(made, [("Ann", "we keep meeting on Mondays")])
    assert meetings_stems_drain.run().startswith("meeting stems: 2 indexed, 0 queued")
    assert _texts("meetings") == ["we keep meeting on Mondays"]
    entry = app.conf.beat_schedule["meetings-stems-drain"]
    assert entry["task"] == "archive.jobs.meetings_stems_drain"
    assert entry["options"]["expires"] < entry["schedule"]
