"""The tag-all-results job for large searches."""

from __future__ import annotations

import logging

from celery import shared_task

from archive.tags.services import tag_bulk_fail
from archive.tags.services import tag_bulk_run as tag_bulk_run_service
from wirecat.errors import NotFound, WireCatError

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.tag_bulk_run", ignore_result=True, acks_late=True)
def tag_bulk_run(bulk_id: int) -> str:
    """Tag every result of a search recorded as a TagBulk (too many to do in the request).
    Redelivered, it tags again what is missing: taggings are unique."""
    try:
        bulk = tag_bulk_run_service(bulk_id=bulk_id)
    except NotFound:
        log.info("tag-all run %s is gone; skipped", bulk_id)
        return "gone"
    except WireCatError as exc:
        tag_bulk_fail(bulk_id=bulk_id, error=str(exc))
        return f"failed: {exc}"
    return f"tag-all {bulk.pk}: {bulk.added} added of {bulk.total}"
