"""`wirecat export` and its re-import: a store made through the real sink and services is
exported, imported by the real `wirecat import` into a second, fresh state folder (its own
database and blob store, in a child process), and asked the same questions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from archive.connectors.base import file_opener
from archive.people.services import person_create
from archive.store.domain import (
    AccountRecord,
    AttachmentRecord,
    Batch,
    ChatRecord,
    DeletionRecord,
    IdentityRecord,
    MessageRecord,
)
from archive.store.models import Chat, Identity, Message
from archive.store.sink import batch_record
from archive.store.staging import message_staged
from archive.tags.services import TagTarget, tag_add
from meetings.domain import (
    CalendarRead,
    EventRecord,
    OccurrenceRecord,
    ParticipantRecord,
    SegmentRecord,
    TranscriptRead,
)
from meetings.models import Meeting
from meetings.services.calendars import calendar_store
from meetings.services.links import meeting_link
from meetings.services.transcripts import transcript_store
from notes.services.links import link_add, link_kind_add
from notes.services.notes import note_create, note_update
from tasks.services import (
    project_create,
    project_update,
    task_comment,
    task_create,
    task_delete,
)
from tests.exports.probe import probe, public_ids
from tests.factories import T0, batch, message

ROOT = Path(__file__).resolve().parents[2]
ODD = 'two\nlines, <b>bold</b> & "quotes" \u00fcn\u00efc\u00f8d\u00e9 \U0001f408 \u2028end'
OTHER = AccountRecord(
    provider="othernet",
    external_id="acct-2",
    name="Other account",
    owner=IdentityRecord(external_id="me2", display_name="Owner Elsewhere"),
)
PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def wirecat(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real `wirecat` command on the state folder `state` (its own database)."""
    env = {**os.environ, "WIRECAT_STATE_DIR": str(state)}
    for name in ("WIRECAT_TEST_DB", "WIRECAT_DB", "DJANGO_SETTINGS_MODULE"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "wirecat", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _store(tmp_path: Path) -> None:
    """Two accounts' messages (an edited one, a deleted one, a reply, an attachment with its
    bytes, odd text), a linked person, tags, notes with revisions and links, a meeting
    with a transcript, a task."""
    photo = tmp_path / "photo.png"
    photo.write_bytes(PHOTO)
    with_photo = message(
        "m1",
        "alpha budget plan for the roof",
        attachments=(
            AttachmentRecord(
                external_id="f1",
                file_name="photo.png",
                mime_type="image/png",
                content=file_opener(photo),
            ),
        ),
    )
    staged, _ = message_staged(with_photo)
    batch_record(
        batch=batch(
            staged,
            message("m2", "first draft of the letter", minutes=1),
            message("m3", "this will be deleted", minutes=2),
            message("m4", "a reply to alpha", minutes=3, reply_to_external_id="m1"),
            message("m5", "sent by me", minutes=4, sender="me", direction="out"),
        )
    )
    edited = message("m2", "final letter, corrected", minutes=1, edited_at=T0 + timedelta(hours=1))
    batch_record(batch=batch(edited))
    batch_record(
        batch=replace(
            batch(),
            deletions=(
                DeletionRecord(
                    chat_external_id="chat-1", external_id="m3", deleted_at=T0 + timedelta(hours=2)
                ),
            ),
        )
    )
    batch_record(
        batch=Batch(
            account=OTHER,
            chats=(ChatRecord(external_id="room", kind="dm", title="Odd <room> & co"),),
            identities=(IdentityRecord(external_id="carol", display_name="Carol \u00d6"),),
            messages=(
                MessageRecord(
                    chat_external_id="room",
                    external_id="x1",
                    sent_at=T0 + timedelta(days=1),
                    text=ODD,
                    sender_external_id="carol",
                ),
                MessageRecord(
                    chat_external_id="room",
                    external_id="x2",
                    sent_at=T0 + timedelta(days=1, minutes=1),
                    text="zebra crossing at noon",
                    sender_external_id="carol",
                ),
            ),
        )
    )
    alice = Identity.objects.get(provider="testnet", external_id="alice")
    person = person_create(name="Alice Walker", identity_ids=[alice.pk])
    m1 = Message.objects.get(external_id="m1")
    chat = Chat.objects.get(external_id="room")
    tag_add(target=TagTarget("message", m1.pk), name="roof")
    tag_add(target=TagTarget("chat", chat.pk), name="odd")
    tag_add(target=TagTarget("person", person.pk), name="family")

    project_create(key="HOME", name="Home")
    task = task_create(
        project="HOME",
        title="Fix the roof",
        description="Ask [[Alice Walker]]",
        assignees=[person.pk],
        messages=[m1.public_id],
        due="2024-04-01",
    )
    task_comment(key=task.key, text="the ladder is in the shed")
    gone = task_create(project="HOME", title="A task deleted since")
    task_create(project="HOME", title="Buy nails", parent=task.key, status="in_progress")
    task_delete(key=gone.key)  # HOME-2: its number stays used
    project_create(key="OLD", name="Old house")
    task_create(project="OLD", title="Sold", status="done")
    project_update(key="OLD", archived=True)
    link_kind_add(name="decision", description="what was decided")

    plan = note_create(
        title="Roof plan",
        body="Talk to [[Alice Walker]] about the gutter.\n",
        folder="Home/Repairs",
        created_at=T0,
        updated_at=T0,
    )
    note_update(
        public_id=plan.public_id,
        revision=plan.revision,
        body="Talk to [[Alice Walker]] about the gutter and the [[Shopping]] list.\n"
        "decision:: [[HOME-1]]\n",
        updated_at=T0 + timedelta(days=1),
    )
    photo_ref = f"attachment:{m1.attachments.get().public_id}"
    shopping = note_create(
        title="Shopping",
        body=f"nails, tar, {ODD}\nas in [[message:{m1.public_id}]], see [[{photo_ref}]]\n",
    )
    tag_add(target=TagTarget("note", shopping.pk), name="roof")
    link_add(source=plan.ref, target=f"message:{m1.public_id}", context="the photo")
    link_add(source=plan.ref, target=f"chat:{chat.pk}")

    start = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
    calendar_store(
        kind="file",
        key="work.ics",
        name="Work",
        read=CalendarRead(
            events=(
                EventRecord(
                    uid="standup-1",
                    title="Roof standup",
                    organizer=ParticipantRecord(email="alice@example.org", name="Alice"),
                    occurrences=(
                        OccurrenceRecord(
                            recurrence_id=start,
                            start=start,
                            end=start + timedelta(minutes=30),
                            title="Roof standup",
                            participants=(
                                ParticipantRecord(email="alice@example.org", name="Alice"),
                            ),
                        ),
                    ),
                ),
            )
        ),
    )
    meeting = Meeting.objects.get(event__uid="standup-1")
    transcript_store(
        read=TranscriptRead(
            kind="vtt",
            segments=(
                SegmentRecord(0, 4_000, "the shingles need replacing", "Alice"),
                SegmentRecord(4_000, 9_000, "order them by friday", "Owner"),
            ),
        ),
        source_name="standup.vtt",
        meeting=meeting,
        recording=m1.attachments.get(),
    )
    link_add(source=plan.ref, target=f"meeting:{meeting.public_id}")
    meeting_link(meeting=meeting, kind="task", target_id=task.pk)
    meeting_link(meeting=meeting, kind="message", target_id=m1.pk, actor="agent:scribe")


def _probe(state: Path, name: str = "probe") -> dict[str, Any]:
    code = f"import json; from tests.exports.probe import {name}; print(json.dumps({name}()))"
    ran = wirecat(state, "shell", "-c", code)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return dict(json.loads(ran.stdout.strip().splitlines()[-1]))


@pytest.mark.django_db(transaction=True)
def test_an_export_imported_into_a_fresh_store_answers_the_same(tmp_path: Path) -> None:
    _store(tmp_path)
    before, ids_before = probe(), public_ids()
    dest = tmp_path / "export"
    out = StringIO()
    call_command("export", str(dest), stdout=out)
    assert "Exported to" in out.getvalue()
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["format"] == "wirecat-export" and manifest["version"] == 1
    assert manifest["counts"]["messages"] == 7 and manifest["counts"]["notes"] == 2
    assert manifest["attachments"] == 1
    sha = Message.objects.get(external_id="m1").attachments.get().sha256
    assert (dest / "attachments" / sha).read_bytes() == PHOTO

    fresh = tmp_path / "fresh"
    migrated = wirecat(fresh, "migrate", "-v0")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    imported = wirecat(fresh, "import", str(dest))
    assert imported.returncode == 0, imported.stderr[-3000:] + imported.stdout
    assert "WireCat export imported" in imported.stdout
    after = _probe(fresh)
    ids_after = _probe(fresh, "public_ids")

    assert after["counts"] == before["counts"]
    assert after == before
    deleted = [row[3] for row in after["messages"] if row[7] != "None"]
    assert deleted == ["m3"]
    assert after["revisions"] == [["first draft of the letter", "final letter, corrected"]]
    assert [row[9] for row in after["messages"] if row[3] == "x1"] == [ODD]
    assert after["photo"] == PHOTO.hex()
    assert after["search_alpha"] and after["notes_gutter"] == ["Roof plan"]
    assert after["meetings_shingles"] == ["Roof standup"]
    assert [task[0] for task in after["tasks"]] == ["HOME-1", "HOME-3", "OLD-1"]
    assert ["body", "decision", "task", True, "HOME-1"] in after["links"]
    assert after["recordings"] == [["standup.vtt", "photo.png"]]

    # Messages and attachments keep their public ids, so what names them still finds them.
    assert ids_after == ids_before
    m1 = dict(ids_after["messages"])["m1"]
    photo = dict(ids_after["attachments"])["m1"]
    assert len(ids_after["messages"]) == 7 and m1.startswith("msg_")
    resolved = {(kind, found) for kind, _key, found in ids_after["note_links"]}
    assert resolved == {("message", m1), ("attachment", photo)}
    assert ids_after["task_messages"] == [["HOME-1", m1, m1]]

    again = wirecat(fresh, "import", str(dest))  # idempotent: nothing changes
    assert again.returncode == 0, again.stderr[-3000:]
    assert "messages added 0, updated 0" in again.stdout
    assert _probe(fresh) == after
