"""Tags, their taggings of chats, people and messages, and tag-all-results runs."""

from __future__ import annotations

from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Lower


class Tag(models.Model):
    """A label the owner puts on chats, people and messages. Names are unique regardless
    of case; the name is shown as first written."""

    name = models.CharField(max_length=64)
    colour = models.CharField(
        max_length=7,
        default="#6b7280",
        validators=[RegexValidator(r"^#[0-9a-fA-F]{6}$", "a colour as #rrggbb")],
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)
        constraints = [models.UniqueConstraint(Lower("name"), name="tag_name_uniq_nocase")]

    def __str__(self) -> str:
        return self.name


class TagTargetKind(models.TextChoices):
    CHAT = "chat", "Chat"
    PERSON = "person", "Person"
    MESSAGE = "message", "Message"
    NOTE = "note", "Note"


class TagBulkState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    UNDONE = "undone", "Undone"


class TagBulk(models.Model):
    """One "tag all results" run: the query's matches tagged, the new taggings linked here
    so that undo removes exactly what it added."""

    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="bulks")
    query = models.TextField()
    state = models.CharField(
        max_length=16, choices=TagBulkState.choices, default=TagBulkState.QUEUED
    )
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        verbose_name = "tag-all run"

    def __str__(self) -> str:
        return f"tag {self.tag} on {self.query!r}"


class Tagging(models.Model):
    """A tag on one target (chat, person, message or note), by key. Triggers (migration 0014)
    delete a target's taggings in the same statement that deletes the target."""

    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="taggings")
    target_kind = models.CharField(max_length=8, choices=TagTargetKind.choices)
    target_id = models.BigIntegerField()
    actor = models.CharField(max_length=120, default="owner")  # "owner" or "agent:<name>"
    bulk = models.ForeignKey(
        TagBulk, null=True, blank=True, on_delete=models.SET_NULL, related_name="taggings"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tag", "target_kind", "target_id"], name="tagging_unique_target"
            )
        ]
        indexes = [models.Index(fields=["target_kind", "target_id"], name="tagging_target_idx")]

    def __str__(self) -> str:
        return f"{self.tag} on {self.target_kind} {self.target_id}"
