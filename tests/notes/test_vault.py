"""The notes as an Obsidian-style vault on disk: `wirecat notes import DIR` and
`wirecat notes export DIR`. A real tree of Markdown files in tmp_path, the real store; the
round trip changes nothing, a re-import neither, and bad input is named, file by file, with
nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from archive.people.services import person_create
from archive.store.models import Change, Message
from archive.store.sink import batch_record
from archive.tags.models import Tag, Tagging
from archive.tags.services import tag_remove, tag_target
from notes import vault
from notes.models import Folder, Link, Note, NoteRevision
from notes.selectors import note_links
from notes.services.folders import folder_delete, folder_path
from notes.services.links import link_add, link_kind_add
from notes.services.notes import BODY_MAX, note_create, note_delete, note_update
from notes.vault import MARKER, inline_tags, safe_name, vault_export, vault_import
from tasks.services import project_create, task_create
from tests.factories import batch, message
from wirecat.errors import Conflict, Invalid

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
NOTE_ID = "note_01J0000000000000000000000A"
T0 = datetime(2024, 6, 1, 9, 0, tzinfo=UTC)


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def archive_things() -> tuple[Message, int, int]:
    """A message, a person (Alice Walker) and a task (HOME-1) for links to find."""
    batch_record(batch=batch(message("m1", "the contract is signed")))
    alice = person_create(name="Alice Walker")
    project_create(key="HOME", name="Home")
    task = task_create(project="HOME", title="Fix the roof")
    return Message.objects.get(external_id="m1"), alice.pk, task.pk


def obsidian_vault(root: Path, msg: Message) -> Path:
    """A vault as Obsidian leaves it: nested folders, aliases, tags in front matter and
    inline, links to people, notes, messages and tasks, unicode names, its own settings."""
    write(root, ".obsidian/app.json", "{}")
    write(root, ".obsidian/workspace.md", "# not a note")
    write(root, ".trash/Old.md", "# deleted in Obsidian")
    write(root, "attachments/pic.png", b"\x89PNG")
    (root / "Empty" / "Inner").mkdir(parents=True)
    write(root, "Empty/.DS_Store", b"\x00")
    write(
        root,
        "Home.md",
        "Met [[Alice Walker]] about [[HOME-1]]. The plan: [[Roadmap|our roadmap]].\n",
    )
    write(
        root,
        "Projects/Roadmap.md",
        "---\n"
        "aliases: Plan\n"
        'tags: [planning, "#q3"]\n'
        "created: 2024-01-02\n"
        "links:\n"
        f"  - target: message:{msg.public_id}\n"
        "    kind: about\n"
        "    context: the signed contract\n"
        "---\n"
        "# Roadmap\n\n"
        f"Started from [[{msg.public_id}]]. #work and `#notatag`\n"
        "```\n#nope\n```\n",
    )
    write(
        root,
        "Projects/Clients/Café Zoë.md",
        "---\ntags: clients, food\nupdated: 2024-03-04T05:06:07+02:00\n---\n"
        "Ask [[Bob]] (see [[Home]]). #menu/2024\n",
    )
    write(root, "日本語/メモ.md", "東京の[[Plan]] #日本\n")
    return root


def note(title: str) -> Note:
    return Note.objects.select_related("folder").get(title=title)


def tags(of: Note) -> set[str]:
    return set(
        Tagging.objects.filter(target_kind="note", target_id=of.pk).values_list(
            "tag__name", flat=True
        )
    )


def links(of: Note) -> list[tuple[str, str, int | None, str, str, str]]:
    return [
        (link.origin, link.target_kind, link.target_id, link.target_key, link.kind, link.context)
        for link, _ in note_links(of)
    ]


def all_links() -> dict[str, list[tuple[str, str, object, str, str, str]]]:
    """Every note's links by its public id; a note target by its public id too (another
    store gives it another primary key)."""
    ids = dict(Note.objects.values_list("pk", "public_id"))
    return {
        each.public_id: [
            (o, k, ids.get(t or 0) if k == "note" else t, key, kind, c)
            for o, k, t, key, kind, c in links(each)
        ]
        for each in Note.objects.all()
    }


def snapshot() -> dict[str, object]:
    """Everything an import could change, to compare before and after."""
    return {
        "notes": sorted(
            Note.objects.values_list(
                "public_id", "title", "body", "aliases", "folder_id", "revision", "updated_at"
            )
        ),
        "revisions": NoteRevision.objects.count(),
        "folders": sorted(Folder.objects.values_list("pk", "name", "parent_id")),
        "links": sorted(
            Link.objects.values_list(
                "public_id",
                "source_id",
                "target_kind",
                "target_id",
                "target_key",
                "kind",
                "context",
            )
        ),
        "tags": sorted(
            Tagging.objects.filter(target_kind="note").values_list("tag__name", "target_id")
        ),
    }


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (None) under `root`, by relative path."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        found[rel] = None if path.is_dir() else path.read_bytes()
    return found


# --- import -------------------------------------------------------------------------------


def test_an_obsidian_vault_becomes_notes_folders_tags_and_resolved_links(tmp_path: Path) -> None:
    msg, alice, task = archive_things()
    result = vault_import(obsidian_vault(tmp_path / "vault", msg))
    assert result.errors == []
    assert (result.created, result.updated, result.unchanged) == (4, 0, 0)
    assert result.skipped == {
        "hidden files and folders (.obsidian, .trash, …)": 3,
        "files that are not Markdown (.md)": 1,
    }
    paths = sorted(folder_path(f) for f in Folder.objects.all())
    # the empty folders are kept; a folder holding only attachments is not a note folder
    assert paths == ["Empty", "Empty/Inner", "Projects", "Projects/Clients", "日本語"]
    assert result.folders == 5
    assert not Note.objects.filter(title__in=["workspace", "Old"]).exists()

    home, roadmap, cafe, memo = note("Home"), note("Roadmap"), note("Café Zoë"), note("メモ")
    assert (folder_path(roadmap.folder), folder_path(cafe.folder)) == (
        "Projects",
        "Projects/Clients",
    )
    assert folder_path(memo.folder) == "日本語" and home.folder is None
    assert roadmap.aliases == ["Plan"]
    assert roadmap.created_at == datetime(2024, 1, 2, tzinfo=UTC) == roadmap.updated_at
    assert cafe.updated_at == datetime(2024, 3, 4, 3, 6, 7, tzinfo=UTC)
    assert tags(roadmap) == {"planning", "q3", "work"}  # not `#notatag` in code, nor `#nope`
    assert tags(cafe) == {"clients", "food", "menu/2024"}
    assert tags(memo) == {"日本"} and tags(home) == set()

    assert links(home) == [
        ("body", "person", alice, "Alice Walker", "mentions", links(home)[0][5]),
        ("body", "task", task, "HOME-1", "mentions", links(home)[1][5]),
        ("body", "note", roadmap.pk, "Roadmap", "mentions", "The plan: our roadmap."),
    ]
    assert links(roadmap) == [
        ("body", "message", msg.pk, msg.public_id, "mentions", links(roadmap)[0][5]),
        ("explicit", "message", msg.pk, msg.public_id, "about", "the signed contract"),
    ]
    assert [link[:4] for link in links(cafe)] == [
        ("body", "", None, "Bob"),  # names no one yet: kept, waiting
        ("body", "note", home.pk, "Home"),
    ]
    assert links(memo)[0][:3] == ("body", "note", roadmap.pk)  # by its alias
    # an import of history: in the feed, told to no webhook
    rows = Change.objects.filter(target_kind="note")
    assert rows.filter(kind="note.created").count() == 4
    assert rows.filter(kind="tag.added").count() == 7 and not rows.filter(quiet=False).exists()


def test_a_second_import_of_the_same_vault_changes_nothing(tmp_path: Path) -> None:
    msg, _, _ = archive_things()
    root = obsidian_vault(tmp_path / "vault", msg)
    assert vault_import(root).created == 4
    before = snapshot()
    again = vault_import(root)
    assert (again.created, again.updated, again.unchanged, again.folders) == (0, 0, 4, 0)
    assert again.errors == [] and snapshot() == before


def test_the_round_trip_changes_nothing_and_an_edited_file_is_one_revision(
    tmp_path: Path,
) -> None:
    msg, _, _ = archive_things()
    vault_import(obsidian_vault(tmp_path / "vault", msg))
    by_agent = note_create(title="Agent's", body="from a bot", author="agent:helper")
    link_add(source=by_agent.ref, target="url:https://example.org/a", kind="source")
    out = tmp_path / "out"
    exported = vault_export(out)
    assert (exported.notes, exported.folders, exported.written) == (5, 5, 5)
    before = snapshot()

    back = vault_import(out)
    assert back.errors == []
    assert (back.created, back.updated, back.unchanged, back.folders) == (0, 0, 5, 0)
    assert snapshot() == before  # same revisions, same updated_at, same links and tags
    again = vault_export(out)
    assert (again.written, again.unchanged, again.removed) == (0, 5, 0)

    text = (out / "Projects/Roadmap.md").read_text()
    (out / "Projects/Roadmap.md").write_text(text + "One more line.\n")
    edited = vault_import(out)
    assert (edited.created, edited.updated, edited.unchanged) == (0, 1, 4)
    roadmap = note("Roadmap")
    assert roadmap.revision == 2 and roadmap.body.endswith("One more line.\n")
    assert NoteRevision.objects.count() == before["revisions"] + 1  # type: ignore[operator]
    # the edit is in the store now: the next export writes the file again, losing nothing
    assert vault_export(out).written == 1


def test_a_fresh_store_gets_the_same_notes_and_exports_the_same_bytes(tmp_path: Path) -> None:
    msg, _, _ = archive_things()
    vault_import(obsidian_vault(tmp_path / "vault", msg))
    home, roadmap = note("Home"), note("Roadmap")
    # a typed link to a note written after it in the vault (Home.md comes first)
    note_update(
        public_id=home.public_id,
        revision=home.revision,
        body=home.body + f"Also [[note:{roadmap.public_id}]].\n",
    )
    for second, (title, folder) in enumerate(
        (("Same", "Projects"), ("same", "Projects"), ("a/b: c?", ""))
    ):
        note_create(title=title, body=title, folder=folder, created_at=T0.replace(second=second))
    first = tmp_path / "first"
    vault_export(first)
    assert (first / "Projects/Same.md").exists() and (first / "Projects/same (2).md").exists()
    assert (first / "a-b- c-.md").exists()
    before = all_links()

    for each in Note.objects.all():
        note_delete(public_id=each.public_id)
    for folder in Folder.objects.filter(parent=None):
        folder_delete(folder_id=folder.pk)
    Tag.objects.all().delete()
    result = vault_import(first)
    assert result.errors == [] and result.created == 7
    # the same links, the typed one to a note imported after its source included
    assert all_links() == before
    assert links(note("Home"))[-1][:4] == ("body", "note", note("Roadmap").pk, roadmap.public_id)
    second = tmp_path / "second"
    vault_export(second)
    assert tree(second) == tree(first)


def test_a_vault_without_ids_is_matched_by_folder_and_title_and_never_written_to(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    write(root, "Work/Ideas.md", "first\n")
    write(root, "Ideas.md", "top\n")
    before = tree(root)
    assert vault_import(root).created == 2
    (root / "Work/Ideas.md").write_text("second\n")
    result = vault_import(root)
    assert (result.created, result.updated, result.unchanged) == (0, 1, 1)
    assert Note.objects.get(folder__name="Work").body == "second\n"
    assert tree(root) == {**before, "Work/Ideas.md": b"second\n"}  # no id written into them


def test_a_tag_taken_off_in_wirecat_is_not_put_back_by_its_text(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "Trip.md", "Packing #todo #travel #" + "x" * 70 + "\n")
    vault_import(root)
    trip = note("Trip")
    assert tags(trip) == {"todo", "travel"}  # a `#word` too long for a tag is only text
    tag_remove(target=tag_target(kind="note", key=trip.public_id), name="todo")
    out = tmp_path / "out"
    vault_export(out)
    assert vault_import(out).unchanged == 1 and tags(trip) == {"travel"}
    # a `#tag` the text gains is put on the note
    path = out / "Trip.md"
    path.write_text(path.read_text() + "Then #beach\n")
    assert vault_import(out).updated == 1
    assert tags(trip) == {"travel", "beach"}


def test_a_file_of_a_note_changed_in_wirecat_since_its_export_is_refused(tmp_path: Path) -> None:
    made = note_create(title="Shared", body="one")
    out = tmp_path / "out"
    vault_export(out)
    later = datetime(2099, 1, 1, tzinfo=UTC)
    note_update(public_id=made.public_id, revision=1, body="two, in WireCat", updated_at=later)
    path = out / "Shared.md"
    path.write_text(path.read_text().replace("\none", "\none, in Obsidian"))
    result = vault_import(out)
    assert len(result.errors) == 1
    assert result.errors[0].startswith("Shared.md: note ")
    assert (
        "was changed in WireCat (2099-01-01T00:00:00Z) after this file was exported"
        in (result.errors[0])
    )
    assert note("Shared").body == "two, in WireCat"
    taken = vault_import(out, overwrite=True)
    assert taken.updated == 1 and note("Shared").body == "one, in Obsidian"
    assert list(NoteRevision.objects.filter(note=made).values_list("body", flat=True)) == [
        "one, in Obsidian",
        "two, in WireCat",
        "one",
    ]


# --- bad input ----------------------------------------------------------------------------

# YAML aliases nested nine deep: a list of 10^9 words if it were ever turned into text.
LAUGHS = (
    "---\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    + "author: *i\n---\n"
)

BAD = [
    ("broken.md", "---\ntitle: x\ntags: [a, b\n---\nbody\n", "not valid YAML (line 4:"),
    ("list.md", "---\n- a\n- b\n---\nbody\n", "the front matter is a list, not a mapping"),
    ("latin1.md", "caf\xe9 au lait".encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
    ("notnote.md", "---\nid: msg_01J0000000000000000000000A\n---\n", "is not a note id"),
    ("open.md", "---\ntitle: x\nbody without an end\n", "never closed"),
    ("big-front.md", "---\nx: '" + "a" * 70_000 + "'\n---\n", "larger than 64 KB"),
    ("long.md", "a" * (BODY_MAX + 1), "body: at most 1,000,000 characters"),
    ("huge.md", b"a" * (vault.FILE_BYTES_MAX + 1), "a note's file holds at most"),
    ("dates.md", "---\ncreated: someday\n---\n", "created: not a date and time"),
    ("kind.md", "---\nlinks: [{target: 'chat:1', kind: weird}]\n---\n", "kind 'weird'"),
    ("target.md", "---\nlinks: [{target: 'Alice'}]\n---\n", "links: target:"),
    ("tag.md", "---\ntags: ['" + "t" * 65 + "']\n---\n", "at most 64 characters"),
    ("bad:folder/x.md", "text", "bad:folder/: folder 'bad:folder': a folder's name cannot hold"),
    ("deep.md", "---\nx: " + "[" * 5000 + "\n---\n", "nested too deeply to read"),
    ("laughs.md", LAUGHS, "author: a line of text, not a list"),
]


@pytest.mark.parametrize(("name", "content", "expected"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_named_and_nothing_is_written(
    tmp_path: Path, name: str, content: str | bytes, expected: str
) -> None:
    root = tmp_path / "vault"
    write(root, "Good.md", "fine #tagged\n")
    write(root, "Folder/Also good.md", "fine too\n")
    write(root, name, content)
    result = vault_import(root)
    assert len(result.errors) == 1, result.errors
    assert result.errors[0].startswith(name.split("/")[0]), result.errors
    assert expected in result.errors[0], result.errors
    assert (result.created, result.updated, result.folders) == (0, 0, 0)
    assert not Note.objects.exists() and not Folder.objects.exists() and not Tag.objects.exists()


def test_two_files_with_one_id_refuse_the_vault_naming_both(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "A.md", f"---\nid: {NOTE_ID}\n---\none\n")
    write(root, "Sub/B.md", f"---\nid: {NOTE_ID}\n---\ntwo\n")
    write(root, "Twice.md", "x")
    write(root, "twice.md", "y")
    result = vault_import(root)
    assert result.errors == [
        f"A.md and Sub/B.md: two files with the id {NOTE_ID}; keep one",
        "Twice.md and twice.md: two files for one note ('twice' at the top); keep one",
    ]
    assert not Note.objects.exists()


def test_more_files_than_the_bound_are_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("notes.vault.walking.FILES_MAX", 3)
    root = tmp_path / "vault"
    for name in "abcd":
        write(root, f"{name}.md", name)
    result = vault_import(root)
    assert result.errors == [f"{root.resolve()}: more than 3 Markdown files (the last read: d.md)"]
    assert not Note.objects.exists()


def test_a_file_changed_while_it_is_imported_rolls_the_whole_import_back(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "A.md", "a")
    write(root, "B.md", "b")

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 1:  # A is about to be written, B read already
            (root / "B.md").write_text("b, changed by another program")

    result = vault_import(root, progress=progress)
    assert result.errors == ["B.md: changed while it was imported; import again"]
    assert result.stopped and result.created == 0 and not Note.objects.exists()


def test_an_import_stopped_between_batches_keeps_them_and_finishes_when_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("notes.vault.importing.BATCH", 1)
    root = tmp_path / "vault"
    write(root, "A.md", "a [[B]]")
    write(root, "B.md", "b")

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "write" and done == 2:  # A committed in its own batch
            (root / "B.md").write_text("b, changed by another program")

    stopped = vault_import(root, progress=progress)
    assert stopped.stopped and stopped.errors == [
        "B.md: changed while it was imported; import again"
    ]
    assert (stopped.created, stopped.updated) == (1, 0)
    assert list(Note.objects.values_list("title", flat=True)) == ["A"]
    again = vault_import(root)
    assert (again.created, again.updated, again.unchanged, again.errors) == (1, 0, 1, [])
    assert links(note("A"))[0][1:3] == ("note", note("B").pk)  # resolved when B came


def test_symbolic_links_are_never_followed_out_of_the_vault(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "Secret.md", "---\ntags: [secret]\n---\nnot in the vault\n")
    root = tmp_path / "vault"
    write(root, "Inside.md", "in the vault")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "Secret.md").symlink_to(outside / "Secret.md")
    (root / "Loop").symlink_to(root, target_is_directory=True)
    result = vault_import(root)
    assert result.errors == [] and result.created == 1
    assert result.skipped == {"symbolic links (never followed)": 3}
    assert list(Note.objects.values_list("title", flat=True)) == ["Inside"]
    assert not Tag.objects.exists()


# --- export -------------------------------------------------------------------------------


def test_file_names_are_safe_everywhere_and_titles_come_back_whole(tmp_path: Path) -> None:
    assert safe_name('a/b\\c:d*e?f"g<h>i|j\x07') == "a-b-c-d-e-f-g-h-i-j-"
    assert safe_name("CON") == "_CON" and safe_name("nul.txt") == "_nul.txt"
    assert safe_name("...hidden") == "hidden" and safe_name("ends. ") == "ends"
    assert safe_name("") == safe_name("...") == "Untitled"
    long = safe_name("é" * 300)
    assert len(long.encode()) <= vault.NAME_BYTES_MAX
    titles = ["CON", ".profile", "x" * 300, "Ünïcode ✓", "Same", "same", "Same"]
    for second, title in enumerate(titles):
        note_create(title=title, body=f"{title[:20]}\n", created_at=T0.replace(second=second))
    out = tmp_path / "out"
    vault_export(out)
    names = sorted(p.name for p in out.glob("*.md"))
    expected = ["_CON.md", "profile.md", "x" * 120 + ".md", "Ünïcode ✓.md"]
    assert names == sorted([*expected, "Same.md", "same (2).md", "Same (3).md"])
    assert "title: .profile" in (out / "profile.md").read_text()
    assert "\ntitle:" not in (out / "Same.md").read_text()
    before = snapshot()
    assert vault_import(out).unchanged == len(titles) and snapshot() == before


def test_export_refuses_a_folder_it_did_not_make_and_files_changed_since(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    write(busy, "mine.txt", "the owner's")
    with pytest.raises(Invalid, match=r"busy is not empty and is not a WireCat export"):
        vault_export(busy)
    assert sorted(p.name for p in busy.iterdir()) == ["mine.txt"]

    kept = note_create(title="Kept", body="kept", folder="Box")
    gone = note_create(title="Gone", body="gone", folder="Old")
    out = tmp_path / "out"
    vault_export(out)
    write(out, ".obsidian/app.json", "{}")
    write(out, "Mine.md", "written by the owner in Obsidian")
    note_delete(public_id=gone.public_id)
    folder_delete(folder_id=Folder.objects.get(name="Old").pk)
    note_update(public_id=kept.public_id, revision=1, title="Kept renamed")
    again = vault_export(out)
    assert (again.written, again.removed) == (1, 2)
    assert sorted(rel for rel in tree(out) if not rel.startswith(".obsidian/")) == [
        ".obsidian",
        MARKER,
        "Box",
        "Box/Kept renamed.md",
        "Mine.md",
    ]
    assert not list(out.rglob(".wirecat-*.tmp"))

    (out / "Box/Kept renamed.md").write_text("edited in Obsidian, not imported yet")
    write(out, "Box/Other.md", "the owner's own")
    note_create(title="Other", folder="Box")
    before = tree(out)
    with pytest.raises(Conflict) as refused:
        vault_export(out)
    assert "Box/Kept renamed.md: changed since the last export" in str(refused.value)
    assert "Box/Other.md: not written by WireCat" in str(refused.value)
    assert tree(out) == before


def test_a_symbolic_link_in_an_export_is_never_written_through(tmp_path: Path) -> None:
    note_create(title="Inside", folder="Box")
    out = tmp_path / "out"
    vault_export(out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "Box/Inside.md").unlink()
    (out / "Box").rmdir()
    (out / "Box").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(Conflict, match="is a symbolic link; an export never writes through"):
        vault_export(out)
    assert list(elsewhere.iterdir()) == []


def test_inline_tags_are_read_as_obsidian_reads_them() -> None:
    body = (
        "# Heading #inheading\n"
        "#start and #two-words, #nested/tag/ x#no (#no) #123 #a1\n"
        "`#code` [[Note#section]] [[#anchor]]\n"
        "```\n#fenced\n```\n"
        "    #indented\n"
        "- item #listed\n"
    )
    assert inline_tags(body) == [
        "inheading",
        "start",
        "two-words",
        "nested/tag",
        "a1",
        "listed",
    ]


# --- the command --------------------------------------------------------------------------


def test_the_command_imports_exports_and_says_what_is_wrong(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write(root, "Note.md", "text #tag\n")
    out = StringIO()
    call_command("notes", "import", str(root), stdout=out, stderr=StringIO())
    assert f"{root}: notes created 1, updated 0, unchanged 0; folders made 0" in out.getvalue()
    out = StringIO()
    call_command("notes", "export", str(tmp_path / "out"), stdout=out, stderr=StringIO())
    assert "notes 1, folders 0; files written 1, unchanged 0, removed 0" in out.getvalue()

    write(root, "Broken.md", "---\n[unclosed\n---\n")
    out = StringIO()
    with pytest.raises(CommandError, match="nothing was imported; fix the files named above"):
        call_command("notes", "import", str(root), stdout=out, stderr=StringIO())
    assert "error: Broken.md: the front matter is not valid YAML (line 3:" in out.getvalue()
    with pytest.raises(CommandError, match="no such folder"):
        call_command("notes", "import", str(tmp_path / "nowhere"), stdout=StringIO())


def test_the_wirecat_script_carries_a_vault_into_a_fresh_store_byte_for_byte(
    tmp_path: Path,
) -> None:
    """Export here, then import into a store that never saw these notes (another state
    folder, migrated from nothing) and export again: the same bytes, and the owner's link
    kind travels with the vault."""
    msg, _, _ = archive_things()
    link_kind_add(name="blocker", description="Stands in the way.")
    vault_import(obsidian_vault(tmp_path / "vault", msg))
    roadmap = note("Roadmap")
    link_add(source=roadmap.ref, target="task:HOME-1", kind="blocker", context="the roof first")
    note_update(
        public_id=roadmap.public_id,
        revision=roadmap.revision,
        body=roadmap.body + "blocker:: [[HOME-1]]\n",
    )
    first = tmp_path / "first"
    vault_export(first)

    env = {**os.environ, "WIRECAT_STATE_DIR": str(tmp_path / "fresh")}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    script = Path(sys.executable).parent / "wirecat"

    def wirecat(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )

    assert wirecat("migrate", "-v0").returncode == 0
    imported = wirecat("notes", "import", str(first))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip().endswith(
        f"{first}: notes created 4, updated 0, unchanged 0; folders made 5"
    )
    second = tmp_path / "second"
    exported = wirecat("notes", "export", str(second))
    assert exported.returncode == 0, exported.stderr
    assert tree(second) == tree(first)
    refused = wirecat("notes", "export", str(tmp_path / "vault"))
    assert refused.returncode == 1
    assert "is not empty and is not a WireCat export" in refused.stderr
    assert "Traceback" not in refused.stderr
