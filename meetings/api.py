"""Meetings for agents: meetings in a window, one meeting with its participants and
transcript, an agent's transcript of a recording, and the meetings search. Scopes
meetings.read and meetings.write."""

from __future__ import annotations

from typing import Annotated, Any

from django.db import transaction
from django.http import HttpRequest
from ninja import Query, Router

from archive.search.schemas import SnippetPart
from archive.web.api import (
    answers,
    caller_agent,
    limit_query,
    links,
    offset_query,
    public_id,
    requires,
    scope,
    window,
)
from archive.web.schemas import Day, Format, Id, Matching, Text
from meetings.domain import SegmentRecord, TranscriptRead
from meetings.models import Meeting, Segment, Transcript
from meetings.reads import (
    LIST_MAX,
    QUERY_MAX,
    SEGMENTS_MAX,
    SEQ_MAX,
    meeting_detail,
    meetings_window,
)
from meetings.schemas import (
    MeetingDetailOut,
    MeetingHitOut,
    MeetingOut,
    MeetingSearchOut,
    MeetingsOut,
    ParticipantOut,
    SegmentOut,
    TranscriptIn,
    TranscriptOut,
    TranscriptStoredOut,
)
from meetings.search import MAX_LIMIT, MAX_QUERY_CHARS, meeting_search
from meetings.search_index import meeting_stems_drain
from meetings.services import transcript_store
from meetings.services.transcripts import recording_get
from wirecat.errors import Forbidden, Invalid, NotFound

router = Router(tags=["meetings"])

# An agent's transcript is stemmed right after it is stored, within this budget (the rest
# waits for the next drain; the words index answers for it meanwhile).
STEMS_BUDGET_SECONDS = 5.0

THE_MEETING = links(__name__, GetMeeting=("meeting_show", {"id": "$request.path.id"}))

CalendarFilter = Annotated[
    str, Matching("calendar", "(?:cal_[0-9A-Za-z]{1,40})?", "a calendar's id (cal_…), or empty")
]


def meeting_out(meeting: Meeting) -> dict[str, Any]:
    return {
        "id": meeting.public_id,
        "reference": meeting.reference,
        "calendar": meeting.calendar.public_id,
        "calendar_name": str(meeting.calendar),
        "title": meeting.title,
        "description": meeting.description,
        "start": meeting.start,
        "end": meeting.end,
        "all_day": meeting.all_day,
        "time_zone": meeting.time_zone,
        "status": meeting.status,
        "moved": meeting.moved,
        "recurring": bool(meeting.event and meeting.event.recurring),
        "recurrence_id": meeting.recurrence_id,
        "location": meeting.location,
        "join_url": meeting.join_url,
    }


def _transcript_out(transcript: Transcript, segments: int) -> TranscriptOut:
    return TranscriptOut(
        id=transcript.pk,
        origin=transcript.origin,
        kind=transcript.kind,
        source_name=transcript.source_name,
        agent=transcript.agent,
        model=transcript.model,
        language=transcript.language,
        created_at=transcript.created_at,
        segments=segments,
    )


def _segment_out(segment: Segment) -> SegmentOut:
    return SegmentOut(
        transcript=segment.transcript_id,
        seq=segment.seq,
        start_ms=segment.start_ms,
        end_ms=segment.end_ms,
        speaker=segment.speaker,
        text=segment.text,
    )


@router.get(
    "/meetings",
    response=answers(MeetingsOut),
    summary="Meetings starting in a window of days",
    **scope("meetings.read"),
)
@requires("meetings.read")
def meetings_list(
    request: HttpRequest,
    after: Day | None = None,
    before: Day | None = None,
    q: Annotated[str, Text("q", most=QUERY_MAX, blank=True)] = Query(
        "", description="words in the title, description or location"
    ),
    calendar: CalendarFilter = "",
    limit: int = limit_query(100, LIST_MAX),
    offset: int = offset_query(),
) -> MeetingsOut:
    """Every occurrence starting on or after `after` (default today) and before `before`
    (default `after` + 31 days), days in UTC, earliest first, each a meeting of its own
    (a series' occurrences expanded, moved and cancelled ones with their `status` and
    `moved`). A window is at most 366 days: a longer one is cut, and the answer's
    `after` and `before` say the window answered. `next_offset` pages on."""
    window(limit, offset, LIST_MAX)
    found = meetings_window(
        after=after, before=before, q=q, calendar=calendar, limit=limit, offset=offset
    )
    return MeetingsOut(
        after=found.after,
        before=found.before,
        meetings=[MeetingOut(**meeting_out(m)) for m in found.meetings],
        next_offset=found.next_offset,
    )


@router.get(
    "/meetings/{id}",
    response=answers(MeetingDetailOut),
    summary="A meeting with its participants and transcript",
    **scope("meetings.read"),
)
@requires("meetings.read")
def meeting_show(
    request: HttpRequest,
    id: str = public_id("mtg", "meeting"),
    transcript: Id | None = None,
    after: int = Query(
        -1, ge=-1, le=SEQ_MAX, description="the segments after this seq (`next_after`)"
    ),
    limit: int = limit_query(500, SEGMENTS_MAX),
) -> MeetingDetailOut:
    """The meeting, its participants (with their archive identity), its transcripts (from
    files, or an agent's with the agent and model), and one page of one transcript's
    segments in order: the latest transcript's unless `transcript` names another;
    `next_after` pages on."""
    detail = meeting_detail(public_id=id, transcript=transcript, after=after, limit=limit)
    return MeetingDetailOut(
        **meeting_out(detail.meeting),
        participants=[
            ParticipantOut(
                name=p.name,
                email=p.email,
                response=p.response,
                role=p.role,
                identity_id=p.identity_id,
            )
            for p in detail.participants
        ],
        transcripts=[
            _transcript_out(t, getattr(t, "segment_count", 0)) for t in detail.transcripts
        ],
        segments_transcript=detail.transcript.pk if detail.transcript else None,
        segments=[_segment_out(s) for s in detail.segments],
        next_after=detail.next_after,
    )


@router.put(
    "/meetings/{id}/transcript",
    response=answers(TranscriptStoredOut),
    summary="Store the agent's transcript of a meeting",
    **scope("meetings.write", responses={200: THE_MEETING}),
)
@requires("meetings.write")
def meeting_transcript_put(
    request: HttpRequest, body: TranscriptIn, id: str = public_id("mtg", "meeting")
) -> TranscriptStoredOut:
    """For a recording the agent transcribed: the segments in order (each ending no earlier
    than it starts), the speech `model`, the `language`, and the `recording` (att_…) when
    its bytes are stored: 404 when there is no such attachment, 422 when only its name is
    known. Kept with the agent's name (from its token) and the model; storing again
    replaces this agent's transcript of the meeting, keeping its recording unless another
    is named (a file's transcript is never replaced). Only an agent's token may call it."""
    agent = caller_agent(request)
    if agent is None:
        raise Forbidden("a transcript is an agent's: call with the agent's token")
    meeting = Meeting.objects.filter(public_id=id).first()
    if meeting is None:
        raise NotFound(f"no meeting {id}")
    for seq, segment in enumerate(body.segments):
        if segment.end_ms < segment.start_ms:
            raise Invalid(f"segments[{seq}]: end_ms before start_ms")
    recording = recording_get(public_id=body.recording) if body.recording else None
    read = TranscriptRead(
        kind="agent",
        language=body.language.strip(),
        segments=tuple(
            SegmentRecord(
                start_ms=s.start_ms, end_ms=s.end_ms, text=s.text, speaker=s.speaker.strip()
            )
            for s in body.segments
        ),
    )
    stored = transcript_store(
        read=read,
        source_name="",
        meeting=meeting,
        origin=Transcript.Origin.AGENT,
        agent=agent.name,
        model=body.model.strip(),
        recording=recording,
    )
    transaction.on_commit(
        lambda: meeting_stems_drain(budget_seconds=STEMS_BUDGET_SECONDS), robust=True
    )
    return TranscriptStoredOut(
        meeting=meeting.public_id,
        transcript=_transcript_out(stored, stored.segments.count()),
    )


@router.get(
    "/search/meetings",
    response=answers(MeetingSearchOut),
    summary="Search what was said in meetings, and their titles",
    **scope("meetings.read"),
)
@requires("meetings.read")
def search_meetings(
    request: HttpRequest,
    q: Annotated[str, Format("wirecat-query", most=MAX_QUERY_CHARS)] = Query(
        "", description="a query in the query language (docs/search.md, Meetings)"
    ),
    cursor: Annotated[str, Format("wirecat-search-cursor")] | None = Query(
        None, description="the `next_cursor` of the same search (same `q`)"
    ),
    limit: int = limit_query(20, MAX_LIMIT),
) -> MeetingSearchOut:
    """`q` in the query language (`format: wirecat-query`): words, "phrases", prefix*,
    *infix*, -not, OR, parentheses, exact:, and from: (who said it; for a title, a
    participant or the organizer), in: (a calendar), before:, after:, on: (the meeting's
    start). A hit is a transcript line (`kind` segment: the meeting, `seq`, `speaker` and
    `start_ms`, the moment it was said) or a meeting's title or description (`kind`
    meeting), best first (bm25), with a snippet. has:, is:, source:, filename: and tag:
    are for messages: 422 with a sentence, as is a syntax error (with its `position`)."""
    page = meeting_search(query=q, cursor=cursor, limit=limit)
    hits = []
    for hit in page.hits:
        segment = hit.segment
        meeting = hit.meeting
        hits.append(
            MeetingHitOut(
                kind=hit.kind,
                meeting=meeting.public_id,
                reference=meeting.reference,
                title=meeting.title,
                start=meeting.start,
                calendar_name=str(meeting.calendar),
                transcript=segment.transcript_id if segment else None,
                seq=segment.seq if segment else None,
                speaker=segment.speaker if segment else None,
                start_ms=segment.start_ms if segment else None,
                end_ms=segment.end_ms if segment else None,
                text=segment.text if segment else meeting.description or meeting.title,
                snippet=[SnippetPart(text=part.text, hit=part.hit) for part in hit.snippet],
                score=hit.score,
            )
        )
    return MeetingSearchOut(
        query=page.query,
        parsed=page.parsed,
        hits=hits,
        next_cursor=page.next_cursor,
        stems_behind=page.stems_behind,
        suggestion=page.suggestion,
    )
