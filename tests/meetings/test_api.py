"""The meetings API: meetings in a window, one meeting with its participants and a paged
transcript, an agent's transcript (its origin kept), the meetings search; scopes and bad
input in the API's one error shape."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client

from archive.gateway.services.agents import SCOPES, agent_create
from meetings.models import Transcript
from tests.meetings.search_factories import T0, calendar, meeting, transcript

pytestmark = pytest.mark.django_db

MS_MAX = 2**40


def call(method: str, url: str, token: str, body: Any = None) -> Any:
    auth = f"Bearer {token}"
    if method == "get":
        return Client().get(url, HTTP_AUTHORIZATION=auth)
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return Client().generic(
        method.upper(), url, raw, content_type="application/json", HTTP_AUTHORIZATION=auth
    )


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    answer = response.json()
    assert {"error", "detail"} <= set(answer), answer
    return dict(answer)


@pytest.fixture
def reader() -> str:
    return agent_create(name="reader", scopes=["meetings.read"]).token


@pytest.fixture
def writer() -> str:
    return agent_create(name="scribe", scopes=["meetings.read", "meetings.write"]).token


def test_the_scopes_are_known_and_described() -> None:
    assert SCOPES["meetings.read"] and SCOPES["meetings.write"]


def test_meetings_in_a_window_earliest_first_and_paged(reader: str) -> None:
    home = calendar("Family", key="family.ics")
    early = meeting("Planning", start=T0)
    later = meeting("Planning again", start=T0 + timedelta(days=2), cal=home)
    meeting("Outside", start=T0 + timedelta(days=40))
    answer = call("get", "/api/meetings?after=2025-03-01&before=2025-03-10", reader).json()
    assert [m["id"] for m in answer["meetings"]] == [early.public_id, later.public_id]
    assert answer["meetings"][0]["reference"] == f"meeting:{early.public_id}"
    assert answer["after"].startswith("2025-03-01T00:00:00")
    paged = call("get", "/api/meetings?after=2025-03-01&before=2025-03-10&limit=1", reader).json()
    assert [m["id"] for m in paged["meetings"]] == [early.public_id]
    assert paged["next_offset"] == 1
    rest = call(
        "get", "/api/meetings?after=2025-03-01&before=2025-03-10&limit=1&offset=1", reader
    ).json()
    assert [m["id"] for m in rest["meetings"]] == [later.public_id]
    assert rest["next_offset"] is None
    by_calendar = call(
        "get", f"/api/meetings?after=2025-03-01&before=2025-03-10&calendar={home.public_id}", reader
    ).json()
    assert [m["id"] for m in by_calendar["meetings"]] == [later.public_id]
    by_words = call("get", "/api/meetings?after=2025-03-01&before=2025-03-10&q=again", reader)
    assert [m["id"] for m in by_words.json()["meetings"]] == [later.public_id]


def test_a_window_is_bounded(reader: str) -> None:
    """A window longer than 366 days is cut (the answer says where it ends); one that ends
    before it starts is empty; the last days of the calendar do not overflow."""
    inside = meeting("Inside", start=T0)
    meeting("Beyond", start=T0 + timedelta(days=400))
    long = call("get", "/api/meetings?after=2025-03-01&before=2027-01-01", reader).json()
    assert long["before"].startswith("2026-03-02T00:00:00")
    assert [m["id"] for m in long["meetings"]] == [inside.public_id]
    empty = call("get", "/api/meetings?after=2025-03-10&before=2025-03-01", reader).json()
    assert empty["meetings"] == [] and empty["next_offset"] is None
    last = call("get", "/api/meetings?after=9999-12-30", reader)
    assert last.status_code == 200 and last.json()["before"].startswith("9999-12-31")
    first = call("get", "/api/meetings?before=0001-01-02", reader)
    assert first.status_code == 200 and first.json()["after"].startswith("0001-01-01")


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("after=2025-13-01", "after"),
        ("after=yesterday", "after"),
        ("calendar=work", "calendar"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("offset=-1", "offset"),
    ],
)
def test_a_window_out_of_bounds_is_422(reader: str, query: str, says: str) -> None:
    assert says in error(call("get", f"/api/meetings?{query}", reader), 422)["detail"]


def test_a_meeting_with_participants_and_its_transcript_paged(reader: str) -> None:
    made = meeting("Standup", participants=[("Ann Lee", "ann@example.com")])
    spoken = transcript(made, [("Ann", f"line {n}") for n in range(5)])
    answer = call("get", f"/api/meetings/{made.public_id}?limit=2", reader).json()
    assert answer["id"] == made.public_id
    assert answer["participants"] == [
        {
            "name": "Ann Lee",
            "email": "ann@example.com",
            "response": "",
            "role": "",
            "identity_id": None,
        }
    ]
    assert [t["segments"] for t in answer["transcripts"]] == [5]
    assert answer["segments_transcript"] == spoken.pk
    assert [s["text"] for s in answer["segments"]] == ["line 0", "line 1"]
    assert answer["next_after"] == 1
    more = call("get", f"/api/meetings/{made.public_id}?limit=2&after=3", reader).json()
    assert [s["seq"] for s in more["segments"]] == [4]
    assert more["next_after"] is None
    assert more["segments"][0]["start_ms"] == 20_000


def test_unknown_meetings_and_transcripts_are_404(reader: str) -> None:
    error(call("get", "/api/meetings/mtg_NOPE", reader), 404)
    made = meeting("Standup")
    error(call("get", f"/api/meetings/{made.public_id}?transcript=999", reader), 404)
    error(call("get", "/api/meetings/msg_1", reader), 422)  # not a meeting's id


def test_scopes_are_refused_with_403_naming_them(reader: str) -> None:
    made = meeting("Standup")
    other = agent_create(name="mail-only", scopes=["messages.read"]).token
    for url in ("/api/meetings", f"/api/meetings/{made.public_id}", "/api/search/meetings?q=x"):
        assert "meetings.read" in error(call("get", url, other), 403)["detail"]
    body = {"segments": [{"start_ms": 0, "end_ms": 1, "text": "hi"}]}
    refused = call("put", f"/api/meetings/{made.public_id}/transcript", reader, body)
    assert "meetings.write" in error(refused, 403)["detail"]
    assert not Transcript.objects.exists()


def test_an_agents_transcript_keeps_its_origin_and_is_found(
    writer: str, django_capture_on_commit_callbacks: Any
) -> None:
    made = meeting("Design review")
    body = {
        "segments": [
            {"start_ms": 0, "end_ms": 4_000, "speaker": "Ann", "text": "hello everyone"},
            {"start_ms": 4_000, "end_ms": 9_000, "speaker": "Bob", "text": "the meetings ran long"},
        ],
        "model": "whisper-large-v3",
        "language": "en",
    }
    with django_capture_on_commit_callbacks(execute=True) as stemming:
        stored = call("put", f"/api/meetings/{made.public_id}/transcript", writer, body)
    assert stored.status_code == 200, stored.content
    assert stemming  # the stems are made once the transcript commits
    answer = stored.json()
    assert answer["meeting"] == made.public_id
    assert answer["transcript"]["origin"] == "agent"
    assert answer["transcript"]["agent"] == "agent:scribe"
    assert answer["transcript"]["model"] == "whisper-large-v3"
    assert answer["transcript"]["segments"] == 2
    kept = Transcript.objects.get()
    assert (kept.origin, kept.agent, kept.model, kept.language) == (
        "agent",
        "agent:scribe",
        "whisper-large-v3",
        "en",
    )
    # Stemmed once stored: "meeting" finds "meetings".
    found = call("get", "/api/search/meetings?q=meeting", writer).json()
    [hit] = found["hits"]
    assert (hit["kind"], hit["meeting"], hit["seq"], hit["speaker"], hit["start_ms"]) == (
        "segment",
        made.public_id,
        1,
        "Bob",
        4_000,
    )
    assert {"text": "meetings", "hit": True} in hit["snippet"]
    # Stored again: the same agent's transcript is replaced, not doubled.
    body["segments"] = body["segments"][:1]
    again = call("put", f"/api/meetings/{made.public_id}/transcript", writer, body)
    assert again.json()["transcript"]["segments"] == 1
    assert Transcript.objects.count() == 1


def test_the_owner_cannot_write_an_agents_transcript(owner_client: Client) -> None:
    made = meeting("Standup")
    refused = owner_client.put(
        f"/api/meetings/{made.public_id}/transcript",
        json.dumps({"segments": [{"start_ms": 0, "end_ms": 1, "text": "hi"}]}),
        content_type="application/json",
    )
    assert "agent" in error(refused, 403)["detail"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "segments"),
        ({"segments": []}, "segments"),
        ({"segments": [{"start_ms": 5, "end_ms": 1, "text": "x"}]}, "end_ms before start_ms"),
        ({"segments": [{"start_ms": -1, "end_ms": 1, "text": "x"}]}, "start_ms"),
        ({"segments": [{"start_ms": 0, "end_ms": MS_MAX + 1, "text": "x"}]}, "end_ms"),
        ({"segments": [{"start_ms": "0", "end_ms": 1, "text": "x"}]}, "start_ms"),
        ({"segments": [{"start_ms": 0, "end_ms": 1, "text": " "}]}, "text: empty"),
        ({"segments": [{"start_ms": 0, "end_ms": 1, "text": "x" * 10_001}]}, "text"),
        ({"segments": [{"start_ms": 0, "end_ms": 1, "text": "x"}], "model": "m" * 201}, "model"),
        ([], "JSON object"),
    ],
)
def test_bad_transcript_bodies_are_422(writer: str, body: Any, says: str) -> None:
    made = meeting("Standup")
    answer = error(call("put", f"/api/meetings/{made.public_id}/transcript", writer, body), 422)
    assert says in answer["detail"]
    assert not Transcript.objects.exists()


def test_too_many_segments_are_422(writer: str) -> None:
    made = meeting("Standup")
    segment = {"start_ms": 0, "end_ms": 1, "text": "x"}
    body = {"segments": [segment] * 20_001}
    error(call("put", f"/api/meetings/{made.public_id}/transcript", writer, body), 422)


def test_search_answers_hits_and_pages(reader: str) -> None:
    made = meeting("Roadmap", description="spring plans")
    transcript(made, [("Ann", f"plans number {n}") for n in range(3)])
    first = call("get", "/api/search/meetings?q=plans&limit=2", reader).json()
    assert len(first["hits"]) == 2 and first["next_cursor"]
    second = call(
        "get", f"/api/search/meetings?q=plans&limit=2&cursor={first['next_cursor']}", reader
    ).json()
    assert len(second["hits"]) == 2 and second["next_cursor"] is None
    kinds = sorted(hit["kind"] for hit in first["hits"] + second["hits"])
    assert kinds == ["meeting", "segment", "segment", "segment"]
    assert first["parsed"] == {"operator": "word", "operand": "plans", "negated": False}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("q=has:link", "has: is for messages"),
        ('q="open', "no closing"),
        ("q=x&cursor=zzz", "cursor"),
        ("q=x&limit=101", "limit"),
    ],
)
def test_search_refusals_are_422_sentences(reader: str, query: str, says: str) -> None:
    assert says in error(call("get", f"/api/search/meetings?{query}", reader), 422)["detail"]


def test_whole_numbers_written_as_floats_are_integers(writer: str) -> None:
    """JSON Schema reads 4000.0 as the integer 4000; so does the server."""
    made = meeting("Standup")
    body = {"segments": [{"start_ms": 0.0, "end_ms": 4000.0, "text": "hi"}]}
    stored = call("put", f"/api/meetings/{made.public_id}/transcript", writer, body)
    assert stored.status_code == 200, stored.content
    assert Transcript.objects.get().segments.get().end_ms == 4000
    half = {"segments": [{"start_ms": 0.5, "end_ms": 1, "text": "hi"}]}
    error(call("put", f"/api/meetings/{made.public_id}/transcript", writer, half), 422)
