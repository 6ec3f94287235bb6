"""The admin site's pages for tags and tag-all-results runs."""

from django.contrib import admin
from django.http import HttpRequest

from archive.tags.models import Tag, TagBulk
from archive.web.admin import ReadOnlyAdmin


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin[Tag]):
    """Names and colours; renames that collide, merges and tagging go through the Tags page
    and the API (the services), which keep one tag per name and no orphans."""

    list_display = ("name", "colour", "created_at")
    search_fields = ("name",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(TagBulk)
class TagBulkAdmin(ReadOnlyAdmin):
    list_display = ("tag", "query", "state", "total", "added", "created_at")
    list_filter = ("state",)
