"""The admin site's page for live accounts and their runs (interval changes go through the
service)."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from archive.sync.models import SyncAccount, SyncRun
from archive.sync.services.accounts import sync_interval_set


class SyncRunInline(admin.TabularInline):
    model = SyncRun
    extra = 0
    can_delete = False
    max_num = 0
    fields = ("started_at", "ended_at", "outcome", "fetched", "added", "updated", "error")
    readonly_fields = fields
    ordering = ("-started_at",)


@admin.register(SyncAccount)
class SyncAccountAdmin(admin.ModelAdmin):
    """Live accounts. The sealed credentials are never shown; saving the interval or the
    switch updates the beat schedule through the service."""

    list_display = ("account", "kind", "state", "enabled", "interval_seconds", "last_run_at")
    list_filter = ("kind", "state", "enabled")
    fields = (
        "public_id",
        "account",
        "kind",
        "interval_seconds",
        "enabled",
        "state",
        "last_error",
        "last_run_at",
        "lease_owner",
        "lease_until",
        "schedule",
    )
    readonly_fields = (
        "public_id",
        "account",
        "kind",
        "state",
        "last_error",
        "last_run_at",
        "lease_owner",
        "lease_until",
        "schedule",
    )
    inlines = [SyncRunInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # connecting checks credentials with the provider: the Sync page does it

    def save_model(self, request: HttpRequest, obj: SyncAccount, form: Any, change: bool) -> None:
        sync_interval_set(sync=obj, interval_seconds=obj.interval_seconds, enabled=obj.enabled)
