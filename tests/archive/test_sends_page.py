"""The Sends page: each send waiting for approval with what the owner needs to decide (who
it reaches, the chat's last messages, read in a fixed number of queries however many
sends wait); Approve and Refuse give back the list as it now stands (htmx) or the page
(no JavaScript); an account with no live connection can neither be set to "ask" or
"allow" nor have a send approved."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from django.test import Client

from archive.connectors.sending import OutboundMessage, register_sender, unregister_sender
from archive.gateway.models import SendAttempt, SendOutcome
from archive.gateway.services.agents import agent_create
from archive.gateway.services.sends import send_request
from archive.store.domain import AccountRecord, IdentityRecord
from archive.store.models import Account, Chat
from archive.store.sink import batch_record
from archive.sync.services.accounts import sync_connect
from tests.factories import batch, message
from tests.providers.bot_api import TOKEN, BotApi

pytestmark = pytest.mark.django_db

HX: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def sent() -> Iterator[list[OutboundMessage]]:
    """The provider edge of the test accounts' provider: what would go over the wire."""
    out: list[OutboundMessage] = []

    def edge(outbound: OutboundMessage) -> str:
        out.append(outbound)
        return f"provider-{len(out)}"

    register_sender("testnet", edge)
    yield out
    unregister_sender("testnet")


def waiting(chat: Chat, text: str) -> SendAttempt:
    return send_request(agent=None, account_id=chat.account_id, chat_id=chat.pk, text=text)


def chats_with_history(count: int, per_chat: int = 8) -> list[Chat]:
    """`count` chats of the test account, each with `per_chat` messages, "ask" on."""
    records = [
        message(f"{c}-{i}", f"line {i} of chat {c}", chat=f"chat-{c}", minutes=i,
                sender="alice" if i % 2 else "bob")
        for c in range(count)
        for i in range(per_chat)
    ]  # fmt: skip
    batch_record(batch=batch(*records))
    Account.objects.update(send_permission="ask", send_to_any_chat=True)
    return list(Chat.objects.order_by("external_id"))


def test_a_waiting_send_shows_who_it_reaches_and_the_chat_s_last_messages(
    owner_client: Client, sent: list[OutboundMessage]
) -> None:
    (chat,) = chats_with_history(1)
    agent = agent_create(name="Scribe", scopes=["messages.send"]).agent
    send_request(agent=agent, account_id=chat.account_id, chat_id=chat.pk, text="On my way <b>")
    html = owner_client.get("/sends/").content.decode()
    card = html[html.index('class="card send-card"') : html.index("<h2>Journal</h2>")]
    assert "<strong>Scribe</strong> wants to send to" in card
    assert "everyone in the group “Chat chat-0”; lately Alice, Bob" in card
    assert "The chat's last 5 messages" in card
    shown = re.findall(r"line (\d) of chat 0", card)
    assert shown == ["3", "4", "5", "6", "7"]  # the last five, oldest first
    assert "On my way &lt;b&gt;" in card  # the draft, escaped, once: not among the context
    assert card.count("On my way") == 1
    assert 'hx-target="#sends-live"' in card and "Approve and send" in card


def test_the_context_of_every_waiting_send_costs_the_same_queries(
    owner_client: Client, sent: list[OutboundMessage], django_assert_max_num_queries: Any
) -> None:
    chats = chats_with_history(6)
    waiting(chats[0], "first")
    owner_client.get("/sends/")  # the session and the like, warmed
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as one:
        owner_client.get("/sends/")
    for chat in chats[1:]:
        waiting(chat, f"to {chat.external_id}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        html = owner_client.get("/sends/").content.decode()
    assert html.count('class="card send-card"') == 6
    for number in range(6):
        assert f"line 7 of chat {number}" in html


def test_approve_and_refuse_give_back_the_list_as_it_now_stands(
    owner_client: Client,
    sent: list[OutboundMessage],
    celery_inline: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    first, second, third = chats_with_history(3, per_chat=2)
    a, b, c = waiting(first, "send me"), waiting(second, "refuse me"), waiting(third, "later")
    with django_capture_on_commit_callbacks(execute=True):
        approved = owner_client.post(f"/sends/{a.public_id}/", {"decision": "approve"}, **HX)
    html = approved.content.decode()
    assert approved.status_code == 200 and "<html" not in html
    assert html.strip().startswith('<div id="sends-live">')
    assert f"Approved: {a.public_id} is on its way." in html
    assert f'id="send-{a.public_id}"' not in html  # gone from the waiting list…
    assert f'id="send-{b.public_id}"' in html and f'id="send-{c.public_id}"' in html
    assert re.search(rf"{a.public_id}</td>.*?(Queued|Sent)", html, re.S)  # …into the journal
    # A send decided elsewhere meanwhile leaves the list too: no stale entry.
    SendAttempt.objects.filter(pk=c.pk).update(outcome=SendOutcome.REJECTED)
    refused = owner_client.post(f"/sends/{b.public_id}/", {"decision": "refuse"}, **HX)
    html = refused.content.decode()
    assert f"Refused: {b.public_id} will not be sent." in html
    assert "send-card" not in html and "Nothing is waiting for your approval." in html
    # Deciding again: the reason, with the list as it stands (422: htmx swaps it in).
    again = owner_client.post(f"/sends/{b.public_id}/", {"decision": "approve"}, **HX)
    assert again.status_code == 422 and "not awaiting" in again.content.decode()
    assert again.content.decode().strip().startswith('<div id="sends-live">')
    assert [m.text for m in sent] == ["send me"]


def test_without_javascript_deciding_redirects_to_the_page(
    owner_client: Client, sent: list[OutboundMessage]
) -> None:
    (chat,) = chats_with_history(1, per_chat=1)
    attempt = waiting(chat, "hello")
    answer = owner_client.post(f"/sends/{attempt.public_id}/", {"decision": "refuse"})
    assert answer.status_code == 302 and answer["Location"] == "/sends/"
    page = owner_client.get("/sends/").content.decode()
    assert f"Refused: {attempt.public_id} will not be sent." in page
    assert "Nothing is waiting for your approval." in page


# --- an account with no live connection -----------------------------------------------------

TELEGRAM = AccountRecord(
    provider="telegram",
    external_id="user111",
    name="Imported Telegram",
    owner=IdentityRecord(external_id="user111", display_name="Owner Person"),
)


def exported_telegram() -> Account:
    """A Telegram account known from an export only (no live connection)."""
    batch_record(batch=replace(batch(message("1", "from the export")), account=TELEGRAM))
    return Account.objects.get(provider="telegram")


def test_an_export_only_account_cannot_be_set_to_ask_or_allow(
    owner_client: Client, bot_api: BotApi
) -> None:
    account = exported_telegram()
    url = f"/admin/archive/account/{account.pk}/change/"
    form = {
        "provider": account.provider,
        "external_id": account.external_id,
        "name": account.name,
        "send_to_any_chat": "",
        "sends_per_hour": "60",
    }
    for permission in ("ask", "allow"):
        answer = owner_client.post(url, {**form, "send_permission": permission})
        html = answer.content.decode()
        assert answer.status_code == 200, permission  # the form again, with the reason
        assert "has no live connection" in html and "connect it on the Sync page" in html
    account.refresh_from_db()
    assert account.send_permission == "deny"
    assert owner_client.post(url, {**form, "send_permission": "read-only"}).status_code == 302
    # The list's editable column says the same.
    listed = owner_client.post(
        "/admin/archive/account/",
        {
            "form-TOTAL_FORMS": "1",
            "form-INITIAL_FORMS": "1",
            "form-0-id": str(account.pk),
            "form-0-send_permission": "ask",
            "form-0-sends_per_hour": "60",
            "_save": "Save",
        },
    )
    assert "has no live connection" in listed.content.decode()
    account.refresh_from_db()
    assert account.send_permission == "read-only"
    # Once connected live, "ask" is fine.
    live = sync_connect(
        kind="telegram_bot", credentials={"token": TOKEN}, settings={"api_url": bot_api.url}
    ).account
    live_url = f"/admin/archive/account/{live.pk}/change/"
    live_form = {**form, "external_id": live.external_id, "name": live.name}
    assert owner_client.post(live_url, {**live_form, "send_permission": "ask"}).status_code == 302
    live.refresh_from_db()
    assert live.send_permission == "ask"


def test_a_send_from_an_account_without_a_live_connection_cannot_be_approved(
    owner_client: Client,
) -> None:
    account = exported_telegram()
    # Set before this check existed (or straight in the database): the send waits.
    Account.objects.filter(pk=account.pk).update(send_permission="ask", send_to_any_chat=True)
    attempt = waiting(Chat.objects.get(account=account), "hello from an export")
    page = owner_client.get("/sends/").content.decode()
    card = page[page.index('class="card send-card"') : page.index("<h2>Journal</h2>")]
    assert "It cannot be approved: this account has no live connection" in card
    assert re.search(r'value="approve"\s+disabled', card)
    answer = owner_client.post(f"/sends/{attempt.public_id}/", {"decision": "approve"}, **HX)
    html = answer.content.decode()
    assert answer.status_code == 422
    assert f"Send {attempt.public_id} cannot be approved: this account has no live" in html
    assert SendAttempt.objects.get(pk=attempt.pk).outcome == SendOutcome.AWAITING
    refused = owner_client.post(f"/sends/{attempt.public_id}/", {"decision": "refuse"}, **HX)
    assert refused.status_code == 200
    assert SendAttempt.objects.get(pk=attempt.pk).outcome == SendOutcome.REJECTED
