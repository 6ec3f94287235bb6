"""The audit trail of identities linked to and unlinked from people."""

from __future__ import annotations

from django.db import models

from archive.store.models import Identity, Person


class IdentityLink(models.Model):
    """The audit of linking identities to people by hand: who, when, what."""

    class Action(models.TextChoices):
        LINK = "link", "Linked"
        UNLINK = "unlink", "Unlinked"

    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="link_audit")
    person = models.ForeignKey(
        Person, null=True, blank=True, on_delete=models.SET_NULL, related_name="link_audit"
    )
    person_name = models.CharField(max_length=200)  # kept when the person is deleted
    action = models.CharField(max_length=8, choices=Action.choices)
    actor = models.CharField(max_length=120, default="owner")  # "owner" or "agent:<name>"
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-at", "-id")

    def __str__(self) -> str:
        return f"{self.action} {self.identity_id} {self.person_name}"
