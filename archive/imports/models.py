"""Import jobs: one export file read into the store, with its progress, resume point and
counts."""

from __future__ import annotations

from django.db import models

from archive.store.ids import new_import_id
from archive.store.models import Chat


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ImportJob(models.Model):
    """One export being poured into the archive: progress, counts, errors, a resume point.

    `position` is how many of the export's messages are recorded; it advances in the same
    transaction as each batch, so a killed import resumes exactly where it stopped.
    """

    public_id = models.CharField(max_length=32, unique=True, default=new_import_id, editable=False)
    source = models.CharField(max_length=1000)  # a path on the server, or the stored upload
    source_name = models.CharField(max_length=255, blank=True)  # what the owner picked
    fingerprint = models.CharField(max_length=64, blank=True, db_index=True)
    format = models.CharField(max_length=32, blank=True)
    account_name = models.CharField(max_length=255, blank=True)
    status = models.CharField(
        max_length=16, choices=ImportStatus.choices, default=ImportStatus.QUEUED, db_index=True
    )
    total = models.PositiveIntegerField(null=True, blank=True)
    position = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    tombstoned = models.PositiveIntegerField(default=0)
    # Messages kept with an estimated date (the export gave none usable), counted with each
    # batch: kept, not skipped.
    estimated = models.PositiveIntegerField(default=0)
    skipped = models.JSONField(default=dict, blank=True)  # reason -> count, all causes
    # Skips found while copying attachment bytes, counted with each batch (so a resumed
    # import neither loses nor repeats them); `skipped` merges these with the reader's.
    staged_skips = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)  # messages naming file and position
    # A meeting file (a calendar or a transcript; archive/imports/meetings.py): the meeting
    # the owner picked for a transcript (its public id), when the recording began if the
    # owner said so, and what the import wrote (the counts the pages and command show).
    meeting = models.CharField(max_length=40, blank=True)
    recording_start = models.DateTimeField(null=True, blank=True)
    outcome = models.JSONField(default=dict, blank=True)
    cancel_requested = models.BooleanField(default=False)
    worker_pid = models.IntegerField(null=True, blank=True)
    chats = models.ManyToManyField(Chat, blank=True, related_name="imports")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.public_id} {self.source_name or self.source}"

    @property
    def finished(self) -> bool:
        return self.status in (ImportStatus.DONE, ImportStatus.FAILED, ImportStatus.CANCELLED)
