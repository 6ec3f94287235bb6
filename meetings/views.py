"""Meetings pages: the calendar (month, week, agenda) and a meeting's page, read leniently
(a bad date is today, an unknown view is the month); the one form: the owner picks the
recording a transcript's lines play from."""

from __future__ import annotations

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from meetings.selectors import VIEWS, calendar_page, meeting_page, meeting_transcript, parse_day
from meetings.services.transcripts import recording_get, transcript_recording_set
from wirecat.errors import Invalid, NotFound


@require_GET
def calendar(request: HttpRequest) -> HttpResponse:
    today = timezone.localdate()
    view = request.GET.get("view", "")
    page = calendar_page(
        view=view if view in VIEWS else "month",
        anchor=parse_day(request.GET.get("date"), today=today),
        today=today,
    )
    return render(
        request,
        "meetings/calendar.html",
        {"cal": page, "views": VIEWS, "zone": timezone.get_current_timezone_name()},
    )


@require_GET
def meeting_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    raw = request.GET.get("line", "")
    line = int(raw) if raw.isdigit() and len(raw) <= 18 else None  # a search hit's segment
    page = meeting_page(public_id=public_id, q=request.GET.get("q", "")[:1000], line=line)
    return render(request, "meetings/meeting.html", {"m": page, "meeting": page.meeting})


@require_POST
def meeting_recording(request: HttpRequest, public_id: str) -> HttpResponse:
    """Set (or clear, with an empty `recording`) the recording of one of the meeting's
    transcripts (`transcript`, else its first), then back to the meeting's page."""
    back = reverse("meetings:meeting", args=[public_id[:40]]) + "#recording"
    transcript = meeting_transcript(
        public_id=public_id, transcript=request.POST.get("transcript", "")
    )
    if transcript is None:
        flash.error(request, "The recording was not set: this meeting has no such transcript.")
        return redirect(back)
    chosen = request.POST.get("recording", "").strip()[:40]
    try:
        recording = recording_get(public_id=chosen) if chosen else None
        transcript_recording_set(transcript=transcript, recording=recording)
    except (NotFound, Invalid) as exc:
        flash.error(request, f"The recording was not set: {exc}")
    else:
        flash.success(
            request,
            f"The transcript now plays from {recording}."
            if recording is not None
            else "The transcript has no recording now.",
        )
    return redirect(back)
