"""The owner's one-time login codes and the workers' heartbeats."""

from __future__ import annotations

from django.db import models


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
