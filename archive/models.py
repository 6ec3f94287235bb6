"""The archive's tables. Messages are written only by `archive.sink`; the guard below makes
any other write fail loudly instead of quietly bypassing revisions, tombstones and indexes."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Lower

from archive.ids import new_attachment_id, new_import_id, new_message_id, new_public_id

_sink_active: contextvars.ContextVar[bool] = contextvars.ContextVar("sink_active", default=False)


class WriteOutsideSink(RuntimeError):
    """Raised when code other than `archive.sink` tries to write a Message row."""


@contextmanager
def sink_writes() -> Iterator[None]:
    """Open the door for the sink's own writes. Only `archive.sink` may use this."""
    token = _sink_active.set(True)
    try:
        yield
    finally:
        _sink_active.reset(token)


def _require_sink() -> None:
    if not _sink_active.get():
        raise WriteOutsideSink(
            "Message rows are written only by archive.sink (batch_record / message_purge)."
        )


class Person(models.Model):
    """A human the owner knows; holds identities from any number of providers."""

    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Identity(models.Model):
    """One provider's account of a person (a Telegram user, a phone number, a mailbox)."""

    provider = models.CharField(max_length=32)
    external_id = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255, blank=True)
    phone = models.CharField(max_length=64, blank=True)
    email = models.CharField(max_length=255, blank=True)
    handle = models.CharField(max_length=255, blank=True)
    person = models.ForeignKey(
        Person, null=True, blank=True, on_delete=models.SET_NULL, related_name="identities"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "identities"
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"], name="identity_provider_external_uniq"
            )
        ]

    def __str__(self) -> str:
        return self.display_name or self.handle or self.external_id


class SendPermission(models.TextChoices):
    DENY = "deny", "Deny"
    READ_ONLY = "read-only", "Read only"
    ASK = "ask", "Ask the owner"
    ALLOW = "allow", "Allow"


class Account(models.Model):
    """One of the owner's accounts on a provider; chats and messages belong to it."""

    provider = models.CharField(max_length=32)
    external_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255, blank=True)
    owner_identity = models.ForeignKey(
        Identity, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    send_permission = models.CharField(
        max_length=16, choices=SendPermission.choices, default=SendPermission.DENY
    )
    # The recipient allow-list: chats marked `send_allowed`, or every chat with this on.
    send_to_any_chat = models.BooleanField(default=False)
    sends_per_hour = models.PositiveIntegerField(default=60)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"], name="account_provider_external_uniq"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name or self.external_id} ({self.provider})"


class ChatKind(models.TextChoices):
    DM = "dm", "Direct"
    GROUP = "group", "Group"
    CHANNEL = "channel", "Channel"
    THREAD = "thread", "Thread"


class Chat(models.Model):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="chats")
    send_allowed = models.BooleanField(default=False)  # on the account's allow-list
    external_id = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=ChatKind.choices, default=ChatKind.DM)
    title = models.CharField(max_length=500, blank=True)
    provider_metadata = models.JSONField(default=dict, blank=True)
    # Kept by the sink so the chat list sorts without scanning messages.
    last_message_at = models.DateTimeField(null=True, blank=True, db_index=True)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "external_id"], name="chat_account_external_uniq"
            )
        ]

    def __str__(self) -> str:
        return self.title or self.external_id


class Direction(models.TextChoices):
    INBOUND = "in", "Inbound"
    OUTBOUND = "out", "Outbound"


class MessageKind(models.TextChoices):
    TEXT = "text", "Message"
    SERVICE = "service", "Service event"


class DeliveryStatus(models.TextChoices):
    AWAITING = "awaiting", "Awaiting the owner's approval"
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused by the owner"


class MessageQuerySet(models.QuerySet["Message"]):
    def update(self, **kwargs: Any) -> int:
        _require_sink()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        _require_sink()
        return super().delete()

    def bulk_create(self, *args: Any, **kwargs: Any) -> list[Message]:
        _require_sink()
        return super().bulk_create(*args, **kwargs)

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        _require_sink()
        return super().bulk_update(*args, **kwargs)

    def visible(self) -> MessageQuerySet:
        return self.filter(deleted_at__isnull=True)


class Message(models.Model):
    # The integer primary key is SQLite's rowid: the FTS indexes key on it. It never leaves
    # the process; `public_id` does.
    id = models.BigAutoField(primary_key=True)
    public_id = models.CharField(max_length=32, unique=True, default=new_message_id, editable=False)
    # No single-column indexes on these three: the unique (account, chat, external_id), the
    # (chat, sent_at, id) and the (sender, sent_at) indexes start with them and serve every
    # lookup; three more b-trees would only slow each insert.
    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    chat = models.ForeignKey(
        Chat, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    external_id = models.CharField(max_length=255)
    sender = models.ForeignKey(
        Identity,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="messages",
        db_index=False,
    )
    sent_at = models.DateTimeField()
    text = models.TextField(blank=True)
    kind = models.CharField(max_length=16, choices=MessageKind.choices, default=MessageKind.TEXT)
    direction = models.CharField(max_length=3, choices=Direction.choices, default=Direction.INBOUND)
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replies"
    )
    # The parent's provider id, kept so a reply that arrives before its parent links up later.
    reply_to_external_id = models.CharField(max_length=255, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    delivery_status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, blank=True, default=""
    )
    raw_json = models.TextField(blank=True)
    provider_metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MessageQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "chat", "external_id"], name="message_account_chat_external_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["chat", "sent_at", "id"], name="message_chat_time_idx"),
            models.Index(fields=["sent_at"], name="message_sent_at_idx"),
            models.Index(fields=["sender", "sent_at"], name="message_sender_time_idx"),
            # Replies whose parent has not arrived yet, found when it does.
            models.Index(
                fields=["chat", "reply_to_external_id"],
                name="message_reply_waiting_idx",
                condition=models.Q(reply_to__isnull=True) & ~models.Q(reply_to_external_id=""),
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        _require_sink()
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        _require_sink()
        return super().delete(*args, **kwargs)


class MessageRevision(models.Model):
    """An earlier text of an edited message; the archive never loses text."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="revisions")
    text = models.TextField(blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)  # when this text was current until
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["recorded_at", "id"]

    def __str__(self) -> str:
        return f"revision of message {self.message_id}"


class Attachment(models.Model):
    public_id = models.CharField(
        max_length=32, unique=True, default=new_attachment_id, editable=False
    )
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    external_id = models.CharField(max_length=255, blank=True)
    file_name = models.CharField(max_length=500, blank=True)
    mime_type = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # Relative to the state folder's blob store; the retention sweep nulls it, never the row.
    path = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULL = swept
    provider_metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["message", "external_id"], name="attachment_message_external_uniq"
            )
        ]

    def __str__(self) -> str:
        return self.file_name or self.public_id


class ConnectorState(models.Model):
    """Where an account's connector stopped (one row per account and stream)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="cursors")
    stream = models.CharField(max_length=100, default="", blank=True)
    cursor = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["account", "stream"], name="connector_state_uniq")
        ]

    def __str__(self) -> str:
        return f"cursor of account {self.account_id} {self.stream}".strip()


class WorkerHeartbeat(models.Model):
    """Written by the heartbeat job; the dashboard shows when a worker was last seen."""

    hostname = models.CharField(max_length=255, unique=True)
    seen_at = models.DateTimeField()
    pid = models.IntegerField(null=True)
    store = models.JSONField(default=dict, blank=True)  # SQLite version and PRAGMAs in force

    def __str__(self) -> str:
        return f"{self.hostname} at {self.seen_at:%Y-%m-%d %H:%M:%S}"


class LoginCode(models.Model):
    """A one-time link that lets the owner set a password. Only a hash is stored."""

    code_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"login code created {self.created_at:%Y-%m-%d %H:%M}"


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
    skipped = models.JSONField(default=dict, blank=True)  # reason -> count, all causes
    # Skips found while copying attachment bytes, counted with each batch (so a resumed
    # import neither loses nor repeats them); `skipped` merges these with the reader's.
    staged_skips = models.JSONField(default=dict, blank=True)
    errors = models.JSONField(default=list, blank=True)  # messages naming file and position
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


class SearchConfig(models.Model):
    """The store's search settings (one row). Changing the stemmers rebuilds the stems
    index; `stems_analyzer` records the analyzer the index was built with."""

    latin_stemmers = models.CharField(
        max_length=200,
        default="english",
        help_text="Snowball stemmers for words in Latin script, comma-separated "
        "(e.g. english,spanish). Cyrillic words are always stemmed as Russian.",
    )
    stems_analyzer = models.CharField(max_length=300, blank=True, editable=False)
    # The highest message id when the typo vocabulary was last rebuilt.
    vocabulary_through = models.IntegerField(default=0, editable=False)

    class Meta:
        verbose_name = "search settings"
        verbose_name_plural = "search settings"

    def __str__(self) -> str:
        return f"stemmers: {self.latin_stemmers}"

    def clean(self) -> None:
        from archive.selectors.search.analyzer import latin_choices

        try:
            latin_choices(self.latin_stemmers)
        except ValueError as exc:
            raise ValidationError({"latin_stemmers": str(exc)}) from exc


class SavedSearch(models.Model):
    """A search's parameters, never its results. Unnamed rows are the recorded history
    (identical runs counted on one row, the newest 1,000 kept); a named row is a saved
    search, parsed again on every run."""

    name = models.CharField(max_length=100, blank=True, db_index=True)
    query = models.TextField()
    sort = models.CharField(max_length=16, default="relevance")
    run_count = models.PositiveIntegerField(default=0)
    first_run_at = models.DateTimeField(auto_now_add=True)
    last_run_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-last_run_at",)
        indexes = [models.Index(fields=["name", "-last_run_at"], name="saved_search_recent_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["name"], condition=~models.Q(name=""), name="saved_search_unique_name"
            ),
            models.UniqueConstraint(
                fields=["query", "sort"],
                condition=models.Q(name=""),
                name="recorded_search_unique_run",
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.query


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

    def __str__(self) -> str:
        return f"tag {self.tag} on {self.query!r}"


class Tagging(models.Model):
    """A tag on one target (chat, person or message), by key. Triggers (migration 0014)
    delete a target's taggings in the same statement that deletes the target."""

    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="taggings")
    target_kind = models.CharField(max_length=8, choices=TagTargetKind.choices)
    target_id = models.BigIntegerField()
    actor = models.CharField(max_length=64, default="owner")
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


class IdentityLink(models.Model):
    """The audit of linking identities to people by hand: who, when, what."""

    class Action(models.TextChoices):
        LINK = "link", "Linked"
        UNLINK = "unlink", "Unlinked"

    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="link_audit")
    person = models.ForeignKey(
        Person, null=True, blank=True, on_delete=models.SET_NULL, related_name="link_audit"
    )
    person_name = models.CharField(max_length=200)  # kept when the person is deleted
    action = models.CharField(max_length=8, choices=Action.choices)
    actor = models.CharField(max_length=64, default="owner")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-at", "-id")

    def __str__(self) -> str:
        return f"{self.action} {self.identity_id} {self.person_name}"


# --- the agent gateway ------------------------------------------------------------------------


class Agent(models.Model):
    """One of the owner's AI agents: its own token (kept only as a hash), scopes and read
    state. `read_through`: every inbound message with an id up to it counts as read."""

    public_id = models.CharField(max_length=32, unique=True, editable=False)
    name = models.CharField(max_length=100, unique=True)
    scopes = models.JSONField(default=list, blank=True)
    key_id = models.CharField(max_length=16, unique=True, editable=False)
    token_hash = models.CharField(max_length=64, editable=False)
    since = models.DateTimeField(help_text="messages sent before this count as read")
    read_through = models.BigIntegerField(default=0, editable=False)
    rate_per_minute = models.PositiveIntegerField(default=600)
    sends_per_hour = models.PositiveIntegerField(default=30)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class AgentRead(models.Model):
    """A message one agent marked read, above its watermark."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="reads")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    read_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "message"], name="agent_read_unique")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} read {self.message_id}"


class AgentChatRead(models.Model):
    """A whole chat read by one agent up to a message id."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="chat_reads")
    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="+")
    through_id = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "chat"], name="agent_chat_read_unique")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} read chat {self.chat_id} through {self.through_id}"


class AgentRate(models.Model):
    """Requests of one agent in one minute (the per-token rate limit)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    minute = models.BigIntegerField()  # Unix time // 60
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "minute"], name="agent_rate_unique")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} at minute {self.minute}: {self.count}"


class Change(models.Model):
    """The changes feed, in order: message added, edited, tombstoned; tag added, removed.
    Written in the transaction of its cause (the sink, triggers, the tag services)."""

    kind = models.CharField(max_length=24)
    # Plain ids, not foreign keys: the feed outlives what it reports (a purged message's
    # change stays; purging never has to rewrite the feed).
    message_pk = models.BigIntegerField(null=True, blank=True)
    chat_pk = models.BigIntegerField(null=True, blank=True)
    tag = models.CharField(max_length=64, blank=True)
    target_kind = models.CharField(max_length=8, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    # Changes made by importing history: in the feed, but no webhook is told of them.
    quiet = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.pk} {self.kind}"


class GatewaySettings(models.Model):
    """The owner's switches for agents (one row): the global read-only lock."""

    read_only = models.BooleanField(
        default=False, help_text="refuse every send, whatever the account allows"
    )
    webhooks_allow_private = models.BooleanField(
        default=False, help_text="let webhooks reach private and loopback addresses"
    )

    class Meta:
        verbose_name = verbose_name_plural = "gateway settings"

    def __str__(self) -> str:
        return "gateway settings"


class SendOutcome(models.TextChoices):
    REFUSED = "refused", "Refused by the guard"
    AWAITING = "awaiting", "Awaiting the owner"
    QUEUED = "queued", "Queued for the connector"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    REJECTED = "rejected", "Refused by the owner"


class SendAttempt(models.Model):
    """The send journal: every attempt, who, where, when, how it ended. Never the text
    (that lives only in the outbound message row)."""

    public_id = models.CharField(max_length=32, unique=True, editable=False)
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="sends"
    )
    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    chat = models.ForeignKey(
        Chat, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=16, choices=SendOutcome.choices)
    rule = models.CharField(max_length=32, blank=True)  # the guard rule that refused
    error = models.CharField(max_length=500, blank=True)
    at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-at", "-id")
        indexes = [
            models.Index(fields=["account", "at"], name="send_account_time_idx"),
            models.Index(fields=["agent", "at"], name="send_agent_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.outcome}"


class IdempotencyKey(models.Model):
    """A send's first answer, replayed for 24 hours to a retry with the same key and body.
    (The owner's own keys have no agent: SQLite treats NULLs as distinct in the unique
    index, so the lookup and insert run in one write transaction instead.)"""

    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    key = models.CharField(max_length=200)
    body_hash = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "key"],
                name="idempotency_agent_key_unique",
            )
        ]

    def __str__(self) -> str:
        return self.key


WEBHOOK_EVENTS = (
    "message.inbound",
    "message.outbound",
    "message.edited",
    "message.deleted",
    "send.status",
    "tag.changed",
)


class WebhookEndpoint(models.Model):
    """Where the owner wants events POSTed, signed with `secret`."""

    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list, blank=True)  # empty: every event
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    DELIVERED = "delivered", "Delivered"
    DEAD = "dead", "Dead"


class WebhookDelivery(models.Model):
    """One event for one endpoint, enqueued (by a trigger on the changes feed) in the
    transaction of its cause, delivered at least once by the webhooks job."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    change_pk = models.BigIntegerField()
    event = models.CharField(max_length=24)
    state = models.CharField(
        max_length=12, choices=DeliveryState.choices, default=DeliveryState.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    last_response = models.CharField(max_length=500, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ("-id",)
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="delivery_due_idx")]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint_id}: {self.state}"


def new_sync_account_id() -> str:
    return new_public_id("syn")


class SyncState(models.TextChoices):
    IDLE = "idle", "Idle"
    RUNNING = "running", "Running"
    FAILED = "failed", "Failed"


class SyncAccount(models.Model):
    """A live connection of one account: its connector, sealed credentials, schedule and
    lease. The lease (owner + expiry) lets one worker at a time sync the account; a worker
    that dies holding it is overtaken once it expires."""

    public_id = models.CharField(
        max_length=32, unique=True, default=new_sync_account_id, editable=False
    )
    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="sync")
    kind = models.CharField(max_length=32)  # the live connector: "telegram_bot", ...
    credentials = models.TextField(blank=True)  # sealed (archive.credentials); never shown
    settings = models.JSONField(default=dict, blank=True)  # not secret: URLs, the bot's id
    interval_seconds = models.PositiveIntegerField(default=300)
    enabled = models.BooleanField(default=True)
    state = models.CharField(max_length=16, choices=SyncState.choices, default=SyncState.IDLE)
    last_error = models.TextField(blank=True)
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    schedule = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["account__provider", "account__name"]

    def __str__(self) -> str:
        return f"{self.kind} {self.account.name}"


class SyncRun(models.Model):
    """One run of `account_sync`: when, what it added and updated, how it ended."""

    sync_account = models.ForeignKey(SyncAccount, on_delete=models.CASCADE, related_name="runs")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    fetched = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)  # tombstoned (the provider deleted them)
    pages = models.PositiveIntegerField(default=0)
    outcome = models.CharField(max_length=24, blank=True)  # done, budget, rate-limited, …
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["sync_account", "-started_at"], name="syncrun_recent_idx")]

    def __str__(self) -> str:
        return f"{self.sync_account} {self.started_at:%Y-%m-%d %H:%M} {self.outcome}"
