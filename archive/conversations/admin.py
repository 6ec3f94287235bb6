"""The admin site's pages for the conversations: what each chat's build is and needs (with
an action to ask for a rebuild), and the agents' answers. Builds are written only by the
build service, so these pages read them."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from archive.conversations.models import ConversationAnswer, ConversationState, Need
from archive.conversations.services.state import chats_mark


@admin.register(ConversationState)
class ConversationStateAdmin(admin.ModelAdmin[ConversationState]):
    list_display = ("chat", "need", "built_at", "current", "error")
    list_filter = ("need",)
    search_fields = ("chat__title",)
    readonly_fields = ("chat", "current", "need", "marked_at", "built_at", "error")
    actions = ("rebuild",)

    @admin.action(description="Rebuild the conversations of the chosen chats")
    def rebuild(self, request: HttpRequest, queryset: QuerySet[ConversationState]) -> None:
        ids = list(queryset.values_list("chat_id", flat=True))
        chats_mark(chat_ids=ids, need=Need.REBUILD)
        self.message_user(request, f"{len(ids)} chats will be rebuilt by the worker.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ConversationAnswer)
class ConversationAnswerAdmin(admin.ModelAdmin[ConversationAnswer]):
    list_display = ("message", "parent", "confidence", "model", "agent", "answered_at")
    search_fields = ("model", "agent")
    readonly_fields = (
        "message",
        "chat",
        "parent",
        "confidence",
        "model",
        "agent",
        "message_print",
        "parent_print",
        "answered_at",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(
        self, request: HttpRequest, obj: ConversationAnswer | None = None
    ) -> bool:
        return False
