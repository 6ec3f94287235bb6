"""Meetings' write services: calendars stored idempotently by SEQUENCE, occurrences kept
(never deleted), invitations cancelled and answered, participants linked to people
through identities, transcripts attached to their meetings, and a meeting's links. Records
are built by hand, in the shape the readers hand them over (meetings/domain.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from archive.people.services import identity_link, person_create
from archive.store.models import Chat, Identity, Message, Person
from archive.store.sink import batch_record
from meetings.domain import (
    CalendarRead,
    EventRecord,
    OccurrenceRecord,
    ParticipantRecord,
    SegmentRecord,
    TranscriptRead,
)
from meetings.models import Calendar, Event, Meeting, MeetingLink, Participant, Segment
from meetings.selectors import meeting_participants
from meetings.services import calendar_store, meeting_link, meeting_unlink, transcript_store
from meetings.services.participants import MEETINGS_PROVIDER
from tasks.services import project_create, task_create
from tests.factories import batch, message
from wirecat.errors import Invalid, NotFound

pytestmark = pytest.mark.django_db

MONDAY = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
WEEK = timedelta(weeks=1)
ALICE = ParticipantRecord(email="alice@example.com", name="Alice Example", response="accepted")
BOB = ParticipantRecord(email="bob@example.com", name="Bob", response="needs-action")
ORGANIZER = ParticipantRecord(email="olga@example.com", name="Olga")


def occurrence(n: int, **extra: Any) -> OccurrenceRecord:
    start = MONDAY + n * WEEK
    values: dict[str, Any] = {"recurrence_id": start, "start": start, "end": start + HOUR}
    values.update(extra)
    return OccurrenceRecord(**values)


def weekly(
    uid: str = "standup@example.com",
    count: int = 10,
    *,
    sequence: int = 0,
    title: str = "Standup",
    attendees: tuple[ParticipantRecord, ...] = (ALICE, BOB),
    overrides: dict[int, OccurrenceRecord] | None = None,
    skip: tuple[int, ...] = (),
) -> EventRecord:
    overrides = overrides or {}
    return EventRecord(
        uid=uid,
        title=title,
        location="Room 1",
        time_zone="Europe/London",
        sequence=sequence,
        rrule=f"FREQ=WEEKLY;COUNT={count}",
        organizer=ORGANIZER,
        participants=attendees,
        occurrences=tuple(overrides.get(n, occurrence(n)) for n in range(count) if n not in skip),
    )


def read(*events: EventRecord, method: str = "", window: bool = False) -> CalendarRead:
    extra: dict[str, Any] = {}
    if window:
        extra = {"window_start": MONDAY - 52 * WEEK, "window_end": MONDAY + 104 * WEEK}
    return CalendarRead(name="Work", method=method, events=events, **extra)


def store(*events: EventRecord, **extra: Any) -> Any:
    return calendar_store(kind="file", key="work.ics", read=read(*events, **extra))


def snapshot() -> list[tuple[Any, ...]]:
    return [
        *Event.objects.order_by("pk").values_list("pk", "updated_at", "sequence", "title"),
        *Meeting.objects.order_by("pk").values_list("pk", "updated_at", "status", "title"),
        *Participant.objects.order_by("pk").values_list("pk", "response", "identity_id"),
    ]


# --- calendars -----------------------------------------------------------------------------


def test_a_calendar_is_stored_with_its_occurrences_and_participants() -> None:
    stored = store(weekly())
    assert (stored.events_added, stored.meetings_added) == (1, 10)
    calendar = Calendar.objects.get()
    assert (calendar.kind, calendar.key, calendar.name) == ("file", "work.ics", "Work")
    meeting = Meeting.objects.order_by("start").first()
    assert meeting is not None
    assert (meeting.title, meeting.location, meeting.time_zone) == (
        "Standup",
        "Room 1",
        "Europe/London",
    )
    emails = sorted(meeting.participants.values_list("email", "role"))
    assert emails == [
        ("alice@example.com", ""),
        ("bob@example.com", ""),
        ("olga@example.com", "organizer"),
    ]


def test_storing_the_same_read_again_changes_nothing() -> None:
    store(weekly())
    before = snapshot()
    again = store(weekly())
    assert (again.events_added, again.events_updated, again.events_unchanged) == (0, 0, 1)
    assert (again.meetings_added, again.meetings_updated, again.meetings_cancelled) == (0, 0, 0)
    assert snapshot() == before


def test_a_higher_sequence_updates_and_a_lower_one_is_ignored() -> None:
    store(weekly(sequence=1, title="Standup"))
    newer = store(weekly(sequence=2, title="Daily standup"))
    assert newer.events_updated == 1
    assert newer.meetings_updated == 10
    assert set(Meeting.objects.values_list("title", flat=True)) == {"Daily standup"}

    late = store(weekly(sequence=1, title="Old invitation"))
    assert late.events_ignored == 1
    assert Event.objects.get().title == "Daily standup"
    assert set(Meeting.objects.values_list("title", flat=True)) == {"Daily standup"}


def test_an_occurrences_own_sequence_counts_and_an_older_override_is_ignored() -> None:
    store(weekly())
    later = MONDAY + 2 * WEEK + HOUR
    newer = occurrence(2, start=later, end=later + HOUR, moved=True, sequence=2)
    assert store(weekly(overrides={2: newer})).meetings_updated == 1
    older = occurrence(2, start=later + HOUR, end=later + 2 * HOUR, moved=True, sequence=1)
    assert store(weekly(overrides={2: older})).events_ignored == 1
    assert Meeting.objects.get(recurrence_id=MONDAY + 2 * WEEK).start == later


def test_what_the_reader_could_not_read_is_carried_in_the_result() -> None:
    problem = "work.ics, UID x: no DTSTART; the event was skipped"
    calendar_read = CalendarRead(events=(weekly(count=1),), problems=(problem,))
    stored = calendar_store(kind="file", key="work.ics", read=calendar_read, name="Mine")
    assert stored.problems == (problem,)
    assert stored.calendar.name == "Mine"
    with pytest.raises(Invalid):
        calendar_store(kind="feed", key="work.ics", read=calendar_read)
    with pytest.raises(Invalid):
        calendar_store(kind="file", key="  ", read=calendar_read)


def test_an_override_moves_or_cancels_its_occurrence_and_keeps_the_rest() -> None:
    moved = occurrence(
        3,
        start=MONDAY + 3 * WEEK + 2 * HOUR,
        end=MONDAY + 3 * WEEK + 3 * HOUR,
        moved=True,
        title="Standup (late)",
        sequence=1,
    )
    cancelled = occurrence(5, status="cancelled", sequence=1)
    store(weekly(overrides={3: moved, 5: cancelled}))
    third = Meeting.objects.get(recurrence_id=MONDAY + 3 * WEEK)
    assert third.moved and third.start == MONDAY + 3 * WEEK + 2 * HOUR
    assert (third.title, third.location) == ("Standup (late)", "Room 1")
    assert Meeting.objects.get(recurrence_id=MONDAY + 5 * WEEK).status == "cancelled"
    assert (
        Meeting.objects.exclude(recurrence_id__in=[MONDAY + 3 * WEEK, MONDAY + 5 * WEEK])
        .filter(moved=False, status="confirmed", title="Standup")
        .count()
        == 8
    )


def test_an_overrides_own_participants_are_its_own() -> None:
    own = occurrence(2, participants=(ALICE,), sequence=1)
    store(weekly(overrides={2: own}))
    third = Meeting.objects.get(recurrence_id=MONDAY + 2 * WEEK)
    assert sorted(third.participants.values_list("email", flat=True)) == [
        "alice@example.com",
        "olga@example.com",
    ]


def test_occurrences_no_longer_read_are_cancelled_never_deleted() -> None:
    store(weekly(count=10), window=True)
    ids = set(Meeting.objects.values_list("public_id", flat=True))
    # The series now ends after six (UNTIL moved earlier) and the third was taken out.
    shorter = store(weekly(count=6, skip=(2,)), window=True)
    assert shorter.meetings_cancelled == 5
    assert set(Meeting.objects.values_list("public_id", flat=True)) == ids
    cancelled = Meeting.objects.filter(status="cancelled").order_by("start")
    assert [m.recurrence_id for m in cancelled] == [MONDAY + n * WEEK for n in (2, 6, 7, 8, 9)]
    # The meeting comes back when the file has it again.
    back = store(weekly(count=10), window=True)
    assert back.meetings_updated == 5
    assert not Meeting.objects.filter(status="cancelled").exists()


def test_without_a_window_only_occurrences_inside_the_reads_span_are_cancelled() -> None:
    store(weekly(count=10))
    store(weekly(count=6, skip=(2,)))
    cancelled = Meeting.objects.filter(status="cancelled")
    assert [m.recurrence_id for m in cancelled] == [MONDAY + 2 * WEEK]


def test_a_single_event_moved_keeps_its_meeting() -> None:
    single = EventRecord(uid="lunch@example.com", title="Lunch", occurrences=(occurrence(0),))
    store(single)
    public_id = Meeting.objects.get().public_id
    later = occurrence(
        0,
        recurrence_id=MONDAY + 3 * HOUR,
        start=MONDAY + 3 * HOUR,
        end=MONDAY + 4 * HOUR,
        sequence=1,
    )
    store(EventRecord(uid="lunch@example.com", title="Lunch", sequence=1, occurrences=(later,)))
    meeting = Meeting.objects.get()
    assert (meeting.public_id, meeting.start, meeting.status) == (
        public_id,
        MONDAY + 3 * HOUR,
        "confirmed",
    )


def test_method_cancel_cancels_the_named_occurrence_or_the_whole_event() -> None:
    store(weekly(sequence=1))
    one = EventRecord(uid="standup@example.com", sequence=2, occurrences=(occurrence(4),))
    first = calendar_store(kind="mail", key="inbox", read=read(one, method="CANCEL"))
    assert first.meetings_cancelled == 1
    assert list(
        Meeting.objects.filter(status="cancelled").values_list("recurrence_id", flat=True)
    ) == [MONDAY + 4 * WEEK]
    stale = calendar_store(kind="mail", key="inbox", read=read(weekly(sequence=1), method="CANCEL"))
    assert stale.events_ignored == 1
    assert Meeting.objects.filter(status="cancelled").count() == 1

    whole = calendar_store(kind="mail", key="inbox", read=read(weekly(sequence=3), method="CANCEL"))
    assert whole.meetings_cancelled == 9
    assert Event.objects.get().status == "cancelled"
    assert Meeting.objects.count() == 10
    assert not Meeting.objects.exclude(status="cancelled").exists()


def test_method_reply_sets_only_the_replying_attendees_response() -> None:
    store(weekly(sequence=1))
    before = Event.objects.values_list("title", "sequence", "updated_at").get()
    reply = EventRecord(
        uid="standup@example.com",
        title="Re: Standup",
        sequence=1,
        rrule="FREQ=WEEKLY;COUNT=10",
        participants=(ParticipantRecord(email="BOB@example.com", name="Bob", response="declined"),),
    )
    answered = calendar_store(kind="mail", key="inbox", read=read(reply, method="REPLY"))
    assert answered.responses_updated == 10
    responses = set(Participant.objects.values_list("email", "response"))
    assert responses == {
        ("alice@example.com", "accepted"),
        ("bob@example.com", "declined"),
        ("olga@example.com", ""),
    }
    assert Event.objects.values_list("title", "sequence", "updated_at").get() == before


def test_participants_reach_people_through_identities_never_by_name() -> None:
    mailbox = Identity.objects.create(
        provider="mail",
        external_id="alice@example.com",
        email="Alice@Example.com",
        display_name="Alice Example",
    )
    Identity.objects.create(  # another provider's contact listing the same address
        provider="slack", external_id="U123", email="alice@example.com", display_name="alice"
    )
    alice = person_create(name="Alice Example", identity_ids=[mailbox.pk])
    namesake = ParticipantRecord(email="other.alice@example.net", name="Alice Example")
    store(
        weekly(attendees=(ParticipantRecord(email="ALICE@example.com", name="A."), BOB, namesake))
    )

    meeting = Meeting.objects.order_by("start").first()
    assert meeting is not None
    rows = {row.participant.email: row for row in meeting_participants(meeting)}
    assert rows["alice@example.com"].participant.identity_id == mailbox.pk
    assert rows["alice@example.com"].person == alice
    assert rows["olga@example.com"].participant.role == "organizer"
    # Nobody is merged into Alice by a display name alone.
    assert rows["other.alice@example.net"].person is None
    assert rows["bob@example.com"].person is None
    made = Identity.objects.get(provider=MEETINGS_PROVIDER, external_id="bob@example.com")
    assert rows["bob@example.com"].participant.identity_id == made.pk
    # Every meeting shares the one identity per address.
    assert Identity.objects.filter(provider=MEETINGS_PROVIDER).count() == 3
    # The owner links Bob's identity: every meeting with Bob shows the person.
    bob = Person.objects.create(name="Bob Builder")
    identity_link(identity_id=made.pk, person_id=bob.pk)
    assert {
        r.person for r in meeting_participants(meeting) if r.participant.email == "bob@example.com"
    } == {bob}


def _queries(count: int, uid: str) -> int:
    attendees = tuple(
        ParticipantRecord(email=f"person{n}@example.com", name=f"Person {n}") for n in range(10)
    )
    with CaptureQueriesContext(connection) as captured:
        calendar_store(
            kind="file", key=f"{uid}.ics", read=read(weekly(uid, count, attendees=attendees))
        )
    return len(captured)


def test_the_query_count_stays_flat_as_occurrences_grow() -> None:
    small = _queries(4, "small")
    five_years = _queries(260, "big")  # 2,860 participants
    assert Participant.objects.count() == 11 * (4 + 260)
    # One more INSERT per 1,000 participant rows at most, never one per row.
    assert five_years <= small + 3


# --- transcripts ---------------------------------------------------------------------------


def cues(*lines: tuple[str, str], step: int = 60_000) -> TranscriptRead:
    return TranscriptRead(
        kind="vtt",
        segments=tuple(
            SegmentRecord(start_ms=n * step, end_ms=(n + 1) * step, speaker=who, text=text)
            for n, (who, text) in enumerate(lines)
        ),
    )


def two_meetings() -> tuple[Meeting, Meeting]:
    first = EventRecord(
        uid="a",
        title="Planning",
        participants=(ALICE,),
        occurrences=(OccurrenceRecord(recurrence_id=MONDAY, start=MONDAY, end=MONDAY + HOUR),),
    )
    later = MONDAY + timedelta(minutes=30)
    second = EventRecord(
        uid="b",
        title="Review",
        participants=(ALICE, BOB),
        occurrences=(OccurrenceRecord(recurrence_id=later, start=later, end=later + 2 * HOUR),),
    )
    store(first, second)
    return Meeting.objects.get(title="Planning"), Meeting.objects.get(title="Review")


def test_a_transcript_attaches_to_the_meeting_it_overlaps_most() -> None:
    planning, review = two_meetings()
    # 9:40 to 10:40: 20 minutes of Planning, 60 of Review.
    lines = cues(*[("Bob", f"line {n}") for n in range(60)])
    transcript = transcript_store(
        read=lines, source_name="call.vtt", started_at=MONDAY + timedelta(minutes=40)
    )
    assert transcript.meeting == review
    # A tie in overlap: the nearest start wins (9:30 to 9:45 lies in both).
    tie = transcript_store(
        read=cues(*[("Bob", "x")] * 15),
        source_name="tie.vtt",
        started_at=MONDAY + timedelta(minutes=30),
    )
    assert tie.meeting == review
    early = transcript_store(
        read=cues(("Alice", "hi")),
        source_name="early.vtt",
        started_at=MONDAY + timedelta(minutes=5),
    )
    assert early.meeting == planning


def test_a_transcript_without_a_meeting_becomes_a_meeting_of_its_own() -> None:
    two_meetings()
    lines = cues(("Someone", "hello"), ("Someone", "bye"))
    evening = MONDAY + 10 * HOUR
    transcript = transcript_store(read=lines, source_name="team sync.vtt", started_at=evening)
    meeting = transcript.meeting
    assert meeting.calendar.kind == Calendar.Kind.TRANSCRIPTS
    assert (meeting.title, meeting.start, meeting.end) == (
        "team sync",
        evening,
        evening + timedelta(minutes=2),
    )
    again = transcript_store(read=lines, source_name="team sync.vtt", started_at=evening)
    assert again == transcript
    assert Meeting.objects.filter(calendar__kind="transcripts").count() == 1
    # Without any time it is kept too, and storing it again finds the same meeting.
    untimed = transcript_store(read=lines, source_name="undated.srt")
    assert transcript_store(read=lines, source_name="undated.srt").meeting == untimed.meeting


def test_a_transcript_goes_to_the_meeting_given_and_speakers_become_identities() -> None:
    _planning, review = two_meetings()
    lines = cues(("alice example", "hi"), ("BOB@example.com", "hello"), ("Alice", "me?"))
    transcript = transcript_store(read=lines, source_name="review.vtt", meeting=review)
    assert transcript.meeting == review
    alice = Identity.objects.get(external_id="alice@example.com")
    bob = Identity.objects.get(external_id="bob@example.com")
    assert list(transcript.segments.values_list("seq", "speaker", "identity_id")) == [
        (0, "alice example", alice.pk),
        (1, "BOB@example.com", bob.pk),
        (2, "Alice", None),  # a first name alone is not a match
    ]


def test_storing_the_same_file_again_keeps_its_rows_and_never_replaces_an_agents() -> None:
    _planning, review = two_meetings()
    agent = transcript_store(
        read=cues(("Alice", "from the recording")),
        source_name="",
        meeting=review,
        origin="agent",
        agent="scribe",
        model="whisper-large-v3",
    )
    assert (agent.agent, agent.kind, agent.model) == ("agent:scribe", "agent", "whisper-large-v3")
    lines = cues(("Bob", "one"), ("Bob", "two"))
    first = transcript_store(read=lines, source_name="review.vtt", meeting=review)
    rows = list(Segment.objects.filter(transcript=first).values_list("pk", "seq", "text"))
    again = transcript_store(read=lines, source_name="review.vtt", meeting=review)
    assert again == first
    assert list(Segment.objects.filter(transcript=first).values_list("pk", "seq", "text")) == rows
    changed = transcript_store(
        read=cues(("Bob", "one, again")), source_name="review.vtt", meeting=review
    )
    assert changed == first
    assert list(first.segments.values_list("text", flat=True)) == ["one, again"]
    assert list(agent.segments.values_list("text", flat=True)) == ["from the recording"]
    assert review.transcripts.count() == 2


def test_a_transcript_whose_cue_ends_before_it_starts_is_refused() -> None:
    bad = TranscriptRead(
        kind="srt", segments=(SegmentRecord(start_ms=5000, end_ms=1000, text="x"),)
    )
    with pytest.raises(Invalid, match=r"bad\.srt: segment 1 ends before it starts"):
        transcript_store(read=bad, source_name="bad.srt", started_at=MONDAY)
    assert not Meeting.objects.exists()


# --- links ---------------------------------------------------------------------------------


def test_a_meeting_links_to_chats_messages_tasks_and_people() -> None:
    batch_record(batch=batch(message("m1", "see you at the standup")))
    chat, msg = Chat.objects.get(), Message.objects.get()
    project_create(key="home", name="Home")
    task = task_create(project="home", title="Book the room")
    person = Person.objects.create(name="Alice")
    store(weekly(count=1))
    meeting = Meeting.objects.get()
    for kind, target in (("chat", chat), ("message", msg), ("task", task), ("person", person)):
        link = meeting_link(meeting=meeting, kind=kind, target_id=target.pk, actor="agent:scribe")
        assert (link.kind, link.target_id, link.actor) == (kind, target.pk, "agent:scribe")
    again = meeting_link(meeting=meeting, kind="task", target_id=task.pk)
    assert again.actor == "agent:scribe"
    assert MeetingLink.objects.filter(meeting=meeting).count() == 4
    assert meeting_unlink(meeting=meeting, kind="task", target_id=task.pk) is True
    assert meeting_unlink(meeting=meeting, kind="task", target_id=task.pk) is False
    with pytest.raises(NotFound, match="There is no person 999999"):
        meeting_link(meeting=meeting, kind="person", target_id=999_999)
    with pytest.raises(Invalid):
        meeting_link(meeting=meeting, kind="calendar", target_id=chat.pk)
    with pytest.raises(Invalid):
        meeting_link(meeting=meeting, kind="chat", target_id=chat.pk, actor="somebody")
