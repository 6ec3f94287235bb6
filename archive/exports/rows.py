"""The export's lines, kind by kind, read from the store in bounded pages: messages by
keyset pagination on their row id (a page's revisions and attachments in one query each),
everything else through `.iterator(chunk_size=…)`. Nothing here writes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from archive.exports.format import time_text
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
from notes.models import BUILTIN_KINDS, Link, LinkKind, Note, NoteRevision
from notes.services.folders import folder_paths
from tasks.models import Project, Task, TaskEvent

PAGE = 1_000
Row = dict[str, Any]


def accounts() -> Iterator[Row]:
    for account in Account.objects.select_related("owner_identity").order_by("pk").iterator(PAGE):
        owner = account.owner_identity
        yield {
            "id": account.pk,
            "provider": account.provider,
            "external_id": account.external_id,
            "name": account.name,
            "owner": None if owner is None else _identity(owner),
        }


def chats() -> Iterator[Row]:
    for chat in Chat.objects.order_by("pk").iterator(PAGE):
        yield {
            "id": chat.pk,
            "account": chat.account_id,
            "external_id": chat.external_id,
            "kind": chat.kind,
            "title": chat.title,
            "metadata": chat.provider_metadata or {},
        }


def _identity(identity: Identity) -> Row:
    return {
        "provider": identity.provider,
        "external_id": identity.external_id,
        "display_name": identity.display_name,
        "phone": identity.phone,
        "email": identity.email,
        "handle": identity.handle,
    }


def identities() -> Iterator[Row]:
    for identity in Identity.objects.order_by("pk").iterator(PAGE):
        yield {"id": identity.pk, **_identity(identity)}


_MESSAGE_FIELDS = (
    "pk",
    "public_id",
    "chat_id",
    "external_id",
    "sender__external_id",
    "sent_at",
    "date_estimated",
    "text",
    "kind",
    "direction",
    "reply_to__public_id",
    "reply_to_external_id",
    "edited_at",
    "deleted_at",
    "raw_json",
    "provider_metadata",
)


def messages(page: int = PAGE) -> Iterator[Row]:
    """Every message in row order with its earlier texts and its attachments (`file` names
    the bytes' file in the export, or is null when the store has none)."""
    last = 0
    while True:
        found = list(
            Message.objects.filter(pk__gt=last).order_by("pk").values(*_MESSAGE_FIELDS)[:page]
        )
        if not found:
            return
        last = found[-1]["pk"]
        ids = [row["pk"] for row in found]
        revisions: dict[int, list[Row]] = defaultdict(list)
        for revision in (
            MessageRevision.objects.filter(message_id__in=ids)
            .order_by("message_id", "recorded_at", "id")
            .values("message_id", "text", "edited_at")
        ):
            revisions[revision["message_id"]].append(
                {"text": revision["text"], "edited_at": time_text(revision["edited_at"])}
            )
        files: dict[int, list[Row]] = defaultdict(list)
        for attachment in Attachment.objects.filter(message_id__in=ids).order_by("id"):
            files[attachment.message_id].append(_attachment(attachment))
        for row in found:
            yield {
                "id": row["public_id"],
                "chat": row["chat_id"],
                "external_id": row["external_id"],
                "sender": row["sender__external_id"],
                "sent_at": time_text(row["sent_at"]),
                "date_estimated": row["date_estimated"],
                "text": row["text"],
                "kind": row["kind"],
                "direction": row["direction"],
                "reply_to": row["reply_to__public_id"],
                "reply_to_external_id": row["reply_to_external_id"],
                "edited_at": time_text(row["edited_at"]),
                "deleted_at": time_text(row["deleted_at"]),
                "revisions": revisions.get(row["pk"], []),
                "attachments": files.get(row["pk"], []),
                "metadata": row["provider_metadata"] or {},
                "raw_json": row["raw_json"],
            }


def _attachment(attachment: Attachment) -> Row:
    kept = bool(attachment.path and attachment.sha256)
    return {
        "id": attachment.public_id,
        "external_id": attachment.external_id,
        "file_name": attachment.file_name,
        "mime_type": attachment.mime_type,
        "size": attachment.size,
        "sha256": attachment.sha256,
        "file": f"attachments/{attachment.sha256}" if kept else None,
        "metadata": attachment.provider_metadata or {},
    }


def people() -> Iterator[Row]:
    linked: dict[int, list[list[str]]] = defaultdict(list)
    for person_id, provider, external_id in (
        Identity.objects.filter(person__isnull=False)
        .order_by("pk")
        .values_list("person_id", "provider", "external_id")
        .iterator(PAGE)
    ):
        linked[person_id].append([provider, external_id])
    for person in Person.objects.order_by("pk").iterator(PAGE):
        yield {
            "id": person.pk,
            "name": person.name,
            "is_owner": person.is_owner,
            "identities": linked.get(person.pk, []),
        }


def tags() -> Iterator[Row]:
    """Each tag with what it is on, one line per tagging (`tag` null on a tag's own line)."""
    for tag in Tag.objects.order_by("pk").iterator(PAGE):
        yield {"tag": tag.name, "colour": tag.colour, "on": None, "actor": None}
    for tagging in Tagging.objects.select_related("tag").order_by("pk").iterator(PAGE):
        yield {
            "tag": tagging.tag.name,
            "colour": None,
            "on": target(tagging.target_kind, tagging.target_id, ""),
            "actor": tagging.actor,
        }


def folders() -> Iterator[Row]:
    for pk, path in sorted(folder_paths().items()):
        yield {"id": pk, "path": path}


def link_kinds() -> Iterator[Row]:
    """The kinds of link the owner added to the vocabulary (a note's `kind::` lines and
    links made by hand name them)."""
    for kind in (
        LinkKind.objects.exclude(name__in=list(BUILTIN_KINDS)).order_by("pk").iterator(PAGE)
    ):
        yield {"name": kind.name, "description": kind.description}


def notes() -> Iterator[Row]:
    for note in Note.objects.select_related("folder").order_by("pk").iterator(PAGE):
        revisions = [
            {
                "number": revision.number,
                "title": revision.title,
                "body": revision.body,
                "folder": revision.folder_path,
                "author": revision.author,
                "created_at": time_text(revision.created_at),
            }
            for revision in NoteRevision.objects.filter(note=note).order_by("number")
        ]
        yield {
            "id": note.public_id,
            "title": note.title,
            "aliases": note.aliases,
            "author": note.author,
            "revision": note.revision,
            "created_at": time_text(note.created_at),
            "updated_at": time_text(note.updated_at),
            "revisions": revisions,
        }


def links() -> Iterator[Row]:
    """The links made by hand (a body's own links are read again from its text)."""
    for link in Link.objects.filter(origin=Link.Origin.EXPLICIT).order_by("pk").iterator(PAGE):
        yield {
            "id": link.public_id,
            "source": target(link.source_kind, link.source_id, ""),
            "target": target(link.target_kind, link.target_id, link.target_key),
            "kind": link.kind,
            "context": link.context,
            "actor": link.actor,
            "created_at": time_text(link.created_at),
        }


def target(kind: str, pk: int | None, key: str) -> Row:
    """A thing a tag or link is on: its reference (`kind:key`, public ids where they exist)
    and, for what a re-import numbers anew, the keys that find it again."""
    if pk is None:
        return {"ref": f"{kind}:{key}"}
    if kind == "message":
        found = Message.objects.filter(pk=pk).values("public_id", "chat_id", "external_id").first()
        if found is None:
            return {"ref": f"{kind}:{key}"}
        return {
            "ref": f"message:{found['public_id']}",
            "chat": found["chat_id"],
            "external_id": found["external_id"],
        }
    if kind == "attachment":
        attachment = Attachment.objects.filter(pk=pk).select_related("message").first()
        if attachment is None:
            return {"ref": f"{kind}:{key}"}
        return {
            "ref": f"attachment:{attachment.public_id}",
            "chat": attachment.message.chat_id,
            "message_external_id": attachment.message.external_id,
            "external_id": attachment.external_id,
        }
    if kind == "note":
        return {"ref": f"note:{Note.objects.get(pk=pk).public_id}"}
    if kind == "task":
        return {"ref": f"task:{Task.objects.select_related('project').get(pk=pk).key}"}
    if kind == "meeting":
        meeting = Meeting.objects.select_related("event").get(pk=pk)
        return {"ref": f"meeting:{meeting.public_id}", **_meeting_key(meeting)}
    return {"ref": f"{kind}:{pk}"}  # a chat or a person: its id in chats/people


def _meeting_key(meeting: Meeting) -> Row:
    return {
        "calendar": meeting.calendar.public_id,
        "uid": meeting.event.uid if meeting.event else "",
        "recurrence_id": time_text(meeting.recurrence_id),
        "start": time_text(meeting.start),
    }


def projects() -> Iterator[Row]:
    for project in Project.objects.order_by("pk").iterator(PAGE):
        yield {
            "key": project.key,
            "name": project.name,
            "description": project.description,
            "archived": project.archived,
            "next_number": project.next_number,
        }


def tasks() -> Iterator[Row]:
    found = Task.objects.select_related("project", "parent__project").order_by(
        "project__key", "number"
    )
    for task in found.iterator(PAGE):
        yield {
            "key": task.key,
            "project": task.project.key,
            "number": task.number,
            "title": task.title,
            "description": task.description,
            "status": task.status,
            "priority": task.priority,
            "due": task.due.isoformat() if task.due else None,
            "assignees": sorted(task.assignees.values_list("pk", flat=True)),
            "owner_assigned": task.owner_assigned,
            "parent": task.parent.key if task.parent else None,
            "messages": [
                _task_message(public_id, message_id)
                for public_id, message_id in task.message_links.order_by("pk").values_list(
                    "message_public_id", "message_id"
                )
            ],
            "created_at": time_text(task.created_at),
            "updated_at": time_text(task.updated_at),
            "events": [
                {
                    "field": event.field,
                    "old": event.old,
                    "new": event.new,
                    "actor": event.actor,
                    "at": time_text(event.at),
                }
                for event in TaskEvent.objects.filter(task=task).order_by("at", "pk")
            ],
        }


def _task_message(public_id: str, message_id: int | None) -> Row:
    if message_id is None:
        return {"ref": f"message:{public_id}"}
    return target("message", message_id, public_id)


def calendars() -> Iterator[Row]:
    for calendar in Calendar.objects.order_by("pk").iterator(PAGE):
        yield {
            "id": calendar.public_id,
            "kind": calendar.kind,
            "key": calendar.key,
            "name": calendar.name,
            "time_zone": calendar.time_zone,
        }


def _participants(meeting: Meeting) -> list[Row]:
    return [
        {"email": p.email, "name": p.name, "response": p.response, "role": p.role}
        for p in Participant.objects.filter(meeting=meeting).order_by("pk")
    ]


def events() -> Iterator[Row]:
    """Each calendar event with its meetings (occurrences) and their participants."""
    for event in Event.objects.select_related("calendar").order_by("pk").iterator(PAGE):
        meetings = [
            {
                "id": meeting.public_id,
                "recurrence_id": time_text(meeting.recurrence_id),
                "start": time_text(meeting.start),
                "end": time_text(meeting.end),
                "all_day": meeting.all_day,
                "time_zone": meeting.time_zone,
                "status": meeting.status,
                "moved": meeting.moved,
                "title": meeting.title,
                "description": meeting.description,
                "location": meeting.location,
                "join_url": meeting.join_url,
                "participants": _participants(meeting),
                "links": [
                    {"target": target(link.kind, link.target_id, ""), "actor": link.actor}
                    for link in MeetingLink.objects.filter(meeting=meeting).order_by("pk")
                ],
            }
            for meeting in Meeting.objects.filter(event=event).order_by("start", "pk")
        ]
        yield {
            "calendar": event.calendar.public_id,
            "uid": event.uid,
            "sequence": event.sequence,
            "title": event.title,
            "description": event.description,
            "location": event.location,
            "join_url": event.join_url,
            "time_zone": event.time_zone,
            "status": event.status,
            "rrule": event.rrule,
            "organizer": {"name": event.organizer_name, "email": event.organizer_email},
            "meetings": meetings,
        }


def transcripts() -> Iterator[Row]:
    found = Transcript.objects.select_related("meeting__calendar", "meeting__event")
    for transcript in found.order_by("pk").iterator(PAGE):
        meeting = transcript.meeting
        segments = [
            {"start_ms": s.start_ms, "end_ms": s.end_ms, "speaker": s.speaker, "text": s.text}
            for s in Segment.objects.filter(transcript=transcript).order_by("seq", "pk")
        ]
        yield {
            "meeting": {
                "ref": f"meeting:{meeting.public_id}",
                **_meeting_key(meeting),
                "title": meeting.title,
                "end": time_text(meeting.end),
            },
            "origin": transcript.origin,
            "kind": transcript.kind,
            "source_name": transcript.source_name,
            "agent": transcript.agent,
            "model": transcript.model,
            "language": transcript.language,
            "recording": (
                None
                if transcript.recording_id is None
                else target("attachment", transcript.recording_id, "")
            ),
            "segments": segments,
        }


# The line makers of each file (format.FILES names them all).
ROWS: dict[str, Callable[[], Iterator[Row]]] = {
    "accounts": accounts,
    "chats": chats,
    "identities": identities,
    "messages": messages,
    "people": people,
    "tags": tags,
    "folders": folders,
    "link_kinds": link_kinds,
    "notes": notes,
    "projects": projects,
    "tasks": tasks,
    "calendars": calendars,
    "events": events,
    "transcripts": transcripts,
    "links": links,
}
