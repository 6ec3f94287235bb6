"""Tags: the services (idempotent add/remove, rename, merge, delete, tag all results with
undo), cleanup when a target goes, and `tag:` in the query language."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from archive.search.compiler import compile_query
from archive.search.parser import parse
from archive.search.selectors import message_search
from archive.store.models import Chat, Identity, Message, Person
from archive.store.sink import batch_record, message_purge
from archive.tags import services as tags
from archive.tags.models import Tag, TagBulkState, Tagging
from archive.tags.selectors import tag_list, tag_names, tags_of
from archive.tags.services import tag_target
from tests.factories import batch, message
from wirecat.errors import Conflict, Invalid, NotFound


@pytest.fixture
def stored(db: None) -> dict[str, Message]:
    batch_record(
        batch=batch(
            message("1", "the train is late", sender="alice", minutes=0),
            message("2", "dinner at eight", sender="bob", minutes=1),
            message("3", "the train again", sender="bob", minutes=2, chat="chat-2"),
            message("4", "nothing much", sender="alice", minutes=3, chat="chat-2"),
        )
    )
    return {m.external_id: m for m in Message.objects.all()}


def target(stored: dict[str, Message], key: str) -> tags.TagTarget:
    return tag_target(kind="message", key=stored[key].public_id)


def found(query: str) -> set[str]:
    return {hit.message.external_id for hit in message_search(query=query).hits}


def test_add_and_remove_are_idempotent(stored: dict[str, Message]) -> None:
    first = tags.tag_add(target=target(stored, "1"), name="Urgent")
    again = tags.tag_add(target=target(stored, "1"), name="  urgent ")
    assert first.pk == again.pk and again.name == "Urgent"
    assert Tagging.objects.count() == 1
    assert tags.tag_remove(target=target(stored, "1"), name="URGENT") is True
    assert tags.tag_remove(target=target(stored, "1"), name="urgent") is False
    assert tags.tag_remove(target=target(stored, "1"), name="never-made") is False
    assert Tag.objects.count() == 1  # the tag stays, carried by nothing


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "tag name: empty"),
        ("   ", "tag name: empty"),
        ("x" * 65, "tag name: at most 64 characters"),
        ('say "hi"', 'tag name: no " or control characters'),
        ("bell\x07", 'tag name: no " or control characters'),
    ],
)
def test_bad_names_are_refused_clearly(stored: dict[str, Message], name: str, problem: str) -> None:
    with pytest.raises(Invalid, match=problem):
        tags.tag_add(target=target(stored, "1"), name=name)
    assert not Tag.objects.exists()


def test_targets_are_checked(stored: dict[str, Message]) -> None:
    with pytest.raises(Invalid, match="target kind: one of chat, person, message"):
        tag_target(kind="account", key="1")
    with pytest.raises(NotFound, match="message 'msg_nope' does not exist"):
        tag_target(kind="message", key="msg_nope")
    with pytest.raises(NotFound, match="chat 999 does not exist"):
        tag_target(kind="chat", key="999")
    with pytest.raises(Invalid, match="person: not an id"):
        tag_target(kind="person", key="../etc")


def test_rename_refuses_a_taken_name_and_merge_keeps_one_per_target(
    stored: dict[str, Message],
) -> None:
    both = target(stored, "1")
    tags.tag_add(target=both, name="todo")
    tags.tag_add(target=both, name="later")
    tags.tag_add(target=target(stored, "2"), name="later")
    with pytest.raises(Conflict, match="tag 'todo' already exists: merge 'later' into it"):
        tags.tag_rename(name="later", new_name="TODO")
    assert tags.tag_rename(name="todo", new_name="ToDo").name == "ToDo"  # case only
    merged = tags.tag_merge(name="later", into="todo")
    assert merged.name == "ToDo"
    assert set(Tag.objects.values_list("name", flat=True)) == {"ToDo"}
    assert Tagging.objects.filter(tag=merged).count() == 2  # message 1 once, message 2
    assert tags.tag_merge(name="later", into="todo").pk == merged.pk  # again: no-op
    with pytest.raises(Invalid, match="merged into itself"):
        tags.tag_merge(name="todo", into="TODO")
    assert tags.tag_delete(name="todo") == 2
    assert tags.tag_delete(name="todo") == 0
    assert not Tagging.objects.exists()


def test_taggings_go_with_their_target_in_the_same_statement(
    stored: dict[str, Message],
) -> None:
    chat = Chat.objects.get(external_id="chat-2")
    person = Person.objects.create(name="Alice Smith")
    for kind, key in (("message", stored["1"].public_id), ("chat", chat.pk), ("person", person.pk)):
        tags.tag_add(target=tag_target(kind=kind, key=key), name="keep")
    tags.tag_add(target=target(stored, "3"), name="keep")  # a message of chat-2
    message_purge(message_ids=[stored["1"].pk])
    assert not Tagging.objects.filter(target_kind="message", target_id=stored["1"].pk).exists()
    person.delete()
    chat.delete()  # and its messages, 3 among them
    assert not Tagging.objects.exists()
    with connection.cursor() as cursor:  # no orphan of any kind survives
        cursor.execute(
            "SELECT count(*) FROM archive_tagging AS g WHERE NOT EXISTS (SELECT 1 FROM"
            " archive_message AS m WHERE g.target_kind = 'message' AND m.id = g.target_id)"
            " AND NOT EXISTS (SELECT 1 FROM archive_chat AS c WHERE g.target_kind = 'chat'"
            " AND c.id = g.target_id) AND NOT EXISTS (SELECT 1 FROM archive_person AS p"
            " WHERE g.target_kind = 'person' AND p.id = g.target_id)"
        )
        assert cursor.fetchone()[0] == 0
    assert Identity.objects.filter(external_id="alice").exists()  # identities never go


def test_tag_search_finds_the_message_its_chat_or_its_senders_person(
    stored: dict[str, Message],
) -> None:
    tags.tag_add(target=target(stored, "2"), name="home")
    chat = Chat.objects.get(external_id="chat-2")
    tags.tag_add(target=tag_target(kind="chat", key=chat.pk), name="work")
    person = Person.objects.create(name="Alice Smith")
    Identity.objects.filter(external_id="alice").update(person=person)
    tags.tag_add(target=tag_target(kind="person", key=person.pk), name="friends")

    assert found("tag:home") == {"2"}
    assert found("tag:WORK") == {"3", "4"}
    assert found("tag:friends") == {"1", "4"}
    assert found("train tag:work") == {"3"}
    assert found("-tag:work") == {"1", "2"}
    assert found("tag:friends -tag:work") == {"1"}
    assert found("tag:nosuchtag") == set()
    hits = {h.message.external_id: h for h in message_search(query="tag:friends tag:work").hits}
    assert hits["4"].tagged == ("friends (person)", "work (chat)")


def test_tag_compiles_to_one_indexed_condition(stored: dict[str, Message]) -> None:
    compiled = compile_query(parse("tag:home"))
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN QUERY PLAN SELECT m.id FROM archive_message AS m WHERE " + compiled.where,
            compiled.params,
        )
        plan = " | ".join(row[-1] for row in cursor.fetchall())
    # three index probes joined by MULTI-INDEX OR: no table is scanned, messages included
    assert "MULTI-INDEX OR" in plan and "SEARCH g USING COVERING INDEX" in plan, plan
    assert "SCAN" not in plan, plan


def test_tag_all_results_then_undo_removes_exactly_what_it_added(
    stored: dict[str, Message], django_capture_on_commit_callbacks: Any
) -> None:
    tags.tag_add(target=target(stored, "1"), name="rail")  # there before the run
    bulk = tags.tag_bulk_create(query="train", name="rail")
    assert bulk.total == 2
    ran = tags.tag_bulk_run(bulk_id=bulk.pk)
    assert (ran.state, ran.added, ran.done) == (TagBulkState.DONE, 1, 2)
    assert found("tag:rail") == {"1", "3"}
    assert tags.tag_bulk_undo(bulk_id=bulk.pk) == 1
    assert found("tag:rail") == {"1"}  # the tagging made by hand stays
    assert tags.tag_bulk_undo(bulk_id=bulk.pk) == 0
    with pytest.raises(Invalid, match="query: empty"):
        tags.tag_bulk_create(query="  ", name="rail")


def test_tag_reads(stored: dict[str, Message]) -> None:
    tags.tag_add(target=target(stored, "1"), name="beta")
    tags.tag_add(target=target(stored, "2"), name="Alpha")
    tags.tag_add(target=tag_target(kind="chat", key=stored["1"].chat_id), name="alpha")
    assert [(c.tag.name, c.chats, c.people, c.messages) for c in tag_list()] == [
        ("Alpha", 1, 0, 1),
        ("beta", 0, 0, 1),
    ]
    assert tag_names(prefix="al") == ["Alpha"]
    on = tags_of("message", [stored["1"].pk, stored["2"].pk])
    assert [t.name for t in on[stored["1"].pk]] == ["beta"]
