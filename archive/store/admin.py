"""The admin site's pages for the store: accounts, chats, identities, people, and read-only
messages, revisions and attachments (only the sink writes those)."""

from typing import Any

from django import forms
from django.contrib import admin

from archive.gateway.services.sends import send_permission_check
from archive.store.models import (
    Account,
    Attachment,
    Chat,
    ConnectorState,
    Identity,
    Message,
    MessageRevision,
    Person,
)
from archive.web.admin import ReadOnlyAdmin
from wirecat.errors import Invalid


class AccountForm(forms.ModelForm[Account]):
    """A send permission that lets messages go (ask, allow) only where they can go: an
    account with a live connection (the change page and the list's editable column)."""

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or self.cleaned_data
        if "send_permission" in self.changed_data and cleaned.get("send_permission"):
            account = Account(
                provider=cleaned.get("provider", self.instance.provider),
                external_id=cleaned.get("external_id", self.instance.external_id),
                name=cleaned.get("name", self.instance.name),
            )
            try:
                send_permission_check(account=account, permission=cleaned["send_permission"])
            except Invalid as exc:
                self.add_error("send_permission", str(exc))
        return cleaned


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin[Account]):
    form = AccountForm
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

    def get_changelist_form(self, request: Any, **kwargs: Any) -> Any:
        """The list's editable column checks what the change page checks."""
        return super().get_changelist_form(request, form=AccountForm, **kwargs)


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
