"""The build outside the test's process: `wirecat conversations build` killed mid-way leaves
the old build current and whole; the Celery job builds what is due, one builder at a time;
and on a real worker an import's commit gets its chat built (the CONVERSATIONS_DUE effect)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from archive.conversations import jobs
from archive.conversations.models import (
    BuildState,
    Conversation,
    ConversationBuild,
    ConversationLink,
    ConversationState,
    Need,
)
from archive.conversations.selectors import chat_links
from archive.conversations.services.builds import builder_lock, conversations_build
from archive.store.models import Chat
from archive.store.sink import batch_record
from tests.archive.test_worker import celery_worker, wait_for_heartbeat
from tests.broker import queued
from tests.factories import batch, message

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
SENDERS = ("alice", "bob", "me")


def talk(count: int, *, chat: str = "chat-1") -> None:
    for start in range(0, count, 5_000):
        batch_record(
            batch=batch(
                *(
                    message(
                        str(n),
                        f"line {n}: who knows about topic {n % 11}?",
                        chat=chat,
                        sender=SENDERS[n % 3],
                        minutes=n,
                    )
                    for n in range(start + 1, min(count, start + 5_000) + 1)
                )
            )
        )


def test_a_killed_build_leaves_the_old_build_current_and_the_next_drops_its_remains(
    tmp_path: Path,
) -> None:
    total = 12_000
    talk(total)
    chat = Chat.objects.get()
    first = conversations_build(chat_id=chat.pk)
    before = list(chat_links(chat.pk))
    conversations = set(Conversation.objects.filter(build_id=first.build_id).values_list("pk"))
    assert len(before) == total
    env = {
        **os.environ,
        "WIRECAT_STATE_DIR": str(tmp_path),
        "WIRECAT_DB": connection.settings_dict["NAME"],  # the test database file
    }
    child = subprocess.Popen(
        [sys.executable, "manage.py", "conversations", "build", "--chat", str(chat.pk), "--full"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    # Killed once it has committed a slice of the new build, before it is done.
    deadline = time.monotonic() + 60
    writing = ConversationBuild.objects.filter(
        chat=chat, state=BuildState.WRITING, message_count__gt=0
    )
    while not writing.exists():
        assert child.poll() is None, child.communicate()[0].decode()
        assert time.monotonic() < deadline, "the child never committed a slice"
        time.sleep(0.002)  # polling the child's progress, not waiting for it
    child.send_signal(signal.SIGKILL)
    child.wait()
    remains = ConversationBuild.objects.get(chat=chat, state=BuildState.WRITING)
    assert 0 < remains.message_count < total
    assert ConversationLink.objects.filter(build_id=remains.pk).count() == remains.message_count
    # The old build is still the current one, whole.
    state = ConversationState.objects.get(chat=chat)
    assert state.current_id == first.build_id
    assert list(chat_links(chat.pk)) == before
    assert set(Conversation.objects.filter(build_id=first.build_id).values_list("pk")) == (
        conversations
    )
    assert ConversationLink.objects.filter(build_id=first.build_id).count() == total
    # The next build drops what the killed one left.
    again = conversations_build(chat_id=chat.pk, full=True)
    assert list(ConversationBuild.objects.filter(chat=chat).values_list("pk", flat=True)) == [
        again.build_id
    ]
    assert not ConversationLink.objects.filter(build_id=remains.pk).exists()
    assert not Conversation.objects.filter(build_id=remains.pk).exists()
    assert list(chat_links(chat.pk)) == before
    assert ConversationLink.objects.count() == total


def test_the_job_builds_what_is_due_and_says_so() -> None:
    talk(30)
    talk(20, chat="chat-2")
    said = jobs.conversations_build()
    assert said == "conversations: 2 chats built (50 messages), 0 waiting"
    assert set(ConversationState.objects.values_list("need", flat=True)) == {Need.NOTHING}
    assert jobs.conversations_build() == "conversations: 0 chats built (0 messages), 0 waiting"


def test_the_job_leaves_the_chats_to_a_builder_already_at_work() -> None:
    talk(10)
    with builder_lock(wait=False) as mine:
        assert mine
        assert jobs.conversations_build() == "conversations: another build is running"
    assert ConversationState.objects.get().current_id is None
    jobs.conversations_build()
    assert ConversationState.objects.get().current_id is not None


@pytest.mark.slow
def test_an_import_gets_its_chat_built_by_a_real_worker(tmp_path: Path, settings: Any) -> None:
    with celery_worker(settings.CELERY_BROKER_URL, tmp_path) as worker:
        wait_for_heartbeat(worker.pid, tmp_path)
        # The sink's commit asks for the job (CONVERSATIONS_DUE): nothing else is called.
        batch_record(
            batch=batch(
                message("1", "anyone know how to mount a usb disk?", minutes=0),
                message("2", "try sudo mount", sender="bob", minutes=1, reply_to_external_id="1"),
            )
        )
        chat = Chat.objects.get()
        deadline = time.monotonic() + 60
        while True:
            state = ConversationState.objects.get(chat=chat)
            if state.current_id is not None and state.need == Need.NOTHING:
                break
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)  # polling the worker's progress
    assert list(chat_links(chat.pk)) == [("1", "1"), ("2", "1")]


def _queued_builds(settings: Any) -> int:
    return queued(settings, "archive.jobs.conversations_build")


def test_an_import_s_many_batches_queue_one_build(settings: Any) -> None:
    if not settings.CELERY_BROKER_URL.startswith("sqla+sqlite:///"):
        pytest.fail("this test reads the embedded broker's file")
    before = _queued_builds(settings)
    for n in range(5):  # five committed batches, each asking for the build
        batch_record(batch=batch(message(str(n), f"line {n}", minutes=n)))
    assert _queued_builds(settings) == before + 1

    said = jobs.conversations_build()  # the queued run starts (here, in this process)
    assert said.startswith("conversations: 1 chat built (5 messages)")
    batch_record(batch=batch(message("9", "one more", minutes=9)))
    assert _queued_builds(settings) == before + 2  # an ask after the run started queues again
