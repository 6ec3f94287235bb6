"""A transcript's recording: the field and its migration, an agent naming the recording in
`PUT /api/meetings/{id}/transcript` (stored bytes only), the meeting page's player with a
link from every line's time to that second of the recording (`#t=`), and the owner picking
the recording among the audio and video of the messages around the meeting."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import connection, models
from django.test import Client

from archive.gateway.services.agents import agent_create
from archive.store.models import Attachment, Identity
from meetings.models import Meeting, Segment, Transcript
from meetings.services import meeting_link
from tests.factories import T0
from tests.meetings import factories as f
from tests.meetings.recording_factories import stored_recording

pytestmark = pytest.mark.django_db


@pytest.fixture
def writer() -> str:
    return agent_create(name="scribe", scopes=["meetings.read", "meetings.write"]).token


@pytest.fixture
def standup() -> Meeting:
    return f.meeting("Standup", T0)


def put(meeting: Meeting, token: str, **extra: Any) -> Any:
    body = {
        "segments": [
            {"start_ms": 0, "end_ms": 2000, "speaker": "Ann", "text": "Good morning"},
            {"start_ms": 2000, "end_ms": 4000, "speaker": "Bob", "text": "The build is green"},
        ],
        "model": "whisper",
        **extra,
    }
    return Client().put(
        f"/api/meetings/{meeting.public_id}/transcript",
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def page(client: Client, meeting: Meeting) -> str:
    response = client.get(f"/meetings/{meeting.public_id}/")
    assert response.status_code == 200
    return response.content.decode()


def with_recording(meeting: Meeting, recording: Attachment | None) -> Transcript:
    made = Transcript.objects.create(
        meeting=meeting, origin="file", kind="vtt", source_name="standup.vtt", recording=recording
    )
    for seq, (start_ms, text) in enumerate([(0, "Hello"), (2000, "Two"), (65500, "Later")]):
        Segment.objects.create(
            transcript=made, seq=seq, start_ms=start_ms, end_ms=start_ms + 1000, text=text
        )
    return made


# --- the field ---------------------------------------------------------------------------------


def test_the_migration_adds_a_nullable_recording_that_outlives_its_attachment() -> None:
    with connection.cursor() as cursor:
        columns = {
            c.name: c
            for c in connection.introspection.get_table_description(
                cursor, Transcript._meta.db_table
            )
        }
    assert columns["recording_id"].null_ok
    field = Transcript._meta.get_field("recording")
    assert field.related_model is Attachment
    assert field.remote_field.on_delete is models.SET_NULL
    recording = stored_recording()
    made = with_recording(f.meeting("Standup", T0), recording)
    Transcript.objects.filter(pk=made.pk).update(recording=None)
    assert Transcript.objects.get(pk=made.pk).recording is None


# --- the agents' PUT ---------------------------------------------------------------------------


def test_an_agent_names_the_stored_recording_and_storing_again_keeps_it(
    standup: Meeting, writer: str
) -> None:
    recording = stored_recording()
    stored = put(standup, writer, recording=recording.public_id)
    assert stored.status_code == 200, stored.content[:300]
    transcript = Transcript.objects.get(meeting=standup)
    assert transcript.recording == recording
    again = put(standup, writer)  # no recording named: the one it had is kept
    assert again.status_code == 200
    assert Transcript.objects.get(pk=transcript.pk).recording == recording


def test_an_unknown_recording_is_404_with_a_sentence(standup: Meeting, writer: str) -> None:
    answer = put(standup, writer, recording="att_01NOSUCHTHING")
    assert answer.status_code == 404, answer.content[:300]
    assert "There is no attachment att_01NOSUCHTHING" in answer.json()["detail"]
    assert not Transcript.objects.filter(meeting=standup).exists()


def test_a_recording_whose_bytes_are_not_stored_is_422(standup: Meeting, writer: str) -> None:
    missing = stored_recording(stored=False, file_name="call.m4a", mime_type="audio/mp4")
    answer = put(standup, writer, recording=missing.public_id)
    assert answer.status_code == 422, answer.content[:300]
    assert "call.m4a: its bytes are not stored" in answer.json()["detail"]
    assert not Transcript.objects.filter(meeting=standup).exists()


@pytest.mark.parametrize("bad", ["standup.wav", "att_", "msg_01ABC", "att_01AB CD", 12])
def test_a_recording_that_is_no_attachment_id_is_422(
    standup: Meeting, writer: str, bad: Any
) -> None:
    answer = put(standup, writer, recording=bad)
    assert answer.status_code == 422, answer.content[:300]
    assert "recording" in answer.json()["detail"]


# --- the meeting page --------------------------------------------------------------------------


def test_the_page_plays_the_recording_from_each_lines_second(
    owner_client: Client, standup: Meeting
) -> None:
    recording = stored_recording()
    with_recording(standup, recording)
    html = page(owner_client, standup)
    url = f"/attachments/{recording.public_id}/"
    player = re.search(
        r'<audio id="rec-(att_\w+)" class="rec-media" controls[^>]*src="([^"]+)"', html
    )
    assert player is not None and player.groups() == (recording.public_id, url)
    assert "<video" not in html
    links = re.findall(
        r'<a class="seg-at seg-play" href="([^"]+)" data-player="([^"]+)" data-t="([^"]+)"', html
    )
    assert links == [
        (f"{url}?play=1#t=0", f"rec-{recording.public_id}", "0"),
        (f"{url}?play=1#t=2", f"rec-{recording.public_id}", "2"),
        (f"{url}?play=1#t=65.5", f"rec-{recording.public_id}", "65.5"),
    ]
    assert ">01:05</a>" in html
    assert "/static/wirecat/meetings.js" in html


def test_a_video_recording_is_a_video_player(owner_client: Client, standup: Meeting) -> None:
    recording = stored_recording(file_name="call.webm", mime_type="video/webm")
    with_recording(standup, recording)
    html = page(owner_client, standup)
    assert f'<video id="rec-{recording.public_id}" class="rec-media" controls' in html
    assert "<audio" not in html


def test_without_a_stored_recording_there_is_no_player(
    owner_client: Client, standup: Meeting
) -> None:
    with_recording(standup, None)
    html = page(owner_client, standup)
    assert "<audio" not in html and "<video" not in html
    assert "seg-play" not in html and "#t=" not in html
    assert "meetings.js" not in html
    assert re.search(r'<a class="seg-at" href="#seg-\d+" title="At 00:02">00:02</a>', html)
    # A recording whose bytes were swept later is no player either.
    swept = stored_recording("rec-2")
    Transcript.objects.update(recording=swept)
    Attachment.objects.filter(pk=swept.pk).update(path=None)
    assert "<audio" not in page(owner_client, standup)


# --- the owner picks the recording -------------------------------------------------------------


def test_the_owner_picks_the_recording_among_the_audio_and_video_around_it(
    owner_client: Client, standup: Meeting
) -> None:
    made = with_recording(standup, None)
    linked = stored_recording(
        "linked", file_name="linked.ogg", mime_type="audio/ogg", minutes=-9000
    )
    meeting_link(meeting=standup, kind="message", target_id=linked.message_id)
    nearby = stored_recording("nearby", file_name="nearby.wav", minutes=30)
    f.participant(standup, "Alice", identity=Identity.objects.get(external_id="alice"))
    stored_recording("photo", file_name="photo.jpg", mime_type="image/jpeg", minutes=31)
    stored_recording("gone", file_name="gone.wav", stored=False, minutes=32)
    stored_recording("far", file_name="far.wav", minutes=60 * 24 * 5)

    html = page(owner_client, standup)
    form = html[
        html.index('<form class="inline rec-form"') : html.index("</form>", html.index("rec-form"))
    ]
    assert f'action="/meetings/{standup.public_id}/recording/"' in form
    options = re.findall(r'<option value="(att_\w*)"[^>]*>([^<·]+)', form)
    assert [name.strip() for _, name in options] == ["linked.ogg", "nearby.wav"]
    assert "Add the recording" in html

    picked = owner_client.post(
        f"/meetings/{standup.public_id}/recording/",
        {"transcript": str(made.pk), "recording": nearby.public_id},
        follow=True,
    )
    assert picked.redirect_chain[-1][0] == f"/meetings/{standup.public_id}/#recording"
    assert Transcript.objects.get(pk=made.pk).recording == nearby
    html = picked.content.decode()
    assert "The transcript now plays from nearby.wav." in html
    assert f"/attachments/{nearby.public_id}/?play=1#t=2" in html
    assert f'<option value="{nearby.public_id}" selected>' in html

    cleared = owner_client.post(
        f"/meetings/{standup.public_id}/recording/", {"recording": ""}, follow=True
    )
    assert "The transcript has no recording now." in cleared.content.decode()
    assert Transcript.objects.get(pk=made.pk).recording is None


def test_the_form_refuses_what_cannot_be_played_with_a_sentence(
    owner_client: Client, standup: Meeting
) -> None:
    made = with_recording(standup, None)
    gone = stored_recording("gone", file_name="gone.wav", stored=False)
    for value, said in [
        (gone.public_id, "gone.wav: its bytes are not stored"),
        ("att_01NOSUCHTHING", "There is no attachment att_01NOSUCHTHING"),
    ]:
        answer = owner_client.post(
            f"/meetings/{standup.public_id}/recording/", {"recording": value}, follow=True
        )
        assert answer.status_code == 200
        assert f"The recording was not set: {said}" in answer.content.decode()
    other = owner_client.post(
        f"/meetings/{standup.public_id}/recording/",
        {"transcript": "99999", "recording": ""},
        follow=True,
    )
    assert "this meeting has no such transcript" in other.content.decode()
    assert Transcript.objects.get(pk=made.pk).recording is None
    assert owner_client.get(f"/meetings/{standup.public_id}/recording/").status_code == 405


def test_a_position_link_opens_the_recording_to_play_not_to_download(
    owner_client: Client,
) -> None:
    """Without a script the time's link is the recording itself, sent as audio to play
    (a browser starts it at `#t=`); an ordinary download stays a download, and a type that
    is not audio or video is never sent as itself."""
    recording = stored_recording()
    url = f"/attachments/{recording.public_id}/"
    played = owner_client.get(url, {"play": "1"})
    assert played.status_code == 200
    assert played["Content-Type"] == recording.mime_type
    assert not played["Content-Disposition"].startswith("attachment")
    assert played["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in played["Content-Security-Policy"]
    downloaded = owner_client.get(url)
    assert downloaded["Content-Type"] == "application/octet-stream"
    assert downloaded["Content-Disposition"].startswith("attachment")
    page = stored_recording("rec-2", file_name="x.html", mime_type="text/html")
    risky = owner_client.get(f"/attachments/{page.public_id}/", {"play": "1"})
    assert risky["Content-Type"] == "application/octet-stream"
    assert risky["Content-Disposition"].startswith("attachment")
