"""People and the chat list in a real browser (issue 16): identities made into people many at
a time and suggestions accepted together; the chat list filtered by name and source in
place (htmx) with the address kept; a person's chart over years. Screenshots at 1280 and
390 px, light and dark, and no page wider than a 390 px screen."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Identity, Person
from archive.store.sink import batch_record
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2015, 3, 2, 9, tzinfo=UTC)
NOW = datetime.now(UTC)


def record(
    ext: str, chat: str, sender: str, text: str, at: datetime, **extra: Any
) -> MessageRecord:
    return MessageRecord(
        chat_external_id=chat,
        external_id=ext,
        sent_at=at,
        text=text,
        sender_external_id=sender,
        **extra,
    )


def archive() -> None:
    """A chat app with the owner, friends and a long history; another with two people named
    Adam; a mailbox of threads."""
    me = IdentityRecord(external_id="me", display_name="Robin Owner")
    batch_record(
        batch=Batch(
            account=AccountRecord(provider="telegram", external_id="tg", name="Robin", owner=me),
            chats=(
                ChatRecord(external_id="fam", kind="group", title="Family"),
                ChatRecord(external_id="ada", kind="dm", title="Ada Lovelace"),
                ChatRecord(external_id="club", kind="group", title="Chess club"),
            ),
            identities=(
                IdentityRecord(
                    external_id="ada", display_name="Ada Lovelace", phone="+44 20 7946 0001"
                ),
                IdentityRecord(external_id="adam-t", display_name="Adam", handle="@adam_t"),
                *[
                    IdentityRecord(external_id=f"m{n}", display_name=f"Member {n}")
                    for n in range(6)
                ],
            ),
            messages=(
                # Ada: three years of messages, every ten days
                *[
                    record(f"a{n}", "ada", "ada", f"note {n}", START + timedelta(days=10 * n))
                    for n in range(100)
                ],
                record(
                    "r1",
                    "ada",
                    "me",
                    "Thanks, see you <b>soon</b>!\nsecond line",
                    NOW - timedelta(hours=1),
                    direction="out",
                ),
                record(
                    "f1",
                    "fam",
                    "adam-t",
                    "Dinner at 7? Bring the <script>cake</script>",
                    NOW - timedelta(days=2),
                ),
                *[
                    record(
                        f"c{n}", "club", f"m{n}", f"move {n}", NOW - timedelta(days=30, minutes=n)
                    )
                    for n in range(6)
                ],
            ),
        )
    )
    batch_record(
        batch=Batch(
            account=AccountRecord(provider="discord", external_id="dc", name="Server"),
            chats=(ChatRecord(external_id="gen", kind="channel", title="Guild / general"),),
            identities=(
                IdentityRecord(external_id="adam-d", display_name="Adam", handle="adam#1234"),
                IdentityRecord(external_id="ada-d", display_name="ada", phone="+44 20 7946 0001"),
            ),
            messages=(
                record("d1", "gen", "adam-d", "gg", NOW - timedelta(days=5)),
                record("d2", "gen", "ada-d", "hello all", NOW - timedelta(days=4)),
            ),
        )
    )
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="mail", external_id="robin@example.org", name="robin@example.org"
            ),
            chats=tuple(
                ChatRecord(external_id=f"t{n}", kind="thread", title=f"Invoice {n}")
                for n in range(4)
            ),
            identities=(IdentityRecord(external_id="billing@example.com", display_name="Billing"),),
            messages=tuple(
                record(
                    f"t{n}",
                    f"t{n}",
                    "billing@example.com",
                    f"Your invoice {n} is ready",
                    NOW - timedelta(days=9 - n),
                )
                for n in range(4)
            ),
        )
    )


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def navigations(page: Any) -> int:
    return int(page.evaluate("performance.getEntriesByType('navigation').length"))


def test_bulk_people_filtered_chats_and_a_chart_over_years(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    archive()
    sign_in(page, live_server)

    # The chat list: newest first, each with its last message, mail folded into one row.
    page.goto(f"{live_server.url}/chats/")
    rows = page.locator("li.chatrow")
    assert rows.first.locator(".chatrow-title").inner_text() == "Ada Lovelace"
    assert (
        rows.first.locator(".chatrow-preview").inner_text() == "You: Thanks, see you <b>soon</b>!"
    )
    assert "robin@example.org" in page.locator("li.chatrow.folded").inner_text()
    assert "4 threads" in page.locator("li.chatrow.folded").inner_text()
    page.screenshot(path=str(artifacts_dir / "chats-1280.png"), full_page=True)

    loads = navigations(page)
    page.get_by_label("Find a chat by name").fill("che")
    page.locator("li.chatrow", has_text="Chess club").wait_for()
    page.locator("li.chatrow", has_text="Family").wait_for(state="detached")
    assert rows.count() == 1
    assert "q=che" in page.url
    page.get_by_label("Find a chat by name").fill("")
    page.locator("li.chatrow", has_text="Family").wait_for()
    page.get_by_label("Source").select_option("discord")
    page.locator("li.chatrow", has_text="Family").wait_for(state="detached")
    assert [t.strip() for t in page.locator(".chatrow-title").all_inner_texts()] == [
        "Guild / general"
    ]
    assert "source=discord" in page.url
    assert navigations(page) == loads  # swapped in place, never reloaded
    page.get_by_label("Source").select_option("")
    page.locator("li.chatrow.folded .chatrow-title").click()
    page.wait_for_url("**/chats/?account=*")
    assert page.locator(".chatrow-title").all_inner_texts() == [
        f"Invoice {n}" for n in (3, 2, 1, 0)
    ]
    page.screenshot(path=str(artifacts_dir / "chats-mail-1280.png"), full_page=True)

    # People: the owner is a person already; the two Adams are told apart; tick and make.
    page.goto(f"{live_server.url}/people/")
    assert (
        page.locator("table.people-table tr", has_text="Robin Owner").locator(".badge.you").count()
        == 1
    )
    strangers = page.locator("table.loose-table")
    assert "Robin Owner" not in strangers.inner_text()
    adams = strangers.locator("tr", has_text="Adam")
    assert adams.count() == 2
    assert "@adam_t" in strangers.inner_text() and "adam#1234" in strangers.inner_text()
    page.screenshot(path=str(artifacts_dir / "people-1280.png"), full_page=True)
    for name in ("Member 0", "Member 1", "Member 2"):
        strangers.locator("tr", has_text=name).get_by_role("checkbox").check()
    assert page.locator("[data-bulk-count]").inner_text() == "3 ticked"
    page.get_by_role("button", name="Make each a person").click()
    page.locator(".flash", has_text="Made 3 people.").wait_for()
    assert Person.objects.filter(name__startswith="Member ").count() == 3

    # Suggestions: tick all, accept together.
    page.goto(f"{live_server.url}/people/suggestions/")
    page.screenshot(path=str(artifacts_dir / "people-suggestions-1280.png"), full_page=True)
    page.get_by_label("Tick all").check()
    page.get_by_role("button", name="Link each ticked suggestion as one person").click()
    page.locator(".flash", has_text="Accepted 1 suggestion").wait_for()
    ada = Identity.objects.get(external_id="ada").person
    assert ada is not None and Identity.objects.get(external_id="ada-d").person_id == ada.pk

    # Ada's page: three years of activity, charted by month from the first.
    page.goto(f"{live_server.url}/people/{ada.pk}/")
    chart = page.locator("figure.chart")
    assert chart.get_attribute("data-unit") == "month"
    first_month = chart.locator("rect").first.locator("title").text_content()
    assert first_month is not None and first_month.startswith("March 2015")
    assert chart.locator("rect").count() >= 36
    page.screenshot(path=str(artifacts_dir / "person-1280.png"), full_page=True)

    # Search says how many messages match.
    page.goto(f"{live_server.url}/search/?q=note")
    assert page.locator(".result-count").inner_text() == "100 messages"

    # The same pages at phone width, light and dark: nothing wider than the screen.
    for scheme in ("light", "dark"):
        context = page.context.browser.new_context(
            viewport={"width": 390, "height": 844}, color_scheme=scheme
        )
        context.add_cookies(page.context.cookies())
        phone = context.new_page()
        for path, name in (
            ("/chats/", "chats"),
            ("/people/", "people"),
            (f"/people/{ada.pk}/?find=adam", "person"),
        ):
            phone.goto(f"{live_server.url}{path}")
            no_sideways_scroll(phone)
            phone.screenshot(path=str(artifacts_dir / f"{name}-390-{scheme}.png"), full_page=True)
        context.close()
        if scheme == "dark":
            wide = page.context.browser.new_context(
                viewport={"width": 1280, "height": 900}, color_scheme="dark"
            )
            wide.add_cookies(page.context.cookies())
            desk = wide.new_page()
            for path, name in (
                ("/chats/", "chats"),
                ("/people/", "people"),
                (f"/people/{ada.pk}/", "person"),
            ):
                desk.goto(f"{live_server.url}{path}")
                desk.screenshot(path=str(artifacts_dir / f"{name}-1280-dark.png"), full_page=True)
            wide.close()
