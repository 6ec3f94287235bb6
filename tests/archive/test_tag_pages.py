"""Tags on the pages: inline add/remove with htmx and as plain forms, autocomplete, the tags
page (rename, recolour, merge, delete), tag all results with undo (inline and as a job on a
real worker), escaping, and the owner's session."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from archive.tags import services as tags
from archive.tags.models import Tag, TagBulk, TagBulkState, Tagging
from tests.archive.test_worker import celery_worker, wait_for_heartbeat
from tests.factories import batch, message

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def chat(db: None) -> Chat:
    batch_record(batch=batch(*[message(str(i), f"train number {i}", minutes=i) for i in range(5)]))
    return Chat.objects.get()


def first(chat: Chat) -> Message:
    return Message.objects.filter(chat=chat).order_by("sent_at").first()  # type: ignore[return-value]


def test_inline_add_and_remove_swap_the_block(owner_client: Client, chat: Chat) -> None:
    msg = first(chat)
    data = {"kind": "message", "key": msg.public_id, "name": "Later"}
    response = owner_client.post("/tags/add/", data, **HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<div class="tags" id="tags-message-{msg.public_id}">')
    assert ">Later</a>" in html and 'aria-label="Remove tag Later"' in html
    assert Tagging.objects.filter(target_kind="message", target_id=msg.pk).count() == 1
    removed = owner_client.post("/tags/remove/", data, **HX).content.decode()
    assert ">Later</a>" not in removed
    assert not Tagging.objects.exists()


def test_plain_forms_return_to_the_page_they_came_from(owner_client: Client, chat: Chat) -> None:
    back = f"/chats/{chat.pk}/?at={first(chat).public_id}"
    response = owner_client.post(
        "/tags/add/", {"kind": "chat", "key": chat.pk, "name": "work", "next": back}
    )
    assert response.status_code == 302 and response["Location"] == back
    elsewhere = owner_client.post(
        "/tags/add/",
        {"kind": "chat", "key": chat.pk, "name": "x", "next": "https://evil.example/"},
    )
    assert elsewhere["Location"] == "/tags/"  # never off-site
    page = owner_client.get(back).content.decode()
    assert f'id="tags-chat-{chat.pk}"' in page and ">work</a>" in page


def test_bad_tag_input_is_explained_not_a_500(owner_client: Client, chat: Chat) -> None:
    bad = owner_client.post(
        "/tags/add/", {"kind": "message", "key": first(chat).public_id, "name": "  "}, **HX
    )
    assert bad.status_code == 422 and "tag name: empty" in bad.content.decode()
    gone = owner_client.post("/tags/add/", {"kind": "message", "key": "msg_nope", "name": "a"})
    assert gone.status_code == 404 and "msg_nope" in gone.content.decode()
    kind = owner_client.post("/tags/add/", {"kind": "<b>", "key": "1", "name": "a"})
    assert kind.status_code == 422 and "&lt;b&gt;" in kind.content.decode()
    assert owner_client.get("/tags/add/").status_code == 405


def test_autocomplete_offers_existing_names_escaped(owner_client: Client, chat: Chat) -> None:
    target = tags.tag_target(kind="chat", key=chat.pk)
    for name in ("travel", "Trains", "<script>x</script>", "work"):
        tags.tag_add(target=target, name=name)
    html = owner_client.get("/tags/names/", {"name": "tr"}).content.decode()
    assert re.findall(r'value="([^"]*)"', html) == ["Trains", "travel"]
    escaped = owner_client.get("/tags/names/", {"name": "<"}).content.decode()
    assert "<script>" not in escaped and "&lt;script&gt;" in escaped


def test_tags_page_renames_recolours_merges_and_deletes(owner_client: Client, chat: Chat) -> None:
    msg = tags.tag_target(kind="message", key=first(chat).public_id)
    tags.tag_add(target=msg, name="todo")
    tags.tag_add(target=tags.tag_target(kind="chat", key=chat.pk), name="later")
    page = owner_client.get("/tags/").content.decode()
    assert ">todo</a>" in page and ">later</a>" in page
    todo, later = Tag.objects.get(name="todo"), Tag.objects.get(name="later")

    def edit(tag: Tag, **data: str) -> str:
        response = owner_client.post(f"/tags/{tag.pk}/edit/", data, follow=True)
        assert response.status_code == 200
        return response.content.decode()

    assert "already exists: merge" in edit(later, action="rename", new_name="TODO")
    assert "Saved “To do”" in edit(todo, action="rename", new_name="To do", colour="#ff0000")
    assert Tag.objects.get(pk=todo.pk).colour == "#ff0000"
    assert "Merged “later” into “To do”" in edit(later, action="merge", into="to do")
    assert Tagging.objects.filter(tag=todo).count() == 2
    assert "Deleted “To do” from 2 places" in edit(todo, action="delete")
    assert not Tag.objects.exists()
    assert owner_client.post("/tags/999/edit/", {"action": "delete"}).status_code == 404


def test_tag_all_results_inline_then_undo(owner_client: Client, chat: Chat) -> None:
    response = owner_client.post("/tags/all/", {"q": "train", "name": "rail"})
    bulk = TagBulk.objects.get()
    assert response["Location"] == f"/tags/all/{bulk.pk}/"
    page = owner_client.get(response["Location"]).content.decode()
    assert "Done" in page and "5</strong> of 5 messages" in page
    assert Tagging.objects.filter(bulk=bulk).count() == 5
    owner_client.post(f"/tags/all/{bulk.pk}/undo/")
    assert not Tagging.objects.exists()
    assert TagBulk.objects.get().state == TagBulkState.UNDONE
    refused = owner_client.post("/tags/all/", {"q": "(train", "name": "rail"}, follow=True)
    assert "this ( is never closed" in refused.content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_many_results_are_tagged_by_a_job_on_a_real_worker(
    owner_client: Client,
    chat: Chat,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    settings: Any,
) -> None:
    monkeypatch.setattr("archive.tags.views.BULK_INLINE", 2)
    # The broker this process sends to (the app keeps its connection pool across tests).
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path) as worker:
        wait_for_heartbeat(worker.pid, tmp_path)
        response = owner_client.post("/tags/all/", {"q": "train", "name": "rail"})
        bulk = TagBulk.objects.get()
        assert response["Location"] == f"/tags/all/{bulk.pk}/"
        polling = owner_client.get(response["Location"], **HX).content.decode()
        assert 'id="progress"' in polling
        deadline = time.monotonic() + 60
        while TagBulk.objects.get().state != TagBulkState.DONE:
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)
    done = owner_client.get(response["Location"], **HX).content.decode()
    assert "every 1s" not in done and "5</strong> of 5 messages" in done
    assert Tagging.objects.filter(bulk=bulk).count() == 5


def test_tag_names_are_escaped_everywhere(owner_client: Client, chat: Chat) -> None:
    evil = "<img src=x onerror=alert(1)>"
    tags.tag_add(target=tags.tag_target(kind="chat", key=chat.pk), name=evil)
    for url in (f"/chats/{chat.pk}/", "/tags/", "/search/?q=train"):
        html = owner_client.get(url).content.decode()
        assert "<img src=x" not in html, url
    assert "&lt;img src=x onerror=alert(1)&gt;" in owner_client.get("/tags/").content.decode()


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/tags/"),
        ("get", "/tags/names/"),
        ("post", "/tags/add/"),
        ("post", "/tags/remove/"),
        ("post", "/tags/1/edit/"),
        ("post", "/tags/all/"),
        ("get", "/tags/all/1/"),
        ("post", "/tags/all/1/undo/"),
    ],
)
def test_tag_pages_need_the_owner(client: Client, method: str, url: str) -> None:
    response = getattr(client, method)(url)
    assert response.status_code == 302 and "/login" in response["Location"]
    assert not Tag.objects.exists()


def test_chat_page_with_tags_keeps_its_query_count(
    owner_client: Client, chat: Chat, django_assert_max_num_queries: Any
) -> None:
    for m in Message.objects.all():
        tags.tag_add(target=tags.tag_target(kind="message", key=m.pk), name=f"t{m.pk % 2}")
    with django_assert_max_num_queries(13):
        html = owner_client.get(f"/chats/{chat.pk}/").content.decode()
    assert html.count('class="tag-chip inline"') == 5


def test_admin_lists_tags_runs_and_link_audit(owner_client: Client, chat: Chat) -> None:
    tags.tag_add(target=tags.tag_target(kind="chat", key=chat.pk), name="work")
    for url in ("/admin/archive/tag/", "/admin/archive/tagbulk/", "/admin/archive/identitylink/"):
        assert owner_client.get(url).status_code == 200, url
    tag = Tag.objects.get()
    clash = owner_client.post(
        f"/admin/archive/tag/{tag.pk}/change/", {"name": "WORK ", "colour": "red;x:y"}
    )
    assert clash.status_code == 200 and "a colour as #rrggbb" in clash.content.decode()


def test_the_tags_page_counts_notes_and_opens_them(owner_client: Client) -> None:
    from notes.services.notes import note_create

    note = note_create(title="Plan")
    tags.tag_add(target=tags.tag_target(kind="note", key=note.public_id), name="house work")
    page = owner_client.get("/tags/").content.decode()
    assert (
        '<td class="num" data-label="Notes"><a href="/notes/?q=tag%3A%22house%20work%22">1</a>'
        in page
    )
    found = owner_client.get("/notes/?q=tag%3A%22house%20work%22").content.decode()
    assert "Plan" in found
