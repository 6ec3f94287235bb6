"""Backlinks on the pages of what notes link to: a person, a chat, a message (its
permalink), a meeting, a task. Each lists the notes linking there with the sentence that
links it (as text, whatever it holds), or says none do, with "Write a note" pre-linked; the
message menu of the chat page has the action too. Through the real pages and the core."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from archive.people.services import person_create
from archive.store.models import Chat, Message
from archive.store.sink import batch_record, message_purge
from notes.models import Link
from notes.selectors import note_links
from notes.services.links import LinkSpec
from notes.services.notes import note_create
from notes.templatetags.notes_links import write_note_url
from tasks.services import project_create, task_create
from tests.factories import batch, message
from tests.meetings.factories import meeting

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script>'
HOSTILE_SHOWN = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"


@dataclass(frozen=True)
class Place:
    """A page that shows backlinks: the typed reference of what it shows, its address, and
    the name a linking sentence shows for the reference."""

    ref: str
    url: str
    name: str


def places() -> dict[str, Place]:
    batch_record(batch=batch(message("m1", "the roof leaks"), message("m2", "ok", minutes=1)))
    chat = Chat.objects.get(external_id="chat-1")
    msg = Message.objects.get(external_id="m1")
    person = person_create(name="Alice Walker")
    kickoff = meeting("Kickoff", datetime(2024, 3, 4, 9, tzinfo=UTC))
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Fix the roof")
    return {
        "person": Place(
            f"person:{person.pk}", reverse("archive:person", args=[person.pk]), "Alice Walker"
        ),
        "chat": Place(f"chat:{chat.pk}", reverse("archive:chat", args=[chat.pk]), "Chat chat-1"),
        "message": Place(
            f"message:{msg.public_id}",
            reverse("archive:message", args=[msg.public_id]),
            "this message",
        ),
        "meeting": Place(
            f"meeting:{kickoff.public_id}",
            reverse("meetings:meeting", args=[kickoff.public_id]),
            "Kickoff",
        ),
        "task": Place(f"task:{task.key}", reverse("tasks:task", args=[task.key]), "HOME-1"),
    }


def page(client: Client, url: str) -> str:
    response = client.get(url, follow=True)  # a message's permalink opens its chat
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, ref: str) -> str:
    """The backlinks section of `ref` in a page (it must be there)."""
    found = re.search(
        rf'<section class="backlinks[^"]*"[^>]*data-ref="{re.escape(ref)}">(.*?)</section>',
        html,
        re.S,
    )
    assert found, f"no backlinks section for {ref}"
    return found.group(1)


KINDS = ["person", "chat", "message", "meeting", "task"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_lists_the_notes_linking_to_it_with_the_linking_sentence(
    owner_client: Client, kind: str
) -> None:
    place = places()[kind]
    note = note_create(
        title="Roof <b>plans</b>",
        folder="Home/Repairs",
        body=f"Talked with {HOSTILE} about [[{place.ref}]] today. Nothing else.",
    )
    other = note_create(
        title="Decisions",
        links=[LinkSpec(target=place.ref, kind="decision", context="We go with slate.")],
    )
    html = section(page(owner_client, place.url), place.ref)
    assert f'href="/notes/{note.public_id}/"' in html
    assert f'href="/notes/{other.public_id}/"' in html
    assert "Roof &lt;b&gt;plans&lt;/b&gt;" in html  # the title is text
    assert "Home/Repairs" in html
    # the sentence, its hostile part shown as text, the reference named and in bold
    assert (
        f'Talked with {HOSTILE_SHOWN} about <strong title="{place.ref}">{place.name}</strong>'
        " today."
    ) in html
    assert "<script>" not in html
    assert "Nothing else" not in html  # the sentence, not the paragraph
    # a kind that says more than "mentions" is shown; "mentions" is not
    assert '<span class="badge link-kind">decision</span> We go with slate.' in html
    assert ">mentions<" not in html
    assert "No notes link" not in html
    assert f'href="/notes/new/?link={place.ref}"' in html


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_linking_here_says_so_and_offers_a_prelinked_note(
    owner_client: Client, kind: str
) -> None:
    place = places()[kind]
    html = section(page(owner_client, place.url), place.ref)
    assert "No notes link here yet." in html
    assert f'<a class="button secondary write-note" href="/notes/new/?link={place.ref}">' in html
    assert "backlink-list" not in html


def test_the_linked_words_are_in_bold_and_a_note_shows_once_with_each_sentence(
    owner_client: Client,
) -> None:
    place = places()["person"]
    note = note_create(
        title="Trip",
        body="We met [[Alice Walker]] at the station.\n\nLater [[Alice Walker|Alice]] left.",
    )
    html = section(page(owner_client, place.url), place.ref)
    assert html.count(f'href="/notes/{note.public_id}/"') == 1
    assert "We met <strong>Alice Walker</strong> at the station." in html
    assert "Later <strong>Alice</strong> left." in html


def test_the_person_page_makes_as_many_queries_for_many_backlinks_as_for_one(
    owner_client: Client,
) -> None:
    place = places()["person"]
    note_create(title="First", folder="People", body="Met [[Alice Walker]].")
    owner_client.get(place.url)  # warm what is cached once per process

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert owner_client.get(place.url).status_code == 200
        return len(seen.captured_queries)

    one = queries()
    for n in range(12):
        note_create(title=f"Note {n}", folder=f"People/Group {n % 3}", body="[[Alice Walker]].")
    many = queries()
    html = section(page(owner_client, place.url), place.ref)
    assert html.count('class="backlink"') == 13
    assert many == one


def test_a_name_written_before_the_person_exists_shows_on_their_page_once_they_do(
    owner_client: Client,
) -> None:
    note = note_create(title="Neighbours", body="Ask [[Bob Stone]] about the fence.")
    bob = person_create(name="Bob Stone")
    html = section(page(owner_client, reverse("archive:person", args=[bob.pk])), f"person:{bob.pk}")
    assert f'href="/notes/{note.public_id}/"' in html
    assert "Ask <strong>Bob Stone</strong> about the fence." in html


def test_a_purged_message_stays_listed_on_the_note_as_an_unresolved_link() -> None:
    place = places()["message"]
    msg = Message.objects.get(external_id="m1")
    note = note_create(
        title="Leak",
        body=f"See [[{msg.public_id}]].",
        links=[LinkSpec(target=place.ref, kind="source", context="where it started")],
    )
    message_purge(message_ids=[msg.pk])
    links = note_links(note)
    assert sorted(
        (link.origin, link.kind, link.target_kind, link.target_id) for link, _ in links
    ) == [
        (Link.Origin.BODY, "mentions", "message", None),
        (Link.Origin.EXPLICIT, "source", "message", None),
    ]
    for link, target in links:
        assert link.target_key == msg.public_id
        assert not target.exists
        assert target.url is None


def test_the_chat_page_shows_a_message_s_notes_only_when_opened_at_that_message(
    owner_client: Client,
) -> None:
    place = places()["message"]
    msg = Message.objects.get(external_id="m1")
    note_create(title="Leak", body=f"It began with [[{msg.public_id}]].")
    chat_url = reverse("archive:chat", args=[msg.chat_id])
    plain = page(owner_client, chat_url)
    assert f'data-ref="{place.ref}"' not in plain
    opened = section(page(owner_client, f"{chat_url}?at={msg.public_id}"), place.ref)
    assert "Notes about this message" in opened
    assert f'It began with <strong title="{msg.public_id}">this message</strong>.' in opened


def test_every_message_of_the_chat_page_has_a_write_a_note_action(owner_client: Client) -> None:
    places()
    chat = Chat.objects.get(external_id="chat-1")
    html = page(owner_client, reverse("archive:chat", args=[chat.pk]))
    for msg in Message.objects.filter(chat=chat):
        assert (
            f'<a class="act-note" href="/notes/new/?link=message:{msg.public_id}">Write a note</a>'
            in html
        )


def test_write_note_url_escapes_the_reference() -> None:
    assert write_note_url("person", 12) == "/notes/new/?link=person:12"
    assert (
        write_note_url("url:https://example.org/a?b=1&c=<x>")
        == "/notes/new/?link=url:https:%2F%2Fexample.org%2Fa%3Fb%3D1%26c%3D%3Cx%3E"
    )


def test_the_chat_header_counts_the_notes_about_the_chat(owner_client: Client) -> None:
    place = places()["chat"]
    marker = 'class="chat-notes"'
    assert marker not in page(owner_client, place.url)
    for n in range(2):
        note_create(title=f"Note {n}", body=f"About [[{place.ref}]] and [[{place.ref}|it]].")
    html = page(owner_client, place.url)
    anchor = place.ref.replace(":", "-")
    assert re.search(rf'<a class="chat-notes" href="#notes-{anchor}"[^>]*>2 notes</a>', html)
    assert f'id="notes-{anchor}"' in html
