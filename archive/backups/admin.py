"""The admin site's read-only list of backup runs (failures keep their sentence)."""

from django.contrib import admin

from archive.backups.models import BackupRun
from archive.web.admin import ReadOnlyAdmin


@admin.register(BackupRun)
class BackupRunAdmin(ReadOnlyAdmin):
    list_display = ("started_at", "finished_at", "trigger", "ok", "size", "path", "error")
    list_filter = ("ok", "trigger")
    search_fields = ("path", "error")
