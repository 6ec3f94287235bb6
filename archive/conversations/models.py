"""Conversations: a chat split into its threads.

A **build** holds, for every live message of one chat, the parent it was given (or none: it
starts a conversation), where that choice came from, and the conversation it belongs to.
Readers see only the build `ConversationState.current` names, so a build being written, or
one that failed half-way, is never read; making a build current is one short transaction.

An agent's **answer** (a parent, or "starts a conversation", with confidence and the model)
lives outside builds: a rebuild keeps it. It carries fingerprints of its message and parent
as they were, so it goes stale when either changes.
"""

from __future__ import annotations

from django.db import models

from archive.store.models import Chat, Message


class Source(models.TextChoices):
    """Where a message's parent came from, in the order they are chosen."""

    REPLY = "reply", "the messenger's reply"
    AGENT = "agent", "the owner's agent"
    RULE = "rule", "the rules"


class BuildState(models.TextChoices):
    WRITING = "writing", "being written"
    CURRENT = "current", "current"
    OLD = "old", "replaced, being dropped"


class Need(models.IntegerChoices):
    """What a chat's conversations need (`ConversationState.need`)."""

    NOTHING = 0, "up to date"
    GROWN = 1, "new messages at the end"
    REBUILD = 2, "a rebuild"


class ConversationBuild(models.Model):
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="conversation_builds")
    state = models.CharField(max_length=8, choices=BuildState.choices, default=BuildState.WRITING)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    # The last message the build covers, in the chat's order (sent_at, id), and the highest
    # message row id it has seen: a chat that only grew is built on from here.
    last_message = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    last_sent_at = models.DateTimeField(null=True, blank=True)
    through_pk = models.BigIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    conversation_count = models.PositiveIntegerField(default=0)
    # What made the rules' links ("ubuntu-irc-lr 1"): a build by other rules is rebuilt.
    rules = models.CharField(max_length=60, blank=True)

    class Meta:
        indexes = [models.Index(fields=["chat", "state"], name="convbuild_chat_state_idx")]

    def __str__(self) -> str:
        return f"build {self.pk} of chat {self.chat_id} ({self.state})"


class ConversationState(models.Model):
    """One row per chat that has been built or needs to be: the current build, and what
    the chat needs since (set in the sink's transaction by the store's `messages_written`
    signal, and when an agent's answer is stored)."""

    chat = models.OneToOneField(
        Chat, on_delete=models.CASCADE, primary_key=True, related_name="conversation_state"
    )
    current = models.ForeignKey(
        ConversationBuild, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    need = models.PositiveSmallIntegerField(choices=Need.choices, default=Need.REBUILD)
    marked_at = models.DateTimeField(null=True, blank=True)
    built_at = models.DateTimeField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)

    class Meta:
        indexes = [models.Index(fields=["need"], name="convstate_need_idx")]

    def __str__(self) -> str:
        return f"conversations of chat {self.chat_id}"


class Conversation(models.Model):
    """One thread of a build. Its reference (`conversation:cnv_…`) is made from its first
    message's id, so it stays the same across rebuilds that keep that message first, and
    otherwise still finds the conversation that message is in."""

    id = models.BigAutoField(primary_key=True)
    build = models.ForeignKey(
        ConversationBuild,
        on_delete=models.CASCADE,
        related_name="conversations",
        db_constraint=False,
    )
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+", db_index=False)
    root = models.ForeignKey(
        Message,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()
    message_count = models.PositiveIntegerField(default=0)
    # Up to PARTICIPANTS_KEPT sender identity ids, most active first, and how many there were.
    participants = models.JSONField(default=list)
    participant_count = models.PositiveIntegerField(default=0)
    title = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [models.Index(fields=["build", "last_at"], name="conv_build_last_idx")]

    def __str__(self) -> str:
        return f"conversation {self.pk} ({self.message_count} messages)"


class ConversationLink(models.Model):
    """A message's place in a build: its chosen parent (none: it starts its conversation),
    where the choice came from, and its conversation."""

    id = models.BigAutoField(primary_key=True)
    build = models.ForeignKey(
        ConversationBuild,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    message = models.ForeignKey(
        Message,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    parent = models.ForeignKey(
        Message,
        null=True,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_constraint=False,
        db_index=False,
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.DO_NOTHING,
        related_name="links",
        db_constraint=False,
        db_index=False,
    )
    source = models.CharField(max_length=5, choices=Source.choices)
    confidence = models.FloatField(default=1.0)
    rule = models.CharField(max_length=24, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["message", "build"], name="convlink_message_build_uniq")
        ]
        indexes = [models.Index(fields=["conversation", "message"], name="convlink_conv_msg_idx")]

    def __str__(self) -> str:
        return f"{self.message_id} -> {self.parent_id} ({self.source})"


class ConversationAnswer(models.Model):
    """The owner's agent's answer for one message: its parent, or none (it starts a
    conversation). A newer answer replaces it. Fresh while `message_print` and
    `parent_print` match the message and parent as they are now."""

    message = models.OneToOneField(
        Message,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="conversation_answer",
        db_constraint=False,
    )
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    parent = models.ForeignKey(
        Message,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    confidence = models.FloatField()
    model = models.CharField(max_length=120)
    agent = models.CharField(max_length=120, blank=True)
    message_print = models.CharField(max_length=16)
    parent_print = models.CharField(max_length=16, blank=True)
    answered_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"answer for {self.message_id}: {self.parent_id or 'starts'}"
