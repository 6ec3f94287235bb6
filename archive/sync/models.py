"""Live accounts (kind, sealed credentials, schedule, lease, state) and their runs."""

from __future__ import annotations

from django.db import models

from archive.store.ids import new_public_id
from archive.store.models import Account


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
