"""The owner's pages: dashboard, chat list, chat page, permalinks; escaping; bad input."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from archive.owner.models import WorkerHeartbeat
from archive.store.domain import AttachmentRecord, DeletionRecord
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from tests.factories import T0, batch, message

pytestmark = pytest.mark.django_db


def count(html: str, name: str) -> str:
    found = re.search(rf'data-count="{name}">([^<]*)<', html)
    assert found, name
    return found.group(1)


def fill_chat(n: int, chat: str = "chat-1") -> None:
    records = [message(str(i), f"message number {i}", chat=chat, minutes=i) for i in range(n)]
    batch_record(batch=batch(*records))


def test_dashboard_counts_and_worker(owner_client: Client) -> None:
    fill_chat(3)
    batch_record(
        batch=batch(
            message(
                "a",
                "with file",
                chat="chat-2",
                attachments=(AttachmentRecord(file_name="f.txt", size=3),),
            )
        )
    )
    html = owner_client.get("/").content.decode()
    assert (
        count(html, "accounts"),
        count(html, "chats"),
        count(html, "messages"),
        count(html, "attachments"),
    ) == ("1", "2", "4", "1")
    assert "No worker has reported yet" in html
    WorkerHeartbeat.objects.create(hostname="box", seen_at=timezone.now() - timedelta(seconds=7))
    html = owner_client.get("/").content.decode()
    assert "Alive" in html and "7 s ago" in html


def test_empty_archive_pages_look_finished(owner_client: Client) -> None:
    assert b"The archive is empty" in owner_client.get("/").content
    assert b"No chats yet" in owner_client.get("/chats/").content


def test_chat_list_sorts(owner_client: Client) -> None:
    batch_record(
        batch=batch(message("1", chat="b-chat", minutes=5), message("2", chat="a-chat", minutes=1))
    )
    recent = owner_client.get("/chats/").content.decode()
    assert recent.index("Chat b-chat") < recent.index("Chat a-chat")
    oldest = owner_client.get("/chats/?sort=oldest").content.decode()
    assert oldest.index("Chat a-chat") < oldest.index("Chat b-chat")
    partial = owner_client.get(
        "/chats/?sort=title", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in partial and 'id="chat-rows"' in partial
    assert owner_client.get("/chats/?sort=nonsense&page=zzz").status_code == 200


def test_message_text_is_escaped_and_links_are_safe(owner_client: Client) -> None:
    evil = "<script>alert(1)</script> see https://example.org/a?b=1&c=2. and javascript:alert(2)"
    batch_record(batch=batch(message("1", evil)))
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert (
        '<a href="https://example.org/a?b=1&amp;c=2" rel="noopener nofollow noreferrer" '
        'target="_blank">'
    ) in html
    assert 'href="javascript' not in html


def test_chat_page_shows_reply_attachments_badges(owner_client: Client) -> None:
    batch_record(
        batch=batch(
            message("1", "the question"),
            message(
                "2",
                "the answer",
                reply_to_external_id="1",
                minutes=1,
                sender="bob",
                attachments=(
                    AttachmentRecord(file_name="notes.pdf", mime_type="application/pdf", size=2048),
                ),
            ),
            message("3", "typo", minutes=2),
        )
    )
    batch_record(batch=batch(message("3", "fixed", minutes=2, edited_at=T0 + timedelta(hours=1))))
    batch_record(
        batch=batch(
            message("4", "oops", minutes=3),
            deletions=(DeletionRecord("chat-1", "4", T0 + timedelta(hours=2)),),
        )
    )
    chat = Chat.objects.get()
    html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert 'class="quote"' in html and "the question" in html
    assert "notes.pdf" in html and "2.0 KB" in html
    assert ">edited<" in html
    assert "oops" not in html  # tombstones hidden by default
    shown = owner_client.get(f"/chats/{chat.pk}/?deleted=1").content.decode()
    assert "oops" in shown and ">deleted<" in shown


def texts(html: str) -> list[int]:
    return [int(n) for n in re.findall(r"message number (\d+)", html)]


def test_cursor_pagination_without_javascript(owner_client: Client) -> None:
    fill_chat(120)
    chat = Chat.objects.get()
    first = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert texts(first) == list(range(70, 120))
    older = re.search(r'href="\?before=([^"&]+)"', first)
    assert older and "Load newer" not in first
    second = owner_client.get(f"/chats/{chat.pk}/?before={older.group(1)}").content.decode()
    assert texts(second) == list(range(20, 70))
    older2 = re.search(r'href="\?before=([^"&]+)"', second)
    assert older2
    third = owner_client.get(f"/chats/{chat.pk}/?before={older2.group(1)}").content.decode()
    assert texts(third) == list(range(0, 20)) and "Start of the chat" in third
    newer = re.search(r'href="\?after=([^"&]+)"', third)
    assert newer
    back = owner_client.get(f"/chats/{chat.pk}/?after={newer.group(1)}").content.decode()
    assert texts(back) == list(range(20, 70))


def test_htmx_loads_older_as_a_fragment(owner_client: Client) -> None:
    fill_chat(60)
    chat = Chat.objects.get()
    first = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    cursor = re.search(r'hx-get="\?before=([^"&]+)"', first)
    assert cursor
    fragment = owner_client.get(
        f"/chats/{chat.pk}/?before={cursor.group(1)}", headers={"HX-Request": "true"}
    ).content.decode()
    assert "<html" not in fragment
    assert texts(fragment) == list(range(0, 10))


def test_permalink_opens_chat_at_message(owner_client: Client) -> None:
    fill_chat(200)
    target = Message.objects.get(external_id="42")
    response = owner_client.get(f"/m/{target.public_id}/")
    assert response.status_code == 302
    page = owner_client.get(response["Location"]).content.decode()
    assert f'id="{target.public_id}"' in page
    assert re.search(rf'class="msg in focus" id="{target.public_id}"', page)
    shown = texts(page)
    assert 42 in shown and min(shown) < 42 < max(shown)
    assert "Load older" in page and "Load newer" in page


@pytest.mark.parametrize(
    "query",
    [
        "?before=garbage",
        "?after=%00%01",
        "?at=msg_nope",
        "?before=W10",
        "?after=" + "A" * 500,
    ],
)
def test_bad_input_is_a_clear_error_not_a_crash(owner_client: Client, query: str) -> None:
    fill_chat(2)
    chat = Chat.objects.get()
    response = owner_client.get(f"/chats/{chat.pk}/{query}")
    assert response.status_code in (404, 422)
    assert b"That did not work" in response.content or b"Not found" in response.content


def test_unknown_chat_and_message(owner_client: Client) -> None:
    assert owner_client.get("/chats/999/").status_code == 404
    assert owner_client.get("/m/msg_01ARZ3NDEKTSV4RRFFQ69G5FAV/").status_code == 404


def test_chat_page_query_count_is_bounded(
    owner_client: Client, django_assert_max_num_queries: Any
) -> None:
    batch_record(
        batch=batch(
            *[
                message(
                    str(i),
                    f"m{i}",
                    minutes=i,
                    reply_to_external_id=str(i - 1) if i else "",
                    attachments=(AttachmentRecord(file_name=f"{i}.txt", size=i),),
                )
                for i in range(50)
            ]
        )
    )
    chat = Chat.objects.get()
    # session, owner, chat, messages, attachments, tags of the messages and of the chat,
    # tasks of the messages, tag names for autocomplete, the activity chart (newest, then per
    # week), the chat's members, the notes about the chat: fixed, whatever the number of
    # messages shown
    with django_assert_max_num_queries(13):
        assert owner_client.get(f"/chats/{chat.pk}/").status_code == 200


def test_admin_site_for_the_owner(owner_client: Client) -> None:
    fill_chat(3)
    assert owner_client.get("/admin/").status_code == 200
    assert owner_client.get("/admin/archive/message/").status_code == 200
    assert owner_client.get("/admin/django_celery_beat/periodictask/").status_code == 200
    msg = Message.objects.first()
    assert msg is not None
    # Messages are the sink's alone: the admin shows them read-only.
    assert owner_client.get("/admin/archive/message/add/").status_code == 403
    page = owner_client.get(f"/admin/archive/message/{msg.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
