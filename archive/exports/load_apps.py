"""The re-import of what the apps built on the store hold — tasks, notes, meetings, tags and
the links made by hand — each through its own services, each line in one transaction and
idempotent (what is already there is kept, not made twice). A line's `*_read` reads and
checks it (the check before anything is written runs them all); `*_write` writes it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db import transaction

from archive.exports.load import Ids, LoadDone, attachment_pk
from archive.exports.reader import Line
from archive.store.models import Attachment, Chat, Message, Person
from archive.tags.models import TagTargetKind
from archive.tags.services import TagTarget, tag_add, tag_colour_set
from meetings.domain import (
    CalendarRead,
    EventRecord,
    OccurrenceRecord,
    ParticipantRecord,
    SegmentRecord,
    TranscriptRead,
)
from meetings.models import Calendar, Meeting
from meetings.services.calendars import calendar_store
from meetings.services.links import meeting_link
from meetings.services.transcripts import transcript_store
from notes.models import Note
from notes.selectors import ref_parse
from notes.services.folders import folder_ensure
from notes.services.links import link_add, link_kind_add
from notes.services.notes import note_create, note_update
from notes.services.targets import Resolver
from tasks.models import Priority, Project, Status, Task
from tasks.services import (
    project_create,
    project_get,
    project_update,
    task_comment,
    task_create,
    task_delete,
    task_update,
)
from wirecat.errors import Invalid, WireCatError

# --- references: what a tag or a link is on -----------------------------------------------


def target_read(line: Line, name: str) -> Line:
    """The object `name` naming a thing by reference (`kind:key`)."""
    found = line.child(name)
    if found is None:
        raise line.fail(f"{name}: an object with a ref is required")
    return ref_checked(found)


def ref_checked(found: Line) -> Line:
    """`found`, its `ref` read as the notes read a typed reference (their kinds and keys)."""
    try:
        ref_parse(found.text("ref", required=True))
    except Invalid as exc:
        raise found.fail(str(exc)) from exc
    return found


def target_ref(found: Line, ids: Ids) -> str:
    """The reference in this store of what the export's reference names (a message, a chat,
    a person, an attachment, a meeting are numbered anew by a re-import), or the exported
    reference itself when the store does not hold it (a link kept unresolved)."""
    ref = found.text("ref")
    kind, _, key = ref.partition(":")
    pk: int | None = None
    if kind == "message" and "chat" in found.data:
        pk = ids.message_pk(found.integer("chat"), found.text("external_id"))
        if pk is not None:
            return f"message:{Message.objects.get(pk=pk).public_id}"
    elif kind == "attachment" and "chat" in found.data:
        pk = attachment_pk(
            ids,
            found.integer("chat"),
            found.text("message_external_id"),
            found.text("external_id"),
        )
        if pk is not None:
            return f"attachment:{Attachment.objects.get(pk=pk).public_id}"
    elif kind == "chat" and key.isdigit():
        pk = ids.chat_pk(int(key))
        return f"chat:{pk}" if pk is not None else ref
    elif kind == "person" and key.isdigit():
        pk = ids.people.get(int(key))
        return f"person:{pk}" if pk is not None else ref
    elif kind == "meeting" and found.optional_text("calendar"):
        meeting = meeting_find(found, ids)
        return f"meeting:{meeting.public_id}" if meeting is not None else ref
    return ref


def meeting_find(found: Line, ids: Ids) -> Meeting | None:
    """The stored meeting a meeting key (calendar, event uid, recurrence id, start) names."""
    source = ids.calendars.get(found.text("calendar"))
    if source is None:
        return None
    meetings = Meeting.objects.filter(calendar__kind=source[0], calendar__key=source[1])
    uid = found.text("uid")
    if uid:
        meetings = meetings.filter(event__uid=uid)
        recurrence = found.optional_time("recurrence_id")
        if recurrence is not None:
            meetings = meetings.filter(recurrence_id=recurrence)
    else:
        meetings = meetings.filter(event__isnull=True, start=found.time("start"))
    return meetings.order_by("pk").first()


# --- tags -----------------------------------------------------------------------------------


def tag_read(line: Line) -> tuple[str, str | None, Line | None, str]:
    name = line.text("tag", required=True)
    on = target_read(line, "on") if line.data.get("on") is not None else None
    if on is not None and on.text("ref").partition(":")[0] not in TagTargetKind.values:
        raise on.fail(f"ref: a tag is on one of {', '.join(TagTargetKind.values)}")
    return name, line.optional_text("colour"), on, line.text("actor") or "owner"


def tag_write(line: Line, ids: Ids, done: LoadDone, colours: dict[str, str]) -> None:
    """A tag's own line gives its colour (set once a tagging has made it); a tagging puts
    the tag on what it names, when the store holds that."""
    name, colour, on, actor = tag_read(line)
    if on is None:
        if colour:
            colours[name] = colour
        return
    ref = target_ref(on, ids)
    kind, _, key = ref.partition(":")
    pk = ref_pk(kind, key)
    if pk is None:
        done.skipped["tags on something not in the store"] += 1
        return
    tag_add(target=TagTarget(kind, pk), name=name, actor=actor)


def ref_pk(kind: str, key: str) -> int | None:
    """The primary key of the message, note, chat, person or task a reference names in
    this store, or None."""
    found: Any = None
    if kind == "message":
        found = Message.objects.filter(public_id=key)
    elif kind == "note":
        found = Note.objects.filter(public_id=key)
    elif kind in ("chat", "person") and key.isdigit():
        model = Chat if kind == "chat" else Person
        found = model.objects.filter(pk=int(key))
    elif kind == "task":
        project, _, number = key.upper().rpartition("-")
        if number.isdigit():
            found = Task.objects.filter(project__key=project, number=int(number))
    if found is None:
        return None
    pk = found.values_list("pk", flat=True).first()
    return int(pk) if pk is not None else None


def tag_colours_write(colours: dict[str, str], done: LoadDone) -> None:
    for name, colour in colours.items():
        try:
            tag_colour_set(name=name, colour=colour)
        except WireCatError:  # a tag on nothing the store holds: never made
            done.skipped["tags on nothing"] += 1


# --- tasks ----------------------------------------------------------------------------------


def project_read(line: Line) -> dict[str, Any]:
    return {
        "key": line.text("key", required=True),
        "name": line.text("name", required=True),
        "description": line.text("description"),
        "archived": line.flag("archived"),
    }


def project_write(line: Line, archived: list[str]) -> None:
    """A project (archived, in `archived`, once its tasks are in: an archived project
    takes none)."""
    fields = project_read(line)
    if not Project.objects.filter(key=fields["key"].upper()).exists():
        project_create(key=fields["key"], name=fields["name"], description=fields["description"])
    if fields["archived"]:
        archived.append(fields["key"])


def projects_archive(archived: list[str]) -> None:
    for key in archived:
        project_update(key=key, archived=True)


@dataclass(frozen=True)
class TaskLine:
    key: str
    project: str
    number: int
    fields: dict[str, Any]
    assignees: list[int]
    parent: str | None
    messages: list[Line]
    comments: list[tuple[str, str]]


def task_read(line: Line) -> TaskLine:
    status, priority = line.text("status") or Status.TODO, line.text("priority") or "normal"
    if status not in Status.values:
        raise line.fail(f"status: one of {', '.join(Status.values)}")
    if priority not in Priority.values:
        raise line.fail(f"priority: one of {', '.join(Priority.values)}")
    due = line.optional_text("due") or ""
    try:
        date.fromisoformat(due) if due else None
    except ValueError as exc:
        raise line.fail(f"due: not a date ({due[:20]!r})") from exc
    assignees = line.values("assignees")
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in assignees):
        raise line.fail("assignees: a list of people's ids")
    messages = [ref_checked(message) for message in line.objects("messages")]
    comments = [
        (event.text("new"), event.text("actor") or "owner")
        for event in line.objects("events")
        if event.text("field") == "comment"
    ]
    return TaskLine(
        key=line.text("key", required=True).upper(),
        project=line.text("project", required=True).upper(),
        number=line.integer("number"),
        fields={
            "title": line.text("title", required=True),
            "description": line.text("description"),
            "status": status,
            "priority": priority,
            "due": due or None,
            "owner_assigned": line.flag("owner_assigned"),
        },
        assignees=assignees,
        parent=line.optional_text("parent"),
        messages=messages,
        comments=comments,
    )


def task_write(line: Line, ids: Ids, done: LoadDone, parents: list[tuple[str, str]]) -> None:
    """A task under its own key: numbers a project gave to tasks deleted since are used up
    first (as the project did), so every key the export names is the same here. A task
    whose parent comes later gets it once all are in (`parents`)."""
    task = task_read(line)
    stored = Task.objects.filter(project__key=task.project, number=task.number).first()
    if stored is not None:  # imported before (a run stopped before its parents were set)
        if task.parent and stored.parent_id is None:
            parents.append((task.key, task.parent))
        return
    with transaction.atomic():
        project = project_get(key=task.project)
        if project.next_number > task.number:
            done.skipped["tasks whose number the project has given already"] += 1
            return
        while project.next_number < task.number:
            burnt = task_create(project=task.project, title="(a deleted task)", actor="system")
            task_delete(key=burnt.key)
            project.refresh_from_db()
        messages = []
        for found in task.messages:
            kind, _, key = target_ref(found, ids).partition(":")
            # Held by this store (often under its exported id: a message keeps it when free).
            if kind == "message" and ref_pk(kind, key) is not None:
                messages.append(key)
            else:
                done.skipped["task links to messages not in the store"] += 1
        parent = task.parent if task.parent and _task_exists(task.parent) else None
        made = task_create(
            project=task.project,
            assignees=[ids.people[a] for a in task.assignees if a in ids.people],
            parent=parent,
            messages=messages,
            actor="system",
            **task.fields,
        )
        if task.parent and parent is None:
            parents.append((made.key, task.parent))
        for text, actor in task.comments:
            task_comment(key=made.key, text=text, actor=actor)


def _task_exists(key: str) -> bool:
    project, _, number = key.upper().rpartition("-")
    return (
        number.isdigit() and Task.objects.filter(project__key=project, number=int(number)).exists()
    )


def task_parents_write(parents: list[tuple[str, str]]) -> None:
    for key, parent in parents:
        if _task_exists(parent):
            task_update(key=key, parent=parent, actor="system")


# --- notes ----------------------------------------------------------------------------------


def note_read(line: Line) -> tuple[str, list[Line]]:
    revisions = line.objects("revisions")
    if not revisions:
        raise line.fail("revisions: a note has at least one")
    for revision in revisions:
        revision.text("title", required=True)
        revision.text("body")
        revision.text("folder")
        revision.time("created_at")
    line.time("created_at")
    return line.text("id", required=True), revisions


def note_write(line: Line, resolver: Resolver) -> None:
    """A note and each of its revisions in turn, under its own id, in one transaction;
    one already in the store is kept as it is."""
    public_id, revisions = note_read(line)
    if Note.objects.filter(public_id=public_id).exists():
        return
    aliases = [a for a in line.values("aliases") if isinstance(a, str)]
    first = revisions[0]
    with transaction.atomic():
        note = note_create(
            title=first.text("title"),
            body=first.text("body"),
            folder=first.text("folder") or None,
            aliases=aliases,
            author=first.text("author") or "owner",
            public_id=public_id,
            created_at=line.time("created_at"),
            updated_at=first.time("created_at"),
            resolver=resolver,
        )
        for revision in revisions[1:]:
            note = note_update(
                public_id=public_id,
                revision=note.revision,
                title=revision.text("title"),
                body=revision.text("body"),
                folder=revision.text("folder") or None,
                actor=revision.text("author") or "owner",
                updated_at=revision.time("created_at"),
                resolver=resolver,
            )


def folder_write(line: Line) -> None:
    folder_ensure(line.text("path", required=True))


def link_kind_write(line: Line) -> None:
    link_kind_add(name=line.text("name", required=True), description=line.text("description"))


# --- meetings -------------------------------------------------------------------------------


def calendar_read(line: Line, ids: Ids) -> None:
    kind = line.text("kind", required=True)
    if kind not in Calendar.Kind.values:
        raise line.fail(f"kind: one of {', '.join(Calendar.Kind.values)}")
    ids.calendars[line.text("id", required=True)] = (kind, line.text("key", required=True))


def calendar_write(line: Line, ids: Ids) -> None:
    kind, key = ids.calendars[line.text("id")]
    read = CalendarRead(name=line.text("name"), time_zone=line.text("time_zone"))
    calendar_store(kind=kind, key=key, read=read, name=line.text("name"))


def _participant(line: Line) -> ParticipantRecord:
    return ParticipantRecord(
        email=line.text("email"),
        name=line.text("name"),
        response=line.text("response"),
        role=line.text("role"),
    )


def event_read(line: Line, ids: Ids) -> tuple[str, EventRecord]:
    calendar = line.text("calendar", required=True)
    if calendar not in ids.calendars:
        raise line.fail(f"calendar: {calendar[:40]!r} is not in calendars.jsonl")
    organizer = line.child("organizer")
    occurrences = tuple(
        OccurrenceRecord(
            recurrence_id=meeting.optional_time("recurrence_id") or meeting.time("start"),
            start=meeting.time("start"),
            end=meeting.time("end"),
            all_day=meeting.flag("all_day"),
            status=meeting.text("status") or "confirmed",
            moved=meeting.flag("moved"),
            title=meeting.text("title"),
            description=meeting.text("description"),
            location=meeting.text("location"),
            join_url=meeting.text("join_url"),
            sequence=line.integer("sequence") if "sequence" in line.data else 0,
            participants=tuple(_participant(p) for p in meeting.objects("participants")),
        )
        for meeting in line.objects("meetings")
    )
    for meeting in line.objects("meetings"):
        for found in meeting.objects("links"):
            target_read(found, "target")
    event = EventRecord(
        uid=line.text("uid", required=True),
        title=line.text("title"),
        description=line.text("description"),
        location=line.text("location"),
        join_url=line.text("join_url"),
        time_zone=line.text("time_zone"),
        sequence=line.integer("sequence") if "sequence" in line.data else 0,
        status=line.text("status") or "confirmed",
        rrule=line.text("rrule"),
        organizer=None if organizer is None else _participant(organizer),
        occurrences=occurrences,
    )
    return calendar, event


def event_write(line: Line, ids: Ids, done: LoadDone) -> None:
    """An event with its meetings, then each meeting's links to chats, messages, tasks and
    people (what the store does not hold is passed over, counted)."""
    calendar, event = event_read(line, ids)
    kind, key = ids.calendars[calendar]
    with transaction.atomic():
        calendar_store(kind=kind, key=key, read=CalendarRead(events=(event,)))
        for meeting_line in line.objects("meetings"):
            links = [
                (target_read(found, "target"), found.text("actor") or "owner")
                for found in meeting_line.objects("links")
            ]
            if not links:
                continue
            meeting = Meeting.objects.filter(
                calendar__kind=kind,
                calendar__key=key,
                event__uid=event.uid,
                recurrence_id=meeting_line.optional_time("recurrence_id")
                or meeting_line.time("start"),
            ).first()
            for target, actor in links:
                target_kind, _, target_key = target_ref(target, ids).partition(":")
                pk = ref_pk(target_kind, target_key)
                if meeting is None or pk is None:
                    done.skipped["meeting links to something not in the store"] += 1
                    continue
                meeting_link(meeting=meeting, kind=target_kind, target_id=pk, actor=actor)


def transcript_read(line: Line) -> tuple[Line, TranscriptRead]:
    meeting = line.child("meeting")
    if meeting is None:
        raise line.fail("meeting: the meeting's key is required")
    segments = tuple(
        SegmentRecord(
            start_ms=s.integer("start_ms"),
            end_ms=s.integer("end_ms"),
            text=s.text("text"),
            speaker=s.text("speaker"),
        )
        for s in line.objects("segments")
    )
    read = TranscriptRead(
        kind=line.text("kind", required=True), segments=segments, language=line.text("language")
    )
    if line.data.get("recording") is not None:
        target_read(line, "recording")
    return meeting, read


def transcript_write(line: Line, ids: Ids) -> None:
    """A transcript on its meeting (one without a calendar's finds or makes its own by its
    time, as a file's does), with the recording it was made from when that is stored."""
    meeting_key, read = transcript_read(line)
    meeting = meeting_find(meeting_key, ids)
    recording = None
    held = line.child("recording")
    if held is not None and "chat" in held.data:
        pk = attachment_pk(
            ids, held.integer("chat"), held.text("message_external_id"), held.text("external_id")
        )
        recording = Attachment.objects.filter(pk=pk, path__isnull=False).first() if pk else None
    transcript_store(
        recording=recording,
        read=read,
        source_name=line.text("source_name"),
        meeting=meeting,
        origin=line.text("origin") or "file",
        agent=line.text("agent"),
        model=line.text("model"),
        started_at=meeting_key.optional_time("start"),
    )


# --- links made by hand ---------------------------------------------------------------------


def link_read(line: Line) -> tuple[Line, Line]:
    return target_read(line, "source"), target_read(line, "target")


def link_write(line: Line, ids: Ids, done: LoadDone) -> None:
    source, target = link_read(line)
    source_ref = target_ref(source, ids)
    try:
        link_add(
            source=source_ref,
            target=target_ref(target, ids),
            kind=line.text("kind") or None,
            context=line.text("context"),
            actor=line.text("actor") or "owner",
        )
    except WireCatError:  # its source is not in the store (a purged message)
        done.skipped["links from something not in the store"] += 1
