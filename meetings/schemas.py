"""The API shapes of meetings, their participants and transcripts, and meeting search hits."""

from __future__ import annotations

from typing import Annotated, Any

import annotated_types
from ninja import Schema
from pydantic import BeforeValidator, Field

from archive.search.schemas import SnippetPart
from archive.web.schemas import At, BodyIn, Matching, Text

SEGMENTS_MAX = 20_000  # segments in one PUT (about ten hours of speech)
SEGMENT_TEXT_MAX = 10_000  # characters of one segment
SPEAKER_MAX = 300
MODEL_MAX = 200
LANGUAGE_MAX = 35
# A segment's times: milliseconds from the recording's start, up to about 34 years.
MS_MAX = 2**40
RECORDING_ID = "att_[0-9A-Za-z]{1,28}"  # an attachment's public id (32 characters at most)


def _whole(value: Any) -> Any:
    """JSON Schema counts 12.0 as an integer (as archive.web.schemas.Id reads it)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Bounds first, then the validator: so that they reach the JSON Schema (as for `Id`).
Ms = Annotated[int, annotated_types.Interval(ge=0, le=MS_MAX), BeforeValidator(_whole)]


class ParticipantOut(Schema):
    """Someone invited to or speaking in the meeting; `identity_id` is the archive identity
    of their e-mail address (a person is reached through it), null when none."""

    name: str
    email: str
    response: str
    role: str
    identity_id: int | None


class TranscriptOut(Schema):
    """A transcript of the meeting: from a file (`source_name`) or written by an agent
    (`agent` "agent:<name>", `model` its speech model)."""

    id: int
    origin: str  # file | agent
    kind: str  # vtt | srt | zoom_chat | agent
    source_name: str
    agent: str
    model: str
    language: str
    created_at: At
    segments: int  # how many


class SegmentOut(Schema):
    """One line of a transcript: who spoke, from when to when (ms from the start), what."""

    transcript: int  # the transcript's id
    seq: int
    start_ms: int
    end_ms: int
    speaker: str
    text: str


class MeetingOut(Schema):
    """One occurrence: of a series (`recurring`, `recurrence_id` its original start;
    `moved` when an override moved it) or on its own."""

    id: str  # mtg_…
    reference: str  # meeting:mtg_…, what tasks, notes and search hits carry
    calendar: str  # cal_…
    calendar_name: str
    title: str
    description: str
    start: At
    end: At
    all_day: bool
    time_zone: str
    status: str  # confirmed | tentative | cancelled
    moved: bool
    recurring: bool
    recurrence_id: At | None
    location: str
    join_url: str


class MeetingsOut(Schema):
    """The meetings starting in the window asked for, earliest first; `next_offset` is
    the `offset` of the next page, null on the last."""

    after: At
    before: At
    meetings: list[MeetingOut]
    next_offset: int | None


class MeetingDetailOut(MeetingOut):
    """A meeting with its participants, its transcripts, and one page of one transcript's
    segments (`segments_transcript`; the latest one unless asked): `next_after` is the
    `after` of the next page, null on the last."""

    participants: list[ParticipantOut]
    transcripts: list[TranscriptOut]
    segments_transcript: int | None
    segments: list[SegmentOut]
    next_after: int | None


class SegmentIn(BodyIn):
    """One line: from `start_ms` to `end_ms` (ms from the recording's start, the end not
    before the start), who spoke (may be empty) and what."""

    start_ms: Ms
    end_ms: Ms
    speaker: Annotated[str, Text("speaker", most=SPEAKER_MAX, blank=True)] = ""
    text: Annotated[str, Text("text", most=SEGMENT_TEXT_MAX)]


class TranscriptIn(BodyIn):
    """A transcript the agent made of the meeting's recording: its segments in order, the
    speech `model` and the `language` (a BCP 47 tag, e.g. en or pt-BR), and the recording
    itself when its bytes are stored in the archive (`recording`: the attachment's id,
    att_…; the meeting page then plays it from each line's second). Storing it again
    replaces the same agent's transcript of this meeting; without `recording` it keeps the
    recording it had."""

    segments: Annotated[list[SegmentIn], Field(min_length=1, max_length=SEGMENTS_MAX)]
    model: Annotated[str, Text("model", most=MODEL_MAX, blank=True)] = ""
    language: Annotated[str, Text("language", most=LANGUAGE_MAX, blank=True)] = ""
    recording: (
        Annotated[str, Matching("recording", RECORDING_ID, "an attachment's id (att_…)")] | None
    ) = None


class TranscriptStoredOut(Schema):
    """The transcript as stored, with who made it."""

    meeting: str  # mtg_…
    transcript: TranscriptOut


class MeetingHitOut(Schema):
    """A line of a transcript that matched (`kind` segment: `seq`, `speaker` and
    `start_ms`, the moment it was said from the recording's start), or a meeting whose
    title or description matched (`kind` meeting: those are null)."""

    kind: str  # segment | meeting
    meeting: str  # mtg_…
    reference: str  # meeting:mtg_…
    title: str
    start: At
    calendar_name: str
    transcript: int | None
    seq: int | None
    speaker: str | None
    start_ms: int | None
    end_ms: int | None
    text: str
    snippet: list[SnippetPart]
    score: float | None  # bm25 (lower is better) when ranked by words


class MeetingSearchOut(Schema):
    """A page of meeting search hits, best first, the query as parsed, and the next page's
    cursor (null on the last)."""

    query: str
    parsed: dict[str, Any] | None
    hits: list[MeetingHitOut]
    next_cursor: str | None
    # Segments wait for their stems: a word's other forms are found only in what the stems
    # index holds, the words as written everywhere.
    stems_behind: bool = False
    # "Did you mean": the query with known words, when its first page found little.
    suggestion: str | None = None
