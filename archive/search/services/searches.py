"""Recorded and saved searches: parameters only, never results."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from archive.search.models import SavedSearch
from archive.search.parser import parse
from archive.search.selectors import SORTS
from wirecat.errors import Invalid, NotFound

log = logging.getLogger(__name__)

KEEP_RECORDED = 1_000
MAX_NAME = 100


@dataclass(frozen=True)
class SearchRun:
    """A search as it is recorded: its parameters, never its results."""

    query: str
    sort: str


def search_run(
    *, query: str, sort: str = "relevance", cursor: str | None = None, typing: bool = False
) -> SearchRun | None:
    """Whether a search is a run to record, and what of it; the page, the API and
    `wirecat search` all ask here. A run is the first page of a query that is not empty,
    in a known sort; a further page (a cursor) is the same run read on, and the requests
    the page makes while the owner is still typing are no runs at all."""
    if typing or cursor or not query.strip() or sort not in SORTS:
        return None
    return SearchRun(query=query, sort=sort)


def search_record(*, query: str, sort: str = "relevance") -> SavedSearch | None:
    """Count one run of `query` (identical runs share a row); keep the newest 1,000.
    None when it is no run (`search_run`)."""
    run = search_run(query=query, sort=sort)
    if run is None:
        return None
    now = timezone.now()
    with transaction.atomic():
        row, created = SavedSearch.objects.get_or_create(
            name="", query=run.query, sort=run.sort, defaults={"run_count": 1, "last_run_at": now}
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


def search_run_record(*, run: SearchRun) -> None:
    """Record `run` once its answer is built and sent, in a short write of its own (the
    callers call this after the response or the output, never before). The record is
    worth less than the search: when the store cannot take the write (locked by an
    import past the busy timeout, a full disk) the record is lost and logged; the search
    that was answered stays answered."""
    try:
        search_record(query=run.query, sort=run.sort)
    except DatabaseError as exc:
        log.warning("search %r not recorded: %s", run.query[:80], exc)


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
