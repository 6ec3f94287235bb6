"""The meeting page's recording in a browser: the owner picks a stored WAV (a message's
attachment linked to the meeting) as the transcript's recording, the page shows its player,
and choosing a line's time plays the recording from that second, the line marked as it
plays; at 390 px, dark, nothing scrolls sideways. Screenshots:
tests/artifacts/meeting-recording-*.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meetings.domain import SegmentRecord, TranscriptRead
from meetings.models import Meeting, Transcript
from meetings.services import meeting_link, transcript_store
from tests.e2e.test_import_page import sign_in
from tests.factories import T0
from tests.meetings import factories as f
from tests.meetings.recording_factories import stored_recording

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def a_standup_with_its_recording_linked() -> Meeting:
    standup = f.meeting("Standup", T0, minutes=15)
    transcript_store(
        read=TranscriptRead(
            kind="vtt",
            segments=(
                SegmentRecord(start_ms=0, end_ms=2000, speaker="Ann Lee", text="Good morning."),
                SegmentRecord(
                    start_ms=2000, end_ms=4000, speaker="Bob Builder", text="The build is green."
                ),
                SegmentRecord(
                    start_ms=4000, end_ms=5000, speaker="Ann Lee", text="Then we ship today."
                ),
            ),
        ),
        source_name="standup.vtt",
        meeting=standup,
    )
    recording = stored_recording(file_name="standup.wav", mime_type="audio/wav")
    meeting_link(meeting=standup, kind="message", target_id=recording.message_id)
    return standup


def current_time(page: Any) -> float:
    return float(page.locator("audio.rec-media").evaluate("el => el.currentTime"))


def test_a_lines_time_plays_the_recording_from_that_second(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    standup = a_standup_with_its_recording_linked()
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/meetings/{standup.public_id}/")
    assert page.locator("audio").count() == 0

    # The owner picks the recording among the audio of the messages linked to the meeting.
    page.get_by_text("Add the recording").click()
    page.get_by_label("Recording", exact=True).select_option(label="standup.wav · Fri 1 Mar, 12:00")
    page.get_by_role("button", name="Use this recording").click()
    page.wait_for_url("**#recording")
    assert page.get_by_text("The transcript now plays from standup.wav.").is_visible()
    assert Transcript.objects.get(meeting=standup).recording is not None

    audio = page.locator("audio.rec-media")
    assert audio.is_visible()
    page.wait_for_function("document.querySelector('audio.rec-media').readyState >= 1")
    assert float(audio.evaluate("el => el.duration")) == pytest.approx(5, abs=0.1)

    line = page.locator(".seg", has_text="The build is green.")
    link = line.get_by_role("link", name="Play the recording from 00:02")
    assert (link.get_attribute("href") or "").endswith("#t=2")
    link.click()
    page.wait_for_function("!document.querySelector('audio.rec-media').paused")
    assert current_time(page) == pytest.approx(2, abs=0.5)
    # The page stayed where it was (the link did not navigate to the file).
    assert page.url.endswith(f"/meetings/{standup.public_id}/#recording")
    # The player follows along: the line being said is marked.
    page.wait_for_selector(".seg.seg-now:has-text('The build is green.')")
    audio.evaluate("el => el.pause()")
    assert current_time(page) == pytest.approx(2, abs=0.9)
    page.screenshot(path=str(artifacts_dir / "meeting-recording-1280.png"), full_page=True)

    # Played to 4 s, the next line is the one marked.
    page.locator(".seg", has_text="Then we ship today.").get_by_role(
        "link", name="Play the recording from 00:04"
    ).click()
    page.wait_for_selector(".seg.seg-now:has-text('Then we ship today.')")
    assert page.locator(".seg.seg-now").count() == 1


def test_the_player_fits_a_phone_in_the_dark(
    live_server: Any, browser: Any, artifacts_dir: Path
) -> None:
    standup = a_standup_with_its_recording_linked()
    Transcript.objects.update(recording=stored_recording("again", file_name="standup.wav"))
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    tab = context.new_page()
    try:
        sign_in(tab, live_server)
        tab.goto(f"{live_server.url}/meetings/{standup.public_id}/")
        assert tab.locator("audio.rec-media").is_visible()
        tab.get_by_text("Change the recording").click()
        assert tab.get_by_role("button", name="Use this recording").is_visible()
        assert int(tab.evaluate("document.documentElement.scrollWidth")) <= 390
        tab.screenshot(path=str(artifacts_dir / "meeting-recording-390-dark.png"), full_page=True)
    finally:
        context.close()
