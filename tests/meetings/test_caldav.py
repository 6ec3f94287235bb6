"""CalDAV live pull against a real Radicale server, started by the tests on a free loopback
port (nothing outside the project: `radicale` is in the test extra). Events are created,
changed and deleted with the `caldav` client between pulls; the pulls run through the
same `account_sync` (lease, budgets, cursor) and Sync page as the messengers."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import caldav
import pytest
from django.test import Client

from archive.connectors.caldav.live import CalDav
from archive.store.models import ConnectorState
from archive.sync.credentials import seal
from archive.sync.models import SyncAccount, SyncRun
from archive.sync.services.accounts import sync_connect
from archive.sync.services.run import account_sync
from meetings.models import Calendar, Meeting, Status
from wirecat.errors import Invalid

pytestmark = pytest.mark.django_db

USER, PASSWORD = "owner", "s3cret-pass"
START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Radicale:
    url: str  # http://127.0.0.1:PORT/
    port: int


@pytest.fixture(scope="module")
def radicale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Radicale]:
    """A real Radicale with one user (plain htpasswd), answering before the tests start."""
    root = tmp_path_factory.mktemp("radicale")
    users = root / "users"
    users.write_text(f"{USER}:{PASSWORD}\n")
    port = _free_port()
    log = (root / "radicale.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "radicale",
            "--server-hosts",
            f"127.0.0.1:{port}",
            "--storage-filesystem-folder",
            str(root / "collections"),
            "--auth-type",
            "htpasswd",
            "--auth-htpasswd-filename",
            str(users),
            "--auth-htpasswd-encryption",
            "plain",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(port, process, root / "radicale.log")
        yield Radicale(url=f"http://127.0.0.1:{port}/", port=port)
    finally:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        if process.poll() is None:
            process.kill()
        log.close()


def _wait_for(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until the server accepts a connection (it failing to start fails the tests)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"radicale did not start:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)  # polling the port, not standing in for a wait
    raise RuntimeError(f"radicale did not answer on port {port}:\n{log.read_text()}")


@pytest.fixture
def collection(radicale: Radicale) -> Any:
    """A fresh calendar collection of the user, through the caldav client."""
    client = caldav.DAVClient(radicale.url, username=USER, password=PASSWORD)
    principal = client.principal()
    return principal.make_calendar(name="Team work", cal_id=f"work-{uuid.uuid4().hex[:8]}")


SOON = (datetime.now(UTC) + timedelta(days=10)).replace(hour=9, minute=0, second=0, microsecond=0)


def _ics(uid: str, title: str, *, sequence: int = 0, days: int = 0, rrule: str = "") -> str:
    start = SOON + timedelta(days=days)
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//WireCat tests//EN",
        "BEGIN:VEVENT",
        f"UID:{uid}",
        "DTSTAMP:20250101T000000Z",
        f"DTSTART:{start:%Y%m%dT%H%M%SZ}",
        f"DTEND:{start + timedelta(hours=1):%Y%m%dT%H%M%SZ}",
        f"SUMMARY:{title}",
        f"SEQUENCE:{sequence}",
        "ORGANIZER;CN=Ada:mailto:ada@example.org",
        "ATTENDEE;CN=Bo;PARTSTAT=ACCEPTED:mailto:bo@example.org",
        *([f"RRULE:{rrule}"] if rrule else []),
        "END:VEVENT",
        "END:VCALENDAR",
        "",
    ]
    return "\r\n".join(lines)


def _connect(collection: Any, **extra: Any) -> SyncAccount:
    return sync_connect(
        kind="caldav",
        credentials={"password": PASSWORD},
        settings={"url": str(collection.url), "username": USER},
        **extra,
    )


def _pull(sync: SyncAccount, **budget: Any) -> SyncRun:
    run = account_sync(sync_account_id=sync.pk, sleep=lambda _s: None, **budget)
    assert run is not None
    return run


def _meetings(collection: Any) -> dict[str, list[Meeting]]:
    calendar = Calendar.objects.get(kind=Calendar.Kind.CALDAV, key=str(collection.url))
    by_uid: dict[str, list[Meeting]] = {}
    for meeting in Meeting.objects.filter(calendar=calendar).select_related("event"):
        assert meeting.event is not None
        by_uid.setdefault(meeting.event.uid, []).append(meeting)
    return by_uid


def test_pulls_follow_events_created_changed_and_deleted(collection: Any) -> None:
    collection.save_event(_ics("standup", "Standup", rrule="FREQ=WEEKLY;COUNT=4"))
    review = collection.save_event(_ics("review", "Design review", days=1))
    retro = collection.save_event(_ics("retro", "Retro", days=2))
    sync = _connect(collection)
    assert sync.account.name == "Team work"
    assert "password" not in str(sync.settings)

    first = _pull(sync)
    assert (first.outcome, first.error) == ("done", "")
    assert (first.fetched, first.added, first.updated, first.deleted) == (3, 3, 0, 0)
    held = _meetings(collection)
    assert sorted(held) == ["retro", "review", "standup"]
    assert len(held["standup"]) == 4
    assert held["review"][0].title == "Design review"
    assert {p.email for p in held["review"][0].participants.all()} == {
        "ada@example.org",
        "bo@example.org",
    }
    calendar = Calendar.objects.get(key=str(collection.url))
    assert (calendar.kind, calendar.name) == ("caldav", "Team work")
    token = ConnectorState.objects.get(account=sync.account, stream="caldav").cursor["token"]
    assert token

    quiet = _pull(sync)  # nothing changed on the server: nothing fetched
    assert (quiet.outcome, quiet.fetched, quiet.added, quiet.updated) == ("done", 0, 0, 0)

    review.data = _ics("review", "Design review (moved room)", sequence=1, days=1)
    review.save()
    retro.delete()
    collection.save_event(_ics("kickoff", "Kick-off", days=3))
    retro_id = held["retro"][0].pk

    second = _pull(sync)
    # Only the changed hrefs: the review and the kick-off fetched, the retro's deletion read.
    assert (second.outcome, second.fetched) == ("done", 3)
    assert (second.added, second.updated, second.deleted) == (1, 1, 1)
    after = _meetings(collection)
    assert after["review"][0].title == "Design review (moved room)"
    assert after["review"][0].event.sequence >= 1  # type: ignore[union-attr]
    assert [m.title for m in after["kickoff"]] == ["Kick-off"]
    # A deleted event's meetings are kept, cancelled: never deleted.
    assert [(m.pk, m.status) for m in after["retro"]] == [(retro_id, Status.CANCELLED)]
    assert {m.status for m in after["standup"]} == {Status.CONFIRMED}
    cursor = ConnectorState.objects.get(account=sync.account, stream="caldav").cursor
    assert cursor["token"] != token
    assert sorted(uid for _etag, uid in cursor["objects"].values()) == [
        "kickoff",
        "review",
        "standup",
    ]


def test_without_sync_tokens_the_etags_say_what_changed(
    collection: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CalDav, "use_sync_token", False)
    one = collection.save_event(_ics("one", "One"))
    two = collection.save_event(_ics("two", "Two", days=1))
    collection.save_event(_ics("three", "Three", days=2))
    sync = _connect(collection)
    assert _pull(sync).fetched == 3
    cursor = ConnectorState.objects.get(account=sync.account, stream="caldav").cursor
    assert "token" not in cursor and cursor["ctag"]

    assert _pull(sync).fetched == 0  # the CTag did not move: nothing listed, nothing fetched
    one.data = _ics("one", "One, longer", sequence=2)
    one.save()
    two.delete()
    run = _pull(sync)
    assert (run.fetched, run.added, run.updated, run.deleted) == (2, 0, 1, 1)
    after = _meetings(collection)
    assert after["one"][0].title == "One, longer"
    assert after["two"][0].status == Status.CANCELLED
    assert after["three"][0].status == Status.CONFIRMED


def test_a_big_pull_is_paged_and_a_spent_budget_is_continued(collection: Any) -> None:
    for number in range(5):
        collection.save_event(_ics(f"e{number}", f"Event {number}", days=number))
    sync = _connect(collection)
    first = _pull(sync, page_size=2, budget_messages=3)
    assert (first.outcome, first.fetched, first.pages) == ("budget", 4, 2)
    cursor = ConnectorState.objects.get(account=sync.account, stream="caldav").cursor
    assert len(cursor["pending"]) == 1  # what is left waits in the cursor
    rest = _pull(sync, page_size=2)
    assert (rest.outcome, rest.fetched, rest.added) == ("done", 1, 1)
    assert len(_meetings(collection)) == 5


def test_a_wrong_password_is_a_sentence(collection: Any) -> None:
    with pytest.raises(Invalid) as refused:
        sync_connect(
            kind="caldav",
            credentials={"password": "wrong"},
            settings={"url": str(collection.url), "username": USER},
        )
    assert "refused the user name or password" in str(refused.value)
    assert "wrong" not in str(refused.value)
    assert not SyncAccount.objects.exists()

    # A password changed after connecting stops the account until the owner acts.
    sync = _connect(collection)
    sync.credentials = seal({"password": "changed-since"})
    sync.save()
    run = _pull(sync)
    assert run.outcome == "credentials"
    assert "refused the user name or password" in run.error
    sync.refresh_from_db()
    assert sync.state == "failed"


def test_an_unreachable_server_and_a_wrong_address_are_sentences(radicale: Radicale) -> None:
    closed = _free_port()
    with pytest.raises(Invalid) as unreachable:
        sync_connect(
            kind="caldav",
            credentials={"password": PASSWORD},
            settings={"url": f"http://127.0.0.1:{closed}/owner/x/", "username": USER},
        )
    assert f"The CalDAV server could not be reached: 127.0.0.1:{closed} refused" in str(
        unreachable.value
    )
    with pytest.raises(Invalid) as missing:
        sync_connect(
            kind="caldav",
            credentials={"password": PASSWORD},
            settings={"url": f"{radicale.url}{USER}/no-such-calendar/", "username": USER},
        )
    assert "no calendar at that address" in str(missing.value)


def test_the_sync_page_connects_a_calendar_and_shows_it(
    owner_client: Client, collection: Any, django_capture_on_commit_callbacks: Any
) -> None:
    page = owner_client.get("/sync/").content.decode()
    assert "Connect a calendar (CalDAV)" in page and 'name="url"' in page

    refused = owner_client.post(
        "/sync/connect/",
        {"kind": "caldav", "url": str(collection.url), "username": USER, "password": "nope"},
    )
    assert refused.status_code == 422
    text = refused.content.decode()
    assert "refused the user name or password" in text
    assert str(collection.url) in text  # what was typed is kept, the password is not
    assert "nope" not in text
    for bad, words in [
        ({"url": "ftp://x/", "username": USER, "password": "p"}, "calendar address"),
        ({"url": str(collection.url), "username": "", "password": "p"}, "user name: needed"),
        ({"url": str(collection.url), "username": USER, "password": ""}, "password: needed"),
    ]:
        answer = owner_client.post("/sync/connect/", {"kind": "caldav", **bad})
        assert answer.status_code == 422 and words in answer.content.decode()
    assert not SyncAccount.objects.exists()

    collection.save_event(_ics("planning", "Planning"))
    with django_capture_on_commit_callbacks() as callbacks:
        connected = owner_client.post(
            "/sync/connect/",
            {
                "kind": "caldav",
                "url": str(collection.url),
                "username": USER,
                "password": PASSWORD,
                "interval": "600",
            },
        )
    assert connected.status_code == 302
    assert len(callbacks) == 1  # the first pull is queued
    sync = SyncAccount.objects.get()
    assert (sync.kind, sync.interval_seconds, sync.account.provider) == ("caldav", 600, "caldav")
    assert PASSWORD not in sync.credentials and PASSWORD not in str(sync.settings)
    _pull(sync)
    shown = owner_client.get("/sync/").content.decode()
    assert "Team work" in shown and "Calendar (CalDAV)" in shown
    assert "1 new, 0 changed" in shown
    assert "objects=1 entries" in shown  # the map of hrefs by its size, not in full
    assert PASSWORD not in shown
