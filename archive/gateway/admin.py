"""The admin site's pages for agents (tokens made and revoked through the service), the gateway
settings and the send journal."""

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.shortcuts import render

from archive.gateway.models import Agent, GatewaySettings, SendAttempt
from archive.gateway.services.agents import SCOPES, agent_create, agent_revoke, scopes_clean
from archive.web.admin import ReadOnlyAdmin


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
        fields = ("name", "limit_accounts", "limit_chats")


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin[Agent]):
    """Agents: made here or on the Agents page (the token is shown once, on the answer to
    the form); revoke with the action; limit to accounts and chats (saved with the form).
    Hashes and read state are never editable."""

    list_display = ("name", "public_id", "scope_list", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "public_id")
    readonly_fields = ("public_id", "key_id", "read_through", "created_at", "last_used_at")
    exclude = ("token_hash",)
    filter_horizontal = ("limit_accounts", "limit_chats")  # none of either: every chat
    actions = ("revoke",)

    @admin.display(description="scopes")
    def scope_list(self, obj: Agent) -> str:
        return ", ".join(obj.scopes)

    def get_form(
        self, request: HttpRequest, obj: Agent | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            kwargs["form"] = AgentCreateForm
            kwargs["fields"] = ("name", "scope_names", "since", "limit_accounts", "limit_chats")
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
        # The form saves the limits (save_related) onto this row, now stored.
        obj._state.db, obj._state.adding = issued.agent._state.db, False
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
