"""The admin site's page for the audit trail of identity links."""

from django.contrib import admin

from archive.people.models import IdentityLink
from archive.web.admin import ReadOnlyAdmin


@admin.register(IdentityLink)
class IdentityLinkAdmin(ReadOnlyAdmin):
    list_display = ("at", "actor", "action", "identity", "person_name")
    list_filter = ("action",)
