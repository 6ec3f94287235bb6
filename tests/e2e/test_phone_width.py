"""Every page the menu reaches, at a phone's 390 px and a laptop's 1280 px, light and dark:
no sideways scroll, the menu in one row, the "More" menu opening and closing by mouse and
keyboard. Screenshots: tests/artifacts/phone-<page>.png (and -dark, desktop-)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.gateway.services.agents import agent_create
from archive.gateway.services.webhooks import endpoint_create
from archive.imports.models import ImportJob
from archive.owner.services import login_code_issue, owner_set_password
from archive.people.services import person_create
from archive.store.models import Chat, Identity
from archive.tags.services import tag_add, tag_target
from tasks.services import project_create, task_create
from tests.conftest import OWNER_PASSWORD
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "telegram" / "group_2023.json"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
TABLET = {"width": 800, "height": 1000}
# One row: the bar's own padding and a line of links; two rows would be ~80 px.
MENU_HEIGHT = 64


def archive_pages() -> list[tuple[str, str]]:
    """A little of everything, then (name, path) for every page the menu leads to."""
    call_command("import", str(FIXTURE), stdout=io.StringIO(), stderr=io.StringIO())
    chat = Chat.objects.get()
    identity = (
        Identity.objects.filter(display_name__icontains="bob").first() or Identity.objects.first()
    )
    assert identity is not None
    person = person_create(name="Bob Builder", identity_ids=[identity.pk])
    project_create(key="HOME", name="Home and garden")
    task = task_create(
        project="HOME",
        title="Book the ferry for Saturday, and check whether the bikes can come along too",
        due="2023-06-01",
    )
    tag_add(target=tag_target(kind="chat", key=chat.pk), name="builders-and-architects")
    agent_create(name="Household assistant", scopes=["messages.read", "tasks.read"])
    # An address, not a name: no DNS lookup in a test.
    hook = endpoint_create(
        url="https://93.184.215.14/hooks/wirecat/a-rather-long-path-that-a-phone-must-wrap",
        events=["message.inbound", "tag.changed"],
    )
    job = ImportJob.objects.get()
    return [
        ("dashboard", "/"),
        ("search", "/search/?q=plans"),
        ("chats", "/chats/"),
        ("chat", f"/chats/{chat.pk}/"),
        ("people", "/people/"),
        ("person", f"/people/{person.pk}/"),
        ("tasks", "/tasks/"),
        ("board", "/tasks/board/"),
        ("task", f"/tasks/{task.key}/"),
        ("tags", "/tags/"),
        ("agents", "/agents/"),
        ("sends", "/sends/"),
        ("webhooks", "/webhooks/"),
        ("webhook", f"/webhooks/{hook.pk}/"),
        ("imports", "/imports/"),
        ("import", f"/imports/{job.public_id}/"),
        ("sync", "/sync/"),
    ]


@pytest.fixture
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    yield page
    context.close()


def measure(page: Any) -> tuple[int, float]:
    """The document's width (wider than the window means sideways scroll) and the menu's height."""
    width = int(page.evaluate("document.documentElement.scrollWidth"))
    box = page.locator("header.topbar").bounding_box()
    return width, box["height"]


@pytest.mark.parametrize(
    ("tab", "prefix"),
    [
        ((PHONE, "light"), "phone"),
        ((PHONE, "dark"), "phone-dark"),
        ((DESKTOP, "light"), "desktop"),
        ((TABLET, "light"), "tablet"),
    ],
    indirect=["tab"],
)
def test_every_page_fits_without_sideways_scroll(
    live_server: Any, tab: Any, prefix: str, artifacts_dir: Path
) -> None:
    pages = archive_pages()
    sign_in(tab, live_server)
    window = tab.viewport_size["width"]
    too_wide: dict[str, int] = {}
    menu_rows: dict[str, float] = {}
    for name, path in pages:
        response = tab.goto(live_server.url + path)
        assert response is not None and response.status == 200, (name, response)
        width, height = measure(tab)
        if width > window:
            too_wide[name] = width
        if height > MENU_HEIGHT:
            menu_rows[name] = height
        tab.screenshot(path=str(artifacts_dir / f"{prefix}-{name}.png"), full_page=True)
    assert too_wide == {}, f"wider than {window} px: {too_wide}"
    assert menu_rows == {}, f"menu taller than one row: {menu_rows}"


@pytest.mark.parametrize("tab", [(PHONE, "light")], indirect=True)
def test_phone_menu_keeps_four_links_and_the_rest_under_more(
    live_server: Any, tab: Any, artifacts_dir: Path
) -> None:
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/tags/")
    bar = tab.get_by_role("navigation", name="Main")
    shown = [name.strip() for name in bar.locator("> a:visible").all_inner_texts()]
    assert shown == ["Search", "Chats", "People", "Tasks"]
    more = tab.locator("details.more-menu")
    panel = more.locator(".more-panel")
    assert not panel.is_visible()

    more.locator("summary").click()
    assert panel.is_visible()
    tags = panel.get_by_role("link", name="Tags", exact=True)
    assert tags.get_attribute("aria-current") == "page"
    more_links = ("Dashboard", "Meetings", "Import", "Sync", "Agents", "Sends", "Webhooks")
    for name in (*more_links, "Files", "Admin", "API"):
        assert panel.get_by_role("link", name=name, exact=True).is_visible(), name
    assert panel.get_by_role("button", name="Sign out").is_visible()
    tab.screenshot(path=str(artifacts_dir / "phone-menu-open.png"))
    assert tab.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # Escape closes it and gives the focus back to "More"; so does a click elsewhere.
    tags.focus()
    tab.keyboard.press("Escape")
    assert not panel.is_visible()
    assert tab.evaluate("document.activeElement.tagName") == "SUMMARY"
    tab.keyboard.press("Enter")
    assert panel.is_visible()
    tab.mouse.click(200, 700)  # below the open menu
    assert not panel.is_visible()

    # The links under "More" work: Sync opens, and "More" shows it holds the current page.
    more.locator("summary").click()
    panel.get_by_role("link", name="Sync", exact=True).click()
    tab.wait_for_url("**/sync/")
    summary_colour = tab.eval_on_selector(
        "details.more-menu > summary", "el => getComputedStyle(el).borderBottomColor"
    )
    accent = tab.eval_on_selector("a", "el => getComputedStyle(el).color")
    assert summary_colour == accent


@pytest.mark.parametrize("tab", [(DESKTOP, "light")], indirect=True)
def test_desktop_menu_is_one_row_with_sign_out_under_more(live_server: Any, tab: Any) -> None:
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/sends/")
    bar = tab.get_by_role("navigation", name="Main")
    shown = [name.strip() for name in bar.locator("> a:visible").all_inner_texts()]
    assert shown == [
        "Dashboard", "Search", "Chats", "Meetings", "People", "Tasks", "Notes", "Tags",
        "Import", "Sync", "Agents", "Sends", "Webhooks",
    ]  # fmt: skip
    assert bar.get_by_role("link", name="Sends", exact=True).get_attribute("aria-current") == "page"
    tops = {round(box["y"]) for box in (a.bounding_box() for a in bar.locator("> a:visible").all())}
    assert len(tops) == 1
    tab.locator("details.more-menu > summary").click()
    tab.get_by_role("button", name="Sign out").click()
    tab.wait_for_url("**/login/**")


@pytest.mark.parametrize("tab", [(PHONE, "light")], indirect=True)
def test_sign_in_and_error_pages_fit_a_phone(
    live_server: Any, tab: Any, artifacts_dir: Path
) -> None:
    tab.goto(live_server.url + "/login/")
    assert tab.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    tab.screenshot(path=str(artifacts_dir / "phone-login.png"), full_page=True)
    issued = login_code_issue(base_url=live_server.url)
    tab.goto(issued.url)
    rule = tab.locator("#id_password1_helptext")
    assert rule.is_visible() and "At least 10 characters" in rule.inner_text()
    assert tab.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    tab.screenshot(path=str(artifacts_dir / "phone-set-password.png"), full_page=True)
    tab.get_by_label("New password").fill(OWNER_PASSWORD)
    tab.get_by_label("Repeat it").fill(OWNER_PASSWORD)
    tab.get_by_role("button", name="Set password and sign in").click()
    tab.wait_for_url(live_server.url + "/")
    response = tab.goto(live_server.url + "/imports/imp_does_not_exist/")
    assert response is not None and response.status == 404
    assert tab.get_by_role("heading", name="Not found").is_visible()
    assert measure(tab)[0] <= PHONE["width"]
    tab.screenshot(path=str(artifacts_dir / "phone-not-found.png"), full_page=True)


@pytest.mark.parametrize("tab", [(PHONE, "light")], indirect=True)
def test_the_menu_fits_one_row_at_every_width(live_server: Any, tab: Any) -> None:
    sign_in(tab, live_server)
    tab.goto(live_server.url + "/webhooks/")
    for width in (320, 360, 390, 640, 641, 720, 800, 801, 1000, 1080, 1081, 1440):
        tab.set_viewport_size({"width": width, "height": 800})
        scroll, height = measure(tab)
        assert scroll <= width and height <= MENU_HEIGHT, (width, scroll, height)
        bar = tab.get_by_role("navigation", name="Main")
        shown = set(bar.locator("> a:visible").all_inner_texts())
        tab.locator("details.more-menu > summary").click()
        listed = set(tab.locator(".more-panel a:visible").all_inner_texts())
        tab.keyboard.press("Escape")
        # Every page is in exactly one of the two places, whatever the width.
        assert shown | listed == {
            "Dashboard", "Search", "Chats", "Meetings", "People", "Tasks", "Notes", "Tags",
            "Import", "Sync", "Agents", "Sends", "Webhooks", "Statistics", "Files", "Admin", "API",
        }, width  # fmt: skip
        assert not shown & listed, width


def test_the_menu_works_without_javascript(live_server: Any, browser: Any) -> None:
    owner_set_password(code=login_code_issue().code, password=OWNER_PASSWORD)
    context = browser.new_context(viewport=PHONE, java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    page.get_by_label("Password").fill(OWNER_PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(live_server.url + "/")
    page.locator("details.more-menu > summary").click()
    page.get_by_role("link", name="Tags", exact=True).click()
    page.wait_for_url("**/tags/")
    context.close()
