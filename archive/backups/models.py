"""The record of each backup made: when, which file, how big, how it ended."""

from django.db import models


class BackupRun(models.Model):
    """One backup (the nightly job or `wirecat backup`): a failure keeps its sentence, so
    the dashboard can show it instead of staying silent."""

    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    trigger = models.CharField(max_length=16, default="command")  # command, nightly
    path = models.CharField(max_length=1024, blank=True)
    size = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["ok", "-started_at"], name="backuprun_recent_idx")]

    def __str__(self) -> str:
        state = "ok" if self.ok else ("failed" if self.finished_at else "running")
        return f"backup {self.started_at:%Y-%m-%d %H:%M} {state}"
