"""Recorded and saved searches: parameters, never results; counted, capped, re-parsed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from archive.search.models import SavedSearch
from archive.search.services.searches import (
    KEEP_RECORDED,
    search_delete,
    search_record,
    search_save,
)
from archive.store.sink import batch_record
from tests.factories import batch, message
from wirecat.errors import Invalid, NotFound

pytestmark = pytest.mark.django_db


def test_identical_runs_share_one_row_and_results_are_never_stored() -> None:
    search_record(query="train", sort="relevance")
    search_record(query="train", sort="relevance")
    search_record(query="train", sort="newest")
    rows = {(r.query, r.sort): r.run_count for r in SavedSearch.objects.all()}
    assert rows == {("train", "relevance"): 2, ("train", "newest"): 1}
    field_names = {f.name for f in SavedSearch._meta.get_fields()}
    assert field_names == {
        "id",
        "name",
        "query",
        "sort",
        "run_count",
        "first_run_at",
        "last_run_at",
    }
    assert search_record(query="   ") is None and search_record(query="x", sort="odd") is None


def test_only_the_newest_thousand_unnamed_runs_are_kept() -> None:
    old = timezone.now() - timedelta(days=30)
    SavedSearch.objects.bulk_create(
        SavedSearch(query=f"q{i}", run_count=1, last_run_at=old + timedelta(minutes=i))
        for i in range(KEEP_RECORDED)
    )
    search_save(name="kept forever", query="q0 OR named")
    search_record(query="fresh")
    assert SavedSearch.objects.filter(name="").count() == KEEP_RECORDED
    assert not SavedSearch.objects.filter(name="", query="q0").exists()  # the oldest went
    assert SavedSearch.objects.filter(query="fresh").exists()
    assert SavedSearch.objects.filter(name="kept forever").exists()  # named rows stay


def test_saved_searches_are_named_replaced_by_name_and_validated() -> None:
    first = search_save(name="  Trips ", query="ferry OR train", sort="newest")
    assert first.name == "Trips"
    again = search_save(name="Trips", query="ferry")
    assert again.pk == first.pk and again.query == "ferry"
    with pytest.raises(Invalid, match="needs a name"):
        search_save(name=" ", query="x")
    with pytest.raises(Invalid, match=r"this \( is never closed"):
        search_save(name="broken", query="(x")
    with pytest.raises(Invalid, match="empty search"):
        search_save(name="empty", query="   ")
    search_delete(saved_id=first.pk)
    with pytest.raises(NotFound):
        search_delete(saved_id=first.pk)


def test_the_page_records_runs_not_keystrokes_and_saves_and_reruns(
    owner_client: Any,
) -> None:
    batch_record(batch=batch(message("1", "ferry at nine"), message("2", "the train", minutes=1)))
    for partial in ("f", "fe", "fer"):  # as-you-type requests
        owner_client.get("/search/", {"q": partial}, HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="q")
    owner_client.get("/search/", {"q": "ferry"})  # submitted
    assert list(SavedSearch.objects.values_list("query", "run_count")) == [("ferry", 1)]
    response = owner_client.post(
        "/search/save/", {"name": "Boats", "q": "ferry OR boat", "sort": "newest"}
    )
    assert response.status_code == 302
    html = owner_client.get(response["Location"]).content.decode()
    assert "Saved as “Boats”." in html
    assert 'href="?q=ferry%20OR%20boat&amp;sort=newest"' in html  # runs it again, re-parsed
    saved = SavedSearch.objects.get(name="Boats")
    response = owner_client.post(f"/search/saved/{saved.pk}/delete/")
    assert response.status_code == 302 and not SavedSearch.objects.filter(name="Boats").exists()
    assert owner_client.post("/search/saved/999/delete/").status_code == 404
    html = owner_client.post("/search/save/", {"name": "", "q": "x"}, follow=True).content.decode()
    assert "a saved search needs a name" in html


def test_api_and_command_runs_are_recorded(owner_client: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    owner_client.get("/api/search/messages", {"q": "alpha"})
    call_command("search", "beta", stdout=StringIO())
    assert set(SavedSearch.objects.values_list("query", flat=True)) == {"alpha", "beta"}
