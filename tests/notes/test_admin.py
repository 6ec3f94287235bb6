"""The notes in the admin site: read there (a note is written on its pages, where its links
and search index follow), the link vocabulary extended there, builtin kinds kept."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from notes.models import Folder, Link, LinkKind, Note
from notes.services.notes import note_create

pytestmark = pytest.mark.django_db


def test_the_owner_reads_notes_and_extends_link_kinds_in_the_admin(owner_client: Any) -> None:
    note = note_create(title="<b>Plan</b>", body="[[Nobody yet]]", folder="Work")
    for model in (Folder, Note, Link, LinkKind):
        page = owner_client.get(reverse(f"admin:notes_{model._meta.model_name}_changelist"))
        assert page.status_code == 200, model
    page = owner_client.get(reverse("admin:notes_note_change", args=[note.pk]))
    assert page.status_code == 200
    assert b"&lt;b&gt;Plan&lt;/b&gt;" in page.content  # escaped, and view-only
    assert b'name="_save"' not in page.content
    assert owner_client.get(reverse("admin:notes_note_add")).status_code == 403
    made = owner_client.post(
        reverse("admin:notes_linkkind_add"), {"name": "blocks", "description": "It blocks it."}
    )
    assert made.status_code == 302 and LinkKind.objects.filter(name="blocks").exists()
    builtin = LinkKind.objects.get(name="decision")
    refused = owner_client.post(
        reverse("admin:notes_linkkind_delete", args=[builtin.pk]), {"post": "yes"}
    )
    assert refused.status_code == 403 and LinkKind.objects.filter(pk=builtin.pk).exists()
