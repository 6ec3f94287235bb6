"""From a calendar file to a transcript search hit, in a real browser, imports run by a real
Celery worker: upload an .ics on the Import page, open the calendar and the meeting, upload
a Zoom cloud recording's .vtt (its name says when it began: it joins the meeting it
overlaps), read the transcript, find a spoken word through the meetings search and open
its meeting. Screenshots: tests/artifacts/meetings-import-*.png."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.gateway.services.agents import agent_create
from archive.imports.models import ImportJob
from meetings.models import Meeting, Transcript
from tests.archive.test_worker import celery_worker
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def calendar_file(start: datetime) -> str:
    stamp = "%Y%m%dT%H%M%SZ"
    end = start + timedelta(hours=1)
    return "\r\n".join(
        [
            "BEGIN:VCALENDAR",
            "VERSION:2.0",
            "PRODID:-//WireCat tests//EN",
            "X-WR-CALNAME:Work",
            "BEGIN:VEVENT",
            "UID:roadmap@example.org",
            f"DTSTART:{start.strftime(stamp)}",
            f"DTEND:{end.strftime(stamp)}",
            "SUMMARY:Roadmap review",
            "LOCATION:Room 4",
            "ORGANIZER;CN=Alice Walker:mailto:alice@example.org",
            "END:VEVENT",
            "BEGIN:VEVENT",
            "UID:standup@example.org",
            f"DTSTART:{(start - timedelta(days=7)).strftime(stamp)}",
            f"DTEND:{(start - timedelta(days=7, minutes=-15)).strftime(stamp)}",
            "RRULE:FREQ=DAILY;COUNT=5",
            "SUMMARY:Standup",
            "END:VEVENT",
            "END:VCALENDAR",
            "",
        ]
    )


TRANSCRIPT = """WEBVTT

1
00:00:02.000 --> 00:00:06.500
Alice Walker: Welcome to the roadmap review.

2
00:00:07.000 --> 00:00:12.000
Bob Lee: The marmalade release slips to March.
"""


def test_from_an_ics_upload_to_a_transcript_search_hit(
    live_server: Any, page: Any, tmp_path: Path, settings: Any, artifacts_dir: Path
) -> None:
    start = datetime.now(UTC).replace(hour=10, minute=0, second=0, microsecond=0)
    ics = tmp_path / "work.ics"
    ics.write_text(calendar_file(start), newline="")
    # Zoom names a cloud recording after the moment it began (UTC).
    began = start + timedelta(minutes=2)
    vtt = tmp_path / f"GMT{began:%Y%m%d-%H%M%S}_Recording.transcript.vtt"
    vtt.write_text(TRANSCRIPT)
    token = agent_create(name="reader", scopes=["meetings.read"]).token

    sign_in(page, live_server)
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path):
        page.goto(live_server.url + "/imports/")
        page.get_by_label("Upload an export").set_input_files(str(ics))
        page.get_by_role("button", name="Start import").click()
        page.wait_for_url("**/imports/imp_*/")
        summary = page.locator(".meeting-summary")
        summary.wait_for(timeout=60_000)
        assert summary.inner_text() == "2 events, 6 meetings."
        assert "Done" in page.locator("#progress").inner_text()
        assert "6 meetings added." in page.locator("#progress").inner_text()
        page.screenshot(path=str(artifacts_dir / "meetings-import-ics.png"), full_page=True)

        page.get_by_role("link", name="Open the calendar").click()
        page.wait_for_url("**/meetings/")
        page.get_by_role("link", name="Roadmap review").first.click()
        page.wait_for_url("**/meetings/mtg_*/")
        meeting = Meeting.objects.get(title="Roadmap review")
        assert page.url.endswith(f"/meetings/{meeting.public_id}/")
        assert "Room 4" in page.locator("main").inner_text()
        assert (
            "There is no transcript of this meeting yet" in page.locator("#transcript").inner_text()
        )

        page.locator("#transcript").get_by_role("link", name="Import").click()
        page.wait_for_url("**/imports/")
        page.get_by_label("Upload an export").set_input_files(str(vtt))
        page.get_by_role("button", name="Start import").click()
        page.wait_for_url("**/imports/imp_*/")
        summary = page.locator(".meeting-summary")
        summary.wait_for(timeout=60_000)
        assert summary.inner_text() == "A transcript of 2 segments attached to Roadmap review."
        page.screenshot(path=str(artifacts_dir / "meetings-import-vtt.png"), full_page=True)
        page.locator(".meeting-summary").get_by_role("link", name="Roadmap review").click()
        page.wait_for_url(f"**/meetings/{meeting.public_id}/")
        transcript = page.locator("#transcript")
        assert "The marmalade release slips to March." in transcript.inner_text()
        assert "Bob Lee" in transcript.inner_text()
        page.screenshot(path=str(artifacts_dir / "meetings-import-meeting.png"), full_page=True)

    assert Transcript.objects.get().meeting == meeting
    assert [job.format for job in ImportJob.objects.order_by("pk")] == ["ical", "vtt"]

    # The spoken word on the search page's Meetings tab (and the same hit in the API),
    # then its meeting's page at that line.
    found = page.request.get(
        live_server.url + "/api/search/meetings?q=marmalade",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert found.status == 200
    hits = found.json()["hits"]
    assert [(hit["meeting"], hit["speaker"]) for hit in hits] == [(meeting.public_id, "Bob Lee")]
    page.goto(f"{live_server.url}/search/?q=marmalade&kind=meetings")
    hit = page.locator("li.meeting-hit")
    assert hit.count() == 1 and "Bob Lee" in hit.inner_text()
    hit.locator("a.hit-link").click()
    page.wait_for_url(f"**/meetings/{meeting.public_id}/?line=*#seg-*")
    assert "marmalade" in page.locator(":target").inner_text()
    page.screenshot(path=str(artifacts_dir / "meetings-import-search.png"), full_page=True)

    # The Imports list and a calendar's import at phone width: the summary in words, no
    # sideways scroll.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(live_server.url + "/imports/")
    listing = page.locator("table.list").inner_text()
    assert "2 events, 6 meetings" in listing
    assert "A transcript of 2 segments attached to Roadmap review" in listing
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(artifacts_dir / "meetings-import-list-phone.png"), full_page=True)
