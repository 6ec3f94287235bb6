"""Importing a meeting file: an iCalendar file's events and meetings, or a transcript
(WebVTT, SubRip, a Zoom chat) attached to its meeting. Not a message export: the
connector's reader (archive/connectors/registry.py `meeting_reader_for`) reads the file
whole (each reader caps what it reads) and meetings' services write it, idempotently, in
one transaction; the ImportJob records what was written (`outcome`) and each problem the
reader found (`errors`), like a message import's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archive.connectors.registry import MeetingReader
from archive.imports.models import ImportJob
from meetings.domain import CalendarRead, Status, TranscriptRead
from meetings.models import Meeting
from meetings.services import calendar_store, transcript_store
from wirecat.errors import NotFound

# Problems kept on the job (a broken file could have thousands); the rest are counted.
PROBLEMS_KEPT = 200


def meeting_picked(public_id: str) -> Meeting:
    """The meeting the owner picked for a transcript, by its id or its page's address."""
    address = public_id.strip().split("#", 1)[0].split("?", 1)[0]
    wanted = address.rstrip("/").rsplit("/", 1)[-1]
    meeting = Meeting.objects.filter(public_id=wanted).first() if wanted else None
    if meeting is None:
        raise NotFound(f"There is no meeting {public_id.strip()!r} to attach the transcript to.")
    return meeting


def meeting_file_import(job: ImportJob, reader: MeetingReader) -> tuple[dict[str, Any], list[str]]:
    """Read and store the meeting file of `job`; returns its outcome and the reader's
    problems, and raises what the reader or the services raise (FormatError, Invalid,
    NotFound, OSError)."""
    read = reader.read(Path(job.source), source=job.source_name or Path(job.source).name)
    if isinstance(read, CalendarRead):
        return _calendar(job, read), problems_kept(read.problems)
    return _transcript(job, read), problems_kept(read.problems)


def _calendar(job: ImportJob, read: CalendarRead) -> dict[str, Any]:
    stored = calendar_store(kind="file", key=job.source_name or job.source, read=read)
    occurrences = [occ for event in read.events for occ in event.occurrences]
    return {
        "kind": "calendar",
        "calendar": stored.calendar.name or stored.calendar.key,
        "events": len(read.events),
        "meetings": len(occurrences),
        "cancelled": sum(occ.status == Status.CANCELLED for occ in occurrences),
        "problems": len(read.problems),
        "events_added": stored.events_added,
        "events_updated": stored.events_updated,
        "meetings_added": stored.meetings_added,
        "meetings_updated": stored.meetings_updated,
        "meetings_cancelled": stored.meetings_cancelled,
    }


def _transcript(job: ImportJob, read: TranscriptRead) -> dict[str, Any]:
    meeting = meeting_picked(job.meeting) if job.meeting else None
    transcript = transcript_store(
        read=read,
        source_name=job.source_name or Path(job.source).name,
        meeting=meeting,
        started_at=job.recording_start,
    )
    held = transcript.meeting
    return {
        "kind": "transcript",
        "segments": len(read.segments),
        "problems": len(read.problems),
        "meeting": held.public_id,
        "meeting_title": held.title,
        "own_meeting": held.calendar.kind == held.calendar.Kind.TRANSCRIPTS,
        "timed": meeting is None and (job.recording_start or read.started_at) is not None,
    }


def problems_kept(problems: tuple[str, ...]) -> list[str]:
    """The reader's problem sentences as the job keeps them (at most PROBLEMS_KEPT)."""
    kept = list(problems[:PROBLEMS_KEPT])
    if len(problems) > PROBLEMS_KEPT:
        kept.append(f"… and {len(problems) - PROBLEMS_KEPT:,} more problems of the same file")
    return kept
