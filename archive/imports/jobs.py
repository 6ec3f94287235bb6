"""The import job: one export read into the store, resumable."""

from __future__ import annotations

import logging

from celery import current_app, shared_task

from archive.imports.services import import_run as import_run_service
from wirecat.db.faults import StoreFault
from wirecat.errors import Conflict, NotFound

log = logging.getLogger(__name__)


@shared_task(name="archive.jobs.import_run", ignore_result=True, acks_late=True)
def import_run(job_id: int) -> str:
    """Run one ImportJob. Redelivered after a worker crash, it resumes from the last batch."""
    try:
        job = import_run_service(job_id=job_id)
    except NotFound:
        log.info("import job %s is gone; skipped", job_id)
        return "gone"
    except Conflict as exc:
        log.info("%s", exc)
        return "already running"
    except StoreFault as exc:  # read-only or full: the job says so where it could be written
        log.error("import job %s: %s", job_id, exc)
        return "failed"
    if job.outcome and job.status == "done":
        _meeting_stems_soon()
    return f"{job.public_id} {job.status}"


def _meeting_stems_soon() -> None:
    """A meeting file was imported: stem its words now rather than at the next minute's
    drain (meetings' job, by its name; the words index answers meanwhile)."""
    try:
        current_app.send_task("archive.jobs.meetings_stems_drain", retry=False)
    except Exception as exc:  # a broker that does not answer: beat drains them later
        log.info("meeting stems not queued now: %s", exc)
