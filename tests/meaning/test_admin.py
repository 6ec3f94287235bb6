"""The admin site lists the vector models (dropping a model's vectors on request) and what
each source was cut from, for the owner."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from archive.meaning.models import Chunked, ChunkKind, Vector, VectorModel
from archive.meaning.services.refresh import embeddings_refresh
from notes.services.notes import note_create

pytestmark = pytest.mark.django_db(transaction=True)


def _tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'archive_meaning_vec_%'")
        return {name for (name,) in cursor.fetchall()}


def test_models_and_chunked_sources_are_listed_and_vectors_dropped(
    owner_client: Client,
) -> None:
    note = note_create(title="Boiler", body="The plumber comes on Tuesday.")
    embeddings_refresh()
    model = VectorModel.objects.get()
    assert Vector.objects.filter(model=model).count() == 1

    page = owner_client.get("/admin/archive/vectormodel/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "all-MiniLM-L6-v2-int8" in html and "384" in html and "Drop its vectors" in html
    listed = owner_client.get("/admin/archive/chunked/")
    assert listed.status_code == 200
    assert Chunked.objects.get(kind=ChunkKind.NOTE, source_id=note.pk).version == "r1@800"
    assert "r1" in listed.content.decode()
    assert owner_client.get("/admin/archive/chunked/add/").status_code == 403
    assert owner_client.get("/admin/archive/vectormodel/add/").status_code == 403

    done = owner_client.post(
        "/admin/archive/vectormodel/",
        {"action": "drop_vectors", "_selected_action": [str(model.pk)]},
        follow=True,
    )
    assert done.status_code == 200 and "dropped" in done.content.decode()
    assert not VectorModel.objects.exists() and not Vector.objects.exists()
    assert model.vec_table not in _tables()
    # The next refresh embeds the chunks again.
    assert embeddings_refresh().embedded == 1
