"""The Content-Security-Policy in a real browser: the main pages report no violation while
htmx, the tag colours, the board's project menu and the token field work; and the one-time
login code travels in no URL the browser sends."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from archive.owner.services import login_code_issue
from archive.store.blobs import blob_put
from archive.store.domain import AttachmentRecord
from archive.store.models import Chat
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_colour_set, tag_target
from tasks.services import project_create, task_create
from tests.conftest import OWNER_PASSWORD
from tests.factories import batch, message

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PAGES = [
    "/",
    "/search/",
    "/chats/",
    "/people/",
    "/tasks/",
    "/tasks/board/",
    "/tags/",
    "/agents/",
    "/sends/",
    "/webhooks/",
    "/imports/",
    "/sync/",
    "/notes/",
    "/notes/new/",
    "/admin/",
    "/api/docs",
]


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (600, 400), (20, 120, 200)).save(out, format="PNG")
    return out.getvalue()


def seed() -> Chat:
    blob = blob_put(io.BytesIO(png()))
    picture = AttachmentRecord(
        external_id="pic",
        file_name="view.png",
        mime_type="image/png",
        size=blob.size,
        sha256=blob.sha256,
        blob_path=blob.path,
    )
    batch_record(
        batch=batch(
            message("1", "hello from the policy test", attachments=(picture,)),
            message("2", "hello again", minutes=1),
        )
    )
    chat = Chat.objects.get()
    tag_add(target=tag_target(kind="chat", key=chat.pk), name="family")
    tag_colour_set(name="family", colour="#12ab34")
    project_create(key="HOME", name="Home")
    project_create(key="WORK", name="Work")
    task_create(project="HOME", title="Water the plants")
    return chat


def test_main_pages_run_under_the_policy_without_violations(live_server: Any, page: Any) -> None:
    chat = seed()
    violations: list[str] = []
    page.on(
        "console",
        lambda msg: (
            violations.append(msg.text)
            if "Content Security Policy" in msg.text or "Refused to" in msg.text
            else None
        ),
    )
    page.on("pageerror", lambda error: violations.append(f"page error: {error}"))
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url))

    # Sign in with the one-time link: its code is posted, never sent in a URL.
    issued = login_code_issue(base_url=live_server.url)
    page.goto(issued.url)
    page.get_by_label("New password").fill(OWNER_PASSWORD)
    page.get_by_label("Repeat it").fill(OWNER_PASSWORD)
    assert issued.code not in page.url  # the fragment left the address bar
    page.get_by_role("button", name="Set password and sign in").click()
    page.wait_for_url(live_server.url + "/")
    assert sent and not [url for url in sent if issued.code in url]

    for path in [*PAGES, f"/chats/{chat.pk}/"]:
        response = page.goto(live_server.url + path)
        assert response is not None and response.ok, path
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, path
        page.wait_for_load_state("networkidle")

    # htmx runs: typing a query swaps the results in.
    page.goto(live_server.url + "/search/")
    page.locator("#q").fill("hello")
    page.locator("#results li.hit").first.wait_for()
    # A tag's colour, set from its data attribute (no style attribute).
    page.goto(live_server.url + "/tags/")
    colour = page.locator("a.tag", has_text="family").evaluate(
        "el => getComputedStyle(el).getPropertyValue('--tag').trim()"
    )
    assert colour == "#12ab34"
    # The board's project menu sends its form (no onchange attribute).
    page.goto(live_server.url + "/tasks/board/")
    page.locator("#b-project").select_option("WORK")
    page.wait_for_url("**/tasks/board/?project=WORK")
    # A new agent's token selects itself on focus (no onfocus attribute).
    page.goto(live_server.url + "/agents/")
    page.get_by_label("Name").fill("helper")
    page.get_by_role("button", name="Make the agent").click()
    token = page.get_by_role("textbox", name="Token")
    token.focus()
    assert token.input_value().startswith("wct_")
    assert page.evaluate(
        "document.activeElement.selectionStart === 0 && "
        "document.activeElement.selectionEnd === document.activeElement.value.length"
    )

    assert violations == []
