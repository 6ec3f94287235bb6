"""Recorded and saved searches: parameters only, never results."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from archive.search.models import SavedSearch
from archive.search.parser import parse
from archive.search.selectors import SORTS
from wirecat.errors import Invalid, NotFound

KEEP_RECORDED = 1_000
MAX_NAME = 100


def search_record(*, query: str, sort: str = "relevance") -> SavedSearch | None:
    """Count one run of `query` (identical runs share a row); keep the newest 1,000."""
    if not query.strip() or sort not in SORTS:
        return None
    now = timezone.now()
    with transaction.atomic():
        row, created = SavedSearch.objects.get_or_create(
            name="", query=query, sort=sort, defaults={"run_count": 1, "last_run_at": now}
        )
        if not created:
            SavedSearch.objects.filter(pk=row.pk).update(
                run_count=F("run_count") + 1, last_run_at=now
            )
        stale = SavedSearch.objects.filter(name="").order_by("-last_run_at", "-pk")[KEEP_RECORDED:]
        stale_ids = list(stale.values_list("pk", flat=True)[:500])
        if stale_ids:
            SavedSearch.objects.filter(pk__in=stale_ids).delete()
    row.refresh_from_db()
    return row


def search_save(*, name: str, query: str, sort: str = "relevance") -> SavedSearch:
    """Save (or, under the same name, replace) a named search. The query must parse."""
    name = " ".join(name.split())
    if not name:
        raise Invalid("name: a saved search needs a name")
    if len(name) > MAX_NAME:
        raise Invalid(f"name: at most {MAX_NAME} characters")
    if sort not in SORTS:
        raise Invalid(f"sort: one of {', '.join(SORTS)}")
    if parse(query) is None:
        raise Invalid("query: an empty search cannot be saved")
    try:
        with transaction.atomic():
            row, _ = SavedSearch.objects.update_or_create(
                name=name, defaults={"query": query, "sort": sort, "last_run_at": timezone.now()}
            )
    except IntegrityError as exc:  # pragma: no cover - a concurrent save of the same name
        raise Invalid(f"name: {name!r} was saved at the same moment; try again") from exc
    return row


def search_delete(*, saved_id: int) -> None:
    deleted, _ = SavedSearch.objects.filter(pk=saved_id).exclude(name="").delete()
    if not deleted:
        raise NotFound(f"saved search {saved_id} does not exist")
