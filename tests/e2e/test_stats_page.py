"""The Statistics page in a real browser: a year of messages in three chats; the range
and the scope changed in place (htmx, the address kept): the page's frame comes first,
each section in a placeholder of its size, then every section arrives on its own with its
headline numbers; a chart's table opened; at 1280 px light and 390 px dark (nothing wider
than the phone). Screenshots tests/artifacts/stats-*.png (stats-*-loading.png: the
sections held back)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord, MessageRecord
from archive.store.models import Chat, Identity, Person
from archive.store.sink import batch_record
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOW = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


def archive() -> None:
    """Over a year: Ada writes in a direct chat every other day (answered after a varying
    while, some never), a family group and a club talk in the evenings, with questions."""
    messages: list[MessageRecord] = []

    def say(ext: str, chat: str, who: str, text: str, at: datetime, out: bool = False) -> None:
        messages.append(
            MessageRecord(
                chat_external_id=chat,
                external_id=ext,
                sent_at=at,
                text=text,
                sender_external_id=who,
                direction="out" if out else "in",
            )
        )

    for n in range(190):
        day = NOW - timedelta(days=2 * n + 1)
        at = day.replace(hour=8 + n % 11)
        say(f"a{n}", "ada", "ada", f"Ada's note {n}: can we talk about the plan?", at)
        if n % 5:
            say(f"r{n}", "ada", "me", f"Sure, {n}", at + timedelta(minutes=4 + 37 * (n % 7)), True)
        for k in range(n % 4):
            who = ("mum", "dad", "sis")[k % 3]
            say(f"f{n}-{k}", "fam", who, f"Dinner {n}-{k}?", day.replace(hour=18 + k))
        if n % 3 == 0:
            say(f"c{n}", "club", "kim", f"Move {n}", day.replace(hour=20))
            say(f"d{n}", "club", "me", f"Reply {n}", day.replace(hour=22), True)
    batch_record(
        batch=Batch(
            account=AccountRecord(
                provider="telegram",
                external_id="tg",
                name="Robin",
                owner=IdentityRecord(external_id="me", display_name="Robin Owner"),
            ),
            chats=(
                ChatRecord(external_id="ada", kind="dm", title="Ada Lovelace"),
                ChatRecord(external_id="fam", kind="group", title="Family <b>&</b> friends"),
                ChatRecord(external_id="club", kind="group", title="Chess club"),
            ),
            identities=(
                IdentityRecord(external_id="ada", display_name="Ada Lovelace"),
                IdentityRecord(external_id="mum", display_name="Mum"),
                IdentityRecord(external_id="dad", display_name="Dad"),
                IdentityRecord(external_id="sis", display_name="Sis"),
                IdentityRecord(external_id="kim", display_name="Kim Park"),
            ),
            messages=tuple(messages),
        )
    )


SECTIONS = {
    "volume": "#volume-h",
    "chats": "#top-chats-h",
    "people": "#top-people-h",
    "heatmap": "#heat-h",
    "responses": "#resp-h",
    "waiting": "#unanswered-h",
}


def arrived(page: Any, *, without: tuple[str, ...] = ()) -> None:
    """Every section asked for has come (no placeholder nor busy number left), each with
    its chart or list, and every headline number is filled in."""
    expect(page.locator("#stats [aria-busy]")).to_have_count(0)
    for name, heading in SECTIONS.items():
        section = page.locator("section.stats-card", has=page.locator(heading))
        expect(section).to_have_count(0 if name in without else 1)
        if name not in without:
            expect(section.locator("figure, ol, .chart-empty").first).to_be_visible()
    numbers = page.locator(".stats-kpis dd")
    expect(numbers).to_have_count(5)
    for text in numbers.all_inner_texts():
        assert text.strip(), "a headline number is empty"


class Held:
    """The sections' requests held back until `release`, to see the placeholders."""

    def __init__(self, page: Any) -> None:
        self.page, self.routes, self.released = page, list[Any](), False
        page.route(SECTION_REQUESTS, self.hold)

    def hold(self, route: Any) -> None:
        if self.released:
            route.continue_()
        else:
            self.routes.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.routes:
            route.continue_()
        self.page.unroute(SECTION_REQUESTS, self.hold)


SECTION_REQUESTS = "**/stats/?*section=*"


def placeholder_heights(page: Any) -> dict[str, float]:
    """Each section still to come (all six asked for, the five numbers busy): its height."""
    waiting_for = page.locator("section.stats-loading[aria-busy=true]")
    expect(waiting_for).to_have_count(6)
    expect(page.locator(".stats-kpis > div[aria-busy=true]")).to_have_count(5)
    return {
        el.get_attribute("data-section"): el.bounding_box()["height"] for el in waiting_for.all()
    }


def section_heights(page: Any) -> dict[str, float]:
    return {
        name: page.locator("section.stats-card", has=page.locator(heading)).bounding_box()["height"]
        for name, heading in SECTIONS.items()
    }


def navigations(page: Any) -> int:
    return int(page.evaluate("performance.getEntriesByType('navigation').length"))


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def test_statistics_page_range_scope_and_tables(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    archive()
    kim = Person.objects.create(name="Kim Park")  # the one of them linked to a person
    Identity.objects.filter(external_id="kim").update(person=kim)
    sign_in(page, live_server)
    page.locator("details.more-menu > summary").click()
    page.get_by_role("link", name="Statistics", exact=True).click()
    page.wait_for_url("**/stats/")
    kpis = page.locator(".stats-kpis")
    assert (
        int(kpis.locator("div", has_text="Messages").locator("dd").inner_text().replace(",", ""))
        > 400
    )
    assert page.locator("#stats nav.stats-presets a[aria-current]").inner_text() == "A year"
    assert page.locator("figure").count() == 5
    assert page.locator("figure.heatmap-chart rect").count() == 168
    page.screenshot(path=str(artifacts_dir / "stats-1280-light.png"), full_page=True)

    # The range: 90 days, swapped in place, the address kept. The frame comes at once, the
    # sections (held back here) in placeholders as tall as what comes, then each arrives.
    assert page.locator("#stats [aria-busy]").count() == 0  # one answer without htmx
    held = Held(page)
    loads = navigations(page)
    page.locator("nav.stats-presets").get_by_role("link", name="90 days").click()
    page.wait_for_url("**/stats/?range=90d*")
    assert page.locator("nav.stats-presets a[aria-current]").inner_text() == "90 days"
    before = placeholder_heights(page)
    page.screenshot(path=str(artifacts_dir / "stats-1280-loading.png"), full_page=True)
    held.release()
    arrived(page)
    after = section_heights(page)
    for name in ("volume", "heatmap"):  # the charts' sizes are known: nothing moves
        assert abs(before[name] - after[name]) < 2, (name, before[name], after[name])
    # Top people brought the scope menu its people.
    people = page.locator("#stats-scope optgroup[label=People] option")
    assert people.evaluate_all("options => options.map(o => o.textContent)") == ["Kim Park"]
    assert page.locator("figure.volume-chart").get_attribute("data-unit") == "week"
    assert page.locator("figure").count() == 5
    # The scope: one chat from the menu.
    page.get_by_label("Scope", exact=True).select_option(label="Ada Lovelace")
    ada = Chat.objects.get(external_id="ada")
    page.wait_for_url(f"**/stats/?*chat={ada.pk}*")
    arrived(page, without=("chats",))
    assert page.locator(".stats-described").inner_text().startswith("chat Ada Lovelace,")
    assert page.locator("#top-chats-h").count() == 0
    assert navigations(page) == loads  # never reloaded
    # A chart's numbers as a table.
    volume = page.locator("section", has=page.locator("#volume-h"))
    table = volume.locator("details.stats-table table")
    assert not table.is_visible()
    volume.get_by_text("Show as table").click()
    table.wait_for()
    assert table.locator("tbody tr").count() >= 13
    waiting = page.locator("ol.unanswered li")
    assert waiting.count() > 0
    assert waiting.first.locator("a.u-text").get_attribute("href").startswith("/m/")
    page.screenshot(path=str(artifacts_dir / "stats-1280-chat.png"), full_page=True)

    # The same page reloaded from its address shows the same.
    page.reload()
    assert page.get_by_label("Scope", exact=True).input_value() == f"chat:{ada.pk}"

    # A phone, dark: everything fits, the within choice changes the waiting list.
    for scheme in ("dark", "light"):
        context = page.context.browser.new_context(
            viewport={"width": 390, "height": 844}, color_scheme=scheme
        )
        context.add_cookies(page.context.cookies())
        phone = context.new_page()
        phone.goto(f"{live_server.url}/stats/")
        no_sideways_scroll(phone)
        if scheme == "dark":
            held = Held(phone)
            phone.get_by_label("Unanswered after").select_option(label="A week")
            phone.wait_for_url("**within=7d*")
            before = placeholder_heights(phone)
            no_sideways_scroll(phone)
            phone.screenshot(path=str(artifacts_dir / "stats-390-loading.png"), full_page=True)
            held.release()
            arrived(phone)
            after = section_heights(phone)
            for name in ("volume", "heatmap"):
                assert abs(before[name] - after[name]) < 2, (name, before[name], after[name])
            assert "within a week" in phone.locator("#unanswered-h + p").inner_text()
            phone.locator("section", has=phone.locator("#heat-h")).get_by_text(
                "Show as table"
            ).click()
            no_sideways_scroll(phone)
        phone.screenshot(path=str(artifacts_dir / f"stats-390-{scheme}.png"), full_page=True)
        context.close()
    wide = page.context.browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme="dark"
    )
    wide.add_cookies(page.context.cookies())
    desk = wide.new_page()
    desk.goto(f"{live_server.url}/stats/?range=all")
    desk.screenshot(path=str(artifacts_dir / "stats-1280-dark.png"), full_page=True)
    wide.close()
