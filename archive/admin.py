from django.contrib import admin
from django.http import HttpRequest

from archive.models import (
    Account,
    Attachment,
    Chat,
    ConnectorState,
    Identity,
    IdentityLink,
    Message,
    MessageRevision,
    Person,
    SavedSearch,
    SearchConfig,
    Tag,
    TagBulk,
    WorkerHeartbeat,
)


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin[Account]):
    list_display = ("name", "provider", "external_id", "send_permission", "created_at")
    list_filter = ("provider", "send_permission")
    search_fields = ("name", "external_id")
    raw_id_fields = ("owner_identity",)


@admin.register(Chat)
class ChatAdmin(admin.ModelAdmin[Chat]):
    list_display = ("title", "kind", "account", "message_count", "last_message_at")
    list_filter = ("kind", "account__provider")
    search_fields = ("title", "external_id")
    readonly_fields = ("message_count", "last_message_at")


@admin.register(Identity)
class IdentityAdmin(admin.ModelAdmin[Identity]):
    list_display = ("display_name", "provider", "handle", "phone", "email", "person")
    list_filter = ("provider",)
    search_fields = ("display_name", "handle", "phone", "email", "external_id")
    raw_id_fields = ("person",)


@admin.register(Person)
class PersonAdmin(admin.ModelAdmin[Person]):
    search_fields = ("name",)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Messages and what hangs off them are written by the sink alone: view only here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "chat", "sender", "sent_at", "kind", "direction", "deleted_at")
    list_filter = ("kind", "direction", "account__provider")
    search_fields = ("public_id", "external_id")
    list_select_related = ("chat", "sender")


@admin.register(MessageRevision)
class MessageRevisionAdmin(ReadOnlyAdmin):
    list_display = ("message", "edited_at", "recorded_at")


@admin.register(Attachment)
class AttachmentAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "file_name", "mime_type", "size", "sha256")
    search_fields = ("public_id", "file_name", "sha256")


@admin.register(ConnectorState)
class ConnectorStateAdmin(admin.ModelAdmin[ConnectorState]):
    list_display = ("account", "stream", "updated_at")


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("hostname", "pid", "seen_at")


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


@admin.register(IdentityLink)
class IdentityLinkAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "identity", "person_name")
    list_filter = ("action",)
