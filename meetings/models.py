"""Meetings in the one store: calendars (a source), events (a VEVENT: a single event or a
recurring series), meetings (one occurrence each, addressable as `meeting:<public id>`;
moved and cancelled occurrences kept as such), participants (linked to people through
archive identities, never by a display name alone), transcripts with their segments, and
a meeting's links to chats, messages, tasks and people."""

from __future__ import annotations

from django.db import models

from archive.store.ids import new_public_id
from archive.store.models import Attachment, Identity


def calendar_public_id() -> str:
    return new_public_id("cal")


def meeting_public_id() -> str:
    return new_public_id("mtg")


class Calendar(models.Model):
    """Where events come from: a file, a CalDAV collection, mail invitations, or the
    transcripts that came without a calendar."""

    class Kind(models.TextChoices):
        FILE = "file", "Calendar file"
        CALDAV = "caldav", "CalDAV collection"
        MAIL = "mail", "Invitations in mail"
        TRANSCRIPTS = "transcripts", "Transcripts without a calendar"

    public_id = models.CharField(max_length=40, unique=True, default=calendar_public_id)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    key = models.CharField(max_length=500)  # the source: a file's name, a collection's URL
    name = models.CharField(max_length=300, blank=True)
    time_zone = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "key"], name="calendar_source")]

    def __str__(self) -> str:
        return self.name or self.key


class Status(models.TextChoices):
    CONFIRMED = "confirmed", "Confirmed"
    TENTATIVE = "tentative", "Tentative"
    CANCELLED = "cancelled", "Cancelled"


class Event(models.Model):
    """A VEVENT by its UID: a single event, or a series with its overrides."""

    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="events")
    uid = models.CharField(max_length=1000)
    sequence = models.IntegerField(default=0)
    title = models.CharField(max_length=1000, blank=True)
    description = models.TextField(blank=True)
    location = models.CharField(max_length=1000, blank=True)
    join_url = models.CharField(max_length=2000, blank=True)
    time_zone = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CONFIRMED)
    rrule = models.CharField(max_length=1000, blank=True)  # "" for a single event
    organizer_name = models.CharField(max_length=300, blank=True)
    organizer_email = models.CharField(max_length=320, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["calendar", "uid"], name="event_uid")]

    def __str__(self) -> str:
        return self.title or self.uid

    @property
    def recurring(self) -> bool:
        return bool(self.rrule)


class Meeting(models.Model):
    """One occurrence: of an event (a series' occurrence is keyed by its original start,
    its RECURRENCE-ID), or on its own (a transcript that matched no event)."""

    public_id = models.CharField(max_length=40, unique=True, default=meeting_public_id)
    calendar = models.ForeignKey(Calendar, on_delete=models.CASCADE, related_name="meetings")
    event = models.ForeignKey(
        Event, on_delete=models.CASCADE, null=True, blank=True, related_name="meetings"
    )
    recurrence_id = models.DateTimeField(null=True, blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    all_day = models.BooleanField(default=False)
    time_zone = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CONFIRMED)
    moved = models.BooleanField(default=False)  # an override moved it from its series' time
    title = models.CharField(max_length=1000, blank=True)
    description = models.TextField(blank=True)
    location = models.CharField(max_length=1000, blank=True)
    join_url = models.CharField(max_length=2000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["start", "id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "recurrence_id"], name="meeting_occurrence"),
            models.CheckConstraint(
                condition=models.Q(end__gte=models.F("start")), name="meeting_ends_after_start"
            ),
        ]
        indexes = [models.Index(fields=["start"], name="meeting_start_idx")]

    def __str__(self) -> str:
        return self.title or self.public_id

    @property
    def reference(self) -> str:
        """The stable reference tasks, notes and search hits carry."""
        return f"meeting:{self.public_id}"


class Participant(models.Model):
    """Someone invited to (or speaking in) a meeting. `identity` is the archive identity
    of their e-mail address; a person is reached through it, with the same audited
    linking as a message's sender."""

    meeting = models.ForeignKey(Meeting, on_delete=models.CASCADE, related_name="participants")
    email = models.CharField(max_length=320, blank=True)
    name = models.CharField(max_length=300, blank=True)
    response = models.CharField(max_length=16, blank=True)
    role = models.CharField(max_length=20, blank=True)
    identity = models.ForeignKey(
        Identity, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["meeting", "email", "name"], name="participant_once")
        ]

    def __str__(self) -> str:
        return self.name or self.email


class Transcript(models.Model):
    """What was said in a meeting: read from a file or written by the owner's agent."""

    class Origin(models.TextChoices):
        FILE = "file", "A transcript file"
        AGENT = "agent", "Written by an agent"

    meeting = models.ForeignKey(Meeting, on_delete=models.CASCADE, related_name="transcripts")
    origin = models.CharField(max_length=8, choices=Origin.choices)
    kind = models.CharField(max_length=12)  # vtt | srt | zoom_chat | agent
    source_name = models.CharField(max_length=300, blank=True)  # the file's name
    agent = models.CharField(max_length=120, blank=True)  # "agent:<name>" for an agent's
    model = models.CharField(max_length=200, blank=True)  # the agent's speech model
    language = models.CharField(max_length=35, blank=True)
    # The recording it was made from, when its bytes are in the archive (an attachment):
    # the meeting page plays it from a line's second.
    recording = models.ForeignKey(
        Attachment, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} transcript of {self.meeting}"


class Segment(models.Model):
    """One cue: who spoke, from when to when (ms from the recording's start), what."""

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="segments")
    seq = models.IntegerField()
    start_ms = models.BigIntegerField()
    end_ms = models.BigIntegerField()
    speaker = models.CharField(max_length=300, blank=True)
    identity = models.ForeignKey(
        Identity, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    text = models.TextField()

    class Meta:
        ordering = ["transcript", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["transcript", "seq"], name="segment_seq"),
            models.CheckConstraint(
                condition=models.Q(end_ms__gte=models.F("start_ms")),
                name="segment_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.speaker or 'someone'} at {self.start_ms} ms"


class MeetingLink(models.Model):
    """A meeting's link to a chat, a message, a task or a person (audited: who made it)."""

    class Kind(models.TextChoices):
        CHAT = "chat", "Chat"
        MESSAGE = "message", "Message"
        TASK = "task", "Task"
        PERSON = "person", "Person"

    meeting = models.ForeignKey(Meeting, on_delete=models.CASCADE, related_name="links")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    target_id = models.BigIntegerField()
    actor = models.CharField(max_length=120, default="owner")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["meeting", "kind", "target_id"], name="meeting_link_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.meeting} → {self.kind} {self.target_id}"
