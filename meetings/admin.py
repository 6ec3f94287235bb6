"""Meetings in the admin site: calendars, and meetings with their participants."""

from __future__ import annotations

from django.contrib import admin

from meetings.models import Calendar, Meeting, Participant


@admin.register(Calendar)
class CalendarAdmin(admin.ModelAdmin[Calendar]):
    list_display = ("name", "kind", "key", "time_zone", "updated_at")
    list_filter = ("kind",)
    search_fields = ("name", "key")
    readonly_fields = ("public_id", "created_at", "updated_at")


class ParticipantInline(admin.TabularInline[Participant, Meeting]):
    model = Participant
    extra = 0
    fields = ("name", "email", "response", "role", "identity")
    raw_id_fields = ("identity",)


@admin.register(Meeting)
class MeetingAdmin(admin.ModelAdmin[Meeting]):
    list_display = ("title", "start", "end", "status", "moved", "calendar")
    list_filter = ("status", "calendar")
    search_fields = ("title", "public_id")
    date_hierarchy = "start"
    readonly_fields = ("public_id", "event", "recurrence_id", "created_at", "updated_at")
    inlines = [ParticipantInline]
