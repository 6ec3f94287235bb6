"""The admin site's pages for the meaning index: the models vectors were made with (with an
action that drops a model's vectors, so the refresh embeds again) and what each source was
cut from. Both are written only by the meaning services, so these pages read them."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from archive.meaning.models import Chunked, VectorModel
from archive.meaning.services.vectors import model_drop


@admin.register(VectorModel)
class VectorModelAdmin(admin.ModelAdmin[VectorModel]):
    list_display = ("name", "dims", "vector_count", "created_at")
    readonly_fields = ("name", "dims", "created_at")
    actions = ("drop_vectors",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[VectorModel]:
        return super().get_queryset(request).annotate(vector_total=Count("vectors"))

    @admin.display(description="vectors", ordering="vector_total")
    def vector_count(self, obj: VectorModel) -> int:
        return int(getattr(obj, "vector_total", 0))

    @admin.action(description="Drop its vectors")
    def drop_vectors(self, request: HttpRequest, queryset: QuerySet[VectorModel]) -> None:
        names = []
        for model in queryset:
            model_drop(model)
            names.append(model.name)
        self.message_user(
            request,
            f"Vectors of {', '.join(names)} dropped; the worker's next refresh embeds every"
            " chunk again with the setting's model.",
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: VectorModel | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: VectorModel | None = None) -> bool:
        return False  # deleting the row would leave its vec table: "Drop its vectors" does both


@admin.register(Chunked)
class ChunkedAdmin(admin.ModelAdmin[Chunked]):
    list_display = ("kind", "source_id", "version", "chunks", "chunked_at")
    list_filter = ("kind",)
    search_fields = ("=source_id",)
    readonly_fields = ("kind", "source_id", "version", "chunks", "chunked_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Chunked | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Chunked | None = None) -> bool:
        return False
