"""Tags and people in a real browser: import a fixture, search, tag a message inline, search
by the tag, make and open a person; hostile text from an export never runs as script."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.store.models import Chat
from archive.tags.models import Tagging
from tests.e2e.test_import_page import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "telegram" / "group_2023.json"
PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>'


def navigations(page: Any) -> int:
    return int(page.evaluate("performance.getEntriesByType('navigation').length"))


def test_tag_a_message_inline_search_by_it_and_open_the_person(
    live_server: Any, page: Any, artifacts_dir: Path
) -> None:
    call_command("import", str(FIXTURE), stdout=io.StringIO(), stderr=io.StringIO())
    sign_in(page, live_server)
    page.goto(f"{live_server.url}/search/?q=plans")
    page.locator("#results li.hit a").first.click()
    page.wait_for_url("**/chats/*/?at=msg_*")
    focus = page.locator("article.focus")
    assert "Plans are at" in focus.inner_text()

    loads = navigations(page)
    focus.get_by_label("Actions for this message").click()  # the message's menu
    focus.get_by_role("link", name="Add a tag…").click()
    field = focus.get_by_label("Add a tag")
    field.fill("blueprints")
    field.press("Enter")  # keyboard only
    focus.get_by_role("link", name="blueprints").wait_for()
    assert navigations(page) == loads  # swapped in by htmx, no reload
    assert Tagging.objects.filter(target_kind="message").count() == 1
    page.screenshot(path=str(artifacts_dir / "chat-tagged.png"), full_page=True)

    page.goto(f"{live_server.url}/search/?q=tag:blueprints")
    hits = page.locator("#results li.hit")
    assert hits.count() == 1
    assert "tagged blueprints (message)" in hits.first.inner_text()

    page.get_by_role("link", name="People", exact=True).click()
    row = page.locator("tr", has_text="Bob Builder").first
    row.get_by_role("button", name="Make a person").click()
    page.wait_for_url("**/people/*/")
    assert page.get_by_role("heading", level=1).inner_text() == "Bob Builder"
    assert page.locator(".chart svg rect").count() == 12
    assert "Builders Club" in page.locator(".shared-chats").inner_text()
    tag_field = page.get_by_label("Add a tag")
    tag_field.fill("builders")
    tag_field.press("Enter")
    page.locator("#main .tags").get_by_role("link", name="builders").wait_for()
    page.screenshot(path=str(artifacts_dir / "person-page.png"), full_page=True)

    # Back on the chat: remove the message's tag with its remove button.
    page.goto(f"{live_server.url}/search/?q=tag:blueprints")
    page.locator("#results li.hit a").first.click()
    page.locator("article.focus").get_by_role("button", name="Remove tag blueprints").click()
    page.locator("article.focus .tag-chip").wait_for(state="detached")
    assert not Tagging.objects.filter(target_kind="message").exists()


def test_hostile_export_text_never_runs(
    live_server: Any, page: Any, tmp_path: Path, artifacts_dir: Path
) -> None:
    export = tmp_path / "result.json"
    export.write_text(
        json.dumps(
            {
                "name": f"Chat {PAYLOAD}",
                "type": "private_group",
                "id": 77,
                "messages": [
                    {
                        "id": 1,
                        "type": "message",
                        "date": "2024-01-01T09:00:00",
                        "date_unixtime": "1704099600",
                        "from": f"Mallory {PAYLOAD}",
                        "from_id": "user666",
                        "text": f"hello {PAYLOAD} javascript:alert(1)",
                        "file": f"files/{PAYLOAD}.pdf",
                        "file_name": f"{PAYLOAD}.pdf",
                        "mime_type": "application/pdf",
                    }
                ],
            }
        )
    )
    call_command("import", str(export), stdout=io.StringIO(), stderr=io.StringIO())
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sign_in(page, live_server)
    chat = Chat.objects.get()
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    page.locator("article.msg").first.get_by_label("Actions for this message").click()
    page.locator("article.msg").first.get_by_role("link", name="Add a tag…").click()
    field = page.locator("article.msg").first.get_by_label("Add a tag")
    field.fill('say "hi"')  # refused: the answer (422) is swapped in with the reason
    field.press("Enter")
    page.locator("article.msg .field-error").first.wait_for()
    assert (
        'no " or control characters' in page.locator("article.msg .field-error").first.inner_text()
    )
    field = page.locator("article.msg").first.get_by_label("Add a tag")
    field.fill("<img src=y onerror=window.__pwned=2>")
    field.press("Enter")
    page.locator("article.msg .tag-chip").first.wait_for()
    for url in (
        f"/chats/{chat.pk}/",
        "/search/?q=hello",
        "/search/?q=tag:%3Cimg",
        "/tags/",
        "/people/",
        "/chats/",
        "/",
    ):
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("window.__pwned") is None, url
    assert dialogs == []
    page.goto(f"{live_server.url}/chats/{chat.pk}/")
    assert PAYLOAD in page.locator("article.msg").first.inner_text()  # shown, as text
    page.screenshot(path=str(artifacts_dir / "hostile-text.png"), full_page=True)
