"""What the round trip asks both stores (the test's own, and the fresh one through
`wirecat shell` in a child process): counts of each kind, what each row says apart from
the ids a re-import gives anew, and the answers of some searches."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

from django.core.management import call_command

from archive.store.blobs import blob_open
from archive.store.models import (
    Account,
    Attachment,
    Chat,
    Identity,
    Message,
    MessageRevision,
    Person,
)
from archive.tags.models import Tag, Tagging
from meetings.models import (
    Calendar,
    Event,
    Meeting,
    MeetingLink,
    Participant,
    Segment,
    Transcript,
)
from notes.models import Folder, Link, Note, NoteRevision
from tasks.models import Project, Task, TaskMessage

MODELS = [
    Account,
    Chat,
    Identity,
    Person,
    Message,
    MessageRevision,
    Attachment,
    Tag,
    Tagging,
    Folder,
    Note,
    NoteRevision,
    Link,
    Calendar,
    Event,
    Meeting,
    MeetingLink,
    Participant,
    Transcript,
    Segment,
    Project,
    Task,
    TaskMessage,
]


def _search(*args: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command("search", *args, "--json", "--limit", "50", stdout=out)
    # One JSON object a line; a text may hold U+2028, which splitlines() would cut at.
    return [json.loads(line) for line in out.getvalue().split("\n") if line.strip()]


def _messages(query: str) -> list[tuple[str, str, str]]:
    return sorted((hit["text"], hit["chat"], hit["sender"]) for hit in _search(query))


def probe() -> dict[str, Any]:
    """The store's answers, as JSON would carry them (tuples become lists)."""
    attachment = Attachment.objects.get(file_name="photo.png")
    with blob_open(attachment.path or "") as handle:
        photo = handle.read().hex()
    found = {
        "counts": {model.__name__: model._default_manager.count() for model in MODELS},
        "messages": sorted(
            (
                m.account.provider,
                m.chat.external_id,
                m.chat.title,
                m.external_id,
                str(m.sender and m.sender.external_id),
                m.sent_at.isoformat(),
                str(m.edited_at),
                str(m.deleted_at),
                m.direction,
                m.text,
            )
            for m in Message.objects.select_related("account", "chat", "sender")
        ),
        "revisions": sorted(MessageRevision.objects.values_list("text", "message__text")),
        "reply": Message.objects.get(external_id="m4").reply_to.external_id,  # type: ignore[union-attr]
        "people": sorted(
            (i.external_id, i.person.name)  # type: ignore[union-attr]
            for i in Identity.objects.filter(person__isnull=False).select_related("person")
        ),
        "tags": sorted((t.tag.name, t.tag.colour, t.target_kind) for t in Tagging.objects.all()),
        "links": sorted(
            (link.origin, link.kind, link.target_kind, link.target_id is not None, link.context)
            for link in Link.objects.all()
        ),
        "notes": sorted(
            (n.public_id, n.title, n.revision, n.body, n.created_at.isoformat())
            for n in Note.objects.all()
        ),
        "note_revisions": sorted(
            (r.note.public_id, r.number, r.title, r.body, r.folder_path, r.created_at.isoformat())
            for r in NoteRevision.objects.select_related("note")
        ),
        "tasks": sorted(
            (
                t.key,
                t.project.archived,
                t.parent.key if t.parent else None,
                t.title,
                t.description,
                t.status,
                str(t.due),
                [p.name for p in t.assignees.all()],
                t.message_links.count(),
                list(t.events.filter(field="comment").values_list("new", flat=True)),
            )
            for t in Task.objects.select_related("project", "parent__project")
        ),
        "meetings": sorted(
            (m.title, m.start.isoformat(), m.end.isoformat(), m.calendar.name, m.calendar.key)
            for m in Meeting.objects.select_related("calendar")
        ),
        "meeting_links": sorted(MeetingLink.objects.values_list("kind", "actor")),
        "participants": sorted(Participant.objects.values_list("email", "name")),
        "segments": sorted(Segment.objects.values_list("text", "speaker")),
        "recordings": sorted(Transcript.objects.values_list("source_name", "recording__file_name")),
        "photo": photo,
        "search_alpha": _messages("alpha"),
        "search_letter": _messages("letter"),
        "search_odd": _messages("bold"),
        "search_zebra": _messages("zebra"),
        "notes_gutter": sorted(hit["title"] for hit in _search("gutter", "--notes")),
        "notes_tar": sorted(hit["title"] for hit in _search("tar", "--notes")),
        "meetings_shingles": sorted(hit["title"] for hit in _search("shingles", "--meetings")),
    }
    result: dict[str, Any] = json.loads(json.dumps(found))
    return result


def _public_id(kind: str, pk: int | None) -> str | None:
    if pk is None:
        return None
    model = Message if kind == "message" else Attachment
    return model.objects.filter(pk=pk).values_list("public_id", flat=True).first()


def public_ids() -> dict[str, Any]:
    """The public ids a re-import keeps, and what the references to them find: each
    message's and attachment's, each note link to one (the target's id, by its primary
    key), each task's message link."""
    found = {
        "messages": sorted(Message.objects.values_list("external_id", "public_id")),
        "attachments": sorted(Attachment.objects.values_list("message__external_id", "public_id")),
        "note_links": sorted(
            (link.target_kind, link.target_key, _public_id(link.target_kind, link.target_id))
            for link in Link.objects.filter(target_kind__in=["message", "attachment"])
        ),
        "task_messages": sorted(
            (t.task.key, t.message_public_id, t.message and t.message.public_id)
            for t in TaskMessage.objects.select_related("task__project", "message")
        ),
    }
    result: dict[str, Any] = json.loads(json.dumps(found))
    return result
