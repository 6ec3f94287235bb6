"""Backlinks in a real browser: the person, chat, message, meeting and task pages each show
the notes that link to them (the chat's in its menu, a message's under it when opened from
its permalink), or a quiet "none yet"; "Write a note" opens the editor pre-linked, from the
section and from a message's actions menu. Screenshots at 1280 and 390 px, light and dark,
with and without backlinks; nothing wider than the window, and a hostile sentence is text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from archive.people.services import person_from_identity
from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Chat, Identity, Message
from archive.store.sink import batch_record
from notes.services.links import LinkSpec, link_kind_add
from notes.services.notes import note_create
from tasks.services import project_create, task_create
from tests.e2e.test_import_page import sign_in
from tests.meetings.factories import meeting

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
T0 = datetime(2024, 5, 6, 8, tzinfo=UTC)
HOSTILE = "<img src=x onerror=alert(1)>"


@dataclass(frozen=True)
class Place:
    name: str
    ref: str
    url: str


def archive() -> tuple[list[Place], list[Place], str]:
    """Two of everything, the first of each linked from notes, the second from none; and
    the chat that holds the linked message."""
    # A browser test's flush empties the tables, the link kinds its migration seeded too.
    for kind in ("mentions", "about", "decision", "follow-up", "source"):
        link_kind_add(name=kind)
    lines = [
        ("ann", "Morning! The plumber says the roof leak is from the chimney flashing."),
        ("me", "Ugh. Did he give a price?"),
        ("ann", "Around 1,400 with the scaffolding. He can start on the 20th."),
        ("me", "Let's do it. I'll tell the insurance."),
        ("bo", "I can lend you the ladder for the gutters if that helps."),
        ("ann", "Perfect, thanks Bo!"),
    ]
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="telegram",
                external_id="tg",
                name="Telegram",
                owner=IdentityRecord(external_id="me", display_name="Me"),
            ),
            chats=(
                ChatRecord(external_id="house", kind="group", title="House"),
                ChatRecord(external_id="club", kind="group", title="Book club"),
            ),
            identities=(
                IdentityRecord(external_id="ann", display_name="Ann Lee"),
                IdentityRecord(external_id="bo", display_name="Bo Park"),
            ),
            messages=(
                *[
                    MessageRecord(
                        chat_external_id="house",
                        external_id=f"h{n}",
                        sent_at=T0 + timedelta(minutes=7 * n),
                        text=text,
                        sender_external_id=who,
                        direction="out" if who == "me" else "in",
                    )
                    for n, (who, text) in enumerate(lines)
                ],
                MessageRecord(
                    chat_external_id="club",
                    external_id="c1",
                    sent_at=T0,
                    text="Next book: Middlemarch.",
                    sender_external_id="bo",
                ),
            ),
        )
    )
    house, club = Chat.objects.get(external_id="house"), Chat.objects.get(external_id="club")
    price, other = Message.objects.get(external_id="h2"), Message.objects.get(external_id="c1")
    ann, bo = (
        person_from_identity(identity_id=Identity.objects.get(external_id=key).pk)
        for key in ("ann", "bo")
    )
    roof = meeting("Roof with the plumber", T0 + timedelta(days=14), location="At home")
    book = meeting("Book club", T0 + timedelta(days=20))
    project_create(key="HOME", name="Home")
    fix, gutters = (
        task_create(project="HOME", title="Fix the roof flashing"),
        task_create(project="HOME", title="Clean the gutters"),
    )

    def place(name: str, ref: str, url: str) -> Place:
        return Place(name, ref, url)

    linked = [
        place("person", f"person:{ann.pk}", reverse("archive:person", args=[ann.pk])),
        place("chat", f"chat:{house.pk}", reverse("archive:chat", args=[house.pk])),
        place(
            "message",
            f"message:{price.public_id}",
            reverse("archive:message", args=[price.public_id]),
        ),
        place(
            "meeting",
            f"meeting:{roof.public_id}",
            reverse("meetings:meeting", args=[roof.public_id]),
        ),
        place("task", f"task:{fix.key}", reverse("tasks:task", args=[fix.key])),
    ]
    unlinked = [
        place("person", f"person:{bo.pk}", reverse("archive:person", args=[bo.pk])),
        place("chat", f"chat:{club.pk}", reverse("archive:chat", args=[club.pk])),
        place(
            "message",
            f"message:{other.public_id}",
            reverse("archive:message", args=[other.public_id]),
        ),
        place(
            "meeting",
            f"meeting:{book.public_id}",
            reverse("meetings:meeting", args=[book.public_id]),
        ),
        place("task", f"task:{gutters.key}", reverse("tasks:task", args=[gutters.key])),
    ]
    note_create(
        title="Roof repair",
        folder="Home/Repairs",
        body=(
            "The leak is from the chimney flashing, says [[Ann Lee]].\n\n"
            f"Price agreed in [[chat:{house.pk}]]: see [[{price.public_id}|the quote]]."
            " Work starts on the 20th.\n\n"
            f"decision:: [[{fix.key}]] goes ahead with the plumber.\n\n"
            f"Walk through it at [[meeting:{roof.public_id}]] before the scaffolding goes up."
        ),
    )
    note_create(
        title=f"Insurance claim {HOSTILE}",
        body=(
            f"Call about the roof: {HOSTILE} [[Ann Lee]] has the photos."
            f" Quote in [[{price.public_id}]]."
        ),
        links=[
            LinkSpec(target=ref, kind="follow-up", context="Send the insurer the quote.")
            for ref in (f"task:{fix.key}", f"meeting:{roof.public_id}", f"chat:{house.pk}")
        ],
    )
    return linked, unlinked, reverse("archive:chat", args=[house.pk])


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"a script ran: {dialog.message}"))
    yield page
    context.close()


def section(page: Any, place: Place) -> Any:
    """The backlinks section of `place` on the open page. A chat's is in its menu: the
    "2 notes" under its title opens it there; with none, the menu's button does."""
    if place.name == "chat":
        marker = page.locator("a.chat-notes")
        if marker.count():
            marker.click()
        else:
            page.get_by_title("More about this chat").click()
    found = page.locator(f'section.backlinks[data-ref="{place.ref}"]')
    found.wait_for()
    return found


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


@pytest.mark.parametrize(
    ("tab", "suffix"),
    [
        ((DESKTOP, "light"), "1280-light"),
        ((DESKTOP, "dark"), "1280-dark"),
        ((PHONE, "light"), "390-light"),
        ((PHONE, "dark"), "390-dark"),
    ],
    indirect=["tab"],
)
def test_backlinks_on_every_page_and_write_a_note_from_each(
    live_server: Any, tab: Any, suffix: str, artifacts_dir: Path
) -> None:
    linked, unlinked, house_url = archive()
    sign_in(tab, live_server)
    from playwright.sync_api import expect

    for place in linked:
        tab.goto(live_server.url + place.url)
        found = section(tab, place)
        items = found.locator("li.backlink")
        expect(items).to_have_count(2)
        if place.name in ("chat", "message"):  # a message opens in its chat
            expect(tab.locator("a.chat-notes")).to_have_text("2 notes")
        expect(items.first.locator(".backlink-title a")).to_have_text(f"Insurance claim {HOSTILE}")
        expect(found.get_by_role("link", name="Roof repair")).to_be_visible()
        if place.name == "person":
            expect(found.locator(".backlink-context").first).to_have_text(
                f"Call about the roof: {HOSTILE} Ann Lee has the photos."
            )
        if place.name in ("task", "meeting", "chat"):
            expect(found.locator(".badge.link-kind", has_text="follow-up")).to_be_visible()
        if place.name == "task":
            expect(found.locator(".badge.link-kind", has_text="decision")).to_be_visible()
        if place.name == "message":
            expect(tab.locator(".msg.focus")).to_be_visible()
            expect(found.locator("strong", has_text="the quote")).to_be_visible()
        assert tab.locator("img[src=x]").count() == 0
        no_sideways_scroll(tab)
        tab.screenshot(
            path=str(artifacts_dir / f"backlinks-{place.name}-{suffix}.png"), full_page=True
        )
        found.get_by_role("link", name="Write a note").click()
        tab.wait_for_url(f"**/notes/new/?link={place.ref}")

    for place in unlinked:
        tab.goto(live_server.url + place.url)
        found = section(tab, place)
        expect(found.locator(".backlinks-empty")).to_have_text("No notes link here yet.")
        expect(found.locator("li.backlink")).to_have_count(0)
        no_sideways_scroll(tab)
        tab.screenshot(
            path=str(artifacts_dir / f"backlinks-{place.name}-none-{suffix}.png"), full_page=True
        )
        found.get_by_role("link", name="Write a note").click()
        tab.wait_for_url(f"**/notes/new/?link={place.ref}")

    # A message's own actions menu on the chat page.
    reply = Message.objects.get(external_id="h3")
    tab.goto(live_server.url + house_url)
    article = tab.locator(f"article#{reply.public_id}")
    article.hover()
    article.get_by_label("Actions for this message").click()
    tab.screenshot(path=str(artifacts_dir / f"backlinks-message-menu-{suffix}.png"))
    # An own message's menu opens within the window (on a phone it once opened off its left).
    menu = article.locator(".actions .menu").bounding_box()
    width = tab.viewport_size["width"] if tab.viewport_size else 0
    assert menu is not None and menu["x"] >= 0 and menu["x"] + menu["width"] <= width, menu
    article.get_by_role("link", name="Write a note").click()
    tab.wait_for_url(f"**/notes/new/?link=message:{reply.public_id}")
