"""The admin site's pages for the search settings and saved searches."""

from django.contrib import admin
from django.http import HttpRequest

from archive.search.models import SavedSearch, SearchConfig


@admin.register(SearchConfig)
class SearchConfigAdmin(admin.ModelAdmin[SearchConfig]):
    list_display = ("__str__", "stems_analyzer")
    readonly_fields = ("stems_analyzer",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return not SearchConfig.objects.exists()  # one row: the store's settings

    def has_delete_permission(self, request: HttpRequest, obj: SearchConfig | None = None) -> bool:
        return False


@admin.register(SavedSearch)
class SavedSearchAdmin(admin.ModelAdmin[SavedSearch]):
    list_display = ("__str__", "sort", "run_count", "last_run_at")
    list_filter = ("sort",)
    search_fields = ("name", "query")
    readonly_fields = ("run_count", "first_run_at", "last_run_at")
