"""Notes: the owner's (or an agent's, for the owner) Markdown, in a folder tree, with a
revision for every save, and links — every connection between two typed references
(`note:`, `message:`, `chat:`, `person:`, `meeting:`, `task:`, `attachment:`, `url:`;
`notes/references.py`), each of a kind from a small vocabulary the owner can extend."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower

from archive.store.ids import new_public_id

TITLE_MAX = 300
FOLDER_NAME_MAX = 120
CONTEXT_MAX = 500


def note_public_id() -> str:
    return new_public_id("note")


def link_public_id() -> str:
    return new_public_id("lnk")


class Folder(models.Model):
    """A folder of notes, in a tree (`parent` None: at the top). Names are unique among a
    folder's children regardless of case; a folder is never its own ancestor (checked by
    `notes.services.folders`)."""

    name = models.CharField(max_length=FOLDER_NAME_MAX)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)
        constraints = [
            models.UniqueConstraint("parent", Lower("name"), name="notes_folder_name_uniq"),
            # NULLs are distinct in a unique index: the top level's names need their own.
            models.UniqueConstraint(
                Lower("name"), condition=models.Q(parent__isnull=True), name="notes_folder_top_uniq"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Note(models.Model):
    """A note: a title, a Markdown body, a folder; `revision` counts its saves (an edit names
    the revision it was made from, and a stale one is refused, so two tabs never overwrite
    each other). `author` is "owner" or "agent:<name>" (who made it; each revision names
    who saved it). `aliases` are other names `[[links]]` may use for it (Obsidian's)."""

    public_id = models.CharField(max_length=40, unique=True, default=note_public_id)
    title = models.CharField(max_length=TITLE_MAX)
    aliases = models.JSONField(default=list, blank=True)
    body = models.TextField(blank=True)
    folder = models.ForeignKey(
        Folder, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes"
    )
    author = models.CharField(max_length=120, default="owner")
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ("-updated_at", "-id")
        indexes = [models.Index(fields=["folder", "-updated_at"], name="notes_note_folder_idx")]

    def __str__(self) -> str:
        return self.title

    @property
    def ref(self) -> str:
        return f"note:{self.public_id}"


class NoteName(models.Model):
    """A name a `[[link]]` finds a note by: its title and each alias, folded
    (`notes.references.fold`: case and diacritics, spaces). Kept by the notes services."""

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="names")
    folded = models.CharField(max_length=TITLE_MAX, db_index=True)
    is_title = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["note", "folded"], name="notes_name_uniq")]

    def __str__(self) -> str:
        return self.folded


class NoteRevision(models.Model):
    """One save of a note, whole: what it said then, who saved it."""

    note = models.ForeignKey(Note, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=TITLE_MAX)
    body = models.TextField(blank=True)
    folder_path = models.CharField(max_length=1000, blank=True)
    author = models.CharField(max_length=120, default="owner")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("note", "-number")
        constraints = [
            models.UniqueConstraint(fields=["note", "number"], name="notes_revision_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.note_id} r{self.number}"


class LinkKind(models.Model):
    """A kind of link: the fixed ones (mentions, about, decision, follow-up, source) and
    whatever the owner adds."""

    name = models.CharField(max_length=40, unique=True)
    builtin = models.BooleanField(default=False)
    description = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ("-builtin", "name")

    def __str__(self) -> str:
        return self.name


BUILTIN_KINDS = {
    "mentions": "The note names it.",
    "about": "The note is about it.",
    "decision": "A decision was taken there.",
    "follow-up": "Something to do about it.",
    "source": "Where the note's facts come from.",
}
DEFAULT_KIND = "mentions"


class Link(models.Model):
    """One connection: from a typed reference to another, of a kind, with the sentence that
    makes it (`context`). A target that exists has its primary key in `target_id` (so a
    rename keeps the link); one that names nothing yet keeps its text: `target_key` (the
    reference as written: `msg_…`, `HOME-12`, a URL) and, for a bare name, `target_folded`,
    resolved in the same write when a person or a note of that name appears. A target that
    is deleted makes its links unresolved again (triggers, migration 0002), never gone.

    `origin`: "body" (read from the source note's Markdown on every save, replaced then),
    or "explicit" (made on a page or through the API, kept until removed)."""

    class Origin(models.TextChoices):
        BODY = "body", "From the note's text"
        EXPLICIT = "explicit", "Made by hand"

    public_id = models.CharField(max_length=40, unique=True, default=link_public_id)
    source_kind = models.CharField(max_length=12)
    source_id = models.BigIntegerField()
    # "" while a bare name resolves to nothing; otherwise the reference's kind
    target_kind = models.CharField(max_length=12, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    target_key = models.CharField(max_length=2000, blank=True)
    target_folded = models.CharField(max_length=TITLE_MAX, blank=True)
    # what the link shows (`[[Alias|shown text]]`), "" for the target's own name
    label = models.CharField(max_length=TITLE_MAX, blank=True)
    kind = models.CharField(max_length=40, default=DEFAULT_KIND)
    context = models.CharField(max_length=CONTEXT_MAX, blank=True)
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.EXPLICIT)
    # the order of body links in their note
    position = models.PositiveIntegerField(default=0)
    actor = models.CharField(max_length=120, default="owner")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("source_kind", "source_id", "position", "id")
        indexes = [
            models.Index(fields=["source_kind", "source_id"], name="notes_link_source_idx"),
            models.Index(fields=["target_kind", "target_id"], name="notes_link_target_idx"),
            models.Index(
                fields=["target_folded"],
                name="notes_link_waiting_idx",
                condition=models.Q(target_id__isnull=True) & ~models.Q(target_folded=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_kind}:{self.source_id} -{self.kind}-> {self.target_kind}"
