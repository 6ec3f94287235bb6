"""The text of an attachment: one row per attachment, what was read from its file (or what
the owner's agent wrote back), keyed by the attachment's primary key (the rowid of the
file-text indexes, migration 0028)."""

from __future__ import annotations

from django.db import models

from archive.files.domain import TextOrigin, TextState
from archive.store.models import Attachment


class AttachmentText(models.Model):
    """The text of one attachment's file. `sha256` names the blob it was read from (a file
    stored again with other bytes is read again). An agent's text (`origin` agent) is never
    replaced by an extraction. The triggers of migration 0028 keep the words index and
    erase the row when its message is tombstoned or its attachment deleted."""

    attachment = models.OneToOneField(
        Attachment,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="text_row",
        db_constraint=False,  # a purge by SQL deletes the row by trigger, not by constraint
    )
    text = models.TextField(blank=True)
    state = models.CharField(max_length=12, choices=[(s.value, s.value) for s in TextState])
    reason = models.CharField(max_length=500, blank=True)
    origin = models.CharField(
        max_length=10,
        choices=[(o.value, o.value) for o in TextOrigin],
        default=TextOrigin.EXTRACTED.value,
    )
    # "pypdf 7.1.1", "tesseract 5.3.0 (eng+rus)", "speech:whisper" — or, from an agent,
    # "agent:<name>" with the `model` it named
    extractor = models.CharField(max_length=120, blank=True)
    model = models.CharField(max_length=120, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    pages = models.PositiveIntegerField(null=True, blank=True)
    made_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["state"], name="attachmenttext_state_idx")]

    def __str__(self) -> str:
        return f"text of attachment {self.attachment_id} ({self.state})"
