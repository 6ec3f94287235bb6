"""The Sync, Sends and Agents pages in a real browser, at 1280 and 390 px: connecting to a
provider that cannot be reached shows a sentence (not a 500); approving a send updates
the list in place; a new agent's token is selected and copied by its button.
Screenshots: tests/artifacts/sync-*.png, sends-*.png, agents-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from archive.connectors.sending import OutboundMessage, register_sender, unregister_sender
from archive.gateway.models import SendAttempt, SendOutcome
from archive.gateway.services.agents import agent_create
from archive.gateway.services.sends import send_request
from archive.store.models import Account, Chat
from archive.store.sink import batch_record
from archive.sync.models import SyncAccount
from archive.sync.services.accounts import sync_connect
from tests.e2e.test_import_page import sign_in
from tests.factories import batch, message
from tests.providers.bot_api import TOKEN, BotApi
from tests.providers.unreachable import closed_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(
    params=[("1280", DESKTOP, "light"), ("390", PHONE, "light"), ("390-dark", PHONE, "dark")],
    ids=["1280", "390", "390-dark"],
)
def tab(browser: Any, request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    name, viewport, scheme = request.param
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    yield name, context.new_page()
    context.close()


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width} px wide"


def test_connecting_to_a_provider_that_cannot_be_reached_says_so(
    live_server: Any, tab: tuple[str, Any], artifacts_dir: Path
) -> None:
    name, page = tab
    sign_in(page, live_server)
    page.goto(live_server.url + "/sync/")
    form = page.locator("section", has=page.get_by_role("heading", name="Connect a Telegram bot"))
    form.get_by_label("Bot token").fill("7000000001:AAH-not-a-real-token")
    form.locator("summary", has_text="Advanced").click()
    form.get_by_label("API address").fill(f"http://127.0.0.1:{closed_port()}")
    with page.expect_response(lambda r: r.url.endswith("/sync/connect/")) as answered:
        form.get_by_role("button", name="Connect").click()
    assert answered.value.status == 422
    alert = form.get_by_role("alert")
    assert "Telegram could not be reached" in alert.inner_text()
    assert "refused the connection — check the address and port" in alert.inner_text()
    assert page.get_by_role("alert").count() == 1  # shown once
    body = page.locator("main").inner_text()
    assert "Server Error" not in body and "ConnectError" not in body
    no_sideways_scroll(page)
    page.screenshot(path=str(artifacts_dir / f"sync-connect-error-{name}.png"), full_page=True)


def test_the_sync_page_says_no_worker_runs_instead_of_promising_a_next_run(
    live_server: Any, tab: tuple[str, Any], artifacts_dir: Path
) -> None:
    name, page = tab
    api = BotApi()
    try:
        sync = sync_connect(
            kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": api.url}
        )
    finally:
        api.close()
    SyncAccount.objects.filter(pk=sync.pk).update(last_run_at=timezone.now())
    sign_in(page, live_server)
    page.goto(live_server.url + "/sync/")
    notice = page.locator(".no-worker")
    assert "No worker is running — no account is synced until one starts." in notice.inner_text()
    assert "wirecat start" in notice.inner_text()
    card = page.locator(".sync-account")
    assert "waits for a worker" in card.inner_text()
    assert "from now" not in card.inner_text()
    no_sideways_scroll(page)
    page.screenshot(path=str(artifacts_dir / f"sync-no-worker-{name}.png"), full_page=True)


@pytest.fixture
def provider() -> Iterator[list[OutboundMessage]]:
    out: list[OutboundMessage] = []

    def edge(outbound: OutboundMessage) -> str:
        out.append(outbound)
        return f"provider-{len(out)}"

    register_sender("testnet", edge)
    yield out
    unregister_sender("testnet")


def test_approving_a_send_updates_the_list_in_place(
    live_server: Any, tab: tuple[str, Any], artifacts_dir: Path, provider: list[Any]
) -> None:
    name, page = tab
    lines = [
        ("Are we still on for Saturday?", "alice"),
        ("I think so, the forecast looks dry.", "bob"),
        ("Great — who brings the tent?", "alice"),
        ("I can, if someone takes the stove.", "bob"),
        ("Could the assistant confirm the campsite booking?", "alice"),
    ]
    batch_record(
        batch=batch(
            *[
                message(str(i), text, sender=who, minutes=i, chat="trip")
                for i, (text, who) in enumerate(lines)
            ]
        )
    )
    Account.objects.update(send_permission="ask", send_to_any_chat=True)
    chat = Chat.objects.get()
    agent = agent_create(name="Trip planner", scopes=["messages.send"]).agent
    first = send_request(
        agent=agent, account_id=chat.account_id, chat_id=chat.pk,
        text="The campsite is booked for Saturday night, pitch 14.",
    )  # fmt: skip
    second = send_request(
        agent=agent, account_id=chat.account_id, chat_id=chat.pk,
        text="Reminder: the stove needs a new gas canister.",
    )  # fmt: skip
    sign_in(page, live_server)
    page.goto(live_server.url + "/sends/")
    card = page.locator(f"#send-{first.public_id}")
    assert "everyone in the group" in card.inner_text()
    assert "Could the assistant confirm the campsite booking?" in card.inner_text()
    assert card.locator(".send-context li").count() == 5
    no_sideways_scroll(page)
    page.screenshot(path=str(artifacts_dir / f"sends-waiting-{name}.png"), full_page=True)

    card.get_by_role("button", name="Approve and send").click()
    notice = page.locator(".send-notice")
    notice.wait_for()
    assert f"Approved: {first.public_id} is on its way." in notice.inner_text()
    assert page.evaluate("document.activeElement.classList.contains('send-notice')")
    assert page.locator(f"#send-{first.public_id}").count() == 0  # gone, no reload
    assert page.locator(f"#send-{second.public_id}").count() == 1
    assert page.url.endswith("/sends/")
    # No worker runs in this test: the approved send waits, and the page says so.
    assert "No worker is running" in page.locator("#sends-live").inner_text()
    assert SendAttempt.objects.get(pk=first.pk).outcome == SendOutcome.QUEUED
    no_sideways_scroll(page)
    page.screenshot(path=str(artifacts_dir / f"sends-approved-{name}.png"), full_page=True)


def test_a_new_agent_s_token_is_selected_and_copied(
    live_server: Any, tab: tuple[str, Any], artifacts_dir: Path
) -> None:
    name, page = tab
    sign_in(page, live_server)
    page.goto(live_server.url + "/agents/")
    page.get_by_label("Name").fill("Household assistant")
    page.get_by_role("button", name="Make the agent").click()
    page.wait_for_url(live_server.url + "/agents/")
    token = page.locator("#issued-token")
    value = token.input_value()
    assert value.startswith("wct_")
    # Focused and selected as the page opens: Ctrl+C copies it even without the button.
    assert page.evaluate("document.activeElement.id") == "issued-token"
    selected = page.evaluate(
        "(() => { const t = document.getElementById('issued-token');"
        " return t.value.substring(t.selectionStart, t.selectionEnd); })()"
    )
    assert selected == value
    assert page.get_by_label("Name").input_value() == ""  # the form is empty again
    copy = page.get_by_role("button", name="Copy")
    assert copy.is_visible()
    no_sideways_scroll(page)
    page.screenshot(path=str(artifacts_dir / f"agents-token-{name}.png"), full_page=True)
    copy.click()
    page.get_by_text("Copied to the clipboard.").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == value
    # A reload shows the page, not the token again, and makes no second agent.
    page.reload()
    assert page.locator("#issued-token").count() == 0
    assert page.locator("table.agents-table tbody tr").count() == 1
