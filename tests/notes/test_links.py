"""The notes core: `[[links]]` read from a body, typed references, links resolved when what
they name appears, kept across renames, left unresolved (never gone) when their target is
deleted; revisions and the stale-revision conflict; folders; a note as a tag target."""

from __future__ import annotations

import pytest

from archive.people.services import (
    identity_link,
    people_from_identities,
    person_create,
    person_rename,
)
from archive.store.changes import ChangeKind
from archive.store.models import Change, Identity, Message
from archive.store.sink import batch_record
from archive.store.sink.outbound import message_purge
from archive.tags.models import Tagging
from archive.tags.services import tag_add, tag_target
from notes.models import Folder, Link, Note, NoteRevision
from notes.references import Ref, fold, ref_guess, ref_parse, wiki_links
from notes.selectors import backlinks, folder_tree, note_links
from notes.services.folders import folder_delete, folder_ensure, folder_move, folder_path
from notes.services.links import LinkSpec, link_add, link_kind_add, link_remove
from notes.services.notes import NoteConflict, note_create, note_delete, note_update
from tasks.services import project_create, task_create, task_delete
from tests.factories import batch, message
from wirecat.errors import Invalid, NotFound, TooLarge

pytestmark = pytest.mark.django_db


def _targets(note: Note) -> list[tuple[str, int | None, str]]:
    return [
        (link.target_kind, link.target_id, link.target_key)
        for link, _ in note_links(note)
        if link.origin == Link.Origin.BODY
    ]


# --- the text of links ----------------------------------------------------------------


def test_wiki_links_are_read_outside_code_with_their_sentence_and_kind() -> None:
    body = (
        "# Trip\n"
        "We met [[Alice Walker]] at the station. Then [[Budget|the budget]] came up!\n"
        "decision:: [[HOME-12]]\n"
        "Inline `[[not a link]]` and\n"
        "```\n[[fenced, not a link]]\n```\n"
        "    [[indented code, not a link]]\n"
        "- see [[msg_01J0000000000000000000000A#part]]\n"
    )
    found = wiki_links(body, kinds={"decision", "mentions"})
    assert [w.target for w in found] == [
        "Alice Walker",
        "Budget",
        "HOME-12",
        "msg_01J0000000000000000000000A",
    ]
    assert found[0].context == "We met Alice Walker at the station."
    assert found[1].label == "the budget"
    assert found[1].context == "Then the budget came up!"
    assert found[2].kind == "decision"
    assert [w.kind for w in found if w is not found[2]] == [None, None, None]
    assert body[found[0].start : found[0].end] == "[[Alice Walker]]"


def test_references_parse_strictly_and_name_what_is_wrong() -> None:
    assert ref_parse("person:12") == Ref("person", "12")
    assert ref_parse("task:home-12") == Ref("task", "HOME-12")
    assert str(ref_parse("url:https://example.org/a?b=1")) == "url:https://example.org/a?b=1"
    for bad, words in [
        ("person:abc", "'abc' is not a person key"),
        ("message:12", "is not a message key"),
        ("url:javascript:alert(1)", "is not a url key"),
        ("planet:3", "a typed reference"),
        ("", "a typed reference"),
    ]:
        with pytest.raises(Invalid, match=words):
            ref_parse(bad)
    assert ref_guess("msg_01J0000000000000000000000A") == Ref(
        "message", "msg_01J0000000000000000000000A"
    )
    assert ref_guess("Alice") is None
    assert fold("  ÉLISE   Dupont ") == "elise dupont"


# --- resolution -----------------------------------------------------------------------


def test_a_name_that_names_no_one_waits_and_resolves_when_the_person_appears() -> None:
    note = note_create(title="Trip", body="Ask [[Bob Stone]] and [[Zoë]].")
    assert _targets(note) == [("", None, "Bob Stone"), ("", None, "Zoë")]
    bob = person_create(name="bob  stone")  # folded: case and spaces
    assert _targets(note)[0] == ("person", bob.pk, "Bob Stone")
    zoe = person_create(name="Someone")
    person_rename(person_id=zoe.pk, name="Zoe")  # diacritics folded
    assert _targets(note)[1] == ("person", zoe.pk, "Zoë")
    [back] = backlinks(f"person:{bob.pk}")
    assert (back.note_id, back.context) == (note.public_id, "Ask Bob Stone and Zoë.")


def test_an_identity_name_is_an_alias_of_its_person() -> None:
    batch_record(batch=batch(message("m1", "hi")))
    note = note_create(title="Who", body="[[Alice]] said hi")  # an identity's name
    assert _targets(note) == [("", None, "Alice")]
    alice = Identity.objects.get(external_id="alice")
    people = people_from_identities(identity_ids=[alice.pk])
    assert _targets(note) == [("person", people[0].pk, "Alice")]
    # and linking another identity to an existing person resolves its name too
    note2 = note_create(title="Who else", body="[[Bob]]")
    walker = person_create(name="Robert Walker")
    identity_link(identity_id=Identity.objects.get(external_id="bob").pk, person_id=walker.pk)
    assert _targets(note2) == [("person", walker.pk, "Bob")]


def test_a_note_title_or_alias_resolves_waiting_links_and_wins_over_a_person() -> None:
    person_create(name="Budget")
    early = note_create(title="Plan", body="See [[Money]].")
    budget = note_create(title="Budget", aliases=["Money"])
    assert _targets(early) == [("note", budget.pk, "Money")]
    later = note_create(title="Plan 2", body="See [[budget]].")
    assert _targets(later) == [("note", budget.pk, "budget")]


def test_typed_references_resolve_by_form_and_unknown_ones_are_kept() -> None:
    batch_record(batch=batch(message("m1", "the contract")))
    msg = Message.objects.get(external_id="m1")
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Fix the roof")
    body = (
        f"[[{msg.public_id}]] [[{task.key}]] [[task:HOME-99]] "
        "[[message:msg_01J0000000000000000000000Z]] [[https://example.org/x]]"
    )
    note = note_create(title="Refs", body=body)
    assert _targets(note) == [
        ("message", msg.pk, msg.public_id),
        ("task", task.pk, "HOME-1"),
        ("task", None, "HOME-99"),
        ("message", None, "msg_01J0000000000000000000000Z"),
        ("url", None, "https://example.org/x"),
    ]
    labels = [target.label for _, target in note_links(note)]
    assert labels[:2] == [f"Alice: {msg.text}", "HOME-1 Fix the roof"]
    assert [target.exists for _, target in note_links(note)] == [True, True, False, False, True]


def test_renaming_a_person_or_a_note_keeps_every_link_even_after_the_body_is_saved() -> None:
    alice = person_create(name="Alice Walker")
    target = note_create(title="Budget")
    note = note_create(title="Trip", body="[[Alice Walker]] and [[Budget]]")
    person_rename(person_id=alice.pk, name="Alice Stone")
    note_update(public_id=target.public_id, revision=1, title="Money 2025")
    # the body still says the old names; saving it again keeps what they resolved to
    note = note_update(public_id=note.public_id, revision=1, body=note.body + ".")
    assert _targets(note) == [
        ("person", alice.pk, "Alice Walker"),
        ("note", target.pk, "Budget"),
    ]
    assert [b.note_id for b in backlinks(f"person:{alice.pk}")] == [note.public_id]


def test_a_deleted_target_leaves_its_links_unresolved_never_gone() -> None:
    batch_record(batch=batch(message("m1", "x")))
    msg = Message.objects.get(external_id="m1")
    bob = person_create(name="Bob")
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Roof")
    linked = note_create(title="Linked")
    note = note_create(title="Refs", body=f"[[{msg.public_id}]] [[Bob]] [[HOME-1]] [[Linked]]")
    assert [t[1] for t in _targets(note)] == [msg.pk, bob.pk, task.pk, linked.pk]
    message_purge(message_ids=[msg.pk])
    bob.delete()
    task_delete(key="HOME-1")
    note_delete(public_id=linked.public_id)
    assert _targets(note) == [
        ("message", None, msg.public_id),
        ("", None, "Bob"),  # a bare name waits for a name again
        ("task", None, "HOME-1"),
        ("", None, "Linked"),
    ]
    # and a new Bob picks the waiting link up
    bob2 = person_create(name="Bob")
    assert _targets(note)[1] == ("person", bob2.pk, "Bob")


def test_deleting_a_note_removes_its_own_links_and_taggings() -> None:
    bob = person_create(name="Bob")
    note = note_create(title="T", body="[[Bob]]")
    tag_add(target=tag_target(kind="note", key=note.public_id), name="work")
    assert Tagging.objects.filter(target_kind="note", target_id=note.pk).count() == 1
    note_delete(public_id=note.public_id)
    assert not Link.objects.filter(source_kind="note").exists()
    assert not Tagging.objects.filter(target_kind="note").exists()
    assert backlinks(f"person:{bob.pk}") == []
    with pytest.raises(NotFound):
        tag_target(kind="note", key=note.public_id)


# --- explicit links -------------------------------------------------------------------


def test_explicit_links_are_typed_kept_unresolved_and_only_removed_explicitly() -> None:
    bob = person_create(name="Bob")
    note = note_create(
        title="Decision",
        body="[[Bob]]",
        links=[LinkSpec(target=f"person:{bob.pk}", kind="decision", context="Bob decided")],
    )
    explicit = Link.objects.get(source_id=note.pk, origin="explicit")
    assert (explicit.kind, explicit.target_id, explicit.context) == (
        "decision",
        bob.pk,
        "Bob decided",
    )
    again = link_add(source=note.ref, target=f"person:{bob.pk}", kind="decision", context="new")
    assert again.pk == explicit.pk and again.context == "new"
    waiting = link_add(source=note.ref, target="meeting:mtg_01J0000000000000000000000Q")
    assert (waiting.target_kind, waiting.target_id) == ("meeting", None)
    with pytest.raises(Invalid, match="kind: one of"):
        link_add(source=note.ref, target=f"person:{bob.pk}", kind="blames")
    link_kind_add(name="blames")
    assert link_add(source=note.ref, target=f"person:{bob.pk}", kind="blames").kind == "blames"
    with pytest.raises(NotFound, match="source: note:note_"):
        link_add(source="note:note_01J0000000000000000000000Q", target=f"person:{bob.pk}")
    body_link = Link.objects.get(source_id=note.pk, origin="body")
    with pytest.raises(Invalid, match="written in the text of note"):
        link_remove(public_id=body_link.public_id)
    link_remove(public_id=waiting.public_id)
    assert not Link.objects.filter(pk=waiting.pk).exists()
    # a body save replaces body links and keeps explicit ones
    note_update(public_id=note.public_id, revision=1, body="nothing now")
    assert list(Link.objects.filter(source_id=note.pk).values_list("origin", flat=True)) == [
        "explicit",
        "explicit",
    ]


def test_a_body_link_keeps_its_id_while_its_target_stays() -> None:
    person_create(name="Bob")
    note = note_create(title="T", body="[[Bob]] once")
    first = Link.objects.get(source_id=note.pk).public_id
    note = note_update(public_id=note.public_id, revision=1, body="Now [[Bob]] twice [[Carol]]")
    assert Link.objects.filter(source_id=note.pk, target_key="Bob").get().public_id == first


# --- revisions, conflicts, limits -----------------------------------------------------


def test_every_save_is_a_revision_and_a_stale_revision_is_a_conflict_with_both_texts() -> None:
    note = note_create(title="Draft", body="one")
    tab_a = note_update(public_id=note.public_id, revision=1, body="two (tab A)")
    assert tab_a.revision == 2
    with pytest.raises(NoteConflict) as caught:
        note_update(public_id=note.public_id, revision=1, body="two (tab B)")
    conflict = caught.value
    assert (conflict.current_revision, conflict.current_body, conflict.body) == (
        2,
        "two (tab A)",
        "two (tab B)",
    )
    assert conflict.http_status == 409
    assert Note.objects.get(pk=note.pk).body == "two (tab A)"
    # a save that changes nothing is no revision
    same = note_update(public_id=note.public_id, revision=2, body="two (tab A)")
    assert same.revision == 2
    assert list(NoteRevision.objects.filter(note=note).values_list("number", "body")) == [
        (2, "two (tab A)"),
        (1, "one"),
    ]
    kinds = list(Change.objects.filter(target_kind="note").values_list("kind", flat=True))
    assert kinds == [ChangeKind.NOTE_CREATED, ChangeKind.NOTE_UPDATED]


def test_bad_input_gets_sentences() -> None:
    with pytest.raises(Invalid, match="title: a note needs a title"):
        note_create(title="  ")
    with pytest.raises(TooLarge, match="body: at most 1,000,000 characters"):
        note_create(title="Big", body="x" * 1_000_001)
    with pytest.raises(Invalid, match="author"):
        note_create(title="x", author="mallory")
    with pytest.raises(NotFound):
        note_update(public_id="note_nope", revision=1, body="x")


# --- folders --------------------------------------------------------------------------


def test_folders_are_a_tree_without_loops() -> None:
    clients = folder_ensure("Work/Clients")
    assert clients is not None and folder_path(clients) == "Work/Clients"
    assert folder_ensure("work/clients") == clients  # names regardless of case
    work = clients.parent
    assert work is not None
    with pytest.raises(Invalid, match="folder loop"):
        folder_move(folder_id=work.pk, parent_id=clients.pk)
    with pytest.raises(Invalid, match="cannot hold"):
        folder_ensure("Work/../etc")
    note = note_create(title="In clients", folder="Work/Clients")
    [root] = folder_tree()
    assert (root.path, root.children[0].path, root.children[0].notes) == ("Work", "Work/Clients", 1)
    assert folder_delete(folder_id=work.pk) == 1
    note.refresh_from_db()
    assert note.folder is None and not Folder.objects.exists()
