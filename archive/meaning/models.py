"""The meaning index: chunks of text and their vectors.

A **chunk** is a piece of something the owner can find — a conversation (cut at message
boundaries), a note, a meeting's transcript, a file's text — with its range in that thing
and the SHA-256 of its text. The text itself is never stored again: it is read from its
source whenever it is needed, and a source whose text no longer hashes the same is stale.

A **vector** is keyed by the model that made it, the kind of chunk and the text's hash,
never by a chunk row: a rebuild that writes new conversation rows finds the vectors of the
chunks whose text did not change. The numbers themselves live in a sqlite-vec `vec0`
table per model (`vec_table`), whose rowid is the vector's id and whose partition is the
kind, so each kind is searched on its own.
"""

from __future__ import annotations

from django.db import models


class ChunkKind(models.IntegerChoices):
    CONVERSATION = 1, "conversation"
    NOTE = 2, "note"
    TRANSCRIPT = 3, "transcript"
    FILE = 4, "file"


class Chunk(models.Model):
    """A piece of a source's text. `source_id` is the conversation, note, transcript or
    attachment row; `first_id`/`last_id` the first and last message (a conversation) or
    segment (a transcript) it holds, in the source's order; `text_start`/`text_end` the
    stretch of text it holds when it is a piece of one long message, or of a note's body or
    a file's text (0, 0: all of it)."""

    id = models.BigAutoField(primary_key=True)
    kind = models.PositiveSmallIntegerField(choices=ChunkKind.choices)
    source_id = models.BigIntegerField()
    # The chat of a conversation's chunk (readiness and `in:` count chats); else null.
    chat_id = models.BigIntegerField(null=True, blank=True)
    first_id = models.BigIntegerField(default=0)
    last_id = models.BigIntegerField(default=0)
    text_start = models.PositiveIntegerField(default=0)
    text_end = models.PositiveIntegerField(default=0)
    sha = models.BinaryField(max_length=32)
    chars = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["kind", "source_id"], name="chunk_source_idx"),
            models.Index(fields=["kind", "sha"], name="chunk_sha_idx"),
            models.Index(fields=["chat_id"], name="chunk_chat_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} chunk {self.pk}"


class Chunked(models.Model):
    """What a source was cut from: `version` names the state of the source the chunks were
    made of (a chat's build and its length, a note's revision, a transcript's and a file
    text's time), so a source whose version moved is cut again. `source_id` is the chat of
    a conversation's chunks, else the note, transcript or attachment."""

    kind = models.PositiveSmallIntegerField(choices=ChunkKind.choices)
    source_id = models.BigIntegerField()
    version = models.CharField(max_length=80)
    chunks = models.PositiveIntegerField(default=0)
    chunked_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "source_id"], name="chunked_source_unique")
        ]

    def __str__(self) -> str:
        return f"{ChunkKind(self.kind).label} {self.source_id} cut at {self.version}"


class VectorModel(models.Model):
    """A model vectors were made with: its name (the setting) and their length."""

    name = models.CharField(max_length=80, unique=True)
    dims = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.name

    @property
    def vec_table(self) -> str:
        return f"archive_meaning_vec_{int(self.pk)}"


class Vector(models.Model):
    """One text's vector by one model; the numbers are row `id` of the model's vec table."""

    id = models.BigAutoField(primary_key=True)
    model = models.ForeignKey(VectorModel, on_delete=models.CASCADE, related_name="vectors")
    kind = models.PositiveSmallIntegerField(choices=ChunkKind.choices)
    sha = models.BinaryField(max_length=32)
    made_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "kind", "sha"], name="vector_key_unique")
        ]

    def __str__(self) -> str:
        return f"vector {self.pk} ({self.model_id})"
