"""Meetings pages: the calendar (month, week, agenda) and a meeting's page. Read-only;
every parameter is read leniently (a bad date is today, an unknown view is the month)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from meetings.selectors import VIEWS, calendar_page, meeting_page, parse_day


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
    page = meeting_page(public_id=public_id, q=request.GET.get("q", "")[:1000])
    return render(request, "meetings/meeting.html", {"m": page, "meeting": page.meeting})
