"""The store: accounts, chats, identities, people, messages with their revisions and
attachments, connector cursors and the changes feed. Message rows are written only by the
sink."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import models

from archive.store.ids import new_attachment_id, new_message_id
from archive.store.raw import PackedJsonTextField

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
    # The owner: the one person their own accounts' identities belong to (migration 0025).
    is_owner = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "people"
        constraints = [
            models.UniqueConstraint(
                fields=["is_owner"], condition=models.Q(is_owner=True), name="person_one_owner"
            )
        ]

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
    # The export gave no usable date: `sent_at` is the best evidence there was, named in
    # `provider_metadata["date_estimated_from"]` (migration 0021).
    date_estimated = models.BooleanField(default=False)
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
    # Text, or a zstd frame of it with the provider's dictionary (archive/store/raw.py).
    raw_json = PackedJsonTextField(blank=True)
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
        # Every index here costs each import an entry per message: each is kept by a test
        # of the query plan that uses it (tests/store_indexes/).
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

    @property
    def estimated_from(self) -> str | None:
        """Where an estimated date was taken from (None when the date is the export's)."""
        if not self.date_estimated:
            return None
        source = (self.provider_metadata or {}).get("date_estimated_from")
        return source if isinstance(source, str) and source else None

    @property
    def date_estimate_note(self) -> str:
        """Why the time shown is an estimate, for the page ("" when it is not one)."""
        if not self.date_estimated:
            return ""
        source = self.estimated_from
        taken = f" It was taken from {source}." if source else ""
        return f"The export gave no usable date for this message.{taken}"


class RawDictionary(models.Model):
    """A zstd dictionary trained on one provider's raw JSON (archive/store/raw.py). Every
    message compressed with it names it by `dict_id` in its frame and needs it for as long
    as the message exists: a row here is never changed or deleted once written."""

    provider = models.CharField(max_length=32)
    # zstd's own id of the dictionary (a 32-bit hash of its content).
    dict_id = models.BigIntegerField(unique=True)
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.provider} dictionary {self.dict_id}"


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
    # No index of its own: the unique (message, external_id) starts with it (migration 0034).
    message = models.ForeignKey(
        Message, on_delete=models.CASCADE, related_name="attachments", db_index=False
    )
    external_id = models.CharField(max_length=255, blank=True)
    file_name = models.CharField(max_length=500, blank=True)
    mime_type = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)  # no query looks an attachment up by it
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


class Change(models.Model):
    """The changes feed, in order: message added, edited, tombstoned; a quiet batch's new
    messages of one chat (first and last message, how many); tag added, removed; send
    status; note created, updated, deleted. Written by `archive.store.changes` alone (its
    `ChangeKind` names the kinds and what each keeps where), in the transaction of its
    cause."""

    kind = models.CharField(max_length=24)
    # Plain ids, not foreign keys: the feed outlives what it reports (a purged message's
    # change stays; purging never has to rewrite the feed).
    message_pk = models.BigIntegerField(null=True, blank=True)
    chat_pk = models.BigIntegerField(null=True, blank=True)
    tag = models.CharField(max_length=64, blank=True)
    target_kind = models.CharField(max_length=8, blank=True)
    target_id = models.BigIntegerField(null=True, blank=True)
    at = models.DateTimeField()
    # Changes made by importing history or a repair pass: in the feed, told to no webhook.
    quiet = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.pk} {self.kind}"
