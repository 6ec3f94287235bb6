"""`transcript_store`: a transcript attached to its meeting — the one given, else the one
whose time it overlaps most, else a meeting of its own in the transcripts calendar — its
segments written in bulk, each speaker matched to a participant of that meeting (an exact
name or address, case-insensitive; never a guess). `recording_get` finds a stored
attachment to be a transcript's recording, `transcript_recording_set` sets (or clears) it."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import PurePath

from django.db import transaction
from django.utils import timezone

from archive.store.models import Attachment
from meetings.domain import SegmentRecord, TranscriptRead
from meetings.models import Calendar, Meeting, Participant, Segment, Status, Transcript
from meetings.services.common import BATCH, actor_clean
from wirecat.errors import Invalid, NotFound

TRANSCRIPTS_KEY = "transcripts"  # the one calendar of transcripts that matched no meeting
KINDS = {"vtt", "srt", "zoom_chat", "agent"}
SOURCE_MAX = 300


def transcript_store(
    *,
    read: TranscriptRead,
    source_name: str,
    meeting: Meeting | None = None,
    origin: str = "file",
    agent: str = "",
    model: str = "",
    started_at: datetime | None = None,
    recording: Attachment | None = None,
) -> Transcript:
    """Store a transcript. Idempotent: the same file stored again for the same meeting
    replaces that transcript's segments (the same file gives the same rows; unchanged
    segments are not rewritten). A file's transcript is keyed by its source name, an
    agent's by the agent: a file never replaces an agent's transcript, nor the reverse.

    Without `meeting`, the transcript's start (`started_at`, else the read's) finds the
    meeting its time overlaps most (a tie: the nearest start; cancelled ones last); none,
    or no start known, makes a meeting of its own titled after the source.

    `recording`: the stored attachment the transcript was made from; None keeps the one a
    transcript stored again already has (clearing it is `transcript_recording_set`'s)."""
    if origin not in Transcript.Origin.values:
        raise Invalid(f"transcript origin: one of {', '.join(Transcript.Origin.values)}")
    source = " ".join(str(source_name or "").split())[:SOURCE_MAX]
    if origin == Transcript.Origin.AGENT:
        if not agent:
            raise Invalid("An agent's transcript needs the agent's name.")
        agent = actor_clean(agent if agent.startswith("agent:") else f"agent:{agent}")
        kind = "agent"
    else:
        if not source:
            raise Invalid("A transcript file needs its file's name.")
        agent, kind = "", read.kind
    if kind not in KINDS:
        raise Invalid(f"transcript kind: one of {', '.join(sorted(KINDS))}, not {kind!r}")
    for seq, segment in enumerate(read.segments):
        if segment.end_ms < segment.start_ms or segment.start_ms < 0:
            raise Invalid(
                f"{source or 'the transcript'}: segment {seq + 1} ends before it starts "
                f"({segment.start_ms} ms to {segment.end_ms} ms)."
            )
    start = started_at or read.started_at
    with transaction.atomic():
        if meeting is None:
            meeting = _meeting_for(read, source, start, origin)
        held = Transcript.objects.filter(meeting=meeting, origin=origin)
        held = (
            held.filter(agent=agent)
            if origin == Transcript.Origin.AGENT
            else held.filter(source_name=source)
        )
        transcript = held.order_by("pk").first()
        values: dict[str, object] = {
            "kind": kind,
            "source_name": source,
            "agent": agent,
            "model": str(model or "")[:200],
            "language": str(read.language or "")[:35],
        }
        if recording is not None:
            values["recording_id"] = _stored(recording).pk
        if transcript is None:
            transcript = Transcript.objects.create(meeting=meeting, origin=origin, **values)
        else:
            diff = [f for f, v in values.items() if getattr(transcript, f) != v]
            if diff:
                for field in diff:
                    setattr(transcript, field, values[field])
                transcript.save(update_fields=diff)
        _segments_write(transcript, meeting, read.segments)
    return transcript


def _stored(attachment: Attachment) -> Attachment:
    if not attachment.path:
        name = attachment.file_name or attachment.public_id
        raise Invalid(
            f"{name}: its bytes are not stored in the archive (only its name and type are"
            " known), so it cannot be played as the recording."
        )
    return attachment


def recording_get(*, public_id: str) -> Attachment:
    """The attachment `public_id` (att_…), when its bytes are stored: NotFound when there
    is no such attachment, Invalid when only its name and type are known."""
    found = Attachment.objects.filter(public_id=str(public_id)[:32]).first()
    if found is None:
        raise NotFound(
            f"There is no attachment {public_id}. Name a recording stored in the archive."
        )
    return _stored(found)


def transcript_recording_set(*, transcript: Transcript, recording: Attachment | None) -> Transcript:
    """Make `recording` (stored bytes) the transcript's recording, or clear it (None).
    Idempotent."""
    wanted = _stored(recording).pk if recording is not None else None
    if transcript.recording_id != wanted:
        transcript.recording_id = wanted
        transcript.save(update_fields=["recording"])
    return transcript


def _duration(read: TranscriptRead) -> timedelta:
    return timedelta(milliseconds=max((s.end_ms for s in read.segments), default=0))


def _meeting_for(read: TranscriptRead, source: str, start: datetime | None, origin: str) -> Meeting:
    if start is not None:
        found = _overlapping(start, start + _duration(read))
        if found is not None:
            return found
    else:
        # No time known: the meeting this file made before, if any (so storing it again
        # changes nothing), else a new one from now.
        earlier = (
            Transcript.objects.filter(
                meeting__calendar__kind=Calendar.Kind.TRANSCRIPTS,
                origin=origin,
                source_name=source,
            )
            .select_related("meeting")
            .order_by("pk")
            .first()
        )
        if earlier is not None:
            return earlier.meeting
        start = timezone.now()
    calendar, _ = Calendar.objects.get_or_create(
        kind=Calendar.Kind.TRANSCRIPTS,
        key=TRANSCRIPTS_KEY,
        defaults={"name": "Transcripts"},
    )
    title = PurePath(source).stem if source else ""
    return Meeting.objects.create(
        calendar=calendar,
        start=start,
        end=start + _duration(read),
        title=(title or source or "Transcript")[:1000],
    )


def _overlapping(start: datetime, end: datetime) -> Meeting | None:
    """The meeting the span [start, end] overlaps most; a tie: the nearest start, then
    not cancelled, then the oldest. A span of no length meets a meeting it falls in."""
    candidates = Meeting.objects.filter(start__lte=end, end__gte=start)
    best: Meeting | None = None
    best_rank: tuple[float, float, bool, int] | None = None
    for meeting in candidates:
        overlap = (min(end, meeting.end) - max(start, meeting.start)).total_seconds()
        if overlap < 0 or (overlap == 0 and end > start and meeting.end > meeting.start):
            continue  # only touching at an edge
        rank = (
            -overlap,
            abs((meeting.start - start).total_seconds()),
            meeting.status == Status.CANCELLED,
            meeting.pk,
        )
        if best_rank is None or rank < best_rank:
            best, best_rank = meeting, rank
    return best


def _speakers(meeting: Meeting) -> dict[str, int | None]:
    """Lower-cased name or address → the identity of the participant that has it; a name
    two participants with different identities share names nobody (None)."""
    found: dict[str, int | None] = {}
    rows = Participant.objects.filter(meeting=meeting, identity__isnull=False)
    for email, name, identity_id in rows.values_list("email", "name", "identity_id"):
        for key in {email.strip().lower(), " ".join(name.split()).lower()}:
            if not key:
                continue
            if key in found and found[key] != identity_id:
                found[key] = None
            else:
                found[key] = identity_id
    return found


def _segments_write(
    transcript: Transcript, meeting: Meeting, segments: tuple[SegmentRecord, ...]
) -> None:
    speakers = _speakers(meeting)
    wanted = [
        Segment(
            transcript=transcript,
            seq=seq,
            start_ms=segment.start_ms,
            end_ms=segment.end_ms,
            speaker=" ".join(segment.speaker.split())[:300],
            identity_id=speakers.get(" ".join(segment.speaker.split()).lower()),
            text=segment.text,
        )
        for seq, segment in enumerate(segments)
    ]
    fields = ("seq", "start_ms", "end_ms", "speaker", "identity_id", "text")
    held = list(Segment.objects.filter(transcript=transcript).order_by("seq").values_list(*fields))
    if held == [tuple(getattr(s, f) for f in fields) for s in wanted]:
        return
    Segment.objects.filter(transcript=transcript).delete()
    Segment.objects.bulk_create(wanted, batch_size=BATCH)
