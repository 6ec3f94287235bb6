"""The exported page opened from disk in Chromium, as its owner would open it after
unzipping: pictures from media/ shown, nothing fetched from anywhere else, no script,
readable at 1280 px in light and at 390 px in dark. Screenshots to tests/artifacts/."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from archive.store.domain import (
    AccountRecord,
    Batch,
    ChatRecord,
    DeletionRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.chat_export.support import download, png, stored

pytestmark = pytest.mark.django_db

START = datetime(2024, 5, 3, 9, 0, tzinfo=UTC)
ACCOUNT = AccountRecord(
    provider="telegram",
    external_id="export-account",
    name="Telegram",
    owner=IdentityRecord(external_id="me", display_name="Me"),
)
PEOPLE = (
    IdentityRecord(external_id="ada", display_name="Ada Lovelace"),
    IdentityRecord(external_id="bram", display_name="Bram Stoker"),
    IdentityRecord(external_id="me", display_name="Me"),
)


def said(key: str, minutes: int, text: str, sender: str, **extra: Any) -> MessageRecord:
    return MessageRecord(
        chat_external_id="trips",
        external_id=key,
        sent_at=START + timedelta(minutes=minutes),
        text=text,
        sender_external_id=sender,
        direction="out" if sender == "me" else "in",
        **extra,
    )


def lifelike_chat() -> Chat:
    day = 60 * 24
    photo = stored("lake.png", png((60, 120, 190), 640, 400), "image/png", "lake")
    plan = stored("../plan <final>.pdf", b"%PDF-1.4 plan", "application/pdf", "plan")
    messages = (
        said("1", 0, "Morning! Are we still on for Saturday?", "ada"),
        said("2", 1, "Yes. I'll bring the map and the snacks.", "ada"),
        said("3", 4, "Count me in 👍", "bram"),
        said(
            "4",
            6,
            "Here is the plan: meet at the station at 9, train at 9:20, lunch by "
            "the lake, and back before dark. Tell me if that does not work for you.",
            "me",
        ),
        said("5", 7, "<script>alert(1)</script> is not a plan", "bram", reply_to_external_id="4"),
        said("6", 9, "Ada added Cleo to the group", "ada", kind="service"),
        said(
            "7", day + 30, "The ferry timetable changed last week, check before you leave.", "ada"
        ),
        said("8", day + 31, "the lake yesterday", "bram", attachments=(photo,)),
        said("9", day + 33, "Lovely!", "me", reply_to_external_id="8"),
        said("10", day + 40, "Tickets are booked for the 9:20 train.", "me"),
        said("11", day + 41, "oops, wrong chat", "bram"),
        said("12", day + 90, "The plan as a file", "ada", attachments=(plan,)),
        said("13", 2 * day + 5, "See you at the station at 9 sharp.", "ada"),
    )
    chat = ChatRecord(external_id="trips", kind="group", title="Weekend Trips")
    batch_record(batch=Batch(account=ACCOUNT, chats=(chat,), identities=PEOPLE, messages=messages))
    edited = said(
        "10",
        day + 40,
        "Tickets are booked for the 9:20 train, seats 41 and 42.",
        "me",
        edited_at=START + timedelta(minutes=day + 45),
    )
    batch_record(batch=Batch(account=ACCOUNT, chats=(chat,), identities=PEOPLE, messages=(edited,)))
    gone = DeletionRecord(
        chat_external_id="trips", external_id="11", deleted_at=START + timedelta(minutes=day + 42)
    )
    batch_record(batch=Batch(account=ACCOUNT, chats=(chat,), deletions=(gone,)))
    return Chat.objects.get(external_id="trips")


def unzipped(owner_client: Client, tmp_path: Path) -> Path:
    chat = lifelike_chat()
    folder = tmp_path / "unzipped"
    with download(owner_client, chat) as archive:
        archive.extractall(folder)
    return folder / "Weekend Trips.html"


@pytest.mark.parametrize(
    ("width", "scheme"), [(1280, "light"), (390, "dark")], ids=["1280-light", "390-dark"]
)
def test_the_exported_page_reads_offline(
    owner_client: Client, tmp_path: Path, browser: Any, artifacts_dir: Path, width: int, scheme: str
) -> None:
    html = unzipped(owner_client, tmp_path)
    context = browser.new_context(
        viewport={"width": width, "height": 900}, color_scheme=scheme, java_script_enabled=True
    )
    tab = context.new_page()
    requests: list[str] = []
    tab.on("request", lambda request: requests.append(request.url))
    problems: list[str] = []
    tab.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    tab.goto(html.as_uri())
    picture = tab.locator('img[alt="lake.png"]')
    picture.scroll_into_view_if_needed()
    tab.wait_for_function("document.querySelector('img[alt=\"lake.png\"]').complete")
    assert picture.evaluate("img => img.naturalWidth") == 640  # read from media/
    assert tab.locator("script").count() == 0
    assert all(url.startswith("file://") for url in requests), requests
    assert not problems, problems  # nothing the page's policy refused
    assert tab.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll
    assert "<script>alert(1)</script> is not a plan" in tab.locator("body").inner_text()
    assert tab.get_by_text("deleted", exact=True).count() == 1
    tab.locator(".file a.name").first.scroll_into_view_if_needed()
    assert tab.locator(".file a.name").first.get_attribute("href") == "media/plan%20_final_.pdf"
    tab.evaluate("window.scrollTo(0, 0)")
    tab.screenshot(path=str(artifacts_dir / f"chat-export-{width}-{scheme}.png"), full_page=True)
    context.close()
