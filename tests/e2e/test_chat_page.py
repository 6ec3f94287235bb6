"""The chat page in a real browser: scrolling up a 5,000-message chat loads one page per
approach and keeps the reader's place, ends at "Start of the chat"; a tag box at the top
loads nothing; each message's menu by keyboard; a quote jumps to its message. Screenshots of
a Telegram, Discord, WhatsApp and mail chat at 1280 and 390 px, light and dark:
tests/artifacts/chat-<source>-<width>-<scheme>.png."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.store.models import Chat, Message
from archive.tags.models import Tagging
from tests.e2e.chat_support import long_chat
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MESSAGES = ".chat-page .messages"


@pytest.fixture
def loads(page: Any) -> Iterator[list[str]]:
    """The address of every page of messages the browser asks for."""
    asked: list[str] = []
    page.on(
        "request",
        lambda request: (
            asked.append(request.url)
            if "before=" in request.url or "after=" in request.url
            else None
        ),
    )
    yield asked


def articles(page: Any) -> int:
    return int(page.locator("article.msg").count())


def top_message(page: Any) -> tuple[str, float]:
    """The message at the top of the viewport (under the sticky header), and where it is."""
    found = page.evaluate(
        """() => {
        const limit = document.querySelector('.chat-head').getBoundingClientRect().bottom;
        for (const el of document.querySelectorAll('article.msg')) {
            const box = el.getBoundingClientRect();
            if (box.bottom > limit + 1) return [el.id, box.top];
        }
        return null;
    }"""
    )
    assert found, "no message in view"
    return str(found[0]), float(found[1])


def position_of(page: Any, message_id: str) -> float:
    return float(page.locator(f"#{message_id}").evaluate("el => el.getBoundingClientRect().top"))


def gesture_over(page: Any) -> None:
    """The reader's scroll gesture has ended (chat.js marks it on the list)."""
    page.locator(f'{MESSAGES}[data-gesture="off"]:not([data-busy])').wait_for(state="attached")


def test_scrolling_up_loads_one_page_per_approach_and_keeps_the_place(
    live_server: Any, page: Any, loads: list[str], artifacts_dir: Path
) -> None:
    chat = long_chat(5000)
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    assert articles(page) == 50
    # Scrolled to the top by the page itself (not by the reader): nothing loads.
    page.evaluate("window.scrollTo(0, 0)")
    anchor, before = top_message(page)

    # One approach: the wheel at the top asks for one older page; the message that was at
    # the top is still where it was once the page is put above it.
    page.mouse.move(640, 500)
    with page.expect_response(lambda response: "before=" in response.url):
        page.mouse.wheel(0, -120)
    page.locator("article.msg").nth(99).wait_for(state="attached")
    gesture_over(page)
    assert articles(page) == 100 and len(loads) == 1
    assert abs(position_of(page, anchor) - before) <= 1
    assert page.evaluate("window.scrollY") > 500  # the new page is above, out of view

    # Scrolling up without a pause for five seconds: at most two more pages, never a chain.
    started = time.monotonic()
    while time.monotonic() - started < 5:
        page.mouse.wheel(0, -400)
    gesture_over(page)
    assert 1 <= len(loads) <= 3, loads
    assert articles(page) <= 150
    page.screenshot(path=str(artifacts_dir / "chat-scrolled-up.png"))

    # The place is kept on every load: scroll back a little, approach again, compare.
    page.evaluate("window.scrollTo(0, 0)")
    anchor, before = top_message(page)
    count = articles(page)
    with page.expect_response(lambda response: "before=" in response.url):
        page.mouse.wheel(0, -120)
    page.locator("article.msg").nth(count + 49).wait_for(state="attached")
    assert abs(position_of(page, anchor) - before) <= 1


def test_scrolling_reaches_the_start_of_the_chat(
    live_server: Any, page: Any, loads: list[str]
) -> None:
    chat = long_chat(5000)
    early = Message.objects.get(chat=chat, external_id="120")
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/m/{early.public_id}/")
    page.wait_for_url("**/chats/*/?at=*")
    start = page.get_by_text("Start of the chat")
    page.mouse.move(640, 500)
    for _ in range(5):  # 95 older messages: two pages
        if start.count():
            break
        page.evaluate("window.scrollTo(0, 0)")
        gesture_over(page)
        with page.expect_response(lambda response: "before=" in response.url):
            page.mouse.wheel(0, -120)
        gesture_over(page)
    start.wait_for()
    assert len(loads) == 2
    first = Message.objects.filter(chat=chat).order_by("sent_at").first()
    assert first is not None
    assert page.locator("article.msg").first.get_attribute("id") == first.public_id
    # The seams are mended: one separator per day, however many pages were joined.
    days = page.locator(".day").evaluate_all("els => els.map(e => e.dataset.day)")
    assert len(days) == len(set(days))


def test_opened_at_a_message_scrolling_down_loads_one_newer_page(
    live_server: Any, page: Any, loads: list[str]
) -> None:
    chat = long_chat(600)
    middle = Message.objects.get(chat=chat, external_id="300")
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/?at={middle.public_id}")
    assert page.locator("article.focus").get_attribute("id") == middle.public_id
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.mouse.move(640, 500)
    with page.expect_response(lambda response: "after=" in response.url):
        page.mouse.wheel(0, 200)
    started = time.monotonic()
    while time.monotonic() - started < 2:
        page.mouse.wheel(0, 400)
    gesture_over(page)
    newer = [url for url in loads if "after=" in url]
    assert 1 <= len(newer) <= 2 and not [url for url in loads if "before=" in url]


def test_the_tag_box_at_the_top_loads_nothing(
    live_server: Any, page: Any, loads: list[str]
) -> None:
    chat = long_chat(300)
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    page.evaluate("window.scrollTo(0, 0)")
    box = page.locator(".chat-head").get_by_label("Add a tag")
    box.click()
    box.fill("trips")
    box.press("Enter")
    page.locator(".chat-head").get_by_role("link", name="trips").wait_for()
    # A message's own tag box, at the top of the page: the same.
    first = page.locator("article.msg").first
    first.hover()
    first.locator("details.actions > summary").click()
    first.get_by_role("link", name="Add a tag…").click()
    field = first.get_by_label("Add a tag")
    field.fill("first")
    field.press("Enter")
    first.get_by_role("link", name="first").wait_for()
    assert loads == []
    assert Tagging.objects.count() == 2


def test_the_actions_menu_by_keyboard(live_server: Any, page: Any, artifacts_dir: Path) -> None:
    chat = long_chat(30)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    page.locator(".chat-more > summary").focus()
    page.keyboard.press("Tab")  # the first message's menu button: its only Tab stop
    focused = page.evaluate("document.activeElement.closest('article.msg')?.id || ''")
    first = Message.objects.filter(chat=chat).order_by("sent_at").first()
    assert first is not None and focused == first.public_id
    page.keyboard.press("Tab")  # the next message's menu button
    second = page.evaluate("document.activeElement.closest('article.msg')?.id || ''")
    assert second and second != first.public_id
    article = page.locator(f"#{second}")
    page.keyboard.press("Enter")
    menu = article.locator("details.actions .menu")
    menu.wait_for()
    assert page.evaluate("document.activeElement.textContent") == "Add a tag…"
    page.screenshot(path=str(artifacts_dir / "chat-menu-open.png"))
    for _ in range(2):
        page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.textContent") == "Copy link"
    page.keyboard.press("Enter")
    page.get_by_role("status").filter(has_text="Link copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.endswith(f"/m/{second}/")
    menu.wait_for(state="hidden")

    summary = article.locator("details.actions > summary")
    summary.focus()
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.textContent") == "Copy text"
    page.keyboard.press("Enter")
    page.get_by_role("status").filter(has_text="Text copied").wait_for()
    text = Message.objects.get(public_id=second).text
    assert page.evaluate("navigator.clipboard.readText()") == text

    summary.focus()
    page.keyboard.press("Enter")
    menu.wait_for()
    page.keyboard.press("Escape")
    menu.wait_for(state="hidden")
    assert page.evaluate("document.activeElement.tagName") == "SUMMARY"


def test_a_reply_quote_jumps_to_its_message(live_server: Any, page: Any) -> None:
    chat = long_chat(40)
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    reply = Message.objects.filter(chat=chat, reply_to__isnull=False).order_by("sent_at").first()
    assert reply is not None and reply.reply_to is not None
    loaded = page.url
    page.locator(f"#{reply.public_id} a.quote").click()
    target = page.locator(f"#{reply.reply_to.public_id}")
    page.wait_for_url(f"**#{reply.reply_to.public_id}")
    assert page.url.split("#")[0] == loaded.split("#")[0]  # no new page: it was here
    assert target.evaluate("el => el === document.activeElement")
    assert target.evaluate("el => el.getBoundingClientRect().top") > 0  # in view


def test_a_long_press_opens_the_menu_on_a_touch_screen(
    live_server: Any, page: Any, browser: Any
) -> None:
    chat = long_chat(20)
    sign_in(page, live_server)
    context = browser.new_context(
        storage_state=page.context.storage_state(),
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
    )
    tab = context.new_page()
    tab.goto(f"{live_server.url}/chats/{chat.pk}/")
    bubble = tab.locator("article.msg .bubble").last
    bubble.dispatch_event("pointerdown", {"pointerType": "touch", "isPrimary": True})
    menu = tab.locator("article.msg").last.locator("details.actions[open] .menu")
    menu.wait_for()  # held: the menu opens by itself
    menu.get_by_role("link", name="Make a task").wait_for()
    context.close()


# --- screenshots -------------------------------------------------------------------------

SOURCES = {
    "telegram": FIXTURES / "telegram" / "personal_2020",
    "telegram-group": FIXTURES / "telegram" / "group_2023.json",
    "discord": FIXTURES / "discord" / "guild_general.json",
    "whatsapp": FIXTURES / "whatsapp" / "WhatsApp Chat with Hiking Club.txt",
    "mail": FIXTURES / "mail" / "threads.mbox",
}


def test_screenshots_of_each_source(
    live_server: Any, page: Any, browser: Any, artifacts_dir: Path
) -> None:
    for path in SOURCES.values():
        call_command("import", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    sign_in(page, live_server)
    state = page.context.storage_state()
    for source in SOURCES:
        provider, _, kind = source.partition("-")
        chats = Chat.objects.filter(account__provider=provider).order_by("-message_count", "id")
        chat = chats.filter(kind=kind).first() if kind else chats.exclude(kind="group").first()
        if provider in ("whatsapp", "discord", "mail"):
            chat = chats.first()
        assert chat is not None, source
        for width, height in ((1280, 800), (390, 844)):
            for scheme in ("light", "dark"):
                context = browser.new_context(
                    storage_state=state,
                    viewport={"width": width, "height": height},
                    color_scheme=scheme,
                )
                tab = context.new_page()
                tab.goto(f"{live_server.url}/chats/{chat.pk}/")
                tab.locator("article.msg").last.wait_for()
                assert tab.evaluate("document.documentElement.scrollWidth") <= width
                tab.screenshot(path=str(artifacts_dir / f"chat-{source}-{width}-{scheme}.png"))
                if width == 1280 and scheme == "light":  # its start too, the site's bar above
                    tab.evaluate("window.scrollTo(0, 0)")
                    tab.get_by_text("Start of the chat").wait_for()
                    tab.screenshot(path=str(artifacts_dir / f"chat-{source}-start-1280-light.png"))
                context.close()
