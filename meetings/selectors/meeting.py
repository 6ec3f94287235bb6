"""A meeting's page: its series, participants and their people, the transcript as speaker
turns (a window of it, opened at a line when asked), the messages with its participants
around it, the tasks that link here, the recording its lines play from and the audio and
video the owner may pick as one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db.models import Q
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString

from archive.store.models import Attachment, Identity, Message
from meetings.models import Meeting, MeetingLink, Participant, Segment, Transcript
from meetings.selectors.rules import rrule_text
from tasks.models import Task
from wirecat.errors import NotFound

QUERY_MAX = 200  # the search inside a transcript reads this much of ?q=
SEGMENT_LIMIT = 5000  # transcript lines shown on one page
NEARBY = 3  # a series' occurrences shown before and after this one
MESSAGES_AROUND = timedelta(days=2)
MESSAGES_LIMIT = 50
CANDIDATES_LIMIT = 50  # recordings the owner may pick from on a meeting's page

DASH = "\u2013"  # an en dash, between the two ends of a range


# --- a meeting's page --------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One transcript segment, its text escaped (and the search's words marked)."""

    segment: Segment
    html: SafeString
    at: str  # "12:05" or "1:02:05"
    # The stored recording of the line's transcript, and the line's start in it as a
    # media fragment's seconds ("2", "2.5"): the line plays from there.
    recording: Attachment | None = None
    seconds: str = ""


@dataclass
class Turn:
    """Consecutive lines of one speaker."""

    speaker: str
    at: str
    lines: list[Line] = field(default_factory=list)


@dataclass(frozen=True)
class TranscriptView:
    turns: list[Turn]
    total: int  # lines in the transcript
    matches: int  # lines that match ?q= (= total without one)
    query: str
    truncated: bool
    sources: list[str]
    starts_later: bool = False  # opened at a line past the first SEGMENT_LIMIT lines


@dataclass(frozen=True)
class Recording:
    """A stored recording of the meeting's transcripts, played on its page."""

    attachment: Attachment
    video: bool  # a <video> (a video/ type), else an <audio>

    @property
    def element_id(self) -> str:
        return f"rec-{self.attachment.public_id}"


@dataclass(frozen=True)
class Nearby:
    """Another occurrence of the same series, with its time in words."""

    meeting: Meeting
    when: str


@dataclass(frozen=True)
class MeetingPage:
    meeting: Meeting
    when: str  # in the owner's zone (an all-day meeting: its dates)
    when_own: str  # in the meeting's own zone when that differs, else ""
    moved_from: str  # a moved occurrence's usual time, else ""
    participants: list[Participant]
    series_rule: str  # in plain words, or the rule as written
    earlier: list[Nearby]
    later: list[Nearby]
    transcript: TranscriptView
    messages: list[Message]
    tasks: list[Task]
    owner_zone: str
    own_zone: str  # the meeting's own zone when it differs from the owner's, else ""
    recordings: list[Recording] = field(default_factory=list)
    transcripts: list[Transcript] = field(default_factory=list)  # for the recording's form
    candidates: list[Attachment] = field(default_factory=list)  # audio and video to pick

    @property
    def when_short(self) -> str:
        return short_when(self.meeting)

    @property
    def join_ok(self) -> bool:
        """The join link is a web address (http or https), safe to make a link of."""
        url = self.meeting.join_url.strip().lower()
        return url.startswith(("https://", "http://")) and len(url) > 8


def meeting_page(*, public_id: str, q: str = "", line: int | None = None) -> MeetingPage:
    """Everything a meeting's page shows, in a bounded number of queries."""
    meeting = (
        Meeting.objects.select_related("calendar", "event").filter(public_id=public_id[:40]).first()
    )
    if meeting is None:
        raise NotFound("There is no such meeting. It may have been removed from its calendar.")
    participants = list(
        Participant.objects.filter(meeting=meeting)
        .select_related("identity__person")
        .order_by("name", "email")
    )
    earlier: list[Meeting] = []
    later: list[Meeting] = []
    if meeting.event_id is not None:
        siblings = Meeting.objects.filter(event_id=meeting.event_id).exclude(pk=meeting.pk)
        earlier = list(siblings.filter(start__lte=meeting.start).order_by("-start", "-id")[:NEARBY])
        earlier.reverse()
        later = list(siblings.filter(start__gt=meeting.start).order_by("start", "id")[:NEARBY])
    owner_zone = timezone.get_current_timezone_name()
    own_zone = meeting.time_zone if _other_zone(meeting.time_zone, owner_zone) else ""
    moved_from = ""
    if meeting.moved and meeting.recurrence_id is not None and not meeting.all_day:
        moved_from = when_text(meeting.recurrence_id, meeting.recurrence_id, all_day=False)
        moved_from = moved_from.rsplit(f" {DASH} ", 1)[0]
    elif meeting.moved and meeting.recurrence_id is not None:
        moved_from = when_text(meeting.recurrence_id, meeting.recurrence_id, all_day=True)
    messages = messages_around(meeting=meeting, participants=participants)
    transcripts = list(
        Transcript.objects.filter(meeting=meeting).select_related("recording").order_by("pk")
    )
    return MeetingPage(
        meeting=meeting,
        when=when_text(meeting.start, meeting.end, all_day=meeting.all_day),
        when_own=(
            when_text(meeting.start, meeting.end, all_day=False, zone=own_zone)
            if own_zone and not meeting.all_day
            else ""
        ),
        moved_from=moved_from,
        participants=participants,
        series_rule=rrule_text(meeting.event.rrule if meeting.event else ""),
        earlier=[Nearby(m, short_when(m)) for m in earlier],
        later=[Nearby(m, short_when(m)) for m in later],
        transcript=transcript_view(meeting=meeting, q=q, line=line),
        messages=messages,
        tasks=tasks_linked(meeting=meeting),
        owner_zone=owner_zone,
        own_zone=own_zone,
        recordings=recordings_of(transcripts),
        transcripts=transcripts,
        candidates=recording_candidates(meeting=meeting, messages=messages),
    )


def _other_zone(zone: str, owner_zone: str) -> bool:
    if not zone or zone == owner_zone:
        return False
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def short_when(meeting: Meeting) -> str:
    """An occurrence in a list: "Tue 8 Dec 2026, 10:00" (an all-day one: its first date)."""
    if meeting.all_day:
        return f"{meeting.start.astimezone(UTC).date():%a %-d %b %Y}, all day"
    return f"{timezone.localtime(meeting.start):%a %-d %b %Y, %H:%M}"


def when_text(start: datetime, end: datetime, *, all_day: bool, zone: str = "") -> str:
    """A meeting's time in words: "Tuesday 8 December 2026, 10:00 to 11:00" in the owner's
    zone (or `zone`); an all-day one's dates ("Tuesday 8 December 2026, all day")."""
    if all_day:
        first = start.astimezone(UTC).date()
        last = max(first, end.astimezone(UTC).date() - timedelta(days=1))
        if first == last:
            return f"{first:%A %-d %B %Y}, all day"
        return f"{first:%A %-d %B} {DASH} {last:%A %-d %B %Y}, all day"
    tz = ZoneInfo(zone) if zone else timezone.get_current_timezone()
    local_start, local_end = start.astimezone(tz), end.astimezone(tz)
    if local_start.date() == local_end.date():
        return f"{local_start:%A %-d %B %Y, %H:%M} {DASH} {local_end:%H:%M}"
    return f"{local_start:%a %-d %b %Y, %H:%M} {DASH} {local_end:%a %-d %b %Y, %H:%M}"


def timestamp(ms: int) -> str:
    """A position in a recording: "mm:ss", or "h:mm:ss" from an hour on."""
    seconds = max(0, int(ms)) // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def _marked(text: str, pattern: re.Pattern[str] | None) -> SafeString:
    if pattern is None:
        return SafeString(escape(text))
    parts = pattern.split(text)
    # split() with one group: the odd items are the matches.
    return SafeString(
        "".join(
            f"<mark>{escape(part)}</mark>" if n % 2 else str(escape(part))
            for n, part in enumerate(parts)
        )
    )


def _source(transcript: Transcript) -> str:
    if transcript.source_name:
        return transcript.source_name
    if transcript.agent:
        model = f" ({transcript.model})" if transcript.model else ""
        return f"{transcript.agent.removeprefix('agent:')}{model}, an agent"
    return f"a {transcript.kind or 'transcript'} file"


LINES_BEFORE = 50  # lines shown before a line the page is opened at, past the first ones


def transcript_view(*, meeting: Meeting, q: str = "", line: int | None = None) -> TranscriptView:
    """The meeting's transcript lines as speaker turns; with `q`, only the lines holding
    every one of its words (any case), the words marked. Opened at `line` (a segment's id,
    as a search hit links to it) that lies past the first SEGMENT_LIMIT lines, the lines
    start a little before it instead, so that it is on the page."""
    query = " ".join(q.split())[:QUERY_MAX]
    words = [word for word in query.split(" ") if word][:10]
    segments = Segment.objects.filter(transcript__meeting=meeting).select_related(
        "transcript__recording"
    )
    for word in words:
        segments = segments.filter(text__icontains=word)
    starts_later = False
    if line is not None and not words:
        target = segments.filter(pk=line).values_list("transcript_id", "seq").first()
        if target is not None:
            transcript_id, seq = target
            earlier = Q(transcript_id__lt=transcript_id) | Q(
                transcript_id=transcript_id, seq__lt=seq
            )
            if segments.filter(earlier).count() >= SEGMENT_LIMIT - LINES_BEFORE:
                starts_later = True
                segments = segments.filter(
                    Q(transcript_id__gt=transcript_id)
                    | Q(transcript_id=transcript_id, seq__gte=seq - LINES_BEFORE)
                )
    rows = list(segments.order_by("transcript_id", "seq")[: SEGMENT_LIMIT + 1])
    truncated = len(rows) > SEGMENT_LIMIT
    rows = rows[:SEGMENT_LIMIT]
    pattern = (
        re.compile("(" + "|".join(re.escape(w) for w in words) + ")", re.IGNORECASE)
        if words
        else None
    )
    turns: list[Turn] = []
    sources: list[str] = []
    previous: Segment | None = None
    for segment in rows:
        source = _source(segment.transcript)
        if source not in sources:
            sources.append(source)
        recording = segment.transcript.recording
        shown = Line(
            segment=segment,
            html=_marked(segment.text, pattern),
            at=timestamp(segment.start_ms),
            recording=recording if recording is not None and recording.path else None,
            seconds=media_seconds(segment.start_ms),
        )
        # A search's hits are not consecutive: each is a turn of its own unless it follows
        # the one before it directly.
        same_turn = (
            previous is not None
            and turns
            and previous.transcript_id == segment.transcript_id
            and previous.speaker == segment.speaker
            and (not words or previous.seq + 1 == segment.seq)
        )
        if same_turn:
            turns[-1].lines.append(shown)
        else:
            turns.append(Turn(speaker=segment.speaker, at=shown.at, lines=[shown]))
        previous = segment
    if words:
        total = Segment.objects.filter(transcript__meeting=meeting).count()
        matches = len(rows)
    elif starts_later:
        total = matches = Segment.objects.filter(transcript__meeting=meeting).count()
    else:
        total = matches = len(rows)
    return TranscriptView(
        turns=turns,
        total=total,
        matches=matches,
        query=query,
        truncated=truncated,
        starts_later=starts_later,
        sources=sources,
    )


def media_seconds(ms: int) -> str:
    """A position as a media fragment's seconds (`#t=2`, `#t=2.5`): no trailing zeros."""
    whole, rest = divmod(max(0, int(ms)), 1000)
    return f"{whole}.{rest:03d}".rstrip("0").rstrip(".") if rest else str(whole)


def _playable(attachment: Attachment) -> bool:
    return bool(attachment.path) and attachment.mime_type.lower().startswith(("audio/", "video/"))


def recordings_of(transcripts: list[Transcript]) -> list[Recording]:
    """The stored recordings of the transcripts (each once, in the transcripts' order)."""
    found: dict[int, Recording] = {}
    for transcript in transcripts:
        attachment = transcript.recording
        if attachment is None or not attachment.path or attachment.pk in found:
            continue
        video = attachment.mime_type.lower().startswith("video/")
        found[attachment.pk] = Recording(attachment=attachment, video=video)
    return list(found.values())


def recording_candidates(*, meeting: Meeting, messages: list[Message]) -> list[Attachment]:
    """The audio and video whose bytes are stored, of the messages linked to the meeting
    and of the messages with its participants around it (`messages`): what the owner may
    pick as a transcript's recording (the recordings already set among them)."""
    linked = MeetingLink.objects.filter(meeting=meeting, kind=MeetingLink.Kind.MESSAGE).values(
        "target_id"
    )
    current = Transcript.objects.filter(meeting=meeting, recording__isnull=False).values(
        "recording_id"
    )
    rows = (
        Attachment.objects.filter(
            Q(message_id__in=linked)
            | Q(message_id__in=[m.pk for m in messages])
            | Q(pk__in=current)
        )
        .filter(path__isnull=False)
        .filter(Q(mime_type__istartswith="audio/") | Q(mime_type__istartswith="video/"))
        .select_related("message")
        .order_by("message__sent_at", "pk")[:CANDIDATES_LIMIT]
    )
    return [row for row in rows if _playable(row)]


def meeting_transcript(*, public_id: str, transcript: str = "") -> Transcript | None:
    """The meeting's transcript `transcript` (its id as text), else its first; None when
    the meeting has no such transcript (a bad id names none)."""
    rows = Transcript.objects.filter(meeting__public_id=public_id[:40]).order_by("pk")
    wanted = transcript.strip()
    if not wanted:
        return rows.first()
    if not wanted.isdigit() or len(wanted) > 18:
        return None
    return rows.filter(pk=int(wanted)).first()


def messages_around(*, meeting: Meeting, participants: list[Participant]) -> list[Message]:
    """Messages from the participants (any identity of their people) within two days of
    the meeting, in one query."""
    identity_ids = {p.identity_id for p in participants if p.identity_id is not None}
    person_ids = {
        p.identity.person_id
        for p in participants
        if p.identity is not None and p.identity.person_id is not None
    }
    if not identity_ids:
        return []
    senders = Identity.objects.filter(Q(pk__in=identity_ids) | Q(person_id__in=person_ids))
    return list(
        Message.objects.filter(
            sender_id__in=senders.values("pk"),
            sent_at__gte=meeting.start - MESSAGES_AROUND,
            sent_at__lte=meeting.end + MESSAGES_AROUND,
            deleted_at__isnull=True,
        )
        .select_related("chat", "sender")
        .order_by("sent_at", "id")[:MESSAGES_LIMIT]
    )


def tasks_linked(*, meeting: Meeting) -> list[Task]:
    """Tasks that link here: the meeting's links of kind task, and tasks whose description
    carries its reference (`meeting:<public id>`, as "make a task from this line" writes)."""
    ids = MeetingLink.objects.filter(meeting=meeting, kind=MeetingLink.Kind.TASK).values(
        "target_id"
    )
    return list(
        Task.objects.filter(Q(pk__in=ids) | Q(description__contains=meeting.reference))
        .select_related("project")
        .order_by("id")[:100]
    )


def segment_line(*, public_id: str, at_ms: int) -> tuple[Meeting, Segment] | None:
    """A meeting's transcript line at `at_ms` (the first one starting there), or None."""
    segment = (
        Segment.objects.filter(transcript__meeting__public_id=public_id[:40], start_ms=at_ms)
        .select_related("transcript__meeting")
        .order_by("transcript_id", "seq")
        .first()
    )
    return (segment.transcript.meeting, segment) if segment is not None else None


def segment_reference(meeting: Meeting, segment: Segment) -> str:
    """A task's description for a transcript line: who said what, when, and a link back
    (markdown), with the meeting's stable reference."""
    who = segment.speaker or "Someone"
    title = meeting.title or "a meeting"
    return (
        f"From [{title}](/meetings/{meeting.public_id}/#seg-{segment.pk}) at "
        f"{timestamp(segment.start_ms)}, {who} said:\n\n> {' '.join(segment.text.split())}\n\n"
        f"({meeting.reference})"
    )
