"""The Chats page reads like a messenger's chat list (issue 16): newest first, each chat
with its last message's sender and first line and a short time, filtered by name and by
source (htmx, or a plain GET form), a mail account's threads folded into one inbox row;
the same few queries for 10 chats or 10,000."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.store.domain import AccountRecord, Batch, ChatRecord, IdentityRecord
from archive.store.models import Account, Chat
from archive.store.sink import batch_record, outbound_record
from archive.templatetags.wirecat_lists import list_time
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

MAIL = AccountRecord(
    provider="mailbox",
    external_id="me@example.org",
    name="me@example.org",
    owner=IdentityRecord(external_id="me@example.org", email="me@example.org"),
)


def mail(*threads: tuple[str, str, str, int]) -> Batch:
    """Threads of a mail account: (root id, subject, first message's text, minutes)."""
    return Batch(
        account=MAIL,
        chats=tuple(
            ChatRecord(external_id=root, kind="thread", title=subject)
            for root, subject, _, _ in threads
        ),
        identities=(IdentityRecord(external_id="ann@example.org", display_name="Ann Mail"),),
        messages=tuple(
            message(root, text, chat=root, sender="ann@example.org", minutes=minutes)
            for root, _, text, minutes in threads
        ),
    )


def titles(html: str) -> list[str]:
    return re.findall(r'class="chatrow-title" href="[^"]*">([^<]*)</a>', html)


def test_each_chat_shows_its_last_message_escaped_on_one_line(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "first", chat="g", sender="alice", minutes=0),
            message("2", "<b>bold</b> news\nsecond line", chat="g", sender="bob", minutes=5),
            message("3", "older one", chat="h", sender="alice", minutes=1),
            message(
                "4", "\n\n  my   reply  \nmore", chat="h", sender="me", direction="out", minutes=2
            ),
        )
    )
    html = owner_client.get("/chats/").content.decode()
    assert titles(html) == ["Chat g", "Chat h"]  # newest first
    assert '<span class="who">Bob:</span> &lt;b&gt;bold&lt;/b&gt; news</p>' in html
    assert "second line" not in html and "<b>bold" not in html
    assert '<span class="who">You:</span> my reply</p>' in html
    assert '<span class="chatrow-count">2<span class="visually-hidden"> messages</span>' in html
    assert '<span class="badge src">testnet</span>' in html


def test_a_one_to_one_chat_names_no_sender_and_drafts_are_not_its_last_message(
    owner_client: Client,
) -> None:
    dm = Batch(
        account=batch().account,
        chats=(ChatRecord(external_id="dm", kind="dm", title="Alice"),),
        identities=(IdentityRecord(external_id="alice", display_name="Alice"),),
        messages=(message("1", "see you at noon", chat="dm", sender="alice"),),
    )
    batch_record(batch=dm)
    chat = Chat.objects.get(external_id="dm")
    outbound_record(
        chat=chat, text="agent draft", send_id="snd_1", reply_to=None, status="awaiting"
    )
    html = owner_client.get("/chats/").content.decode()
    assert '<p class="chatrow-preview">see you at noon</p>' in html
    assert "agent draft" not in html


def test_the_list_filters_by_name_and_source(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "x", chat="Family", minutes=1),
            message("2", "y", chat="Work 100%", minutes=2),
            message("3", "z", chat="football", minutes=3),
        )
    )
    batch_record(batch=mail(("t1", "Family reunion", "hello", 4)))
    assert titles(owner_client.get("/chats/", {"q": "FAMILY"}).content.decode()) == [
        "Family reunion",  # a thread found by its subject, on its own
        "Chat Family",
    ]
    assert titles(owner_client.get("/chats/", {"q": "100%"}).content.decode()) == [
        "Chat Work 100%"
    ]  # % and _ are the name's characters, not wildcards
    assert titles(owner_client.get("/chats/", {"q": "_"}).content.decode()) == []
    only_mail = owner_client.get("/chats/", {"source": "mailbox"}).content.decode()
    assert titles(only_mail) == ["Family reunion"]
    both = owner_client.get("/chats/", {"q": "family", "source": "testnet"}).content.decode()
    assert titles(both) == ["Chat Family"]
    none = owner_client.get("/chats/", {"q": "nothing like it"}).content.decode()
    assert "No chat named like “nothing like it”" in none
    # The filter form keeps what was asked; the source select lists every source.
    page = owner_client.get("/chats/", {"q": "fam", "source": "mailbox"}).content.decode()
    assert 'name="q" value="fam"' in page
    assert '<option value="mailbox" selected>mailbox</option>' in page
    assert '<option value="testnet" >testnet</option>' in page
    for junk in ({"source": "<x>"}, {"account": "x"}, {"sort": "zzz", "page": "-1"}):
        assert owner_client.get("/chats/", junk).status_code == 200
    assert owner_client.get("/chats/", {"account": "9999"}).status_code == 404


def test_htmx_swaps_only_the_rows_and_pages_keep_the_filter(owner_client: Client) -> None:
    batch_record(
        batch=batch(*[message(str(n), "m", chat=f"room {n}", minutes=n) for n in range(55)])
    )
    partial = owner_client.get(
        "/chats/", {"q": "room"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in partial and partial.lstrip().startswith('<div id="chat-rows">')
    assert 'href="?q=room&amp;page=2"' in partial
    assert len(titles(partial)) == 50
    second = owner_client.get("/chats/", {"q": "room", "page": "2"}).content.decode()
    assert titles(second) == [f"Chat room {n}" for n in range(4, -1, -1)]


def test_a_mail_accounts_threads_fold_into_one_inbox_row(owner_client: Client) -> None:
    batch_record(batch=batch(message("1", "chat message", chat="g", minutes=1)))
    batch_record(
        batch=mail(
            ("t1", "Invoice March", "Please find the invoice", 2),
            ("t2", "Lunch?", "Are you free on Friday?\n-- \nAnn", 3),
        )
    )
    html = owner_client.get("/chats/").content.decode()
    assert titles(html) == ["me@example.org", "Chat g"]
    account = Account.objects.get(provider="mailbox")
    assert f'href="/chats/?account={account.pk}">me@example.org</a>' in html
    assert '<span class="badge threads">2 threads</span>' in html
    assert '<span class="who">Ann Mail:</span> Lunch? — Are you free on Friday?</p>' in html
    inbox = owner_client.get("/chats/", {"account": account.pk}).content.decode()
    assert titles(inbox) == ["Lunch?", "Invoice March"]  # each thread, its subject the title
    assert "<h1>me@example.org</h1>" in inbox
    assert f'<input type="hidden" name="account" value="{account.pk}">' in inbox


def test_times_read_like_a_messengers_list() -> None:
    today = date(2024, 3, 14)  # a Thursday

    def at(day: date, hour: int = 9, minute: int = 5) -> datetime:
        return timezone.make_aware(datetime(day.year, day.month, day.day, hour, minute))

    assert list_time(at(today), today) == "09:05"
    assert list_time(at(today - timedelta(days=1)), today) == "Wed"
    assert list_time(at(today - timedelta(days=6)), today) == "Fri"
    assert list_time(at(today - timedelta(days=7)), today) == "7 Mar"
    assert list_time(at(date(2023, 12, 31)), today) == "31 Dec 2023"
    assert list_time(None, today) == ""
    assert list_time(datetime(2024, 3, 14, 23, 59, tzinfo=UTC), today) in ("23:59", "Fri", "14 Mar")


def test_the_list_costs_the_same_queries_for_ten_chats_or_ten_thousand(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    batch_record(
        batch=batch(*[message(str(n), f"line {n}", chat=f"c{n}", minutes=n) for n in range(10)])
    )
    account = Account.objects.get()
    owner_client.get("/chats/")  # the session, warm
    with django_assert_max_num_queries(8) as few:
        owner_client.get("/chats/")
    now = timezone.now()
    Chat.objects.bulk_create(
        Chat(
            account=account,
            external_id=f"bulk-{n}",
            kind="group",
            title=f"Bulk {n}",
            last_message_at=now - timedelta(minutes=n),
        )
        for n in range(10_000)
    )
    with django_assert_max_num_queries(len(few.captured_queries)):
        html = owner_client.get("/chats/", {"q": "bulk 99"}).content.decode()
    assert titles(html)[:2] == ["Bulk 99", "Bulk 990"]
    with django_assert_max_num_queries(len(few.captured_queries)):
        html = owner_client.get("/chats/", {"page": "3"}).content.decode()
    assert len(titles(html)) == 50 and "Page 3 of 201" in html
