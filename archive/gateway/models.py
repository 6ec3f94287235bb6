"""The agent gateway's tables: agents and their tokens, per-agent read marks and rates, the
gateway settings, the send journal, idempotency keys, webhook endpoints and deliveries."""

from __future__ import annotations

from django.db import models

from archive.store.changes import EVENTS
from archive.store.models import Account, Chat, Message

# --- the agent gateway ------------------------------------------------------------------------


class Agent(models.Model):
    """One of the owner's AI agents: its own token (kept only as a hash), scopes, limits and
    read state. `read_through`: every inbound message with an id up to it counts as read."""

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
    # Limits: what the agent may read and send to. None of either: everything. Otherwise
    # the chats of these accounts and these chats (archive/gateway/selectors.py decides).
    limit_accounts = models.ManyToManyField(
        Account,
        blank=True,
        related_name="+",
        verbose_name="limited to accounts",
        help_text="the agent sees and sends to these accounts' chats (none: no account limit)",
    )
    limit_chats = models.ManyToManyField(
        Chat,
        blank=True,
        related_name="+",
        verbose_name="limited to chats",
        help_text="and to these chats (no accounts and no chats: every chat)",
    )

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


# What an endpoint can ask to be told of: the store's changes feed names them.
WEBHOOK_EVENTS = EVENTS


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
    """One event for one endpoint, enqueued (by a trigger on the changes feed, migration
    0017) in the transaction of its cause, delivered at least once by the webhooks job."""

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
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="delivery_due_idx")]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint_id}: {self.state}"
