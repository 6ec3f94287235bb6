"""The notes pages through the Django test client: the list with its folder tree and search
(a query that cannot be read is its sentence), a note's page (chips for its links, hostile
text escaped, tags, links, backlinks), the editor without JavaScript (new, pre-linked,
edit, a stale revision's conflict with both texts, errors on their fields), the autosave's
JSON, the preview and `[[` suggestion endpoints, revisions with a diff, delete."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from archive.people.services import person_create
from archive.store.models import Chat, Message
from archive.store.sink import batch_record
from archive.tags.services import tag_add, tag_target
from meetings.models import Meeting
from notes.models import Link, Note
from notes.services.links import link_add
from notes.services.notes import note_create, note_update
from tasks.services import project_create, task_create
from tests.factories import T0, batch, message
from tests.meetings.factories import meeting

pytestmark = pytest.mark.django_db

HOSTILE_BODY = """# Plans <script>alert("title")</script>

<script>alert(1)</script>
<img src=x onerror="alert(2)">
<iframe src="javascript:alert(3)"></iframe>
<a href="javascript:alert(4)">click</a>
[run](javascript:alert(5)) [data](data:text/html;base64,PHNjcmlwdD4=) [vb](vbscript:msgbox(1))
[[<b>bold</b>|<i>shown</i>]]
"""


def note(title: str, body: str = "", *, folder: str | None = None, minutes: int = 0) -> Note:
    at = T0 + timedelta(minutes=minutes)
    return note_create(title=title, body=body, folder=folder, created_at=at, updated_at=at)


def page(client: Client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code)
    return response.content.decode()


class _Tags(HTMLParser):
    """The elements of a page as a browser parses them: each tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {name: value or "" for name, value in attrs}))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.found


def hrefs(html: str) -> list[str]:
    """Every href and src of a real element (not words that look like one)."""
    return [
        attrs[name] for _tag, attrs in elements(html) for name in ("href", "src") if name in attrs
    ]


def body_of(html: str) -> str:
    """The rendered note, between its wrapper's tags."""
    found = re.search(
        r'<div class="note-body markdown">(.*?)</div>\s*(?:<section|</article)', html, re.S
    )
    assert found, "no note body on the page"
    return found.group(1)


# --- the list -----------------------------------------------------------------------------


def test_the_list_shows_the_tree_with_counts_and_the_newest_change_first(
    owner_client: Client,
) -> None:
    note("Old plan", "the first words", folder="Work", minutes=1)
    note("Client call", "Notes of the **call**", folder="Work/Clients", minutes=3)
    note("Groceries", "milk", minutes=2)
    html = page(owner_client, reverse("notes:list"))
    assert html.index("Client call") < html.index("Groceries") < html.index("Old plan")
    tree = html[html.index('class="nt-tree"') : html.index("</nav>", html.index('class="nt-tree"'))]
    assert re.search(r"All notes</span><span class=\"count\">3<", tree)
    assert re.search(r">Work</span><span class=\"count\">2<", tree)  # with Clients' note
    assert re.search(r">Clients</span><span class=\"count\">1<", tree)
    assert re.search(r"Not in a folder</span><span class=\"count\">1<", tree)
    assert '<a class="tier2" href="/notes/" aria-current="page">Notes</a>' in html  # the menu
    assert "Notes of the call" in html  # the excerpt is plain words
    assert "<strong>call</strong>" not in html


def test_the_folder_filter_shows_a_folder_with_its_folders(owner_client: Client) -> None:
    note("Old plan", folder="Work")
    note("Client call", folder="Work/Clients")
    note("Groceries")
    work = Note.objects.get(title="Old plan").folder
    assert work is not None
    html = page(owner_client, reverse("notes:list") + f"?folder={work.pk}")
    assert "Old plan" in html and "Client call" in html and "Groceries" not in html
    assert "<h1>Work</h1>" in html
    clients = Note.objects.get(title="Client call").folder
    assert clients is not None
    html = page(owner_client, reverse("notes:list") + f"?folder={clients.pk}")
    assert "Client call" in html and "Old plan" not in html
    assert f'?folder={work.pk}">Work</a>' in html  # the breadcrumb
    unfiled = page(owner_client, reverse("notes:list") + "?folder=none")
    assert "Groceries" in unfiled and "Old plan" not in unfiled
    page(owner_client, reverse("notes:list") + "?folder=99999", status=404)


def test_the_list_pages_through_many_notes(owner_client: Client) -> None:
    for i in range(53):
        note(f"Note number {i:02d}", minutes=i)
    first = page(owner_client, reverse("notes:list"))
    assert "Note number 52" in first and "Note number 02" not in first
    assert "Page 1 of 2" in first
    second = page(owner_client, reverse("notes:list") + "?page=2")
    assert "Note number 02" in second and "Note number 52" not in second
    assert "Page 2 of 2" in page(owner_client, reverse("notes:list") + "?page=999")


def test_search_finds_notes_with_snippets_and_tags(owner_client: Client) -> None:
    found = note(
        "Roof repair", "The roofer fixes the leak, see [[Budget|the costs]].", folder="Home"
    )
    note("Groceries", "milk and bread")
    tag_add(target=tag_target(kind="note", key=found.public_id), name="house")
    html = page(owner_client, reverse("notes:list") + "?q=leak")
    assert "Roof repair" in html and "Groceries" not in html
    assert "<mark>leak</mark>" in html
    assert "see the costs." in html and "[[Budget" not in html  # the snippet reads as the note
    assert ">house</a>" in html and "tag%3Ahouse" in html
    assert "Home" in html
    # htmx asks for the results only, as the owner types.
    partial = owner_client.get(
        reverse("notes:list") + "?q=milk", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="note-results"
    ).content.decode()
    assert partial.startswith('\n  <section id="note-results"') or "note-results" in partial[:80]
    assert "Groceries" in partial and "<html" not in partial
    assert "No note matches" in page(owner_client, reverse("notes:list") + "?q=zebra")


@pytest.mark.parametrize(
    ("query", "sentence"),
    [('"unclosed phrase', "at character"), ("(roof", "at character"), ("from:ann", "from:")],
)
def test_a_query_that_cannot_be_answered_is_a_sentence_not_an_error(
    owner_client: Client, query: str, sentence: str
) -> None:
    note("Roof repair", "the leak")
    response = owner_client.get(reverse("notes:list"), {"q": query})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="error" role="alert"' in html and sentence in html


# --- a note's page ------------------------------------------------------------------------


def linked_world() -> dict[str, Any]:
    batch_record(batch=batch(message("m1", "the roof leaks")))
    alice = person_create(name="Alice Walker")
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Fix the roof")
    kickoff = meeting("Kickoff", T0)
    other = note("Budget", "numbers")
    msg = Message.objects.get(external_id="m1")
    return {"alice": alice, "task": task, "meeting": kickoff, "other": other, "message": msg}


def test_a_note_shows_its_links_as_chips_naming_their_targets(owner_client: Client) -> None:
    world = linked_world()
    msg, kickoff = world["message"], world["meeting"]
    body = (
        "Met [[Alice Walker]] about [[HOME-1]] and the [[Budget|numbers note]].\n\n"
        f"See [[{msg.public_id}]] and [[meeting:{kickoff.public_id}]].\n\n"
        "Later: [[Bob Stone]] and [[HOME-99]]."
    )
    made = note("Kickoff notes", body, folder="Work")
    html = page(owner_client, reverse("notes:note", args=[made.public_id]))
    rendered = body_of(html)
    person_url = reverse("archive:person", args=[world["alice"].pk])
    assert f'<a class="chip chip-person" href="{person_url}"' in rendered
    assert ">Alice Walker</a>" in rendered
    assert f'href="{reverse("tasks:task", args=["HOME-1"])}"' in rendered
    assert ">HOME-1 Fix the roof</a>" in rendered
    assert f'href="{reverse("notes:note", args=[world["other"].public_id])}"' in rendered
    assert ">numbers note</a>" in rendered  # the shown words stay
    assert f'href="{reverse("archive:message", args=[msg.public_id])}"' in rendered
    assert f'href="{reverse("meetings:meeting", args=[kickoff.public_id])}"' in rendered
    # A name that names nothing yet: dashed, offering to write that note.
    assert re.search(
        r'<a class="chip chip-missing" href="/notes/new/\?title=Bob\+Stone"[^>]*>Bob Stone</a>',
        rendered,
    )
    # A reference the archive does not hold: dashed, no link.
    assert '<span class="chip chip-missing" title="task:HOME-99: not in the archive">' in rendered
    # The links panel, by kind; the folder's breadcrumb; a note's page is under the menu.
    assert 'class="badge link-kind">mentions<' in html
    work = made.folder
    assert work is not None
    assert f'?folder={work.pk}">Work</a>' in html
    assert 'aria-current="page">Notes</a>' in html


def test_a_renamed_person_keeps_the_chip_pointing_at_them(owner_client: Client) -> None:
    world = linked_world()
    made = note("Kickoff notes", "Met [[Alice Walker]].")
    from archive.people.services import person_rename

    person_rename(person_id=world["alice"].pk, name="Alice W. Stone")
    rendered = body_of(page(owner_client, reverse("notes:note", args=[made.public_id])))
    assert f'href="{reverse("archive:person", args=[world["alice"].pk])}"' in rendered
    assert "chip-missing" not in rendered


def test_hostile_markdown_never_becomes_markup_or_a_script_link(owner_client: Client) -> None:
    made = note('<script>alert("t")</script>', HOSTILE_BODY)
    html = page(owner_client, reverse("notes:note", args=[made.public_id]))
    rendered = body_of(html)
    assert "<script" not in rendered and "<img" not in rendered and "<iframe" not in rendered
    assert not re.search(r"<[a-z][^>]*\son\w+\s*=", rendered)  # no handler on any element
    assert not [
        h for h in hrefs(html) if h.strip().lower().startswith(("javascript", "data", "vbscript"))
    ]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # shown as text
    assert "&lt;script&gt;alert(&quot;t&quot;)&lt;/script&gt;" in html  # the title too
    assert "<b>" not in rendered and "<i>" not in rendered
    assert "&lt;i&gt;shown&lt;/i&gt;" in rendered
    # Nothing the note wrote reaches a script element on the whole page.
    assert 'alert("t")</script>' not in html and "alert(1)</script>" not in html


def test_a_note_page_shows_tags_aliases_author_revision_and_backlinks(
    owner_client: Client,
) -> None:
    target = note("Budget", "numbers")
    note_update(public_id=target.public_id, revision=1, aliases=["Money", "Spending"])
    source = note("Plan", "See the [[Money]] note.")
    agent = note_create(title="By the agent", body="x", author="agent:helper")
    tag_add(target=tag_target(kind="note", key=target.public_id), name="finance")
    html = page(owner_client, reverse("notes:note", args=[target.public_id]))
    assert '<span class="nt-alias">Money</span>' in html
    assert 'id="tags-note-' + target.public_id + '"' in html and ">finance</a>" in html
    assert "revision 2</a>" in html
    # Backlinks: the note linking here, with its sentence.
    assert f'href="{reverse("notes:note", args=[source.public_id])}">Plan</a>' in html
    assert "See the <strong>Money</strong> note." in html
    assert "agent:helper" in page(owner_client, reverse("notes:note", args=[agent.public_id]))
    page(owner_client, reverse("notes:note", args=["note_nothing"]), status=404)


def test_explicit_links_show_in_the_links_panel_with_their_sentence(owner_client: Client) -> None:
    world = linked_world()
    made = note("Decisions", "")
    link_add(
        source=made.ref,
        target=f"person:{world['alice'].pk}",
        kind="decision",
        context="She decided <b>this</b>",
    )
    html = page(owner_client, reverse("notes:note", args=[made.public_id]))
    assert 'class="badge link-kind">decision<' in html
    assert "She decided &lt;b&gt;this&lt;/b&gt;" in html
    assert "This note has no text yet." in html


# --- the editor without JavaScript ---------------------------------------------------------


def test_new_note_form_saves_and_opens_the_note(owner_client: Client) -> None:
    html = page(owner_client, reverse("notes:new") + "?title=Bob+Stone&folder=People")
    assert 'value="Bob Stone"' in html and 'value="People"' in html
    assert 'list="folder-paths"' in html and 'name="body"' in html
    response = owner_client.post(
        reverse("notes:new"),
        {
            "title": " Bob   Stone ",
            "folder": "People/ Friends ",
            "aliases": "Bobby, B. Stone, ",
            "body": "Hi\r\nthere",
        },
    )
    made = Note.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("notes:note", args=[made.public_id])
    assert made.title == "Bob Stone" and made.body == "Hi\nthere"
    assert made.aliases == ["Bobby", "B. Stone"]
    assert made.folder is not None and made.folder.name == "Friends"
    assert made.folder.parent is not None and made.folder.parent.name == "People"
    html = page(owner_client, response["Location"])
    assert "Saved “Bob Stone” (revision 1)." in html


def test_a_note_written_from_a_message_is_about_it(owner_client: Client) -> None:
    batch_record(batch=batch(message("m1", "the roof leaks")))
    msg = Message.objects.get()
    ref = f"message:{msg.public_id}"
    html = page(owner_client, reverse("notes:new") + f"?link={ref}")
    assert "About</span>" in html
    assert f'href="{reverse("archive:message", args=[msg.public_id])}"' in html
    assert f'name="link" id="n-link" value="{ref}"' in html
    response = owner_client.post(
        reverse("notes:new"), {"title": "Roof", "body": "call the roofer", "link": ref}
    )
    assert response.status_code == 302
    made = Note.objects.get()
    link = Link.objects.get(source_kind="note", source_id=made.pk)
    assert (link.kind, link.target_kind, link.target_id) == ("about", "message", msg.pk)
    html = page(owner_client, reverse("notes:note", args=[made.public_id]))
    assert 'class="badge link-kind">about<' in html
    # A reference that cannot be one is a sentence, not a 500.
    bad = owner_client.get(reverse("notes:new") + "?link=bogus:1")
    assert bad.status_code == 422 and "typed reference" in bad.content.decode()


def test_the_form_says_what_is_wrong_on_its_field(owner_client: Client) -> None:
    response = owner_client.post(reverse("notes:new"), {"title": "  ", "body": "x"})
    assert response.status_code == 422
    html = response.content.decode()
    assert "Give the note a title." in html and 'aria-invalid="true"' in html
    assert ">\nx</textarea>" in html  # what was written is kept (a newline the parser drops)
    response = owner_client.post(reverse("notes:new"), {"title": "T", "folder": "a/b:c"})
    assert response.status_code == 422
    assert "cannot hold" in response.content.decode() and Note.objects.count() == 0
    response = owner_client.post(reverse("notes:new"), {"title": "T", "aliases": "x" * 400})
    assert response.status_code == 422 and "aliases" in response.content.decode()


def test_edit_saves_with_the_revision_it_was_made_from(owner_client: Client) -> None:
    made = note("Plan", "one")
    html = page(owner_client, reverse("notes:edit", args=[made.public_id]))
    assert 'name="revision" id="n-revision" value="1"' in html and ">\none</textarea>" in html
    response = owner_client.post(
        reverse("notes:edit", args=[made.public_id]),
        {"title": "Plan", "body": "one\ntwo", "revision": "1", "folder": "", "aliases": ""},
    )
    assert response.status_code == 302
    made.refresh_from_db()
    assert (made.revision, made.body) == (2, "one\ntwo")
    missing = owner_client.post(
        reverse("notes:edit", args=[made.public_id]), {"title": "Plan", "body": "x"}
    )
    assert missing.status_code == 422 and "which revision" in missing.content.decode()


def test_a_stale_revision_gets_the_conflict_page_with_both_texts(owner_client: Client) -> None:
    made = note("Plan", "shared start\nmiddle\nend\n")
    # Another tab saved first.
    note_update(
        public_id=made.public_id, revision=1, body="shared start\nmiddle\nend\nTHEIRS <b>\n"
    )
    response = owner_client.post(
        reverse("notes:edit", args=[made.public_id]),
        {"title": "Plan B", "body": "MINE <i>\nshared start\nmiddle\nend\n", "revision": "1"},
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "This note changed while you were editing it" in html
    assert "THEIRS &lt;b&gt;" in html and "MINE &lt;i&gt;" in html
    assert "<b>" not in html.split("<main", 1)[1] and "<i>" not in html.split("<main", 1)[1]
    # The merge holds both changes (they touched different lines), no markers.
    merged = re.search(
        r'<textarea id="nt-merge-body" name="body" rows="16">\n(.*?)</textarea>', html, re.S
    )
    assert merged is not None
    assert merged.group(1) == "MINE &lt;i&gt;\nshared start\nmiddle\nend\nTHEIRS &lt;b&gt;\n"
    made.refresh_from_db()
    assert made.revision == 2 and "MINE" not in made.body  # nothing of the stale edit saved
    # "Keep yours" posts the current revision: it saves.
    keep = owner_client.post(
        reverse("notes:edit", args=[made.public_id]),
        {"title": "Plan B", "body": "MINE only", "revision": "2"},
    )
    assert keep.status_code == 302
    made.refresh_from_db()
    assert (made.revision, made.title, made.body) == (3, "Plan B", "MINE only")


def test_edits_of_the_same_line_are_both_kept_between_markers(owner_client: Client) -> None:
    made = note("Plan", "a\nb\nc\n")
    note_update(public_id=made.public_id, revision=1, title="Plan saved", body="a\nB saved\nc\n")
    response = owner_client.post(
        reverse("notes:edit", args=[made.public_id]),
        {"title": "Plan", "body": "a\nB mine\nc\n", "revision": "1"},
    )
    html = response.content.decode()
    assert response.status_code == 409
    assert (
        "&lt;&lt;&lt;&lt;&lt;&lt;&lt; yours\nB mine\n=======\nB saved\n"
        "&gt;&gt;&gt;&gt;&gt;&gt;&gt; saved" in html
    )
    assert "(1 place)" in html
    # Only the other tab changed the title: the merge keeps theirs.
    assert '<input id="nt-merge-title" name="title" value="Plan saved"' in html


def test_the_no_javascript_preview_button_shows_the_preview_without_saving(
    owner_client: Client,
) -> None:
    response = owner_client.post(
        reverse("notes:new"), {"title": "Draft", "body": "**bold** [[Nobody]]", "action": "preview"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>bold</strong>" in html and "chip-missing" in html
    assert Note.objects.count() == 0


# --- the editor's endpoints ----------------------------------------------------------------


def test_autosave_answers_the_new_revision_in_json(owner_client: Client) -> None:
    made = note("Plan", "one")
    url = reverse("notes:edit", args=[made.public_id])
    answer = owner_client.post(
        url, {"title": "Plan", "body": "two", "revision": "1"}, HTTP_X_AUTOSAVE="1"
    )
    assert answer.status_code == 200
    data = answer.json()
    assert data["revision"] == 2 and data["id"] == made.public_id
    # The same again changes nothing: the revision stays.
    again = owner_client.post(
        url, {"title": "Plan", "body": "two", "revision": "2"}, HTTP_X_AUTOSAVE="1"
    )
    assert again.json()["revision"] == 2
    stale = owner_client.post(
        url, {"title": "Plan", "body": "three", "revision": "1"}, HTTP_X_AUTOSAVE="1"
    )
    assert stale.status_code == 409 and stale.json()["conflict"] is True
    bad = owner_client.post(url, {"title": "", "body": "x", "revision": "2"}, HTTP_X_AUTOSAVE="1")
    assert bad.status_code == 422 and bad.json()["error"] == "Give the note a title."
    # A new note's first autosave makes it; the answer says where it is edited now.
    first = owner_client.post(
        reverse("notes:new"), {"title": "Fresh", "body": "x"}, HTTP_X_AUTOSAVE="1"
    ).json()
    assert first["revision"] == 1
    assert first["edit_url"] == reverse("notes:edit", args=[first["id"]])


def test_the_preview_renders_like_the_note_page(owner_client: Client) -> None:
    person_create(name="Alice Walker")
    response = owner_client.post(
        reverse("notes:preview"), {"body": "Hi [[Alice Walker]] and [[Nobody]]\n\n" + HOSTILE_BODY}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="chip chip-person"' in html and "chip-missing" in html
    assert "<script" not in html and "<img" not in html and "<iframe" not in html
    assert not [
        h for h in hrefs(html) if h.strip().lower().startswith(("javascript", "data", "vbscript"))
    ]
    empty = owner_client.post(reverse("notes:preview"), {"body": "  "}).content.decode()
    assert "Nothing to preview yet" in empty
    assert owner_client.get(reverse("notes:preview")).status_code == 405


def test_suggest_lists_people_notes_tasks_chats_and_meetings(owner_client: Client) -> None:
    batch_record(batch=batch(message("m1", "hi", chat="ali-chat")))
    Chat.objects.filter(external_id="ali-chat").update(title="Alibaba group")
    alice = person_create(name="Alice Walker")
    note("Alison's birthday", "cake")
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Call Alistair")
    meeting("Alignment", T0)
    items = owner_client.get(reverse("notes:suggest"), {"q": "Ali"}).json()["items"]
    by_kind = {item["kind"]: item for item in items}
    assert set(by_kind) == {"person", "note", "task", "chat", "meeting"}
    assert by_kind["person"]["insert"] == "Alice Walker"
    assert by_kind["note"]["insert"] == "Alison's birthday"
    assert by_kind["task"]["insert"] == task.key
    chat = Chat.objects.get(external_id="ali-chat")
    assert by_kind["chat"]["insert"] == f"chat:{chat.pk}|Alibaba group"
    kickoff = Meeting.objects.get()
    assert by_kind["meeting"]["insert"] == f"meeting:{kickoff.public_id}|Alignment"
    assert items[0]["kind"] == "person" and alice.name == items[0]["label"]
    # By task key; nothing for nothing.
    keyed = owner_client.get(reverse("notes:suggest"), {"q": "home-1"}).json()["items"]
    assert keyed[0]["insert"] == "HOME-1"
    assert owner_client.get(reverse("notes:suggest"), {"q": " "}).json() == {"items": []}


def test_suggest_uses_a_typed_reference_when_the_name_would_reach_another(
    owner_client: Client,
) -> None:
    first = person_create(name="Sam Lee")
    second = person_create(name="Sam Lee")
    note("Sam Lee", "a note called like them")
    items = owner_client.get(reverse("notes:suggest"), {"q": "Sam"}).json()["items"]
    inserts = {item["insert"] for item in items}
    # A note of that name takes `[[Sam Lee]]`: both people need their typed reference.
    assert f"person:{first.pk}|Sam Lee" in inserts and f"person:{second.pk}|Sam Lee" in inserts
    assert "Sam Lee" in inserts  # the note


def test_suggest_answers_odd_input_without_failing(owner_client: Client) -> None:
    for q in ["%", "_", "'", "\\", "[[", "a" * 500, "person:abc", "msg_x", "\x00"]:
        response = owner_client.get(reverse("notes:suggest"), {"q": q})
        assert response.status_code == 200, q
        json.dumps(response.json())


# --- revisions and delete ------------------------------------------------------------------


def test_revisions_show_a_diff_against_the_one_before(owner_client: Client) -> None:
    made = note("Plan", "keep\nold line <b>\nkeep too\n")
    note_update(
        public_id=made.public_id, revision=1, title="Plan v2", body="keep\nnew line <b>\nkeep too\n"
    )
    html = page(owner_client, reverse("notes:revisions", args=[made.public_id]))
    assert "Revision 2" in html and "Revision 1" in html
    assert "Title: <del>Plan</del> → <ins>Plan v2</ins>" in html
    assert '<li class="nt-diff-old">' in html and '<li class="nt-diff-new">' in html
    assert "<del>old</del>" in html and "<ins>new</ins>" in html
    assert " line &lt;b&gt;" in html and "<b>" not in html.split("<main", 1)[1]
    first = page(owner_client, reverse("notes:revisions", args=[made.public_id]) + "?r=1")
    assert "The first revision" in first
    page(owner_client, reverse("notes:revisions", args=[made.public_id]) + "?r=9", status=404)


def test_delete_asks_first_then_deletes(owner_client: Client) -> None:
    made = note("Plan", "words")
    other = note("Other", "see [[Plan]]")
    html = page(owner_client, reverse("notes:delete", args=[made.public_id]))
    assert "Delete “Plan”?" in html and "Delete the note" in html
    assert Note.objects.filter(pk=made.pk).exists()
    response = owner_client.post(reverse("notes:delete", args=[made.public_id]))
    assert response.status_code == 302 and response["Location"] == reverse("notes:list")
    assert not Note.objects.filter(pk=made.pk).exists()
    assert "Deleted “Plan”." in page(owner_client, reverse("notes:list"))
    # The link to it waits for its name again: a dashed chip offering to write it.
    rendered = body_of(page(owner_client, reverse("notes:note", args=[other.public_id])))
    assert "chip-missing" in rendered and "title=Plan" in rendered


def test_every_notes_page_needs_the_owner(client: Client, owner: Any) -> None:
    made = note("Plan")
    for url in [
        reverse("notes:list"),
        reverse("notes:new"),
        reverse("notes:note", args=[made.public_id]),
        reverse("notes:edit", args=[made.public_id]),
        reverse("notes:revisions", args=[made.public_id]),
        reverse("notes:delete", args=[made.public_id]),
        reverse("notes:suggest") + "?q=a",
    ]:
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url
    assert client.post(reverse("notes:preview"), {"body": "x"}).status_code in (302, 403)


def test_a_notes_page_reads_the_same_few_times_whatever_its_links(owner_client: Client) -> None:
    world = linked_world()

    def queries(links: int) -> int:
        names = " ".join(f"[[Somebody {i}]] [[HOME-{i}]]" for i in range(links))
        made = note(
            f"Links {links}",
            f"[[Alice Walker]] [[{world['message'].public_id}]] [[Budget]] {names}",
            folder="A/B",
        )
        with CaptureQueriesContext(connection) as seen:
            page(owner_client, reverse("notes:note", args=[made.public_id]))
        return len(seen.captured_queries)

    few, many = queries(2), queries(60)
    assert many == few, (few, many)
    assert few < 40, few
