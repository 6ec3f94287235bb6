"""The admin site's page for worker heartbeats."""

from django.contrib import admin

from archive.owner.models import WorkerHeartbeat
from archive.web.admin import ReadOnlyAdmin


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("hostname", "pid", "seen_at")
