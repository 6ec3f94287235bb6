from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.shortcuts import render

from archive.models import (
    Account,
    Agent,
    Attachment,
    Chat,
    ConnectorState,
    GatewaySettings,
    Identity,
    IdentityLink,
    Message,
    MessageRevision,
    Person,
    SavedSearch,
    SearchConfig,
    SendAttempt,
    SyncAccount,
    SyncRun,
    Tag,
    TagBulk,
    WorkerHeartbeat,
)
from archive.services.agents import SCOPES, agent_create, agent_revoke, scopes_clean
from archive.services.sync import sync_interval_set


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin[Account]):
    list_display = (
        "name",
        "provider",
        "external_id",
        "send_permission",
        "send_to_any_chat",
        "sends_per_hour",
        "created_at",
    )
    list_editable = ("send_permission", "send_to_any_chat", "sends_per_hour")
    list_filter = ("provider", "send_permission")
    search_fields = ("name", "external_id")
    raw_id_fields = ("owner_identity",)


@admin.register(Chat)
class ChatAdmin(admin.ModelAdmin[Chat]):
    list_display = ("title", "kind", "account", "message_count", "last_message_at", "send_allowed")
    list_editable = ("send_allowed",)
    list_filter = ("kind", "account__provider", "send_allowed")
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


class AgentCreateForm(forms.ModelForm):
    scope_names = forms.MultipleChoiceField(
        label="Scopes",
        choices=[(name, f"{name}: {what}") for name, what in SCOPES.items()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )
    since = forms.DateTimeField(
        required=False, help_text="messages sent before this count as read (default: now)"
    )

    class Meta:
        model = Agent
        fields = ("name",)


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin[Agent]):
    """Agents: made here or on the Agents page (the token is shown once, on the answer to
    the form); revoke with the action. Hashes and read state are never editable."""

    list_display = ("name", "public_id", "scope_list", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "public_id")
    readonly_fields = ("public_id", "key_id", "read_through", "created_at", "last_used_at")
    exclude = ("token_hash",)
    actions = ("revoke",)

    @admin.display(description="scopes")
    def scope_list(self, obj: Agent) -> str:
        return ", ".join(obj.scopes)

    def get_form(
        self, request: HttpRequest, obj: Agent | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = AgentCreateForm
            kwargs["fields"] = ("name", "scope_names", "since")
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Agent | None = None) -> Any:
        return self.readonly_fields if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        if change:
            obj.scopes = scopes_clean(obj.scopes)
            super().save_model(request, obj, form, change)
            return
        issued = agent_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scope_names"],
            since=form.cleaned_data.get("since"),
        )
        obj.pk, obj.public_id = issued.agent.pk, issued.agent.public_id
        request._agent_token = issued.token  # type: ignore[attr-defined]

    def response_add(self, request: HttpRequest, obj: Agent, post_url_continue: Any = None) -> Any:
        token = getattr(request, "_agent_token", None)
        if token is None:
            return super().response_add(request, obj, post_url_continue)
        response = render(request, "admin/archive/agent_token.html", {"agent": obj, "token": token})
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected agents' tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        for agent in queryset:
            agent_revoke(public_id=agent.public_id)


@admin.register(GatewaySettings)
class GatewaySettingsAdmin(admin.ModelAdmin[GatewaySettings]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return not GatewaySettings.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(SendAttempt)
class SendAttemptAdmin(ReadOnlyAdmin):
    """The send journal (never the text)."""

    list_display = ("at", "public_id", "agent", "account", "chat", "outcome", "rule")
    list_filter = ("outcome", "rule")


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
