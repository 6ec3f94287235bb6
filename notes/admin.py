"""Notes in the admin site: folders, notes with their revisions, the kinds of link. Notes
are written on their own pages (revisions, links and the search index follow a save
there); here they are read, and the link vocabulary is extended."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from notes.models import Folder, Link, LinkKind, Note, NoteRevision


@admin.register(Folder)
class FolderAdmin(admin.ModelAdmin[Folder]):
    list_display = ("name", "parent", "created_at")
    search_fields = ("name",)
    raw_id_fields = ("parent",)


class RevisionInline(admin.TabularInline[NoteRevision, Note]):
    model = NoteRevision
    extra = 0
    fields = ("number", "title", "author", "created_at")
    readonly_fields = fields
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Note | None = None) -> bool:
        return False


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin[Note]):
    list_display = ("title", "folder", "author", "revision", "updated_at")
    list_filter = ("author",)
    search_fields = ("title", "public_id")
    date_hierarchy = "updated_at"
    inlines = [RevisionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # written on the notes pages, where its links and index follow

    def has_change_permission(self, request: HttpRequest, obj: Note | None = None) -> bool:
        return False


@admin.register(LinkKind)
class LinkKindAdmin(admin.ModelAdmin[LinkKind]):
    list_display = ("name", "builtin", "description")
    readonly_fields = ("builtin",)

    def has_delete_permission(self, request: HttpRequest, obj: LinkKind | None = None) -> bool:
        return obj is None or not obj.builtin


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin[Link]):
    list_display = ("public_id", "source_kind", "source_id", "kind", "target_kind", "target_key")
    list_filter = ("kind", "origin", "target_kind")
    search_fields = ("public_id", "target_key", "context")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Link | None = None) -> bool:
        return False
