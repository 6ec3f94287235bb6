"""The commands of search all and the meaning index: `wirecat embeddings refresh|status`
and `wirecat search --all`, on the real store and the real model."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from archive.conversations.services.builds import conversations_build
from archive.meaning.selectors import readiness
from archive.store.models import Chat
from archive.store.sink import batch_record
from notes.models import Note
from tests.factories import batch, message
from tests.search_all.test_api import archive_of_everything

pytestmark = pytest.mark.django_db(transaction=True)


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def _built_chat(external_id: str = "chat-1") -> Chat:
    batch_record(
        batch=batch(
            message("1", "I was running late to the meeting, the bus broke down", chat=external_id),
            message("2", "no worries, we started late", sender="bob", chat=external_id, minutes=5),
        )
    )
    chat = Chat.objects.get(external_id=external_id)
    conversations_build(chat_id=chat.pk)
    return chat


def test_refresh_embeds_a_built_chat_and_status_shows_it_ready() -> None:
    chat = _built_chat()
    before = _run("embeddings", "status")
    assert "not ready" in before and "1 due" in before

    printed = _run("embeddings", "refresh", "--chat", str(chat.pk), "--most", "100")
    assert "embedded" in printed and "1 sources cut" in printed
    ready = readiness().kinds["conversation"]
    assert ready.ready and ready.embedded == ready.chunks > 0

    status = _run("embeddings", "status")
    line = next(line for line in status.splitlines() if line.strip().startswith("conversation"))
    assert f"{ready.embedded} of" in line and line.endswith("ready") and "not ready" not in line
    assert status.splitlines()[0].endswith("— ready") and "(100%)" in status


def test_refresh_refuses_bad_input() -> None:
    with pytest.raises(CommandError, match="no chat"):
        _run("embeddings", "refresh", "--chat", "no such chat")
    with pytest.raises(CommandError, match="no chat"):
        _run("embeddings", "refresh", "--chat", "9" * 30)
    with pytest.raises(CommandError, match="--most"):
        _run("embeddings", "refresh", "--most", "0")
    with pytest.raises(CommandError, match="--most"):
        _run("embeddings", "refresh", "--most", "many")
    with pytest.raises(CommandError, match="--seconds"):
        _run("embeddings", "refresh", "--seconds", "-1")
    with pytest.raises(CommandError, match="--seconds"):
        _run("embeddings", "refresh", "--seconds", "nan")
    with pytest.raises(CommandError):
        _run("embeddings", "rebuild")


def test_search_all_prints_each_thing_then_the_counts_and_what_was_skipped() -> None:
    archive_of_everything()
    printed = _run("search", "--all", "--mode", "words", "plumber")
    note = Note.objects.get()
    assert f"note         words         Plumbing  note:{note.public_id}" in printed
    assert "Joe the plumber knows the old boiler." in printed
    kinds = {line.split()[0] for line in printed.splitlines() if line and not line[0].isspace()}
    assert {"message", "mail", "note", "meeting", "conversation", "file"} <= kinds
    assert "Found (words): message 3, mail 1, note 1, meeting 1, conversation 3, file 1" in printed
    assert "Skipped" not in printed

    narrowed = _run("search", "--all", "--kinds", "note,meeting", "plumber from:alice")
    # Notes have no from:, meetings do (a participant); meaning reads words only.
    assert "Found (hybrid): note 0, meeting 1" in narrowed
    assert "Skipped note: " in narrowed
    assert "Skipped meeting:meaning: meaning search reads words only" in narrowed


def test_search_keeps_its_messages_search_beside_all() -> None:
    batch_record(batch=batch(message("1", "the plumber comes on Friday")))
    printed = _run("search", "plumber")
    assert "the plumber comes on Friday" in printed and "Found" not in printed


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--all", "--mode", "fuzzy", "x"), "mode: one of words, meaning, hybrid"),
        (("--all", "--kinds", "messages", "x"), "kinds"),
        (("--all", "--limit", "0", "x"), "limit"),
        (("--all", "--sort", "newest", "x"), "--sort"),
        (("--all", '"unclosed'), "^"),
        (("--all",), "give a query"),
        (("--like", "note:note_01J0000000000000000000000", "x"), "only with --all"),
        (("--mode", "words", "x"), "only with --all"),
        (("--all", "--notes", "x"), "not allowed with"),
        (("--all", "--like", "chat:12"), "like"),
    ],
)
def test_search_all_refuses_bad_flags(args: tuple[str, ...], says: str) -> None:
    batch_record(batch=batch(message("1", "x marks the spot")))
    with pytest.raises(CommandError, match=re.escape(says)):
        _run("search", *args)
